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
