// RUN: amp-opt %s --amp-fuse-elementwise --split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A 16-bit value widened once and read by two consumers (a reduction and an
// element-wise op): the widening is fused into both, no f32 twin is stored.
// CHECK-LABEL: func.func @widening_into_every_consumer
// CHECK-SAME: (%[[G:[^:]*]]: tensor<4x8xf16>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[G]] : tensor<4x8xf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.extf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[G]], %{{.*}} : tensor<4x8xf16>, tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.extf
// CHECK: arith.mulf
func.func @widening_into_every_consumer(%g: tensor<4x8xf16>, %p: tensor<4x8xf32>, %acc: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<4x8xf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%w : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %p : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %q: f32, %o: f32):
    %y = arith.mulf %x, %q : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %s, %u : tensor<4xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// An f32 accumulator rounded to f16, then widened for an f32 consumer (a
// gradient read by the optimizer): the f16 value is stored (the f32 one can
// die), and the widening moves into the consumer. Upstream's pass would fuse
// all three and keep the f32 accumulator alive until the consumer.
// CHECK-LABEL: func.func @rounding_is_stored
// CHECK-SAME: (%[[ACC:[^:]*]]: tensor<4x8xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[ACC]] : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf16>)
// CHECK: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: linalg.generic {{.*}} ins(%[[R]], %{{.*}} : tensor<4x8xf16>, tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.extf
// CHECK: arith.subf
func.func @rounding_is_stored(%acc: tensor<4x8xf32>, %p: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%acc : tensor<4x8xf32>) outs(%e : tensor<4x8xf16>) {
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  } -> tensor<4x8xf16>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<4x8xf16>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %p : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e3 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %q: f32, %o: f32):
    %y = arith.subf %q, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %u : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A rounding into a consumer whose result is as narrow (relu of the rounded
// value, in f16) fuses as upstream's would: one generic.
// CHECK-LABEL: func.func @rounding_into_narrow_consumer
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<4x8xf16>)
// CHECK: arith.truncf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
func.func @rounding_into_narrow_consumer(%acc: tensor<4x8xf32>) -> tensor<4x8xf16> {
  %zero = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<4x8xf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%acc : tensor<4x8xf32>) outs(%e : tensor<4x8xf16>) {
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  } -> tensor<4x8xf16>
  %e2 = tensor.empty() : tensor<4x8xf16>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<4x8xf16>) outs(%e2 : tensor<4x8xf16>) {
  ^bb0(%x: f16, %o: f16):
    %y = arith.maximumf %x, %zero : f16
    linalg.yield %y : f16
  } -> tensor<4x8xf16>
  return %u : tensor<4x8xf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// f32 chains as upstream: a producer with one use fuses, a producer with
// two (that is not a widening) is stored once and read by both.
// CHECK-LABEL: func.func @f32_as_upstream
// CHECK: %[[N:.*]] = linalg.generic
// CHECK: arith.negf
// CHECK-NOT: arith.negf
// CHECK: linalg.generic {{.*}} ins(%[[N]] : tensor<4x8xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[N]] : tensor<4x8xf32>)
// CHECK: arith.subf
func.func @f32_as_upstream(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e3 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<4x8xf32>) outs(%e3 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %e4 = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%n : tensor<4x8xf32>) outs(%e4 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.subf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %s, %t : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A bf16 rounding read by two f32 consumers (a reduction and an
// element-wise op): stored once as bf16; each consumer widens it.
// CHECK-LABEL: func.func @bf16_rounding_with_two_uses
// CHECK: %[[R:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4x8xbf16>)
// CHECK: arith.truncf
// CHECK: linalg.generic {{.*}} ins(%[[R]] : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.extf
// CHECK: linalg.generic {{.*}} ins(%[[R]] : tensor<4x8xbf16>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: arith.extf
// CHECK-NOT: linalg.generic
func.func @bf16_rounding_with_two_uses(%acc: tensor<4x8xf32>, %init: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xbf16>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%acc : tensor<4x8xf32>) outs(%e : tensor<4x8xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %y = arith.truncf %x : f32 to bf16
    linalg.yield %y : bf16
  } -> tensor<4x8xbf16>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %w = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<4x8xbf16>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %y = arith.extf %x : bf16 to f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%w : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<4x8xf32>) outs(%e3 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.mulf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %s, %u : tensor<4xf32>, tensor<4x8xf32>
}
