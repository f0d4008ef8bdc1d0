// RUN: amp-opt %s -split-input-file --amp-outline-parallel-loops="outline-serial=true min-serial=2" | FileCheck %s --enable-var-scope
// RUN: amp-opt %s -split-input-file --amp-outline-parallel-loops="outline-serial=true min-serial=3" | FileCheck %s --check-prefix=FEW
// RUN: amp-opt %s -split-input-file --amp-outline-parallel-loops | FileCheck %s --check-prefix=OFF

// outline-serial: each linalg op on buffers at the top level of a function
// with at least min-serial of them moves into @<function>_loop<N>, called
// with no_inline (LLVM's loop passes then see one loop nest per function).
// The constant is cloned; the buffers are passed, and as they reach
// distinct allocations of an entry point their pointers are noalias (a
// memref<8xf32> is 5 LLVM parameters: pointers at 0, 1 and 5, 6).
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @two_loops(
// CHECK: %[[A:.*]] = memref.alloc() : memref<8xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK: call @two_loops_loop0(%[[A]]) {no_inline} : (memref<8xf32>) -> ()
// CHECK: call @two_loops_loop1(%[[A]], %[[B]]) {no_inline} : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NOT: linalg.
// CHECK: return
// CHECK: func.func private @two_loops_loop0(%[[X:.*]]: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0, 1>}
// CHECK: %[[C:.*]] = arith.constant 2.0
// CHECK: linalg.fill ins(%[[C]] : f32) outs(%[[X]] : memref<8xf32>)
// CHECK: func.func private @two_loops_loop1(%{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 0, 1, 5, 6>}
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
