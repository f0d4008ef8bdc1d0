// RUN: amp-opt %s -amp-convert-train-to-cuda-runtime -split-input-file | FileCheck %s

// GEMMs become cuBLASLt calls of the CUDA runtime: params dtypeAB, dtypeD
// (0 f32, 1 f16, 2 bf16), batch, m, n, k, transposes[, epilogue]; the result
// has the op's type (cuBLASLt accumulates in f32 and rounds D once), so no
// rounding generic follows. The device numerics are checked on GPU machines
// by test/Integration/CUDA.

// A linear layer at O1: the bias as cuBLASLt's bias epilogue (1).
// CHECK: func.func private @amp_cuda_gemm_bias(index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @linear
// CHECK: %[[D:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg0, %arg1, %arg2) [1, 1, 1, 128, 256, 784, 0, 0, 1] : (tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
// CHECK-NOT: linalg.generic
// CHECK: return %[[D]]
func.func @linear(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>) -> tensor<128x256xf16> {
  %0 = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  return %0 : tensor<128x256xf16>
}

// -----

// The backward GEMMs of that layer (transposes are flags) and a bf16
// attention score product.
// CHECK-LABEL: func.func @backward
// CHECK: train.runtime_call @amp_cuda_gemm(%arg0, %arg1) [1, 1, 1, 784, 256, 128, 1, 0] : (tensor<128x784xf16>, tensor<128x256xf16>) -> tensor<784x256xf16>
// CHECK: train.runtime_call @amp_cuda_gemm(%arg1, %arg2) [1, 1, 1, 128, 784, 256, 0, 1] : (tensor<128x256xf16>, tensor<784x256xf16>) -> tensor<128x784xf16>
// CHECK: train.runtime_call @amp_cuda_gemm(%arg3, %arg3) [2, 2, 16, 64, 64, 32, 0, 1] : (tensor<16x64x32xbf16>, tensor<16x64x32xbf16>) -> tensor<16x64x64xbf16>
func.func @backward(%x: tensor<128x784xf16>, %dy: tensor<128x256xf16>, %w: tensor<784x256xf16>, %q: tensor<16x64x32xbf16>) -> (tensor<784x256xf16>, tensor<128x784xf16>, tensor<16x64x64xbf16>) {
  %dw = train.matmul %x, %dy transpose_lhs accumulate f32 : tensor<128x784xf16>, tensor<128x256xf16> -> tensor<784x256xf16>
  %dx = train.matmul %dy, %w transpose_rhs accumulate f32 : tensor<128x256xf16>, tensor<784x256xf16> -> tensor<128x784xf16>
  %s = train.batch_matmul %q, %q transpose_rhs accumulate f32 : tensor<16x64x32xbf16>, tensor<16x64x32xbf16> -> tensor<16x64x64xbf16>
  return %dw, %dx, %s : tensor<784x256xf16>, tensor<128x784xf16>, tensor<16x64x64xbf16>
}

// -----

// Convolutions are GEMMs on im2col column matrices. conv2d: the [F, C*KH*KW]
// filter times the [C*KH*KW, N*OH*OW] columns (a gather generic), then
// [F, N, P] -> [N, F, P]. grad_input: filter^T x dY' kept in f32, then
// col2im (parallel over the input, a reduction over the 3x3 window) and one
// rounding. grad_filter: dY' x columns^T.
// CHECK-LABEL: func.func @conv
// CHECK: %[[COLS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} outs(%{{.*}} : tensor<27x72xf16>)
// CHECK: tensor.extract %arg0
// CHECK: %[[G:.*]] = train.reshape %arg1 : tensor<4x3x3x3xf16> -> tensor<4x27xf16>
// CHECK: %[[Y:.*]] = train.runtime_call @amp_cuda_gemm(%[[G]], %[[COLS]]) [1, 1, 1, 4, 72, 27, 0, 0] : (tensor<4x27xf16>, tensor<27x72xf16>) -> tensor<4x72xf16>
// CHECK: %[[Y3:.*]] = train.reshape %[[Y]] : tensor<4x72xf16> -> tensor<4x2x36xf16>
// CHECK: %[[YT:.*]] = train.transpose %[[Y3]] permutation [1, 0, 2] : tensor<4x2x36xf16> -> tensor<2x4x36xf16>
// CHECK: train.reshape %[[YT]] : tensor<2x4x36xf16> -> tensor<2x4x6x6xf16>
// CHECK: %[[DCOL:.*]] = train.runtime_call @amp_cuda_gemm(%{{.*}}, %{{.*}}) [1, 0, 1, 27, 32, 4, 1, 0] : (tensor<4x27xf16>, tensor<4x32xf16>) -> tensor<27x32xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}} : tensor<3x3xf32>) outs(%{{.*}} : tensor<2x3x8x8xf32>)
// CHECK: tensor.extract %[[DCOL]]
// CHECK: arith.addf
// CHECK: arith.truncf
// CHECK: train.runtime_call @amp_cuda_gemm(%{{.*}}, %{{.*}}) [1, 1, 1, 4, 27, 32, 0, 1] : (tensor<4x32xf16>, tensor<27x32xf16>) -> tensor<4x27xf16>
// CHECK-NOT: train.conv2d
func.func @conv(%x: tensor<2x3x8x8xf16>, %w: tensor<4x3x3x3xf16>, %dy: tensor<2x4x4x4xf16>) -> (tensor<2x4x6x6xf16>, tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16>) {
  %y = train.conv2d %x, %w accumulate f32 : tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16> -> tensor<2x4x6x6xf16>
  %dx = train.conv2d_grad_input %dy, %w strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x4x4x4xf16>, tensor<4x3x3x3xf16> -> tensor<2x3x8x8xf16>
  %dw = train.conv2d_grad_filter %dy, %x strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x4x4x4xf16>, tensor<2x3x8x8xf16> -> tensor<4x3x3x3xf16>
  return %y, %dx, %dw : tensor<2x4x6x6xf16>, tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16>
}

// -----

// Non-f32 accumulators are left for the linalg patterns.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: train.runtime_call
// CHECK: train.conv2d
// CHECK: train.matmul
// CHECK-NOT: train.runtime_call
// CHECK: return
func.func @left_alone(%x: tensor<2x3x8x8xf16>, %w: tensor<4x3x3x3xf16>, %a: tensor<4x8xf16>, %b: tensor<8x3xf16>) -> (tensor<2x4x6x6xf16>, tensor<4x3xf16>) {
  %y = train.conv2d %x, %w accumulate f16 : tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16> -> tensor<2x4x6x6xf16>
  %m = train.matmul %a, %b accumulate f16 : tensor<4x8xf16>, tensor<8x3xf16> -> tensor<4x3xf16>
  return %y, %m : tensor<2x4x6x6xf16>, tensor<4x3xf16>
}

// -----

// A linear layer's weight and bias gradients: x^T dy and the column sums of
// dy become one call with cuBLASLt's bias-gradient epilogue and two results,
// where the first of the two ops was.
// CHECK: func.func private @amp_cuda_gemm_bgrad(index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @weight_and_bias_gradients
// CHECK-NEXT: %[[G:.*]]:2 = train.runtime_call @amp_cuda_gemm_bgrad(%arg0, %arg1) [1, 1, 1, 784, 256, 128, 1, 0] : (tensor<128x784xf16>, tensor<128x256xf16>) -> (tensor<784x256xf16>, tensor<256xf16>)
// CHECK-NOT: train.reduce_sum
// CHECK: return %[[G]]#1, %[[G]]#0
func.func @weight_and_bias_gradients(%x: tensor<128x784xf16>, %dy: tensor<128x256xf16>) -> (tensor<256xf16>, tensor<784x256xf16>) {
  %db = train.reduce_sum %dy axes [0] : tensor<128x256xf16> -> tensor<256xf16>
  %dw = train.matmul %x, %dy transpose_lhs accumulate f32 : tensor<128x784xf16>, tensor<128x256xf16> -> tensor<784x256xf16>
  return %db, %dw : tensor<256xf16>, tensor<784x256xf16>
}

// -----

// Not fused: a sum over the other axis, and a GEMM whose dy is transposed.
// CHECK-LABEL: func.func @not_bias_gradients
// CHECK-NOT: amp_cuda_gemm_bgrad
// CHECK: train.reduce_sum %arg1 axes [1]
// CHECK: train.runtime_call @amp_cuda_gemm(%arg0, %arg1)
// CHECK: train.reduce_sum %arg2 axes [0]
// CHECK-NOT: amp_cuda_gemm_bgrad
func.func @not_bias_gradients(%x: tensor<128x784xf16>, %dy: tensor<128x256xf16>, %dyt: tensor<256x128xf16>) -> (tensor<128xf16>, tensor<128xf16>, tensor<784x256xf16>, tensor<784x256xf16>) {
  %s1 = train.reduce_sum %dy axes [1] : tensor<128x256xf16> -> tensor<128xf16>
  %dw = train.matmul %x, %dy transpose_lhs accumulate f32 : tensor<128x784xf16>, tensor<128x256xf16> -> tensor<784x256xf16>
  %s3 = train.reduce_sum %dyt axes [0] : tensor<256x128xf16> -> tensor<128xf16>
  %dw2 = train.matmul %x, %dyt transpose_lhs transpose_rhs accumulate f32 : tensor<128x784xf16>, tensor<256x128xf16> -> tensor<784x256xf16>
  return %s1, %s3, %dw, %dw2 : tensor<128xf16>, tensor<128xf16>, tensor<784x256xf16>, tensor<784x256xf16>
}

// -----

// A linear layer's ReLU in the epilogue (2, RELU_BIAS): the relu and the
// matmul become one call, and the ReLU gradient reads the ReLU's output
// (positive exactly where the pre-activation is).
// CHECK-LABEL: func.func @linear_relu
// CHECK: %[[Y:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg0, %arg1, %arg2) [1, 1, 1, 128, 256, 784, 0, 0, 2] : (tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
// CHECK-NOT: train.relu %
// CHECK: %[[DX:.*]] = train.relu_grad %arg3, %[[Y]] : tensor<128x256xf16>
// CHECK: return %[[Y]], %[[DX]]
func.func @linear_relu(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>, %dy: tensor<128x256xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y = train.relu %h : tensor<128x256xf16>
  %dx = train.relu_grad %dy, %h : tensor<128x256xf16>
  return %y, %dx : tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// The ReLU keeping its bit mask (RELU_AUX_BIAS: the output and 128 rows of
// 256/8 mask bytes) when the GEMM producing a ReLU gradient's incoming
// gradient (bias-free, used only there) can apply it (DRELU); a second
// gradient whose incoming gradient is no GEMM's reads the ReLU's output.
// CHECK-DAG: func.func private @amp_cuda_gemm_relu_aux(index, index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @amp_cuda_gemm_drelu(index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @linear_relu_drelu
// CHECK: %[[Y:.*]]:2 = train.runtime_call @amp_cuda_gemm_relu_aux(%arg0, %arg1, %arg2) [1, 1, 1, 128, 256, 784, 0, 0] : (tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16>) -> (tensor<128x256xf16>, tensor<128x32xi8>)
// CHECK-NOT: train.relu %
// CHECK: %[[DH:.*]] = train.runtime_call @amp_cuda_gemm_drelu(%arg3, %arg4, %[[Y]]#1) [1, 1, 1, 128, 256, 64, 0, 1] : (tensor<128x64xf16>, tensor<256x64xf16>, tensor<128x32xi8>) -> tensor<128x256xf16>
// CHECK: %[[DX:.*]] = train.relu_grad %arg5, %[[Y]]#0 : tensor<128x256xf16>
// CHECK-NOT: train.matmul
// CHECK: return %[[Y]]#0, %[[DH]], %[[DX]]
func.func @linear_relu_drelu(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>, %dz: tensor<128x64xf16>, %w2: tensor<256x64xf16>, %dy2: tensor<128x256xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y = train.relu %h : tensor<128x256xf16>
  %dy = train.matmul %dz, %w2 transpose_rhs accumulate f32 : tensor<128x64xf16>, tensor<256x64xf16> -> tensor<128x256xf16>
  %dh = train.relu_grad %dy, %h : tensor<128x256xf16>
  %dx = train.relu_grad %dy2, %h : tensor<128x256xf16>
  return %y, %dh, %dx : tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// No mask (RELU_BIAS, the gradient reading the ReLU's output) where DRELU
// cannot apply it: n not a multiple of 128 (the mask's leading dimension in
// bits), f32 operands, an incoming gradient GEMM used twice or with a bias.
// CHECK-LABEL: func.func @relu_without_mask
// CHECK-NOT: relu_aux
// CHECK-NOT: drelu
// CHECK: %[[Y:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg0, %arg1, %arg2) [1, 1, 1, 128, 192, 784, 0, 0, 2]
// CHECK: %[[DY:.*]] = train.runtime_call @amp_cuda_gemm(%arg3, %arg4) [1, 1, 1, 128, 192, 64, 0, 1]
// CHECK: train.relu_grad %[[DY]], %[[Y]] : tensor<128x192xf16>
// CHECK: %[[Y32:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg5, %arg6, %arg7) [0, 0, 1, 128, 256, 784, 0, 0, 2]
// CHECK: train.relu_grad %{{.*}}, %[[Y32]] : tensor<128x256xf32>
// CHECK: %[[Y2:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg0, %arg10, %arg11) [1, 1, 1, 128, 256, 784, 0, 0, 2]
// CHECK: %[[DY2:.*]] = train.runtime_call @amp_cuda_gemm(%arg3, %arg12) [1, 1, 1, 128, 256, 64, 0, 1]
// CHECK: train.relu_grad %[[DY2]], %[[Y2]] : tensor<128x256xf16>
// CHECK: %[[Y3:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg0, %arg10, %arg11) [1, 1, 1, 128, 256, 784, 0, 0, 2]
// CHECK: %[[DY3:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg3, %arg12, %arg11) [1, 1, 1, 128, 256, 64, 0, 1, 1]
// CHECK: train.relu_grad %[[DY3]], %[[Y3]] : tensor<128x256xf16>
// CHECK: return
func.func @relu_without_mask(%x: tensor<128x784xf16>, %w: tensor<784x192xf16>, %b: tensor<192xf16>, %dz: tensor<128x64xf16>, %w2: tensor<192x64xf16>, %x32: tensor<128x784xf32>, %w32: tensor<784x256xf32>, %b32: tensor<256xf32>, %dz32: tensor<128x64xf32>, %w232: tensor<256x64xf32>, %w256: tensor<784x256xf16>, %b256: tensor<256xf16>, %w2256: tensor<256x64xf16>) -> (tensor<128x192xf16>, tensor<128x192xf16>, tensor<128x256xf32>, tensor<128x256xf32>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x192xf16>, tensor<192xf16> -> tensor<128x192xf16>
  %y = train.relu %h : tensor<128x192xf16>
  %dy = train.matmul %dz, %w2 transpose_rhs accumulate f32 : tensor<128x64xf16>, tensor<192x64xf16> -> tensor<128x192xf16>
  %dh = train.relu_grad %dy, %h : tensor<128x192xf16>
  %h32 = train.matmul %x32, %w32, %b32 accumulate f32 : tensor<128x784xf32>, tensor<784x256xf32>, tensor<256xf32> -> tensor<128x256xf32>
  %y32 = train.relu %h32 : tensor<128x256xf32>
  %dy32 = train.matmul %dz32, %w232 transpose_rhs accumulate f32 : tensor<128x64xf32>, tensor<256x64xf32> -> tensor<128x256xf32>
  %dh32 = train.relu_grad %dy32, %h32 : tensor<128x256xf32>
  %h2 = train.matmul %x, %w256, %b256 accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y2 = train.relu %h2 : tensor<128x256xf16>
  %dy2 = train.matmul %dz, %w2256 transpose_rhs accumulate f32 : tensor<128x64xf16>, tensor<256x64xf16> -> tensor<128x256xf16>
  %dh2 = train.relu_grad %dy2, %h2 : tensor<128x256xf16>
  %h3 = train.matmul %x, %w256, %b256 accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y3 = train.relu %h3 : tensor<128x256xf16>
  %dy3 = train.matmul %dz, %w2256, %b256 transpose_rhs accumulate f32 : tensor<128x64xf16>, tensor<256x64xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %dh3 = train.relu_grad %dy3, %h3 : tensor<128x256xf16>
  return %y, %dh, %y32, %dh32, %y2, %dh2, %dy2, %y3, %dh3 : tensor<128x192xf16>, tensor<128x192xf16>, tensor<128x256xf32>, tensor<128x256xf32>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// A linear layer's tanh GELU in the epilogue with its input kept (GELU_AUX_BIAS,
// two results), and the GEMM producing the GELU's output gradient with the
// GELU's derivative in its epilogue (DGELU, reading the aux matrix).
// The declarations: inputs, results, params.
// CHECK-DAG: func.func private @amp_cuda_gemm_gelu_aux(index, index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-DAG: func.func private @amp_cuda_gemm_dgelu(index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @linear_gelu
// CHECK: %[[Y:.*]]:2 = train.runtime_call @amp_cuda_gemm_gelu_aux(%arg0, %arg1, %arg2) [1, 1, 1, 128, 256, 784, 0, 0] : (tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>)
// CHECK-NOT: train.gelu
// CHECK: %[[DH:.*]] = train.runtime_call @amp_cuda_gemm_dgelu(%arg3, %arg4, %[[Y]]#1) [1, 1, 1, 128, 256, 64, 0, 1] : (tensor<128x64xf16>, tensor<256x64xf16>, tensor<128x256xf16>) -> tensor<128x256xf16>
// CHECK-NOT: train.gelu_grad
// CHECK: return %[[Y]]#0, %[[DH]]
func.func @linear_gelu(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>, %dz: tensor<128x64xf16>, %w2: tensor<256x64xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y = train.gelu %h approximate tanh : tensor<128x256xf16>
  %dy = train.matmul %dz, %w2 transpose_rhs accumulate f32 : tensor<128x64xf16>, tensor<256x64xf16> -> tensor<128x256xf16>
  %dh = train.gelu_grad %dy, %h approximate tanh : tensor<128x256xf16>
  return %y, %dh : tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// Without a gradient reading the GELU's input (an evaluation function): the
// epilogue without aux (3, GELU_BIAS). A bf16 GELU whose output gradient is
// not a GEMM's (or a GEMM's used twice): GELU_AUX_BIAS, and the gradient a
// kernel reading the aux matrix.
// CHECK-LABEL: func.func @gelu_forward_only
// CHECK: train.runtime_call @amp_cuda_gemm_bias(%arg0, %arg1, %arg2) [1, 1, 1, 128, 256, 784, 0, 0, 3]
// CHECK-NOT: train.gelu
// CHECK: return
func.func @gelu_forward_only(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>) -> tensor<128x256xf16> {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y = train.gelu %h approximate tanh : tensor<128x256xf16>
  return %y : tensor<128x256xf16>
}
// CHECK-LABEL: func.func @gelu_grad_kernel
// CHECK: %[[Y:.*]]:2 = train.runtime_call @amp_cuda_gemm_gelu_aux(%arg0, %arg1, %arg2) [2, 2, 1, 128, 256, 784, 0, 0]
// CHECK: %[[DH:.*]] = train.gelu_grad %arg3, %[[Y]]#1 approximate tanh : tensor<128x256xbf16>
// CHECK: %[[DY:.*]] = train.runtime_call @amp_cuda_gemm(%arg4, %arg5)
// CHECK: %[[DH2:.*]] = train.gelu_grad %[[DY]], %[[Y]]#1 approximate tanh
// CHECK: return %[[Y]]#0, %[[DH]], %[[DH2]], %[[DY]]
func.func @gelu_grad_kernel(%x: tensor<128x784xbf16>, %w: tensor<784x256xbf16>, %b: tensor<256xbf16>, %dy: tensor<128x256xbf16>, %dz: tensor<128x64xbf16>, %w2: tensor<64x256xbf16>) -> (tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<128x256xbf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xbf16>, tensor<784x256xbf16>, tensor<256xbf16> -> tensor<128x256xbf16>
  %y = train.gelu %h approximate tanh : tensor<128x256xbf16>
  %dh = train.gelu_grad %dy, %h approximate tanh : tensor<128x256xbf16>
  %dy2 = train.matmul %dz, %w2 accumulate f32 : tensor<128x64xbf16>, tensor<64x256xbf16> -> tensor<128x256xbf16>
  %dh2 = train.gelu_grad %dy2, %h approximate tanh : tensor<128x256xbf16>
  return %y, %dh, %dh2, %dy2 : tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<128x256xbf16>
}

// -----

// No DRELU (and so no mask) when the incoming gradient's GEMM reads rows
// that are not 16-byte aligned (k = 10 f16 elements): cuBLASLt's epilogue
// kernels are built for aligned layouts. The same rule holds for DGELU.
// CHECK-LABEL: func.func @epilogues_need_aligned_rows
// CHECK-NOT: relu_aux
// CHECK-NOT: drelu
// CHECK-NOT: dgelu
// CHECK: train.relu_grad
// CHECK: %[[G:.*]]:2 = train.runtime_call @amp_cuda_gemm_gelu_aux
// CHECK: %[[DG:.*]] = train.runtime_call @amp_cuda_gemm(%arg3, %arg4)
// CHECK: train.gelu_grad %[[DG]], %[[G]]#1
// CHECK: return
func.func @epilogues_need_aligned_rows(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>, %dz: tensor<128x10xf16>, %w2: tensor<256x10xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y = train.relu %h : tensor<128x256xf16>
  %dy = train.matmul %dz, %w2 transpose_rhs accumulate f32 : tensor<128x10xf16>, tensor<256x10xf16> -> tensor<128x256xf16>
  %dh = train.relu_grad %dy, %h : tensor<128x256xf16>
  %hg = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %yg = train.gelu %hg approximate tanh : tensor<128x256xf16>
  %dyg = train.matmul %dz, %w2 transpose_rhs accumulate f32 : tensor<128x10xf16>, tensor<256x10xf16> -> tensor<128x256xf16>
  %dhg = train.gelu_grad %dyg, %hg approximate tanh : tensor<128x256xf16>
  return %y, %dh, %yg, %dhg : tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// Not fused: the exact (erf) GELU (cuBLASLt's is the tanh form), n not a
// multiple of 8 (the aux leading dimension), f32 operands, a pre-activation
// read by something else, and a gradient of the exact form.
// CHECK-LABEL: func.func @gelu_not_fused
// CHECK-NOT: gelu_aux
// CHECK-NOT: [1, 1, 1, 128, 256, 784, 0, 0, 3]
// CHECK: train.gelu %
// CHECK: train.gelu %
// CHECK: train.gelu %
// CHECK: train.gelu %
// CHECK: train.gelu %
// CHECK: return
func.func @gelu_not_fused(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>, %w5: tensor<784x250xf16>, %b5: tensor<250xf16>, %x32: tensor<128x784xf32>, %w32: tensor<784x256xf32>, %b32: tensor<256xf32>, %dy: tensor<128x256xf16>) -> (tensor<128x256xf16>, tensor<128x250xf16>, tensor<128x256xf32>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y = train.gelu %h : tensor<128x256xf16>
  %h5 = train.matmul %x, %w5, %b5 accumulate f32 : tensor<128x784xf16>, tensor<784x250xf16>, tensor<250xf16> -> tensor<128x250xf16>
  %y5 = train.gelu %h5 approximate tanh : tensor<128x250xf16>
  %h32 = train.matmul %x32, %w32, %b32 accumulate f32 : tensor<128x784xf32>, tensor<784x256xf32>, tensor<256xf32> -> tensor<128x256xf32>
  %y32 = train.gelu %h32 approximate tanh : tensor<128x256xf32>
  %h2 = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y2 = train.gelu %h2 approximate tanh : tensor<128x256xf16>
  %h3 = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y3 = train.gelu %h3 approximate tanh : tensor<128x256xf16>
  %g3 = train.gelu_grad %dy, %h3 : tensor<128x256xf16>
  return %y, %y5, %y32, %y2, %h2, %y3, %g3 : tensor<128x256xf16>, tensor<128x250xf16>, tensor<128x256xf32>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// Not fused: a pre-activation read by something else than the ReLU and its
// gradient (here returned), a pre-activation that is a gradient's incoming
// gradient rather than its input, and a matmul without bias.
// CHECK-LABEL: func.func @relu_not_fused
// CHECK-NOT: [1, 1, 1, 128, 256, 784, 0, 0, 2]
// CHECK: train.relu %
// CHECK: train.relu %
// CHECK: train.relu %
// CHECK: return
func.func @relu_not_fused(%x: tensor<128x784xf16>, %w: tensor<784x256xf16>, %b: tensor<256xf16>) -> (tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %h = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y = train.relu %h : tensor<128x256xf16>
  %h2 = train.matmul %x, %w, %b accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %y2 = train.relu %h2 : tensor<128x256xf16>
  %g = train.relu_grad %h2, %y2 : tensor<128x256xf16>
  %h3 = train.matmul %x, %w accumulate f32 : tensor<128x784xf16>, tensor<784x256xf16> -> tensor<128x256xf16>
  %y3 = train.relu %h3 : tensor<128x256xf16>
  return %h, %y, %y2, %g, %y3 : tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// The fusions only move a value to a place its operands reach: the bias
// gradient's reduction comes before the weight GEMM whose other operand is
// made after it, and a ReLU gradient before its ReLU (hand-written orders).
// Nothing is fused across those (the result was invalid IR: a use before its
// definition); each op becomes its own call.
// CHECK-LABEL: func.func @fusions_respect_dominance
// CHECK-NOT: amp_cuda_gemm_bgrad(
// CHECK: train.reduce_sum
// CHECK: train.runtime_call @amp_cuda_gemm(
// CHECK: %[[H:.*]] = train.runtime_call @amp_cuda_gemm_bias(%arg0, %arg2, %arg3) [1, 1, 1, 128, 256, 784, 0, 0, 1]
// CHECK: train.relu_grad %arg1, %[[H]]
// CHECK: train.relu %[[H]]
func.func @fusions_respect_dominance(%x0: tensor<128x784xf16>, %dy: tensor<128x256xf16>,
    %w: tensor<784x256xf16>, %b: tensor<256xf16>) -> (tensor<256xf16>, tensor<784x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>) {
  %db = train.reduce_sum %dy axes [0] : tensor<128x256xf16> -> tensor<256xf16>
  %x = train.relu %x0 : tensor<128x784xf16>
  %dw = train.matmul %x, %dy transpose_lhs : tensor<128x784xf16>, tensor<128x256xf16> -> tensor<784x256xf16>
  %h = train.matmul %x0, %w, %b : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
  %g = train.relu_grad %dy, %h : tensor<128x256xf16>
  %y = train.relu %h : tensor<128x256xf16>
  return %db, %dw, %g, %y : tensor<256xf16>, tensor<784x256xf16>, tensor<128x256xf16>, tensor<128x256xf16>
}

// -----

// The embedding gradient is the CUDA runtime's scatter-add in f32 atomics
// (positions x dim additions; the linalg form reduces over vocabulary x dim
// x positions): params dtype(bf16 = 2), positions, dim, vocab; an f32 table
// rounded once to bf16 by a generic (a GPU kernel after the GPU mapping).
// CHECK: func.func private @amp_cuda_embedding_grad(index, index, index, i64, i64, i64, i64)
// CHECK-LABEL: func.func @embedding_grad
// CHECK: %[[T:.*]] = train.runtime_call @amp_cuda_embedding_grad(%arg0, %arg1) [2, 6, 4, 10] : (tensor<2x3x4xbf16>, tensor<2x3xi32>) -> tensor<10x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[T]] : tensor<10x4xf32>) outs(%{{.*}} : tensor<10x4xbf16>)
// CHECK-NOT: train.embedding_grad
func.func @embedding_grad(%dy: tensor<2x3x4xbf16>, %ids: tensor<2x3xi32>) -> tensor<10x4xbf16> {
  %0 = train.embedding_grad %dy, %ids : tensor<2x3x4xbf16>, tensor<2x3xi32> -> tensor<10x4xbf16>
  return %0 : tensor<10x4xbf16>
}
