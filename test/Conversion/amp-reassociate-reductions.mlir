// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-reassociate-reductions))' | FileCheck %s

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A sum (with a computed summand, accumulator on either side) may be
// reassociated; the summand's own arithmetic keeps IEEE semantics.
// CHECK-LABEL: func.func @sums
// CHECK: %[[SQ:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: arith.addf %{{.*}}, %[[SQ]] fastmath<reassoc> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
func.func @sums(%a: tensor<4x8xf32>, %init: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %sq = arith.mulf %x, %x : f32
    %y = arith.addf %o, %sq : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %s, %t : tensor<4xf32>, tensor<4xf32>
}

// Not marked: an element-wise add (no reduction loop), a maximum, and an
// accumulator that is also read elsewhere in the body (not a plain sum).
// CHECK-LABEL: func.func @not_sums
// CHECK-NOT: fastmath
// CHECK: return
func.func @not_sums(%a: tensor<4x8xf32>, %init: tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %q = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %z = arith.mulf %o, %x : f32
    %y = arith.addf %o, %z : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %p, %m, %q : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
}
