// RUN: amp-opt %s -split-input-file --amp-decompose-attention --verify-diagnostics | FileCheck %s --enable-var-scope

// The forward op at O1 (bf16, f32 accumulator) with a boolean keep-mask:
// the scores in bf16 widened to f32, scaled, masked by select, softmaxed
// causally in f32 and rounded to bf16 for the second product. Its gradient
// recomputes the probabilities and never reads the log-sum-exp.
// CHECK-LABEL: func.func @bool_mask_causal(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x8x16xbf16>, %[[M:[a-z0-9]+]]: tensor<2x1x1x8xi1>, %[[DO:[a-z0-9]+]]: tensor<2x4x8x16xbf16>
// CHECK-NOT: train.attention
// CHECK: %[[S:.*]] = train.batch_matmul %[[Q]], %[[Q]] transpose_rhs accumulate f32 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16> -> tensor<2x4x8x8xbf16>
// CHECK: %[[S32:.*]] = train.cast %[[S]] : tensor<2x4x8x8xbf16> to tensor<2x4x8x8xf32>
// CHECK: %[[SCALE:.*]] = train.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[SS:.*]] = train.mul %[[S32]], %[[SCALE]]
// CHECK: %[[NEG:.*]] = train.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[SM:.*]] = train.select %[[M]], %[[SS]], %[[NEG]]
// A query with every key masked gets a zero row (PyTorch's convention),
// not softmax's NaN: masked scores are the lowest f32 for the softmax and
// their probabilities are zeroed after it.
// CHECK: %[[HIDDEN:.*]] = train.compare %[[SM]], %[[NEG]] eq : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xi1>
// CHECK: %[[LOWEST:.*]] = train.constant dense<-3.40282347E+38> : tensor<f32>
// CHECK: %[[FINITE:.*]] = train.select %[[HIDDEN]], %[[LOWEST]], %[[SM]]
// CHECK: %[[P0:.*]] = train.softmax %[[FINITE]] axis 3 causal : tensor<2x4x8x8xf32>
// CHECK: %[[ZERO:.*]] = train.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[P:.*]] = train.select %[[HIDDEN]], %[[ZERO]], %[[P0]]
// CHECK: %[[P16:.*]] = train.cast %[[P]] : tensor<2x4x8x8xf32> to tensor<2x4x8x8xbf16>
// CHECK: %[[O:.*]] = train.batch_matmul %[[P16]], %[[Q]] accumulate f32 : tensor<2x4x8x8xbf16>, tensor<2x4x8x16xbf16> -> tensor<2x4x8x16xbf16>
// The gradient recomputes P the same way.
// CHECK: train.select %[[M]]
// CHECK: train.softmax %{{.*}} axis 3 causal : tensor<2x4x8x8xf32>
// CHECK: %[[PG:.*]] = train.select
// CHECK: %[[PG16:.*]] = train.cast %[[PG]] : tensor<2x4x8x8xf32> to tensor<2x4x8x8xbf16>
// CHECK: %[[DV:.*]] = train.batch_matmul %[[PG16]], %[[DO]] transpose_lhs accumulate f32
// CHECK: %[[DP:.*]] = train.batch_matmul %[[DO]], %[[Q]] transpose_rhs accumulate f32
// CHECK: %[[DP32:.*]] = train.cast %[[DP]]
// CHECK: %[[DS:.*]] = train.softmax_grad %[[DP32]], %[[PG]] axis 3 : tensor<2x4x8x8xf32>
// CHECK: %[[DSS:.*]] = train.mul %[[DS]], %{{.*}}
// CHECK: %[[DS16:.*]] = train.cast %[[DSS]] : tensor<2x4x8x8xf32> to tensor<2x4x8x8xbf16>
// CHECK: %[[DQ:.*]] = train.batch_matmul %[[DS16]], %[[Q]] accumulate f32
// CHECK: %[[DK:.*]] = train.batch_matmul %[[DS16]], %[[Q]] transpose_lhs accumulate f32
// CHECK: return %[[O]], %[[DQ]], %[[DK]], %[[DV]]
func.func @bool_mask_causal(%q: tensor<2x4x8x16xbf16>, %m: tensor<2x1x1x8xi1>, %do: tensor<2x4x8x16xbf16>)
    -> (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) {
  %o, %lse = train.attention %q, %q, %q mask %m causal scale 0.25 accumulate f32 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x1x1x8xi1>
  %dq, %dk, %dv = train.attention_grad %do, %q, %q, %q, %o, %lse mask %m causal scale 0.25 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x1x1x8xi1>
  return %o, %dq, %dk, %dv : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
}

// -----

// An additive mask is added in f32; causal on non-square scores is a
// constant top-left keep-mask (softmax's `causal` is for square ones).
// CHECK-LABEL: func.func @additive_mask_causal_rectangular(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<3x5x4xf32>, %[[K:[a-z0-9]+]]: tensor<3x7x4xf32>, %[[B:[a-z0-9]+]]: tensor<5x7xf32>
// CHECK: %[[S:.*]] = train.batch_matmul %[[Q]], %[[K]] transpose_rhs : tensor<3x5x4xf32>, tensor<3x7x4xf32> -> tensor<3x5x7xf32>
// CHECK: %[[SS:.*]] = train.mul %[[S]], %{{.*}}
// CHECK: %[[SB:.*]] = train.add %[[SS]], %[[B]] : tensor<3x5x7xf32>, tensor<5x7xf32> -> tensor<3x5x7xf32>
// CHECK: %[[KEEP:.*]] = train.constant dense<{{\[\[}}true, false, false, false, false, false, false], [true, true, false,
// CHECK-SAME: tensor<5x7xi1>
// CHECK: %[[SC:.*]] = train.select %[[KEEP]], %[[SB]], %{{.*}}
// CHECK: train.compare %[[SC]]
// CHECK: train.softmax %{{.*}} axis 2 : tensor<3x5x7xf32>
// CHECK: %[[P:.*]] = train.select
// CHECK: %[[O:.*]] = train.batch_matmul %[[P]], %[[K]] : tensor<3x5x7xf32>, tensor<3x7x4xf32> -> tensor<3x5x4xf32>
// CHECK: return %[[O]]
func.func @additive_mask_causal_rectangular(%q: tensor<3x5x4xf32>, %k: tensor<3x7x4xf32>, %b: tensor<5x7xf32>) -> tensor<3x5x4xf32> {
  %o, %lse = train.attention %q, %k, %k mask %b causal scale 0.5 : tensor<3x5x4xf32>, tensor<3x7x4xf32>, tensor<3x7x4xf32>, tensor<5x7xf32>
  return %o : tensor<3x5x4xf32>
}

// -----

// The log-sum-exp has no decomposed form: only attention_grad may read it.
func.func @lse_read(%q: tensor<3x5x4xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'train.attention' op amp-decompose-attention: the log-sum-exp is read by func.return; only train.attention_grad may read it}}
  %o, %lse = train.attention %q, %q, %q scale 0.5 : tensor<3x5x4xf32>, tensor<3x5x4xf32>, tensor<3x5x4xf32>
  return %lse : tensor<3x5xf32>
}

// -----

// Causal alone on square scores hides no query's every key: the softmax's
// own causal form, with no compare / select.
// CHECK-LABEL: func.func @causal_only(
// CHECK: %[[P:.*]] = train.softmax %{{.*}} axis 2 causal : tensor<3x5x5xf32>
// CHECK-NOT: train.select
// CHECK: train.batch_matmul %[[P]]
func.func @causal_only(%q: tensor<3x5x4xf32>) -> tensor<3x5x4xf32> {
  %o, %lse = train.attention %q, %q, %q causal scale 0.5 : tensor<3x5x4xf32>, tensor<3x5x4xf32>, tensor<3x5x4xf32>
  return %o : tensor<3x5x4xf32>
}
