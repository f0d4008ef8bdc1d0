// RUN: amp-opt %s -split-input-file -verify-diagnostics

// Every verifier, shape-rule and attribute diagnostic of the train dialect.

//===----------------------------------------------------------------------===//
// Element-wise binary ops
//===----------------------------------------------------------------------===//

func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'train.add' op operands of shapes [2, 3] and [4] are not broadcast-compatible (dimension 3 vs 4 at 1 from the end)}}
  // expected-error @+1 {{'train.add' op failed to infer returned types}}
  %0 = train.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mul_mixed_types(%a: tensor<4xf16>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{'train.mul' op operand element types 'f16' and 'f32' differ (insert a train.cast)}}
  // expected-error @+1 {{'train.mul' op failed to infer returned types}}
  %0 = train.mul %a, %b : tensor<4xf16>, tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sub_wrong_result(%a: tensor<4x1xf32>, %b: tensor<3xf32>) -> tensor<4x4xf32> {
  // expected-error @+2 {{'train.sub' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x4xf32>'}}
  // expected-error @+1 {{'train.sub' op failed to infer returned types}}
  %0 = train.sub %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @dynamic_shape(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'train.relu' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<?x4xf32>'}}
  %0 = train.relu %a : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @f64_not_allowed(%a: tensor<4xf64>) -> tensor<4xf64> {
  // expected-error @+1 {{'train.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<4xf64>'}}
  %0 = train.exp %a : tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @gelu_bad_approximation(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = train.gelu %a approximate erf : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_contracting(%x: tensor<128x784xf32>, %w: tensor<512x10xf32>) -> tensor<128x10xf32> {
  // expected-error @+2 {{'train.matmul' op contracting dims 784 and 512 differ (lhs [128, 784], rhs [512, 10])}}
  // expected-error @+1 {{'train.matmul' op failed to infer returned types}}
  %0 = train.matmul %x, %w : tensor<128x784xf32>, tensor<512x10xf32> -> tensor<128x10xf32>
  return %0 : tensor<128x10xf32>
}

// -----

func.func @matmul_contracting_transposed(%x: tensor<128x784xf32>, %w: tensor<784x10xf32>) -> tensor<128x784xf32> {
  // expected-error @+2 {{'train.matmul' op contracting dims 784 and 10 differ (lhs [128, 784], rhs [784, 10] transposed)}}
  // expected-error @+1 {{'train.matmul' op failed to infer returned types}}
  %0 = train.matmul %x, %w transpose_rhs : tensor<128x784xf32>, tensor<784x10xf32> -> tensor<128x784xf32>
  return %0 : tensor<128x784xf32>
}

// -----

func.func @matmul_rank(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  // expected-error @+2 {{'train.matmul' op operands must be rank 2, got [2, 3, 4] and [4, 5] (use train.batch_matmul for rank 3)}}
  // expected-error @+1 {{'train.matmul' op failed to infer returned types}}
  %0 = train.matmul %x, %w : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

func.func @matmul_mixed(%x: tensor<2x4xf16>, %w: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{'train.matmul' op operand element types 'f16' and 'f32' differ (insert a train.cast)}}
  // expected-error @+1 {{'train.matmul' op failed to infer returned types}}
  %0 = train.matmul %x, %w : tensor<2x4xf16>, tensor<4x5xf32> -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_bias_shape(%x: tensor<8x4xf32>, %w: tensor<4x10xf32>, %b: tensor<8xf32>) -> tensor<8x10xf32> {
  // expected-error @+2 {{'train.matmul' op bias shape [8] is not [10] (the result's columns)}}
  // expected-error @+1 {{'train.matmul' op failed to infer returned types}}
  %0 = train.matmul %x, %w, %b : tensor<8x4xf32>, tensor<4x10xf32>, tensor<8xf32> -> tensor<8x10xf32>
  return %0 : tensor<8x10xf32>
}

// -----

func.func @matmul_bias_type(%x: tensor<8x4xf16>, %w: tensor<4x10xf16>, %b: tensor<10xf32>) -> tensor<8x10xf16> {
  // expected-error @+2 {{'train.matmul' op operand element types 'f16' and 'f32' differ (insert a train.cast)}}
  // expected-error @+1 {{'train.matmul' op failed to infer returned types}}
  %0 = train.matmul %x, %w, %b : tensor<8x4xf16>, tensor<4x10xf16>, tensor<10xf32> -> tensor<8x10xf16>
  return %0 : tensor<8x10xf16>
}

// -----

func.func @matmul_accumulate_bf16(%x: tensor<8x4xf16>, %w: tensor<4x10xf16>) -> tensor<8x10xf16> {
  // expected-error @+1 {{'train.matmul' op accumulate type must be f32 or the operand type 'f16', got 'bf16'}}
  %0 = train.matmul %x, %w accumulate bf16 : tensor<8x4xf16>, tensor<4x10xf16> -> tensor<8x10xf16>
  return %0 : tensor<8x10xf16>
}

// -----

func.func @conv_accumulate_f16(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'train.conv2d' op accumulate type must be f32 or the operand type 'f32', got 'f16'}}
  %0 = train.conv2d %x, %w accumulate f16 : tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @batch_matmul_rank(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>) -> tensor<4x6xf32> {
  // expected-error @+2 {{'train.batch_matmul' op operands must be at least rank 3, got [4, 5] and [5, 6]}}
  // expected-error @+1 {{'train.batch_matmul' op failed to infer returned types}}
  %0 = train.batch_matmul %a, %b : tensor<4x5xf32>, tensor<5x6xf32> -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @batch_matmul_batch(%a: tensor<4x2x3xf32>, %b: tensor<5x3x2xf32>) -> tensor<4x2x2xf32> {
  // expected-error @+2 {{'train.batch_matmul' op batch dims [4] and [5] are not broadcast-compatible}}
  // expected-error @+1 {{'train.batch_matmul' op failed to infer returned types}}
  %0 = train.batch_matmul %a, %b : tensor<4x2x3xf32>, tensor<5x3x2xf32> -> tensor<4x2x2xf32>
  return %0 : tensor<4x2x2xf32>
}

// -----

func.func @batch_matmul_contracting(%a: tensor<4x2x3xf32>, %b: tensor<4x2x3xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+2 {{'train.batch_matmul' op contracting dims 3 and 2 differ (lhs [4, 2, 3], rhs [4, 2, 3])}}
  // expected-error @+1 {{'train.batch_matmul' op failed to infer returned types}}
  %0 = train.batch_matmul %a, %b : tensor<4x2x3xf32>, tensor<4x2x3xf32> -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @conv_input_rank(%x: tensor<3x28x28xf32>, %w: tensor<8x3x3x3xf32>) -> tensor<1x8x26x26xf32> {
  // expected-error @+2 {{'train.conv2d' op input must be rank 4 (NCHW), got [3, 28, 28]}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w : tensor<3x28x28xf32>, tensor<8x3x3x3xf32> -> tensor<1x8x26x26xf32>
  return %0 : tensor<1x8x26x26xf32>
}

// -----

func.func @conv_filter_rank(%x: tensor<1x3x28x28xf32>, %w: tensor<8x3x3xf32>) -> tensor<1x8x26x26xf32> {
  // expected-error @+2 {{'train.conv2d' op filter must be rank 4 (FCHW), got [8, 3, 3]}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w : tensor<1x3x28x28xf32>, tensor<8x3x3xf32> -> tensor<1x8x26x26xf32>
  return %0 : tensor<1x8x26x26xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x28x28xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x26x26xf32> {
  // expected-error @+2 {{'train.conv2d' op input channels 3 and filter channels 1 differ}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w : tensor<1x3x28x28xf32>, tensor<8x1x3x3xf32> -> tensor<1x8x26x26xf32>
  return %0 : tensor<1x8x26x26xf32>
}

// -----

func.func @conv_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{'train.conv2d' op bias shape [3] is not [4] (the filter's output channels)}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w, %b : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_bias_type(%x: tensor<1x3x8x8xf16>, %w: tensor<4x3x3x3xf16>, %b: tensor<4xf32>) -> tensor<1x4x6x6xf16> {
  // expected-error @+2 {{'train.conv2d' op operand element types 'f16' and 'f32' differ (insert a train.cast)}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w, %b : tensor<1x3x8x8xf16>, tensor<4x3x3x3xf16>, tensor<4xf32> -> tensor<1x4x6x6xf16>
  return %0 : tensor<1x4x6x6xf16>
}

// -----

func.func @conv_window(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x5x5xf32>) -> tensor<1x1x1x1xf32> {
  // expected-error @+2 {{'train.conv2d' op window 5 (kernel 5, dilation 1) exceeds padded input 4 in dimension H}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w : tensor<1x1x4x4xf32>, tensor<1x1x5x5xf32> -> tensor<1x1x1x1xf32>
  return %0 : tensor<1x1x1x1xf32>
}

// -----

func.func @conv_strides_count(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+2 {{'train.conv2d' op strides must have 2 values (H, W), got 3}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w strides [1, 1, 1] : tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x6x6xf32>
  return %0 : tensor<1x1x6x6xf32>
}

// -----

func.func @conv_negative_padding(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+2 {{'train.conv2d' op padding values must be >= 0, got [-1, 0]}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w padding [-1, 0] : tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x6x6xf32>
  return %0 : tensor<1x1x6x6xf32>
}

// -----

func.func @conv_zero_dilation(%x: tensor<1x1x8x8xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf32> {
  // expected-error @+2 {{'train.conv2d' op dilation values must be >= 1, got [0, 1]}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w dilation [0, 1] : tensor<1x1x8x8xf32>, tensor<1x1x3x3xf32> -> tensor<1x1x6x6xf32>
  return %0 : tensor<1x1x6x6xf32>
}

// -----

func.func @conv_mixed(%x: tensor<1x1x8x8xf16>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x6x6xf16> {
  // expected-error @+2 {{'train.conv2d' op operand element types 'f16' and 'f32' differ (insert a train.cast)}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w : tensor<1x1x8x8xf16>, tensor<1x1x3x3xf32> -> tensor<1x1x6x6xf16>
  return %0 : tensor<1x1x6x6xf16>
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

// -----

func.func @pool_rank(%x: tensor<8x8xf32>) -> tensor<4x4xf32> {
  // expected-error @+2 {{'train.max_pool2d' op input must be rank 4 (NCHW), got [8, 8]}}
  // expected-error @+1 {{'train.max_pool2d' op failed to infer returned types}}
  %0 = train.max_pool2d %x kernel [2, 2] strides [2, 2] : tensor<8x8xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @pool_kernel_count(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+2 {{'train.avg_pool2d' op kernel must have 2 values (H, W), got 1}}
  // expected-error @+1 {{'train.avg_pool2d' op failed to infer returned types}}
  %0 = train.avg_pool2d %x kernel [2] strides [2, 2] : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @pool_zero_stride(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+2 {{'train.max_pool2d' op strides values must be >= 1, got [0, 2]}}
  // expected-error @+1 {{'train.max_pool2d' op failed to infer returned types}}
  %0 = train.max_pool2d %x kernel [2, 2] strides [0, 2] : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @pool_padding(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+2 {{'train.max_pool2d' op padding 2 is more than half the kernel 2 in dimension H}}
  // expected-error @+1 {{'train.max_pool2d' op failed to infer returned types}}
  %0 = train.max_pool2d %x kernel [2, 2] strides [2, 2] padding [2, 0] : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @pool_dilated_window_too_big(%x: tensor<1x1x4x8xf32>) -> tensor<1x1x1x3xf32> {
  // expected-error @+2 {{'train.max_pool2d' op window 5 (kernel 3, dilation 2) exceeds padded input 4 in dimension H}}
  // expected-error @+1 {{'train.max_pool2d' op failed to infer returned types}}
  %0 = train.max_pool2d %x kernel [3, 3] strides [1, 1] dilation [2, 1] : tensor<1x1x4x8xf32> -> tensor<1x1x1x3xf32>
  return %0 : tensor<1x1x1x3xf32>
}

// -----

func.func @pool_zero_dilation(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+2 {{'train.max_pool2d' op dilation values must be >= 1, got [1, 0]}}
  // expected-error @+1 {{'train.max_pool2d' op failed to infer returned types}}
  %0 = train.max_pool2d %x kernel [2, 2] strides [2, 2] dilation [1, 0] : tensor<1x1x8x8xf32> -> tensor<1x1x4x4xf32>
  return %0 : tensor<1x1x4x4xf32>
}

// -----

func.func @pool_grad_dilation(%dy: tensor<1x1x4x4xf32>, %x: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  // expected-error @+1 {{'train.pool2d_grad' op gradient 'tensor<1x1x4x4xf32>' does not match the pooling output of 'tensor<1x1x8x8xf32>', [1, 1, 3, 3] of 'f32'}}
  %0 = train.pool2d_grad %dy, %x max kernel [2, 2] strides [2, 2] dilation [2, 2] : tensor<1x1x4x4xf32>, tensor<1x1x8x8xf32>
  return %0 : tensor<1x1x8x8xf32>
}

// -----

func.func @pool_kernel_too_big(%x: tensor<1x1x8x2xf32>) -> tensor<1x1x4x1xf32> {
  // expected-error @+2 {{'train.avg_pool2d' op kernel 3 exceeds padded input 2 in dimension W}}
  // expected-error @+1 {{'train.avg_pool2d' op failed to infer returned types}}
  %0 = train.avg_pool2d %x kernel [3, 3] strides [2, 2] : tensor<1x1x8x2xf32> -> tensor<1x1x4x1xf32>
  return %0 : tensor<1x1x4x1xf32>
}

//===----------------------------------------------------------------------===//
// Softmax, normalization, dropout
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'train.softmax' op axis 2 is out of range for a rank-2 input (expected 0..1)}}
  %0 = train.softmax %x axis 2 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @softmax_causal_not_square(%x: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{'train.softmax' op causal softmax needs square trailing [S, S] scores and axis = the last dimension, got shape [4, 8, 16] and axis 2}}
  %0 = train.softmax %x axis 2 causal : tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}

// -----

func.func @softmax_causal_axis(%x: tensor<4x16x16xf32>) -> tensor<4x16x16xf32> {
  // expected-error @+1 {{'train.softmax' op causal softmax needs square trailing [S, S] scores and axis = the last dimension, got shape [4, 16, 16] and axis 1}}
  %0 = train.softmax %x axis 1 causal : tensor<4x16x16xf32>
  return %0 : tensor<4x16x16xf32>
}

// -----

func.func @log_softmax_negative_axis(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'train.log_softmax' op axis -1 is out of range for a rank-2 input (expected 0..1)}}
  %0 = train.log_softmax %x axis -1 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @layer_norm_shape(%x: tensor<8x256xf32>, %g: tensor<128xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{'train.layer_norm' op scale shape [128] is not a non-empty trailing part of the input shape [8, 256]}}
  %0 = train.layer_norm %x, %g, %g : tensor<8x256xf32>, tensor<128xf32>
  return %0 : tensor<8x256xf32>
}

// -----

func.func @layer_norm_types(%x: tensor<8x256xf16>, %g: tensor<256xf32>) -> tensor<8x256xf16> {
  // expected-error @+1 {{'train.layer_norm' op input element type 'f16' and scale/bias element type 'f32' differ}}
  %0 = train.layer_norm %x, %g, %g : tensor<8x256xf16>, tensor<256xf32>
  return %0 : tensor<8x256xf16>
}

// -----

func.func @layer_norm_epsilon(%x: tensor<8x256xf32>, %g: tensor<256xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{'train.layer_norm' op epsilon must be positive, got 0}}
  %0 = train.layer_norm %x, %g, %g epsilon 0.0 : tensor<8x256xf32>, tensor<256xf32>
  return %0 : tensor<8x256xf32>
}

// -----

// expected-note @+1 {{prior use here}}
func.func @layer_norm_bias_type(%x: tensor<8x256xf32>, %g: tensor<256xf32>, %b: tensor<256xf16>) -> tensor<8x256xf32> {
  // expected-error @+1 {{use of value '%b' expects different type than prior uses: 'tensor<256xf32>' vs 'tensor<256xf16>'}}
  %0 = train.layer_norm %x, %g, %b : tensor<8x256xf32>, tensor<256xf32>
  return %0 : tensor<8x256xf32>
}

// -----

func.func @batch_norm_rank(%x: tensor<32xf32>, %s: tensor<32xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'train.batch_norm' op input must have rank >= 2 ([N, C, ...]), got [32]}}
  %0:3 = train.batch_norm %x, %s, %s, %s, %s : tensor<32xf32>, tensor<32xf32>
  return %0#0 : tensor<32xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<8x32x4x4xf32>, %s: tensor<16xf32>) -> tensor<8x32x4x4xf32> {
  // expected-error @+1 {{'train.batch_norm' op scale, bias and running statistics must be [32] (the input's channels), got [16]}}
  %0:3 = train.batch_norm %x, %s, %s, %s, %s : tensor<8x32x4x4xf32>, tensor<16xf32>
  return %0#0 : tensor<8x32x4x4xf32>
}

// -----

func.func @batch_norm_one_value(%x: tensor<1x32x1x1xf32>, %s: tensor<32xf32>) -> tensor<1x32x1x1xf32> {
  // expected-error @+1 {{'train.batch_norm' op needs more than one value per channel (batch x spatial = 1)}}
  %0:3 = train.batch_norm %x, %s, %s, %s, %s : tensor<1x32x1x1xf32>, tensor<32xf32>
  return %0#0 : tensor<1x32x1x1xf32>
}

// -----

// One value per channel on each of two ranks is two values: enough.
func.func @batch_norm_sync_ranks(%x: tensor<1x32x1x1xf32>, %s: tensor<32xf32>) -> tensor<1x32x1x1xf32> {
  // expected-error @+1 {{'train.batch_norm_grad' op ranks must be at least 1, got 0}}
  %g:3 = train.batch_norm_grad %x, %x, %s ranks 0 : tensor<1x32x1x1xf32>, tensor<32xf32>
  %0:3 = train.batch_norm %x, %s, %s, %s, %s ranks 2 : tensor<1x32x1x1xf32>, tensor<32xf32>
  return %0#0 : tensor<1x32x1x1xf32>
}

// -----

func.func @batch_norm_momentum(%x: tensor<8x32xf32>, %s: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'train.batch_norm' op momentum must be in [0, 1], got 1.5}}
  %0:3 = train.batch_norm %x, %s, %s, %s, %s momentum 1.5 : tensor<8x32xf32>, tensor<32xf32>
  return %0#0 : tensor<8x32xf32>
}

// -----

func.func @batch_norm_epsilon(%x: tensor<8x32xf32>, %s: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'train.batch_norm' op epsilon must be positive, got -1}}
  %0:3 = train.batch_norm %x, %s, %s, %s, %s epsilon -1.0 : tensor<8x32xf32>, tensor<32xf32>
  return %0#0 : tensor<8x32xf32>
}

// -----

func.func @dropout_rate(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'train.dropout' op rate must be in [0, 1), got 1}}
  %0 = train.dropout %x rate 1.0 seed 0 : tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @dropout_step_type(%x: tensor<8x32xf32>, %count: tensor<f32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'train.dropout' op operand #1 must be 0D tensor of 32-bit signless integer values, but got 'tensor<f32>'}}
  %0 = "train.dropout"(%x, %count) <{rate = 0.1 : f64, seed = 0 : i64}> : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @increment_rank(%count: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'train.increment' op operand #0 must be 0D tensor of 32-bit signless integer values, but got 'tensor<2xi32>'}}
  %0 = "train.increment"(%count) : (tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

//===----------------------------------------------------------------------===//
// Reductions, embedding
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_axis(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'train.reduce_sum' op axis 2 is out of range for a rank-2 input (expected 0..1)}}
  // expected-error @+1 {{'train.reduce_sum' op failed to infer returned types}}
  %0 = train.reduce_sum %x axes [2] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_twice(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'train.reduce_mean' op axis 1 is listed twice}}
  // expected-error @+1 {{'train.reduce_mean' op failed to infer returned types}}
  %0 = train.reduce_mean %x axes [1, 1] : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_empty(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{'train.reduce_sum' op axes must not be empty}}
  // expected-error @+1 {{'train.reduce_sum' op failed to infer returned types}}
  %0 = train.reduce_sum %x axes [] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_wrong_result(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'train.reduce_sum' op inferred type(s) 'tensor<2x1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'train.reduce_sum' op failed to infer returned types}}
  %0 = train.reduce_sum %x axes [1] keep_dims : tensor<2x3xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @embedding_table(%t: tensor<1000xf32>, %ids: tensor<8xi32>) -> tensor<8x1xf32> {
  // expected-error @+2 {{'train.embedding' op table must be rank 2 [vocab, dim], got [1000]}}
  // expected-error @+1 {{'train.embedding' op failed to infer returned types}}
  %0 = train.embedding %t, %ids : tensor<1000xf32>, tensor<8xi32> -> tensor<8x1xf32>
  return %0 : tensor<8x1xf32>
}

// -----

func.func @embedding_float_ids(%t: tensor<1000x4xf32>, %ids: tensor<8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'train.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = train.embedding %t, %ids : tensor<1000x4xf32>, tensor<8xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{'train.reshape' op cannot reshape [2, 3] (6 elements) to [7] (7 elements)}}
  %0 = train.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reshape_type(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'train.reshape' op element type 'f32' of the input and 'f16' of the result differ (only train.cast converts)}}
  %0 = train.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

func.func @transpose_count(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{'train.transpose' op permutation [1, 0, 2] has 3 entries for a rank-2 input}}
  // expected-error @+1 {{'train.transpose' op failed to infer returned types}}
  %0 = train.transpose %x permutation [1, 0, 2] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_repeat(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{'train.transpose' op permutation [0, 0] is not a permutation of 0..1}}
  // expected-error @+1 {{'train.transpose' op failed to infer returned types}}
  %0 = train.transpose %x permutation [0, 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @broadcast_shape(%x: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'train.broadcast' op input shape [3] does not broadcast to [2, 4]}}
  %0 = train.broadcast %x : tensor<3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_type(%x: tensor<4xf32>) -> tensor<2x4xbf16> {
  // expected-error @+1 {{'train.broadcast' op element type 'f32' of the input and 'bf16' of the result differ (only train.cast converts)}}
  %0 = train.broadcast %x : tensor<4xf32> -> tensor<2x4xbf16>
  return %0 : tensor<2x4xbf16>
}

// -----

func.func @concat_dims(%a: tensor<8x16xf32>, %b: tensor<4x32xf32>) -> tensor<8x48xf32> {
  // expected-error @+2 {{'train.concat' op operand 1 shape [4, 32] differs from operand 0 shape [8, 16] in dimension 0 (only axis 1 may differ)}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %0 = train.concat %a, %b axis 1 : tensor<8x16xf32>, tensor<4x32xf32> -> tensor<8x48xf32>
  return %0 : tensor<8x48xf32>
}

// -----

func.func @concat_rank(%a: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<16x16xf32> {
  // expected-error @+2 {{'train.concat' op operand 1 has rank 1, operand 0 has rank 2}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %0 = train.concat %a, %b axis 0 : tensor<8x16xf32>, tensor<8xf32> -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}

// -----

func.func @concat_axis(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+2 {{'train.concat' op axis 2 is out of range for a rank-2 input (expected 0..1)}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %0 = train.concat %a axis 2 : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @concat_types(%a: tensor<8x16xf32>, %b: tensor<8x16xf16>) -> tensor<8x32xf32> {
  // expected-error @+2 {{'train.concat' op operand element types 'f32' and 'f16' differ (insert a train.cast)}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %0 = train.concat %a, %b axis 1 : tensor<8x16xf32>, tensor<8x16xf16> -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

func.func @concat_empty() -> tensor<8x16xf32> {
  // expected-error @+2 {{'train.concat' op needs at least one operand}}
  // expected-error @+1 {{'train.concat' op failed to infer returned types}}
  %0 = "train.concat"() <{axis = 0 : i64}> : () -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

func.func @constant_type() -> tensor<4xf32> {
  // expected-error @+1 {{'train.constant' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 32-bit signless integer or 1-bit signless integer values, but got 'tensor<4xf64>'}}
  %0 = train.constant dense<1.0> : tensor<4xf64>
  return %0 : tensor<4xf64>
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

func.func @ce_batch(%logits: tensor<128x10xf32>, %labels: tensor<64xi32>) -> tensor<f32> {
  // expected-error @+2 {{'train.cross_entropy' op labels batch 64 does not match logits batch 128}}
  // expected-error @+1 {{'train.cross_entropy' op failed to infer returned types}}
  %0 = train.cross_entropy %logits, %labels : tensor<128x10xf32>, tensor<64xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @ce_logits_rank(%logits: tensor<10xf32>, %labels: tensor<10xi32>) -> tensor<f32> {
  // expected-error @+2 {{'train.cross_entropy' op logits must be rank 2 [batch, classes], got [10]}}
  // expected-error @+1 {{'train.cross_entropy' op failed to infer returned types}}
  %0 = train.cross_entropy %logits, %labels : tensor<10xf32>, tensor<10xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @ce_labels_rank(%logits: tensor<4x10xf32>, %labels: tensor<4x1xi32>) -> tensor<f32> {
  // expected-error @+2 {{'train.cross_entropy' op labels must be rank 1 [batch], got [4, 1]}}
  // expected-error @+1 {{'train.cross_entropy' op failed to infer returned types}}
  %0 = train.cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4x1xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @ce_labels_type(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'train.cross_entropy' op operand #1 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<4xi64>'}}
  %0 = train.cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @ce_result_rank(%logits: tensor<4x10xf32>, %labels: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.cross_entropy' op result #0 must be 0D tensor of 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<4xf32>'}}
  %0 = train.cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4xi32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @mse_result_type(%p: tensor<4xf16>) -> tensor<f32> {
  // expected-error @+2 {{'train.mse_loss' op inferred type(s) 'tensor<f16>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'train.mse_loss' op failed to infer returned types}}
  %0 = train.mse_loss %p, %p : tensor<4xf16> -> tensor<f32>
  return %0 : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

// -----

func.func @cast_int(%x: tensor<4xi32>) -> tensor<4xf16> {
  // expected-error @+1 {{'train.cast' op can only cast between f32, f16 and bf16, got 'i32' to 'f16'}}
  %0 = train.cast %x : tensor<4xi32> to tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @cast_f64(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'train.cast' op can only cast between f32, f16 and bf16, got 'f32' to 'f64'}}
  %0 = train.cast %x : tensor<4xf32> to tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @cast_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf16> {
  // expected-error @+1 {{'train.cast' op input shape [2, 3] and result shape [3, 2] differ (a cast keeps the shape)}}
  %0 = train.cast %x : tensor<2x3xf32> to tensor<3x2xf16>
  return %0 : tensor<3x2xf16>
}

//===----------------------------------------------------------------------===//
// Result attributes: the model's outputs
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'train.output' must be a unit attribute, got 1 : i64}}
func.func @output_not_unit(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {train.output = 1}) {
  %l = train.reduce_sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'train.output' on result #0: a forward function returns its loss first, the model's outputs last}}
func.func @output_is_loss(%x: tensor<4xf32>) -> (tensor<f32> {train.output}) {
  %l = train.reduce_sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{'train.output' on result #1 but not on result #2: the model's outputs are the last results, after the state updates}}
func.func @output_before_state(%x: tensor<4xf32>, %m: tensor<4xf32> {train.state}) -> (tensor<f32>, tensor<4xf32> {train.output}, tensor<4xf32>) {
  %l = train.reduce_sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  return %l, %x, %m : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{unknown train result attribute 'train.outputs' (expected 'train.output')}}
func.func @output_misspelt(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {train.outputs}) {
  %l = train.reduce_sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Parameter attributes
//===----------------------------------------------------------------------===//

// -----

// expected-error @+1 {{'train.param' must be a unit attribute, got true}}
func.func @param_not_unit(%w: tensor<4xf32> {train.param = true}) {
  return
}

// -----

// expected-error @+1 {{parameter #0 must be a statically shaped f32, f16 or bf16 tensor, got 'tensor<4xi32>'}}
func.func @param_int(%w: tensor<4xi32> {train.param}) {
  return
}

// -----

// expected-error @+1 {{'train.state' must be a unit attribute, got 1 : i64}}
func.func @state_not_unit(%m: tensor<4xf32> {train.state = 1}) {
  return
}

// -----

// expected-error @+1 {{state #0 must be a statically shaped f32, f16 or bf16 (or i32) tensor, got 'tensor<?xf32>'}}
func.func @state_dynamic(%m: tensor<?xf32> {train.state}) {
  return
}

// -----

// expected-error @+1 {{argument #0 cannot be both a parameter and state}}
func.func @param_and_state(%m: tensor<4xf32> {train.param, train.state}) {
  return
}

// -----

// expected-error @+1 {{'train.init' must be a #train.init attribute, got "zeros"}}
func.func @init_string(%w: tensor<4xf32> {train.param, train.init = "zeros"}) {
  return
}

// -----

// expected-error @+1 {{'train.init' on argument #0 needs 'train.param', 'train.state' or 'train.opt_state' (only parameters and state are initialized)}}
func.func @init_without_param(%w: tensor<4xf32> {train.init = #train.init<zeros>}) {
  return
}

// -----

// expected-error @+1 {{#train.init<kaiming_uniform> cannot derive fan_in from a rank-1 parameter; give it explicitly, e.g. #train.init<kaiming_uniform(fan_in = N)>}}
func.func @init_bias_fans(%b: tensor<256xf32> {train.param, train.init = #train.init<kaiming_uniform>}) {
  return
}

// -----

// expected-error @+1 {{#train.init<xavier_normal> cannot derive fan_out from a rank-1 parameter; give it explicitly, e.g. #train.init<xavier_normal(fan_in = N, fan_out = M)>}}
func.func @init_xavier_fan_out(%b: tensor<256xf32> {train.param, train.init = #train.init<xavier_normal(fan_in = 4)>}) {
  return
}

// -----

// expected-error @+1 {{unknown train argument attribute 'train.weight' (expected 'train.param', 'train.state', 'train.init', 'train.opt_state', 'train.master', 'train.scaler_state', 'train.lr', 'train.param_group' or 'train.weight_decay')}}
func.func @unknown_arg_attr(%w: tensor<4xf32> {train.weight}) {
  return
}

// -----

// expected-error @+1 {{unknown initializer 'he_uniform'; expected one of zeros, ones, constant, normal, uniform, fan_in_uniform, kaiming_uniform, kaiming_normal, xavier_uniform, xavier_normal, seed}}
func.func @init_unknown(%w: tensor<4x4xf32> {train.param, train.init = #train.init<he_uniform>}) {
  return
}

// -----

// expected-error @+1 {{#train.init<uniform> needs a positive bound, got -0.5}}
func.func @init_negative_bound(%w: tensor<4x4xf32> {train.param, train.init = #train.init<uniform(-0.5)>}) {
  return
}

// -----

// expected-error @+1 {{#train.init<normal> needs a positive std, got 0}}
func.func @init_zero_std(%w: tensor<4x4xf32> {train.param, train.init = #train.init<normal(0.0)>}) {
  return
}

// -----

// expected-error @+1 {{fan_out is not used by kaiming_uniform (only xavier_*)}}
func.func @init_fan_out_kaiming(%w: tensor<4x4xf32> {train.param, train.init = #train.init<kaiming_uniform(fan_in = 3, fan_out = 3)>}) {
  return
}

// -----

// expected-error @+1 {{#train.init fans must be positive, got fan_in = -3, fan_out = 0}}
func.func @init_negative_fan(%w: tensor<4xf32> {train.param, train.init = #train.init<kaiming_uniform(fan_in = -3)>}) {
  return
}

// -----

// expected-error @+1 {{#train.init<seed> starts an i32 counter (the step counter dropout masks are keyed by), not argument #0 of type 'tensor<4x4xf32>'}}
func.func @init_seed_on_float(%w: tensor<4x4xf32> {train.param, train.init = #train.init<seed>}) {
  return
}

//===----------------------------------------------------------------------===//
// Malformed generic ops: attributes are checked before any shape rule runs
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_missing_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.softmax' op requires attribute 'axis'}}
  %0 = "train.softmax"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @pool_missing_kernel(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'train.max_pool2d' op requires attribute 'kernel'}}
  %0 = "train.max_pool2d"(%x) <{strides = array<i64: 2, 2>}> : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @conv_strides_wrong_type(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{invalid properties {strides = 2 : i64} for op train.conv2d: Invalid attribute `strides` in property conversion: 2 : i64}}
  %0 = "train.conv2d"(%x, %w) <{strides = 2 : i64}> : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @matmul_one_operand(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'train.matmul' op expected 2 or more operands, but found 1}}
  %0 = "train.matmul"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @batch_norm_two_results(%x: tensor<8x4xf32>, %s: tensor<4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'train.batch_norm' op expected 3 results}}
  %0:2 = "train.batch_norm"(%x, %s, %s, %s, %s) : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
  return %0#0 : tensor<8x4xf32>
}

//===----------------------------------------------------------------------===//
// train.precision
//===----------------------------------------------------------------------===//

// -----

func.func @precision_bad_value(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.precision' must be "lower", "fp32" (or "f32"), "promote" or "follow", got "fast"}}
  %0 = train.relu %x {train.precision = "fast"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @precision_not_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.precision' must be "lower", "fp32" (or "f32"), "promote" or "follow", got 1 : i64}}
  %0 = train.relu %x {train.precision = 1} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @precision_on_cast(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'train.precision' applies to train ops with a precision policy, not 'train.cast'}}
  %0 = train.cast %x {train.precision = "lower"} : tensor<4xf32> to tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @unknown_train_attr(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown train attribute 'train.speed' (expected 'train.precision')}}
  %0 = train.relu %x {train.speed = "fast"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Backward helpers and slice
//===----------------------------------------------------------------------===//

// -----

func.func @conv_grad_shape(%dy: tensor<2x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{'train.conv2d_grad_input' op gradient shape [2, 4, 5, 5] is not the forward conv2d's output shape [2, 4, 6, 6]}}
  %0 = train.conv2d_grad_input %dy, %w : tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  return %0 : tensor<2x3x8x8xf32>
}

// -----

func.func @conv_grad_filter_channels(%dy: tensor<2x4x6x6xf32>, %x: tensor<2x3x8x8xf32>) -> tensor<4x2x3x3xf32> {
  // expected-error @+1 {{'train.conv2d_grad_filter' op input channels 3 and filter channels 2 differ}}
  %0 = train.conv2d_grad_filter %dy, %x : tensor<2x4x6x6xf32>, tensor<2x3x8x8xf32> -> tensor<4x2x3x3xf32>
  return %0 : tensor<4x2x3x3xf32>
}

// -----

func.func @embedding_grad_shape(%dy: tensor<2x5x8xf32>, %ids: tensor<2x4xi32>) -> tensor<10x8xf32> {
  // expected-error @+1 {{'train.embedding_grad' op gradient 'tensor<2x5x8xf32>' does not match an embedding lookup of 'tensor<10x8xf32>' at 'tensor<2x4xi32>'}}
  %0 = train.embedding_grad %dy, %ids : tensor<2x5x8xf32>, tensor<2x4xi32> -> tensor<10x8xf32>
  return %0 : tensor<10x8xf32>
}

// -----

func.func @softmax_grad_axis(%g: tensor<4x10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'train.softmax_grad' op axis 2 is out of range for a rank-2 input (expected 0..1)}}
  %0 = train.softmax_grad %g, %g axis 2 : tensor<4x10xf32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @ce_grad_batch(%s: tensor<f32>, %y: tensor<4x10xf32>, %l: tensor<3xi32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'train.cross_entropy_grad' op needs [N, C] logits and [N] labels, got [4, 10] and [3]}}
  %0 = train.cross_entropy_grad %s, %y, %l : tensor<f32>, tensor<4x10xf32>, tensor<3xi32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @ce_grad_type(%s: tensor<f16>, %y: tensor<4x10xf32>, %l: tensor<4xi32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'train.cross_entropy_grad' op loss gradient element type 'f16' differs from the logits' 'f32'}}
  %0 = train.cross_entropy_grad %s, %y, %l : tensor<f16>, tensor<4x10xf32>, tensor<4xi32>
  return %0 : tensor<4x10xf32>
}

// -----

func.func @slice_outside(%x: tensor<4x10xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'train.slice' op box at offsets [3, 2] of shape [2, 3] is not inside [4, 10]}}
  %0 = train.slice %x offsets [3, 2] : tensor<4x10xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_rank(%x: tensor<4x10xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'train.slice' op needs one offset per dimension and a result of the input's rank, got 1 offsets for 'tensor<4x10xf32>' -> 'tensor<2x3xf32>'}}
  %0 = train.slice %x offsets [3] : tensor<4x10xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// expected-error @+1 {{'train.lr' marks a rank-0 f32 tensor (or a rank-1 one, a rate per parameter group), got 'tensor<2x2xf32>'}}
func.func @lr_shape(%lr: tensor<2x2xf32> {train.lr}) {
  return
}

// -----

// expected-error @+1 {{'train.param_group' on argument #0 needs 'train.param' (only parameters are in optimizer groups)}}
func.func @group_not_param(%x: tensor<2xf32> {train.param_group = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'train.param_group' must be a non-negative i64, got -1 : i64}}
func.func @group_negative(%w: tensor<2xf32> {train.param, train.param_group = -1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'train.weight_decay' must be an f64 in [0, 1], got 2.000000e+00 : f64}}
func.func @weight_decay_range(%w: tensor<2xf32> {train.param, train.weight_decay = 2.0 : f64}) {
  return
}

// -----

func.func @lr_groups_missing(%lr: tensor<2xf32>, %w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op a learning rate per group ('tensor<2xf32>') needs lr_groups, the group of each parameter}}
  %0 = train.sgd_update %lr params(%w) grads(%g) : tensor<2xf32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @lr_groups_count(%lr: tensor<2xf32>, %w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op lr_groups has 2 entries for 1 parameters}}
  %0 = train.sgd_update %lr params(%w) grads(%g) {lr_groups = array<i64: 0, 1>} : tensor<2xf32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @lr_groups_range(%lr: tensor<2xf32>, %w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op lr_groups[0] = 2 is not a group of the 2 learning rates}}
  %0 = train.sgd_update %lr params(%w) grads(%g) {lr_groups = array<i64: 2>} : tensor<2xf32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @lr_groups_scalar(%lr: tensor<f32>, %w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op lr_groups needs a learning rate per group (a rank-1 lr), got 'tensor<f32>'}}
  %0 = train.sgd_update %lr params(%w) grads(%g) {lr_groups = array<i64: 0>} : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @weight_decays_count(%lr: tensor<f32>, %w: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %s: tensor<i32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.adam_update' op weight_decays has 0 entries for 1 parameters}}
  %0:4 = train.adam_update %lr, %s params(%w) grads(%g) exp_avgs(%m) exp_avg_sqs(%v) {weight_decays = array<f64>} : tensor<f32>, tensor<i32>, (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @weight_decays_range(%lr: tensor<f32>, %w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.sgd_update' op each of weight_decays must be in [0, 1], got 1.5}}
  %0 = train.sgd_update %lr params(%w) grads(%g) {weight_decays = array<f64: 1.5>} : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'train.opt_state' must be a unit attribute, got "m"}}
func.func @opt_state_value(%m: tensor<2xf32> {train.opt_state = "m"}) {
  return
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// -----

func.func @sgd_lists(%lr: tensor<f32>, %p: tensor<4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{'train.sgd_update' op gradients #0 has shape [3], its parameter [4]}}
  %0 = train.sgd_update %lr params(%p) grads(%g) : tensor<f32>, (tensor<4xf32>), (tensor<3xf32>)
  return
}

// -----

func.func @sgd_missing_buffers(%lr: tensor<f32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'train.sgd_update' op 1 parameters but 0 momentum buffers}}
  %0 = train.sgd_update %lr params(%p) grads(%p) momentum 0.9 : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @sgd_nesterov(%lr: tensor<f32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'train.sgd_update' op nesterov needs a non-zero momentum}}
  %0 = train.sgd_update %lr params(%p) grads(%p) nesterov : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @adam_beta(%lr: tensor<f32>, %s: tensor<i32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'train.adam_update' op beta2 must be in [0, 1), got 1}}
  %0:4 = train.adam_update %lr, %s params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) beta2 1.0 : tensor<f32>, tensor<i32>, (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @adam_moments(%lr: tensor<f32>, %s: tensor<i32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'train.adam_update' op 2 parameters but 1 second moments}}
  %0:6 = train.adam_update %lr, %s params(%p, %p) grads(%p, %p) exp_avgs(%p, %p) exp_avg_sqs(%p) : tensor<f32>, tensor<i32>, (tensor<4xf32>, tensor<4xf32>), (tensor<4xf32>, tensor<4xf32>), (tensor<4xf32>, tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @adam_epsilon(%lr: tensor<f32>, %s: tensor<i32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'train.adam_update' op epsilon must be positive, got 0}}
  %0:4 = train.adam_update %lr, %s params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) epsilon 0.0 : tensor<f32>, tensor<i32>, (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @clip_norm(%p: tensor<4xf32>) {
  // expected-error @+1 {{'train.clip_grad_norm' op max_norm must be positive, got -1}}
  %0:2 = train.clip_grad_norm(%p) max_norm -1.0 : (tensor<4xf32>)
  return
}

// -----

func.func @accumulate_steps(%n: tensor<i32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{'train.accumulate_grads' op steps must be at least 1, got 0}}
  %0:4 = train.accumulate_grads %n accumulators(%p) grads(%p) steps 0 : tensor<i32>, (tensor<4xf32>), (tensor<4xf32>)
  return
}

// -----

func.func @accumulate_types(%n: tensor<i32>, %p: tensor<4xf32>, %g: tensor<4xf16>) {
  // expected-error @+1 {{'train.accumulate_grads' op accumulator 'tensor<4xf32>' and gradient 'tensor<4xf16>' types differ}}
  %0:4 = train.accumulate_grads %n accumulators(%p) grads(%g) steps 2 : tensor<i32>, (tensor<4xf32>), (tensor<4xf16>)
  return
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

// -----

func.func @growth(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'train.update_scale' op growth_factor must be greater than 1, got 1}}
  %0:3 = train.update_scale %s, %t, %f growth_factor 1.0 : tensor<f32>, tensor<i32>
  return
}

// -----

func.func @backoff(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'train.update_scale' op backoff_factor must be in (0, 1), got 1}}
  %0:3 = train.update_scale %s, %t, %f backoff_factor 1.0 : tensor<f32>, tensor<i32>
  return
}

// -----

func.func @interval(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'train.update_scale' op growth_interval must be at least 1, got 0}}
  %0:3 = train.update_scale %s, %t, %f growth_interval 0 : tensor<f32>, tensor<i32>
  return
}

// -----

func.func @hysteresis(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'train.update_scale' op hysteresis must be at least 1, got 0}}
  %0:3 = train.update_scale %s, %t, %f hysteresis 0 : tensor<f32>, tensor<i32>
  return
}

// -----

func.func @scale_range(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) {
  // expected-error @+1 {{'train.update_scale' op needs 0 <= min_scale < max_scale, got 8 and 4}}
  %0:3 = train.update_scale %s, %t, %f min_scale 8.0 max_scale 4.0 : tensor<f32>, tensor<i32>
  return
}

// -----

func.func @unscale_scale_type(%s: tensor<f16>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'train.unscale_grads' op operand #0 must be 0D tensor of 32-bit float values, but got 'tensor<f16>'}}
  %0:2 = train.unscale_grads %s grads(%g) : tensor<f16>, (tensor<4xf32>)
  return
}

// -----

// The backward seed is an op (train.loss_seed), no longer an attribute.
func.func @loss_seed_attribute(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown train attribute 'train.loss_seed' (expected 'train.precision')}}
  %0 = train.relu %x {train.loss_seed} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @loss_seed_not_scalar() -> tensor<4xf32> {
  // expected-error @+1 {{'train.loss_seed' op result #0 must be 0D tensor of}}
  %0 = train.loss_seed : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @runtime_call_undeclared(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'train.runtime_call' op calls @missing, which is not a function in the module}}
  %0 = train.runtime_call @missing(%a) [1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func private @callee(index, index, i64)
func.func @runtime_call_signature(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'train.runtime_call' op calls @callee of type '(index, index, i64) -> ()'; its 1 inputs, 1 results and 2 params need '(index, index, i64, i64) -> ()'}}
  %0 = train.runtime_call @callee(%a) [1, 2] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func private @callee(index, index)
func.func @runtime_call_result(%a: tensor<2x3xf32>) -> tensor<2x3xi64> {
  // expected-error @+1 {{'train.runtime_call' op result #0 must be variadic of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 8-bit signless integer or 32-bit signless integer values, but got 'tensor<2x3xi64>'}}
  %0 = train.runtime_call @callee(%a) [] : (tensor<2x3xf32>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

func.func private @callee(index)
func.func @runtime_call_no_result(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'train.runtime_call' op has no result: a runtime call fills at least one new tensor}}
  train.runtime_call @callee(%a) [] : (tensor<2x3xf32>) -> ()
  return
}

// -----

func.func private @callee(index, index, index, i64)
func.func @runtime_call_two_results_signature(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'train.runtime_call' op calls @callee of type '(index, index, index, i64) -> ()'; its 1 inputs, 2 results and 2 params need '(index, index, index, i64, i64) -> ()'}}
  %0, %1 = train.runtime_call @callee(%a) [1, 2] : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>)
  return %0 : tensor<2x3xf32>
}

// -----

// Backward ops hold to their forward op's shape rule.
func.func @pool2d_grad_wrong_grad_shape(%dy: tensor<8x16x5x5xf32>, %x: tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32> {
  // expected-error @+1 {{'train.pool2d_grad' op gradient 'tensor<8x16x5x5xf32>' does not match the pooling output of 'tensor<8x16x8x8xf32>', [8, 16, 4, 4] of 'f32'}}
  %0 = train.pool2d_grad %dy, %x max kernel [2, 2] strides [2, 2] : tensor<8x16x5x5xf32>, tensor<8x16x8x8xf32>
  return %0 : tensor<8x16x8x8xf32>
}

// -----

func.func @pool2d_grad_one_kernel_value(%dy: tensor<8x16x4x4xf32>, %x: tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32> {
  // expected-error @+1 {{'train.pool2d_grad' op kernel must have 2 values (H, W), got 1}}
  %0 = train.pool2d_grad %dy, %x kernel [2] strides [2, 2] : tensor<8x16x4x4xf32>, tensor<8x16x8x8xf32>
  return %0 : tensor<8x16x8x8xf32>
}

// -----

func.func @pool2d_grad_type_mismatch(%dy: tensor<8x16x4x4xf16>, %x: tensor<8x16x8x8xf32>) -> tensor<8x16x8x8xf32> {
  // expected-error @+1 {{'train.pool2d_grad' op gradient 'tensor<8x16x4x4xf16>' does not match the pooling output}}
  %0 = train.pool2d_grad %dy, %x max kernel [2, 2] strides [2, 2] : tensor<8x16x4x4xf16>, tensor<8x16x8x8xf32>
  return %0 : tensor<8x16x8x8xf32>
}

// -----

func.func @layer_norm_grad_wrong_scale(%dy: tensor<4x10xf32>, %x: tensor<4x10xf32>, %g: tensor<4xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'train.layer_norm_grad' op scale shape [4] is not a non-empty trailing part of the input shape [4, 10]}}
  %0:3 = train.layer_norm_grad %dy, %x, %g : tensor<4x10xf32>, tensor<4xf32>
  return %0#0 : tensor<4x10xf32>
}

// -----

func.func @layer_norm_grad_epsilon(%dy: tensor<4x10xf32>, %x: tensor<4x10xf32>, %g: tensor<10xf32>) -> tensor<4x10xf32> {
  // expected-error @+1 {{'train.layer_norm_grad' op epsilon must be positive, got 0}}
  %0:3 = train.layer_norm_grad %dy, %x, %g epsilon 0.0 : tensor<4x10xf32>, tensor<10xf32>
  return %0#0 : tensor<4x10xf32>
}

// -----

func.func @batch_norm_grad_wrong_channels(%dy: tensor<2x3x8x8xf32>, %x: tensor<2x3x8x8xf32>, %g: tensor<4xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+1 {{'train.batch_norm_grad' op scale, bias and running statistics must be [3] (the input's channels), got [4]}}
  %0:3 = train.batch_norm_grad %dy, %x, %g : tensor<2x3x8x8xf32>, tensor<4xf32>
  return %0#0 : tensor<2x3x8x8xf32>
}

// -----

func.func @batch_norm_grad_rank(%dy: tensor<3xf32>, %x: tensor<3xf32>, %g: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'train.batch_norm_grad' op input must have rank >= 2 ([N, C, ...]), got [3]}}
  %0:3 = train.batch_norm_grad %dy, %x, %g : tensor<3xf32>, tensor<3xf32>
  return %0#0 : tensor<3xf32>
}

// -----

// What amp-autocast and amp-autodiff record is checked like any attribute.
// expected-error @+1 {{'train.autocast' must be a dictionary with string 'opt_level' and 'dtype' (what amp-autocast ran with), got "O1"}}
module attributes {train.autocast = "O1"} {
}

// -----

func.func @bad_decision(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.decision' records amp-autocast's decision on a train op with a precision policy (or a user cast) as "<category>/<reason>" (e.g. "lower/default"), got "lower/because"}}
  %0 = train.relu %x {train.decision = "lower/because"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{'train.gradient_of' names the forward function of a gradient function, as @name, got "forward"}}
func.func @bad_gradient_of(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.gradient_of = "forward"} {
  return %x : tensor<4xf32>
}

// -----

func.func @batch_matmul_batch_dims(%a: tensor<2x3x4x5xf32>, %b: tensor<4x5x6xf32>) -> tensor<2x3x4x6xf32> {
  // expected-error @+2 {{'train.batch_matmul' op batch dims [2, 3] and [4] are not broadcast-compatible}}
  // expected-error @+1 {{'train.batch_matmul' op failed to infer returned types}}
  %0 = train.batch_matmul %a, %b : tensor<2x3x4x5xf32>, tensor<4x5x6xf32> -> tensor<2x3x4x6xf32>
  return %0 : tensor<2x3x4x6xf32>
}

// -----

// expected-error @+1 {{state #0 must be a statically shaped f32, f16 or bf16 (or i32) tensor, got 'tensor<2xi8>'}}
func.func @state_i8(%m: tensor<2xi8> {train.state}) {
  return
}

// -----

func.func @label_smoothing_range(%l: tensor<4x3xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'train.cross_entropy' op label_smoothing must be in [0, 1], got 1.500000e+00}}
  %0 = train.cross_entropy %l, %y label_smoothing 1.5 : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @smooth_l1_beta(%p: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'train.smooth_l1_loss' op beta must be positive and finite (beta = 0 is train.l1_loss), got 0.000000e+00}}
  %0 = train.smooth_l1_loss %p, %p beta 0.0 : tensor<4xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @l1_loss_types(%p: tensor<4xf32>, %t: tensor<4xf16>) -> tensor<f32> {
  // expected-error @+1 {{'train.l1_loss' op failed to verify that all of {input, target} have same type}}
  %0 = "train.l1_loss"(%p, %t) : (tensor<4xf32>, tensor<4xf16>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @maximum_shapes(%a: tensor<4x3xf32>, %b: tensor<5xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'train.maximum' op}}
  %0 = train.maximum %a, %b : tensor<4x3xf32>, tensor<5xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @pow_infinite_exponent(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.pow' op exponent must be finite, got INF}}
  %0 = train.pow %x exponent 0x7FF0000000000000 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @clamp_bounds(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.clamp' op min 6.000000e+00 must be below max 0.000000e+00}}
  %0 = train.clamp %x min 6.0 max 0.0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @conv_groups_divide(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32> {
  // expected-error @+2 {{'train.conv2d' op groups 3 must divide the input channels 4 and the filters 6}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w groups 3 : tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x6x6xf32>
  return %0 : tensor<1x6x6x6xf32>
}

// -----

func.func @conv_groups_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{'train.conv2d' op input channels 4 are not groups 2 x filter channels 1}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w groups 2 : tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @conv_grad_groups(%dy: tensor<1x4x6x6xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{'train.conv2d_grad_input' op input channels 4 are not groups 2 x filter channels 1}}
  %0 = train.conv2d_grad_input %dy, %w groups 2 : tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32> -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

func.func @conv_groups_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{'train.conv2d' op groups must be at least 1, got 0}}
  // expected-error @+1 {{'train.conv2d' op failed to infer returned types}}
  %0 = train.conv2d %x, %w groups 0 : tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @embedding_padding_idx(%t: tensor<10x4xf32>, %ids: tensor<3xi32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'train.embedding' op padding_idx 10 is not a row of the 10-row table}}
  %0 = train.embedding %t, %ids padding_idx 10 : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

func.func @all_reduce_sum_of_flags(%f: tensor<i1>) -> tensor<i1> {
  // expected-error @+1 {{'train.all_reduce' op 'sum' takes f32, f16 or bf16 tensors, got 'tensor<i1>'}}
  %0 = train.all_reduce sum(%f) ranks 2 : (tensor<i1>)
  return %0 : tensor<i1>
}

// -----

func.func @all_reduce_max_of_floats(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.all_reduce' op 'max' takes i1 flags, got 'tensor<4xf32>'}}
  %0 = train.all_reduce max(%g) ranks 2 : (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @all_reduce_no_ranks(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.all_reduce' op ranks must be at least 1, got 0}}
  %0 = train.all_reduce sum(%g) ranks 0 : (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @all_reduce_empty() {
  // expected-error @+1 {{'train.all_reduce' op needs at least one input}}
  "train.all_reduce"() <{kind = 0 : i32, operandSegmentSizes = array<i32: 0, 0>, ranks = 2 : i64}> : () -> ()
  return
}

// -----

func.func @all_reduce_flag_wire(%f: tensor<i1>) -> tensor<i1> {
  // expected-error @+1 {{'train.all_reduce' op a wire type is for sums and means, not 'max'}}
  %0 = train.all_reduce max(%f) ranks 2 wire f16 : (tensor<i1>)
  return %0 : tensor<i1>
}

// -----

func.func @all_reduce_f64_wire(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.all_reduce' op wire type must be f32, f16 or bf16, got 'f64'}}
  %0 = train.all_reduce sum(%g) ranks 2 wire f64 : (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

func.func @unscale_divisor_zero(%s: tensor<f32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.unscale_grads' op divisor must be at least 1, got 0}}
  %0:2 = train.unscale_grads %s grads(%g) divisor 0 : tensor<f32>, (tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @first_nonfinite_empty() -> tensor<i32> {
  // expected-error @+1 {{'train.first_nonfinite' op needs at least one value}}
  %0 = "train.first_nonfinite"() : () -> tensor<i32>
  return %0 : tensor<i32>
}

// -----

func.func @first_nonfinite_order_size(%g: tensor<4xf32>, %h: tensor<2xf16>) -> tensor<i32> {
  // expected-error @+1 {{'train.first_nonfinite' op order has 1 entries for 2 values}}
  %0 = train.first_nonfinite %g, %h order [0] : tensor<4xf32>, tensor<2xf16>
  return %0 : tensor<i32>
}

// -----

func.func @first_nonfinite_order_twice(%g: tensor<4xf32>, %h: tensor<2xf16>) -> tensor<i32> {
  // expected-error @+1 {{'train.first_nonfinite' op order must be a permutation of 0..1, got 0 twice}}
  %0 = train.first_nonfinite %g, %h order [0, 0] : tensor<4xf32>, tensor<2xf16>
  return %0 : tensor<i32>
}

// -----

func.func @first_nonfinite_order_range(%g: tensor<4xf32>, %h: tensor<2xf16>) -> tensor<i32> {
  // expected-error @+1 {{'train.first_nonfinite' op order must be a permutation of 0..1, got 2 out of range}}
  %0 = train.first_nonfinite %g, %h order [0, 2] : tensor<4xf32>, tensor<2xf16>
  return %0 : tensor<i32>
}

// -----

func.func @check_numerics_empty() -> tensor<0xf32> {
  // expected-error @+1 {{'train.check_numerics' op needs at least one value}}
  %0 = "train.check_numerics"() : () -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

func.func @check_numerics_integer(%g: tensor<4xi32>) -> tensor<1xf32> {
  // expected-error @+1 {{'train.check_numerics' op operand #0 must be variadic of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<4xi32>'}}
  %0 = train.check_numerics %g : tensor<4xi32>
  return %0 : tensor<1xf32>
}

// -----

func.func @check_numerics_size(%g: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{'train.check_numerics' op inferred type(s) 'tensor<1xf32>' are incompatible with return type(s) of operation 'tensor<2xf32>'}}
  // expected-error @+1 {{'train.check_numerics' op failed to infer returned types}}
  %0 = "train.check_numerics"(%g) : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @calibrated_magnitude_without_decision(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'train.calibrated_magnitude' is the measured magnitude (a float) of an op amp-autocast decided with a calibration (it has a 'train.decision'), got 4.700000e+05 : f64}}
  %0 = train.matmul %a, %a {train.calibrated_magnitude = 4.7e5 : f64} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

func.func @calibrated_magnitude_not_float(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'train.calibrated_magnitude' is the measured magnitude (a float) of an op amp-autocast decided with a calibration (it has a 'train.decision'), got "big"}}
  %0 = train.matmul %a, %a {train.calibrated_magnitude = "big", train.decision = "fp32/calibrated"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// expected-error @+1 {{'train.numerics' is amp-check-numerics' site table on a function: an array of dictionaries}}
func.func @numerics_not_array() attributes {train.numerics = "all"} {
  return
}

// -----

// expected-error @+1 {{'train.numerics' is amp-check-numerics' site table on a function: entry 1 needs a kind ("argument" with its 'argument', "constant" with its 'magnitude', or "op" with 'op', 'stage' and 'inputs')}}
func.func @numerics_entry(%x: tensor<2xf32>) attributes {train.numerics = [{kind = "argument", argument = 0 : i64, check = 0 : i64}, {kind = "op", op = "train.matmul"}]} {
  return
}

// -----

func.func @first_nonfinite_integer(%g: tensor<4xi32>) -> tensor<i32> {
  // expected-error @+1 {{'train.first_nonfinite' op operand #0 must be variadic of statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<4xi32>'}}
  %0 = train.first_nonfinite %g : tensor<4xi32>
  return %0 : tensor<i32>
}

// -----

//===----------------------------------------------------------------------===//
// Comparisons, selection, conversions
//===----------------------------------------------------------------------===//

func.func @compare_mixed(%a: tensor<4xi32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+2 {{'train.compare' op operand element types 'i32' and 'f32' differ (insert a train.cast)}}
  // expected-error @+1 {{'train.compare' op failed to infer returned types}}
  %0 = train.compare %a, %b eq : tensor<4xi32>, tensor<4xf32> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @compare_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'train.compare' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 32-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = train.compare %a, %a eq : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @select_condition_shape(%c: tensor<3xi1>, %x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+2 {{'train.select' op condition: }}
  // expected-error @+1 {{'train.select' op failed to infer returned types}}
  %0 = train.select %c, %x, %x : tensor<3xi1>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @convert_floats(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'train.convert' op converts 'f32' to 'f16': between float types use train.cast}}
  %0 = train.convert %x : tensor<4xf32> to tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @convert_same(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'train.convert' op converts 'i32' to itself}}
  %0 = train.convert %x : tensor<4xi32> to tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @convert_shape(%x: tensor<4xi32>) -> tensor<2x2xi1> {
  // expected-error @+1 {{'train.convert' op input shape [4] and result shape [2, 2] differ (a conversion keeps the shape)}}
  %0 = train.convert %x : tensor<4xi32> to tensor<2x2xi1>
  return %0 : tensor<2x2xi1>
}

// -----

func.func @user_cast_reason_elsewhere(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.decision' has the reason "user cast" exactly on user casts, got "fp32/user cast"}}
  %0 = train.relu %x {train.decision = "fp32/user cast"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @user_cast_other_reason(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'train.decision' has the reason "user cast" exactly on user casts, got "fp32/default"}}
  %0 = train.cast %x user {train.decision = "fp32/default"} : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// -----

func.func @attention_rank(%q: tensor<4xf32>) {
  // expected-error @+1 {{'train.attention' op query, key and value must have one rank >= 2, got [4], [4] and [4]}}
  %o, %l = train.attention %q, %q, %q scale 1.0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @attention_leading_dims(%q: tensor<2x8x5x4xf32>, %k: tensor<2x2x6x4xf32>) {
  // expected-error @+1 {{'train.attention' op query, key and value must have the same leading dims, got [2, 8, 5, 4], [2, 2, 6, 4] and [2, 2, 6, 4] (repeat grouped key/value heads first)}}
  %o, %l = train.attention %q, %k, %k scale 1.0 : tensor<2x8x5x4xf32>, tensor<2x2x6x4xf32>, tensor<2x2x6x4xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x5x4xf32>, %k: tensor<2x6x8xf32>) {
  // expected-error @+1 {{'train.attention' op query dim 4 and key dim 8 differ}}
  %o, %l = train.attention %q, %k, %k scale 1.0 : tensor<2x5x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>
  return
}

// -----

func.func @attention_value_length(%q: tensor<2x5x4xf32>, %k: tensor<2x6x4xf32>, %v: tensor<2x7x4xf32>) {
  // expected-error @+1 {{'train.attention' op key length 6 and value length 7 differ}}
  %o, %l = train.attention %q, %k, %v scale 1.0 : tensor<2x5x4xf32>, tensor<2x6x4xf32>, tensor<2x7x4xf32>
  return
}

// -----

func.func @attention_mask_shape(%q: tensor<2x5x4xf32>, %k: tensor<2x6x4xf32>, %m: tensor<5x5xi1>) {
  // expected-error @+1 {{'train.attention' op mask [5, 5] does not broadcast to the scores [2, 5, 6]}}
  %o, %l = train.attention %q, %k, %k mask %m scale 1.0 : tensor<2x5x4xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<5x5xi1>
  return
}

// -----

func.func @attention_types(%q: tensor<2x5x4xf32>, %k: tensor<2x6x4xf16>) {
  // expected-error @+1 {{'train.attention' op query, key and value element types 'f32', 'f16' and 'f16' differ (insert a train.cast)}}
  %o, %l = train.attention %q, %k, %k scale 1.0 : tensor<2x5x4xf32>, tensor<2x6x4xf16>, tensor<2x6x4xf16>
  return
}

// -----

func.func @attention_mask_type(%q: tensor<2x5x4xf16>, %m: tensor<5x5xf32>) {
  // expected-error @+1 {{'train.attention' op mask element type 'f32' must be i1 (a keep-mask) or the query's 'f16' (an additive mask)}}
  %o, %l = train.attention %q, %q, %q mask %m scale 1.0 : tensor<2x5x4xf16>, tensor<2x5x4xf16>, tensor<2x5x4xf16>, tensor<5x5xf32>
  return
}

// -----

func.func @attention_scale(%q: tensor<2x5x4xf32>) {
  // expected-error @+1 {{'train.attention' op scale must be positive, got 0}}
  %o, %l = train.attention %q, %q, %q scale 0.0 : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>
  return
}

// -----

func.func @attention_accumulate(%q: tensor<2x5x4xf32>) {
  // expected-error @+1 {{'train.attention' op accumulate type must be f32 or the operand type 'f32', got 'f16'}}
  %o, %l = train.attention %q, %q, %q scale 1.0 accumulate f16 : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>
  return
}

// -----

func.func @attention_grad_output(%q: tensor<2x5x4xf32>, %o: tensor<2x5x3xf32>, %l: tensor<2x5xf32>) {
  // expected-error @+1 {{'train.attention_grad' op output type 'tensor<2x5x3xf32>' is not the forward result's 'tensor<2x5x4xf32>'}}
  %dq, %dk, %dv = train.attention_grad %o, %q, %q, %q, %o, %l scale 1.0 : tensor<2x5x3xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @attention_grad_lse(%q: tensor<2x5x4xf32>, %l: tensor<2x4xf32>) {
  // expected-error @+1 {{'train.attention_grad' op lse shape [2, 4] must be the query's leading dims [2, 5]}}
  %dq, %dk, %dv = train.attention_grad %q, %q, %q, %q, %q, %l scale 1.0 : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x4xf32>
  return
}

// -----

func.func @attention_grad_shapes(%q: tensor<2x5x4xf32>, %k: tensor<2x6x8xf32>, %l: tensor<2x5xf32>) {
  // expected-error @+1 {{'train.attention_grad' op query dim 4 and key dim 8 differ}}
  %dq, %dk, %dv = train.attention_grad %q, %q, %k, %k, %q, %l scale 1.0 : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @attention_grad_scale(%q: tensor<2x5x4xf32>, %l: tensor<2x5xf32>) {
  // expected-error @+1 {{'train.attention_grad' op scale must be positive, got -1}}
  %dq, %dk, %dv = train.attention_grad %q, %q, %q, %q, %q, %l scale -1.0 : tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5x4xf32>, tensor<2x5xf32>
  return
}

// -----

func.func @lce_rank(%x: tensor<2x4x8xf32>, %w: tensor<8x10xf32>, %l: tensor<8xi32>) -> tensor<f32> {
  // expected-error @+1 {{'train.linear_cross_entropy' op needs a rank-2 input [N, K] and weight [K, V], got [2, 4, 8] and [8, 10]}}
  %0 = train.linear_cross_entropy %x, %w, %l : tensor<2x4x8xf32>, tensor<8x10xf32>, tensor<8xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @lce_types(%x: tensor<4x8xbf16>, %w: tensor<8x10xf32>, %l: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'train.linear_cross_entropy' op input element type 'bf16' differs from the weight's 'f32'}}
  %0 = train.linear_cross_entropy %x, %w, %l : tensor<4x8xbf16>, tensor<8x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @lce_features(%x: tensor<4x8xf32>, %w: tensor<8x10xf32>, %l: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'train.linear_cross_entropy' op input features 8 do not match the weight's 10 (weight [V, K])}}
  %0 = train.linear_cross_entropy %x, %w, %l transpose_weight : tensor<4x8xf32>, tensor<8x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @lce_labels(%x: tensor<4x8xf32>, %w: tensor<8x10xf32>, %l: tensor<5xi32>) -> tensor<f32> {
  // expected-error @+1 {{'train.linear_cross_entropy' op needs [N] labels for 4 rows, got [5]}}
  %0 = train.linear_cross_entropy %x, %w, %l : tensor<4x8xf32>, tensor<8x10xf32>, tensor<5xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @lce_smoothing(%x: tensor<4x8xf32>, %w: tensor<8x10xf32>, %l: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'train.linear_cross_entropy' op label_smoothing must be in [0, 1], got -1.000000e-01}}
  %0 = train.linear_cross_entropy %x, %w, %l label_smoothing -0.1 : tensor<4x8xf32>, tensor<8x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @lce_result(%x: tensor<4x8xbf16>, %w: tensor<8x10xbf16>, %l: tensor<4xi32>) -> tensor<bf16> {
  // expected-error @+1 {{'train.linear_cross_entropy' op result #0 must be 0D tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %0 = train.linear_cross_entropy %x, %w, %l : tensor<4x8xbf16>, tensor<8x10xbf16>, tensor<4xi32> -> tensor<bf16>
  return %0 : tensor<bf16>
}

// -----

func.func @lce_grad_features(%s: tensor<f32>, %x: tensor<4x8xf32>, %w: tensor<9x10xf32>, %l: tensor<4xi32>) {
  // expected-error @+1 {{'train.linear_cross_entropy_grad' op input features 8 do not match the weight's 9 (weight [K, V])}}
  %0, %1 = train.linear_cross_entropy_grad %s, %x, %w, %l : tensor<f32>, tensor<4x8xf32>, tensor<9x10xf32>, tensor<4xi32>
  return
}
