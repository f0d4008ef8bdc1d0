// RUN: amp-opt %s -canonicalize -split-input-file | FileCheck %s

// Every folder and canonicalization of the train dialect, each with a case
// where it must not fire. All rewrites are exact.

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: train.cast
// CHECK: return %[[X]]
func.func @cast_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// f16 -> f32 is exact, so casting back gives the original value.
// CHECK-LABEL: func.func @cast_f16_roundtrip
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NOT: train.cast
// CHECK: return %[[X]]
func.func @cast_f16_roundtrip(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = train.cast %x : tensor<4xf16> to tensor<4xf32>
  %1 = train.cast %0 : tensor<4xf32> to tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @cast_bf16_roundtrip
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NOT: train.cast
// CHECK: return %[[X]]
func.func @cast_bf16_roundtrip(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = train.cast %x : tensor<4xbf16> to tensor<4xf32>
  %1 = train.cast %0 : tensor<4xf32> to tensor<4xbf16>
  return %1 : tensor<4xbf16>
}

// -----

// f32 -> f16 rounds: the round trip is not the identity and must stay.
// CHECK-LABEL: func.func @cast_f32_roundtrip_kept
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[H:.*]] = train.cast %[[X]] : tensor<4xf32> to tensor<4xf16>
// CHECK: %[[F:.*]] = train.cast %[[H]] : tensor<4xf16> to tensor<4xf32>
// CHECK: return %[[F]]
func.func @cast_f32_roundtrip_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = train.cast %0 : tensor<4xf16> to tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// f16 -> bf16 -> f16 rounds in both directions (bf16 has fewer mantissa
// bits, f16 less range): kept.
// CHECK-LABEL: func.func @cast_f16_bf16_kept
// CHECK: train.cast %{{.*}} : tensor<4xf16> to tensor<4xbf16>
// CHECK: train.cast %{{.*}} : tensor<4xbf16> to tensor<4xf16>
func.func @cast_f16_bf16_kept(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = train.cast %x : tensor<4xf16> to tensor<4xbf16>
  %1 = train.cast %0 : tensor<4xbf16> to tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// f16 -> f32 -> bf16 rounds once, like f16 -> bf16 directly.
// CHECK-LABEL: func.func @cast_compose_exact
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NEXT: %[[B:.*]] = train.cast %[[X]] : tensor<4xf16> to tensor<4xbf16>
// CHECK-NEXT: return %[[B]]
func.func @cast_compose_exact(%x: tensor<4xf16>) -> tensor<4xbf16> {
  %0 = train.cast %x : tensor<4xf16> to tensor<4xf32>
  %1 = train.cast %0 : tensor<4xf32> to tensor<4xbf16>
  return %1 : tensor<4xbf16>
}

// -----

// f32 -> bf16 -> f16 rounds twice; composing would change results.
// CHECK-LABEL: func.func @cast_compose_rounding_kept
// CHECK: train.cast %{{.*}} : tensor<4xf32> to tensor<4xbf16>
// CHECK: train.cast %{{.*}} : tensor<4xbf16> to tensor<4xf16>
func.func @cast_compose_rounding_kept(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xbf16>
  %1 = train.cast %0 : tensor<4xbf16> to tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = train.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = train.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = train.reshape %x : tensor<2x3x4xf32> -> tensor<24xf32>
  %1 = train.reshape %0 : tensor<24xf32> -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// reshape back to the original shape folds away entirely.
// CHECK-LABEL: func.func @reshape_roundtrip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_roundtrip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = train.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = train.reshape %0 : tensor<6xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// A reshape whose input is used elsewhere stays (no fold source).
// CHECK-LABEL: func.func @reshape_kept
// CHECK: train.reshape %{{.*}} : tensor<2x3xf32> -> tensor<6xf32>
func.func @reshape_kept(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = train.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.*]] = train.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<2x2xf32> {
  %c = train.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = train.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = train.transpose %x permutation [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_inverse_pair
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse_pair(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = train.transpose %x permutation [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = train.transpose %0 permutation [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Two transposes that are not inverse compose into one.
// CHECK-LABEL: func.func @transpose_compose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = train.transpose %[[X]] permutation [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = train.transpose %x permutation [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = train.transpose %0 permutation [2, 1, 0] : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  return %1 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_kept
// CHECK: train.transpose %{{.*}} permutation [1, 0]
func.func @transpose_kept(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = train.transpose %x permutation [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_splat
// CHECK-NEXT: %[[C:.*]] = train.constant dense<2.000000e+00> : tensor<3x2xf32>
// CHECK-NEXT: return %[[C]]
func.func @transpose_splat() -> tensor<3x2xf32> {
  %c = train.constant dense<2.0> : tensor<2x3xf32>
  %0 = train.transpose %c permutation [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// A non-splat constant is not transposed at compile time (kept, exact either way).
// CHECK-LABEL: func.func @transpose_dense_kept
// CHECK: train.transpose
func.func @transpose_dense_kept() -> tensor<2x1xf32> {
  %c = train.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %0 = train.transpose %c permutation [1, 0] : tensor<1x2xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @broadcast_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.broadcast %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_of_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[B:.*]] = train.broadcast %[[X]] : tensor<4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT: return %[[B]]
func.func @broadcast_of_broadcast(%x: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %0 = train.broadcast %x : tensor<4xf32> -> tensor<3x4xf32>
  %1 = train.broadcast %0 : tensor<3x4xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_splat
// CHECK-NEXT: %[[C:.*]] = train.constant dense<5.000000e-01> : tensor<8x4xf32>
// CHECK-NEXT: return %[[C]]
func.func @broadcast_splat() -> tensor<8x4xf32> {
  %c = train.constant dense<0.5> : tensor<4xf32>
  %0 = train.broadcast %c : tensor<4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_kept
// CHECK: train.broadcast %{{.*}} : tensor<4xf32> -> tensor<8x4xf32>
func.func @broadcast_kept(%x: tensor<4xf32>) -> tensor<8x4xf32> {
  %0 = train.broadcast %x : tensor<4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = train.concat %x axis 1 : tensor<4x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// CHECK-LABEL: func.func @concat_kept
// CHECK: train.concat
func.func @concat_kept(%x: tensor<4x2xf32>) -> tensor<4x4xf32> {
  %0 = train.concat %x, %x axis 1 : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// CHECK-LABEL: func.func @relu_relu
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[R:.*]] = train.relu %[[X]]
// CHECK-NEXT: return %[[R]]
func.func @relu_relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.relu %x : tensor<4xf32>
  %1 = train.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// relu(tanh(x)) is not relu(x).
// CHECK-LABEL: func.func @relu_tanh_kept
// CHECK: train.tanh
// CHECK: train.relu
func.func @relu_tanh_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.tanh %x : tensor<4xf32>
  %1 = train.relu %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_one
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @mul_one(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %one = train.constant dense<1.0> : tensor<f32>
  %0 = train.mul %x, %one : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
  %1 = train.mul %one, %x : tensor<f32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Multiplying by a broadcast 1 changes the shape: kept.
// CHECK-LABEL: func.func @mul_one_broadcasting_kept
// CHECK: train.mul
func.func @mul_one_broadcasting_kept(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %one = train.constant dense<1.0> : tensor<2x4xf32>
  %0 = train.mul %x, %one : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_two_kept
// CHECK: train.mul
func.func @mul_two_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = train.constant dense<2.0> : tensor<f32>
  %0 = train.mul %x, %two : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @div_one
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NEXT: return %[[X]]
func.func @div_one(%x: tensor<4xf16>) -> tensor<4xf16> {
  %one = train.constant dense<1.0> : tensor<4xf16>
  %0 = train.div %x, %one : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// 1 / x is not x.
// CHECK-LABEL: func.func @one_div_kept
// CHECK: train.div
func.func @one_div_kept(%x: tensor<4xf16>) -> tensor<4xf16> {
  %one = train.constant dense<1.0> : tensor<4xf16>
  %0 = train.div %one, %x : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @reduce_unit_axes
// CHECK-SAME: (%[[X:.*]]: tensor<4x1xf32>)
// CHECK-NEXT: return %[[X]], %[[X]]
func.func @reduce_unit_axes(%x: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %0 = train.reduce_sum %x axes [1] keep_dims : tensor<4x1xf32> -> tensor<4x1xf32>
  %1 = train.reduce_mean %x axes [1] keep_dims : tensor<4x1xf32> -> tensor<4x1xf32>
  return %0, %1 : tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Without keep_dims the shape changes; over a non-unit axis values change.
// CHECK-LABEL: func.func @reduce_kept
// CHECK: train.reduce_sum %{{.*}} axes [1] :
// CHECK: train.reduce_mean %{{.*}} axes [0] keep_dims
func.func @reduce_kept(%x: tensor<4x1xf32>) -> (tensor<4xf32>, tensor<1x1xf32>) {
  %0 = train.reduce_sum %x axes [1] : tensor<4x1xf32> -> tensor<4xf32>
  %1 = train.reduce_mean %x axes [0] keep_dims : tensor<4x1xf32> -> tensor<1x1xf32>
  return %0, %1 : tensor<4xf32>, tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @dropout_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.dropout %x rate 0.0 seed 7 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_kept
// CHECK: train.dropout %{{.*}} rate 5.000000e-01 seed 7
func.func @dropout_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.dropout %x rate 0.5 seed 7 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Unused pure ops are erased; identical constants are uniqued.
// CHECK-LABEL: func.func @dead_and_duplicate
// CHECK-NEXT: %[[C:.*]] = train.constant dense<3.000000e+00> : tensor<2xf32>
// CHECK-NEXT: return %[[C]], %[[C]]
func.func @dead_and_duplicate(%x: tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %unused = train.exp %x : tensor<4xf32>
  %a = train.constant dense<3.0> : tensor<2xf32>
  %b = train.constant dense<3.0> : tensor<2xf32>
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}

// -----

// A user cast (the model's own x.float()) is kept until amp-cast-cleanup,
// even of a value to its own type, and no cast composes with it.
// CHECK-LABEL: func.func @user_cast_kept
// CHECK: %[[U:.*]] = train.cast %{{.*}} user : tensor<4xf32> to tensor<4xf32>
// CHECK: %[[D:.*]] = train.cast %[[U]] : tensor<4xf32> to tensor<4xf16>
// CHECK: return %[[U]], %[[D]]
func.func @user_cast_kept(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf16>) {
  %0 = train.cast %x user : tensor<4xf32> to tensor<4xf32>
  %1 = train.cast %0 : tensor<4xf32> to tensor<4xf16>
  return %0, %1 : tensor<4xf32>, tensor<4xf16>
}
