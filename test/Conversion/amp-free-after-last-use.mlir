// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-free-after-last-use))' -split-input-file | FileCheck %s

// Each buffer is freed right after its last use: %a after the op reading a
// view of it, %b after the call that receives its address (an index derived
// from it), %c (never used) right after its allocation, %d after the scf.if
// whose region reads it.
// CHECK-LABEL: func.func @straight_line
// CHECK: %[[A:.*]] = memref.alloc() : memref<4x4xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<16xf32>
// CHECK: %[[C:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NEXT: memref.dealloc %[[C]]
// CHECK: %[[D:.*]] = memref.alloc() : memref<2xf32>
// CHECK: %[[V:.*]] = memref.collapse_shape %[[A]]
// CHECK-NEXT: memref.copy %[[V]], %[[B]]
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK-NEXT: memref.copy %arg0, %arg1
// CHECK-NEXT: call @runtime(%[[P]])
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: scf.if
// CHECK: memref.load %[[D]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[D]]
// CHECK-NOT: bufferization.dealloc
// CHECK: return
func.func private @runtime(index)
func.func @straight_line(%arg0: memref<16xf32>, %arg1: memref<16xf32>, %cond: i1, %out: memref<f32>) {
  %true = arith.constant true
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4x4xf32>
  %b = memref.alloc() : memref<16xf32>
  %c = memref.alloc() : memref<8xf32>
  %d = memref.alloc() : memref<2xf32>
  %v = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  memref.copy %v, %b : memref<16xf32> to memref<16xf32>
  %p = memref.extract_aligned_pointer_as_index %b : memref<16xf32> -> index
  memref.copy %arg0, %arg1 : memref<16xf32> to memref<16xf32>
  func.call @runtime(%p) : (index) -> ()
  scf.if %cond {
    %x = memref.load %d[%c0] : memref<2xf32>
    memref.store %x, %out[] : memref<f32>
  }
  memref.copy %arg1, %arg0 : memref<16xf32> to memref<16xf32>
  bufferization.dealloc (%a, %b, %c, %d : memref<4x4xf32>, memref<16xf32>, memref<8xf32>, memref<2xf32>) if (%true, %true, %true, %true)
  return
}

// -----

// Left to the upstream passes: a dealloc that retains a value, one with a
// condition that is not constant true, and one freeing a function argument.
// CHECK-LABEL: func.func @not_plain
// CHECK-NOT: memref.dealloc
// CHECK: bufferization.dealloc (%{{.*}} : memref<4xf32>) if (%{{.*}}) retain (%{{.*}} : memref<4xf32>)
// CHECK: bufferization.dealloc (%{{.*}} : memref<4xf32>) if (%arg1)
// CHECK: bufferization.dealloc (%arg0 : memref<4xf32>) if (%{{.*}})
func.func @not_plain(%arg0: memref<4xf32>, %cond: i1) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %r = bufferization.dealloc (%a : memref<4xf32>) if (%true) retain (%arg0 : memref<4xf32>)
  bufferization.dealloc (%b : memref<4xf32>) if (%cond)
  bufferization.dealloc (%arg0 : memref<4xf32>) if (%true)
  return
}

// -----

// A buffer whose view leaves the block through a branch is freed where the
// dealloc was (the end of the block), not after its last use in the block.
// CHECK-LABEL: func.func @escapes_by_branch
// CHECK: %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[B:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK: memref.cast %[[A]]
// CHECK-NEXT: memref.copy %arg0, %arg0
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: cf.br ^bb1
func.func @escapes_by_branch(%arg0: memref<4xf32>) {
  %true = arith.constant true
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  %v = memref.cast %a : memref<4xf32> to memref<?xf32>
  memref.copy %arg0, %arg0 : memref<4xf32> to memref<4xf32>
  bufferization.dealloc (%a, %b : memref<4xf32>, memref<4xf32>) if (%true, %true)
  cf.br ^bb1(%v : memref<?xf32>)
^bb1(%w: memref<?xf32>):
  return
}
