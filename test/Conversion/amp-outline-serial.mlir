// RUN: amp-opt %s -split-input-file --amp-outline-parallel-loops="outline-serial=true min-serial=2" | FileCheck %s --enable-var-scope
// RUN: amp-opt %s -split-input-file --amp-outline-parallel-loops="outline-serial=true min-serial=3" | FileCheck %s --check-prefix=FEW
// RUN: amp-opt %s -split-input-file --amp-outline-parallel-loops | FileCheck %s --check-prefix=OFF

// outline-serial: each linalg op on buffers at the top level of a function
// with at least min-serial of them moves into @<function>_loop<N>, called
// with no_inline (LLVM's loop passes then see one loop nest per function).
// The constant is cloned; the buffers are passed, and as they reach
// distinct allocations of an entry point their pointers are noalias. A
// static memref passes as its aligned pointer alone (llvm.bareptr): one
// LLVM parameter each.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @two_loops(
// CHECK: %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK: call @two_loops_loop0(%[[A]]) {no_inline} : (memref<8xf32>) -> ()
// CHECK: call @two_loops_loop1(%[[A]], %[[B]]) {no_inline} : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NOT: linalg.
// CHECK: return
// CHECK: func.func private @two_loops_loop0(%[[X:.*]]: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0>, llvm.bareptr}
// CHECK: %[[C:.*]] = arith.constant 2.0
// CHECK: linalg.fill ins(%[[C]] : f32) outs(%[[X]] : memref<8xf32>)
// CHECK: func.func private @two_loops_loop1(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0, 1>, llvm.bareptr}
// CHECK: linalg.generic
// FEW-LABEL: func.func @two_loops(
// FEW: linalg.fill
// FEW: linalg.generic
// FEW-NOT: no_inline
// OFF-NOT: no_inline
func.func @two_loops() -> f32 {
  %c2 = arith.constant 2.0 : f32
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  linalg.fill ins(%c2 : f32) outs(%a : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  }
  %c0 = arith.constant 0 : index
  %r = memref.load %b[%c0] : memref<8xf32>
  return %r : f32
}

// -----

// Equal loops share one function: the same body (the constant included),
// signature and noalias marks. A different constant, a different element
// type, or the same op reading and writing one buffer (one argument) makes
// another. A dynamic
// memref keeps its descriptor (no llvm.bareptr; its pointers at 0, 1 of
// 3 + 2 * rank parameters).
// CHECK-LABEL: func.func @shared(
// FEW-LABEL: func.func @shared(
// FEW: call @shared_loop0
// CHECK: call @shared_loop0(%[[A:.*]]) {no_inline}
// CHECK: call @shared_loop0(%[[B:.*]]) {no_inline}
// CHECK: call @shared_loop2(%[[A]]) {no_inline}
// CHECK: call @shared_loop3(%{{.*}}) {no_inline} : (memref<8xf16>) -> ()
// CHECK: call @shared_loop4(%[[A]], %[[B]]) {no_inline}
// CHECK: call @shared_loop5(%[[A]]) {no_inline} : (memref<8xf32>) -> ()
// CHECK: call @shared_loop6(%{{.*}}) {no_inline} : (memref<?xf32>) -> ()
// CHECK: return
// CHECK: func.func private @shared_loop0(%{{.*}}: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0>, llvm.bareptr}
// CHECK: arith.constant 2.0
// CHECK-NOT: func.func private @shared_loop1(
// CHECK: func.func private @shared_loop2(%{{.*}}: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0>, llvm.bareptr}
// CHECK: arith.constant 3.0
// CHECK: func.func private @shared_loop3(%{{.*}}: memref<8xf16>) attributes {amp.noalias_pointers = array<i64: 0>, llvm.bareptr}
// CHECK: func.func private @shared_loop4(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0, 1>, llvm.bareptr}
// CHECK: func.func private @shared_loop5(%{{.*}}: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0>, llvm.bareptr}
// CHECK: linalg.generic
// CHECK: func.func private @shared_loop6(%{{.*}}: memref<?xf32>) attributes {amp.noalias_pointers = array<i64: 0, 1>} {
#id = affine_map<(d0) -> (d0)>
func.func @shared(%n: index) -> f32 {
  %c2 = arith.constant 2.0 : f32
  %c3 = arith.constant 3.0 : f32
  %h2 = arith.constant 2.0 : f16
  %a = memref.alloc() : memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  %h = memref.alloc() : memref<8xf16>
  %d = memref.alloc(%n) : memref<?xf32>
  linalg.fill ins(%c2 : f32) outs(%a : memref<8xf32>)
  linalg.fill ins(%c2 : f32) outs(%b : memref<8xf32>)
  linalg.fill ins(%c3 : f32) outs(%a : memref<8xf32>)
  linalg.fill ins(%h2 : f16) outs(%h : memref<8xf16>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : memref<8xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : memref<8xf32>) outs(%a : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%c2 : f32) outs(%d : memref<?xf32>)
  %c0 = arith.constant 0 : index
  %r = memref.load %b[%c0] : memref<8xf32>
  %q = memref.load %h[%c0] : memref<8xf16>
  %w = memref.load %d[%c0] : memref<?xf32>
  %qf = arith.extf %q : f16 to f32
  %s1 = arith.addf %r, %qf : f32
  %s2 = arith.addf %s1, %w : f32
  return %s2 : f32
}
