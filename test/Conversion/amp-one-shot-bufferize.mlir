// RUN: amp-opt %s --amp-one-shot-bufferize | FileCheck %s --check-prefix=ANALYZED
// RUN: amp-opt %s --amp-one-shot-bufferize=analysis-limit=3 | FileCheck %s --check-prefix=LIMITED
// RUN: amp-opt %s '--amp-one-shot-bufferize=copy-before-write=true' | FileCheck %s --check-prefix=LIMITED

// With the analysis, a function writes its argument in place (nothing reads
// it afterwards); without it (more than `analysis-limit` ops: this function
// has 5, counting itself and the generic's body; or copy-before-write), the
// write goes to a copy. Function boundaries use identity layouts.
// ANALYZED-LABEL: func.func @double(%arg0: memref<4xf32>) -> memref<4xf32>
// ANALYZED-NOT: memref.alloc
// ANALYZED-NOT: memref.copy
// ANALYZED: linalg.generic {{.*}} outs(%arg0 : memref<4xf32>)
// ANALYZED: return %arg0
// LIMITED-LABEL: func.func @double(%arg0: memref<4xf32>) -> memref<4xf32>
// LIMITED: %[[C:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// LIMITED-NEXT: memref.copy %arg0, %[[C]]
// LIMITED-NEXT: linalg.generic {{.*}} outs(%[[C]] : memref<4xf32>)
// LIMITED: return %[[C]]
#id = affine_map<(d0) -> (d0)>
func.func @double(%t: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel"]} outs(%t : tensor<4xf32>) {
  ^bb0(%x: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// A copy into a strided buffer (a padded tensor's interior) is a
// linalg.copy, lowered to loops or a kernel; memref.copy would call MLIR's
// generic memrefCopy, which an ahead-of-time artifact does not link.
// ANALYZED-LABEL: func.func @pad
// ANALYZED: %[[ALLOC:.*]] = memref.alloc() {{.*}} : memref<4x6xf32>
// ANALYZED: %[[INNER:.*]] = memref.subview %[[ALLOC]][1, 1] [2, 4] [1, 1] : memref<4x6xf32> to memref<2x4xf32, strided<[6, 1], offset: 7>>
// ANALYZED-NEXT: linalg.copy ins(%arg0 : memref<2x4xf32>) outs(%[[INNER]] : memref<2x4xf32, strided<[6, 1], offset: 7>>)
// ANALYZED-NOT: memref.copy
func.func @pad(%x: tensor<2x4xf32>) -> tensor<4x6xf32> {
  %c = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %c : f32
  } : tensor<2x4xf32> to tensor<4x6xf32>
  return %p : tensor<4x6xf32>
}
