// RUN: amp-opt %s -amp-convert-train-to-cpu-runtime -split-input-file | FileCheck %s
// RUN: amp-opt %s -amp-convert-train-to-cpu-runtime="conv-as-gemm=true" -split-input-file | FileCheck %s --check-prefix=IM2COL
// RUN: amp-opt %s -amp-convert-train-to-cpu-runtime="native-bf16=true" -split-input-file | FileCheck %s --check-prefix=NATIVE
// RUN: amp-opt %s -amp-convert-train-to-cpu-runtime -amp-convert-train-to-linalg -one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" -split-input-file | FileCheck %s --check-prefix=BUF

// GEMMs and convolutions become train.runtime_call of the CBLAS runtime;
// the numerics are checked through the JIT (test/Integration/CPU,
// BlasLoweringTest and the op and gradient tests). Here: the callee, the
// dtype codes (0 f32, 1 f16, 2 bf16), the sizes, one declaration per callee,
// the single rounding of the f32 result, and what bufferization makes of it.

// A linear layer at O1: f16 operands and bias, the f32 accumulator rounded
// once by the runtime to the f16 result (amp_cpu_gemm_bias_round: the
// result's type after the bias's). Its scratch: the f32 accumulator (48
// bytes), the bias's f32 row and the operands widened to f32, each 64
// aligned: 64 + 64 + 128 + 128.
// CHECK: func.func private @amp_cpu_gemm_bias_round(index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @linear
// CHECK: %[[Y:.*]] = train.runtime_call @amp_cpu_gemm_bias_round(%arg0, %arg1, %arg2) [1, 1, 1, 1, 1, 4, 3, 8, 0, 0] {amp.workspace_bytes = 384 : i64} : (tensor<4x8xf16>, tensor<8x3xf16>, tensor<3xf16>) -> tensor<4x3xf16>
// CHECK-NOT: linalg.generic
// CHECK-NOT: train.matmul
// CHECK: return %[[Y]]
// BUF-LABEL: func.func @linear
// BUF-SAME: (%[[A:.*]]: memref<4x8xf16>, %[[W:.*]]: memref<8x3xf16>, %[[B:.*]]: memref<3xf16>)
// BUF-DAG: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// BUF-DAG: %[[PW:.*]] = memref.extract_aligned_pointer_as_index %[[W]]
// BUF-DAG: %[[PB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// BUF: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4x3xf16>
// BUF: %[[PO:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// BUF: call @amp_cpu_gemm_bias_round(%[[PA]], %[[PW]], %[[PB]], %[[PO]], %{{.*}}) {amp.workspace_bytes = 384 : i64} : (index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
// BUF-NOT: memref.copy
func.func @linear(%x: tensor<4x8xf16>, %w: tensor<8x3xf16>, %b: tensor<3xf16>) -> tensor<4x3xf16> {
  %0 = train.matmul %x, %w, %b accumulate f32 : tensor<4x8xf16>, tensor<8x3xf16>, tensor<3xf16> -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}

// -----

// Transposes are flags, not copies; two calls share one declaration; an f32
// result needs no rounding.
// CHECK-COUNT-1: func.func private @amp_cpu_gemm(
// CHECK-NOT: func.func private
// CHECK-LABEL: func.func @transposes
// CHECK: %[[G:.*]] = train.runtime_call @amp_cpu_gemm(%arg0, %arg1) [0, 0, 1, 8, 3, 4, 1, 0] : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
// CHECK: %[[H:.*]] = train.runtime_call @amp_cpu_gemm(%arg0, %arg2) [0, 0, 1, 4, 5, 8, 0, 1] : (tensor<4x8xf32>, tensor<5x8xf32>) -> tensor<4x5xf32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[G]], %[[H]]
func.func @transposes(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>, %c: tensor<5x8xf32>) -> (tensor<8x3xf32>, tensor<4x5xf32>) {
  %0 = train.matmul %a, %b transpose_lhs : tensor<4x8xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  %1 = train.matmul %a, %c transpose_rhs : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x5xf32>
  return %0, %1 : tensor<8x3xf32>, tensor<4x5xf32>
}

// -----

// bf16 batch_matmul: the types (operands, result), batch, m, n, k. Its
// scratch: the f32 accumulator (480 bytes) and the operands widened (672
// and 840 bytes), each 64 aligned.
// CHECK-LABEL: func.func @batched
// CHECK: train.runtime_call @amp_cpu_gemm_round(%arg0, %arg1) [2, 2, 2, 6, 4, 5, 7, 0, 1] {amp.workspace_bytes = 2112 : i64} : (tensor<6x4x7xbf16>, tensor<6x5x7xbf16>) -> tensor<6x4x5xbf16>
// Where the target multiplies bf16 natively, oneDNN's matmul takes the
// operands as they are and writes the bf16 result: the plan reserves its
// scratchpad, bounded by the operands' size in f32, 4 x 6 x 7 x (4 + 5)
// bytes (or 4 MiB).
// NATIVE-LABEL: func.func @batched
// NATIVE: train.runtime_call @amp_cpu_gemm_round(%arg0, %arg1) [2, 2, 2, 6, 4, 5, 7, 0, 1] {amp.workspace_bytes = 1512 : i64}
func.func @batched(%q: tensor<6x4x7xbf16>, %k: tensor<6x5x7xbf16>) -> tensor<6x4x5xbf16> {
  %0 = train.batch_matmul %q, %k transpose_rhs accumulate f32 : tensor<6x4x7xbf16>, tensor<6x5x7xbf16> -> tensor<6x4x5xbf16>
  return %0 : tensor<6x4x5xbf16>
}

// -----

// Convolution and its gradients: dtypes, then n c h w, f kh kw, oh ow,
// strides, padding, dilation.
// Each records the scratch the runtime takes for it (amp.workspace_bytes,
// include/amp/ABI/ConvWorkspace.h), each piece rounded up to 64 bytes:
// f32 copies of the f16 operands (x 1984, w 448, dy 832) plus, on oneDNN's
// path (the forward pass and the filter gradient), its blocked copies of
// x, w and y as f32, 3 channels padded to 4 and 4 to 16 (the filter's
// input channels to 4 as well): 2624 + 2304 + 3200; or on the im2col path
// (the input gradient of a 3-channel input) the column matrix of both
// images, 27 x 50 floats + 1 (5440), and the output-shaped one, 4 x 50 + 1
// (832).
// CHECK-LABEL: func.func @convs
// CHECK: train.runtime_call @amp_cpu_conv2d(%arg0, %arg1) [1, 1, 2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1] {amp.workspace_bytes = 10560 : i64} : (tensor<2x3x9x9xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x5x5xf32>
// CHECK: train.runtime_call @amp_cpu_conv2d_grad_input(%arg2, %arg1) [1, 1, 2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1] {amp.workspace_bytes = 7552 : i64} : (tensor<2x4x5x5xf16>, tensor<4x3x3x3xf16>) -> tensor<2x3x9x9xf32>
// CHECK: train.runtime_call @amp_cpu_conv2d_grad_filter(%arg2, %arg0) [1, 1, 2, 3, 9, 9, 4, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1] {amp.workspace_bytes = 10944 : i64} : (tensor<2x4x5x5xf16>, tensor<2x3x9x9xf16>) -> tensor<4x3x3x3xf32>
// conv-as-gemm=true: amp-lower-cuda's im2col GEMMs, here through CBLAS
// (f32 products, each rounded once; the convolution runtime is not called).
// IM2COL-LABEL: func.func @convs
// IM2COL-NOT: amp_cpu_conv2d
// IM2COL: train.runtime_call @amp_cpu_gemm(%{{.*}}, %{{.*}}) [1, 1, 1, 4, 50, 27, 0, 0] : (tensor<4x27xf16>, tensor<27x50xf16>) -> tensor<4x50xf32>
// IM2COL: train.runtime_call @amp_cpu_gemm(%{{.*}}, %{{.*}}) [1, 1, 1, 27, 50, 4, 1, 0] : (tensor<4x27xf16>, tensor<4x50xf16>) -> tensor<27x50xf32>
// IM2COL: train.runtime_call @amp_cpu_gemm(%{{.*}}, %{{.*}}) [1, 1, 1, 4, 27, 50, 0, 1] : (tensor<4x50xf16>, tensor<27x50xf16>) -> tensor<4x27xf32>
// IM2COL-NOT: amp_cpu_conv2d
func.func @convs(%x: tensor<2x3x9x9xf16>, %w: tensor<4x3x3x3xf16>, %dy: tensor<2x4x5x5xf16>) -> (tensor<2x4x5x5xf16>, tensor<2x3x9x9xf16>, tensor<4x3x3x3xf16>) {
  %y = train.conv2d %x, %w strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x3x9x9xf16>, tensor<4x3x3x3xf16> -> tensor<2x4x5x5xf16>
  %dx = train.conv2d_grad_input %dy, %w strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x4x5x5xf16>, tensor<4x3x3x3xf16> -> tensor<2x3x9x9xf16>
  %dw = train.conv2d_grad_filter %dy, %x strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x4x5x5xf16>, tensor<2x3x9x9xf16> -> tensor<4x3x3x3xf16>
  return %y, %dx, %dw : tensor<2x4x5x5xf16>, tensor<2x3x9x9xf16>, tensor<4x3x3x3xf16>
}

// -----

// A biased convolution: the runtime's f32 result plus the bias widened to
// f32 (per channel), then one rounding; with conv-as-gemm the GEMM's
// product stays f32 until the bias is added.
// CHECK-LABEL: func.func @conv_bias
// CHECK: %[[ACC:.*]] = train.runtime_call @amp_cpu_conv2d(%arg0, %arg1) {{.*}} -> tensor<2x4x7x7xf32>
// CHECK: %[[B32:.*]] = train.cast %arg2 : tensor<4xf16> to tensor<4xf32>
// CHECK: %[[COL:.*]] = train.reshape %[[B32]] : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK: train.add %[[ACC]], %[[COL]] : tensor<2x4x7x7xf32>, tensor<4x1x1xf32> -> tensor<2x4x7x7xf32>
// CHECK: arith.truncf
// IM2COL-LABEL: func.func @conv_bias
// IM2COL: train.runtime_call @amp_cpu_gemm(%{{.*}}, %{{.*}}) {{.*}} -> tensor<4x98xf32>
// IM2COL: train.add %{{.*}}, %{{.*}} : tensor<2x4x7x7xf32>, tensor<4x1x1xf32> -> tensor<2x4x7x7xf32>
// IM2COL: arith.truncf
func.func @conv_bias(%x: tensor<2x3x9x9xf16>, %w: tensor<4x3x3x3xf16>, %b: tensor<4xf16>) -> tensor<2x4x7x7xf16> {
  %y = train.conv2d %x, %w, %b accumulate f32 : tensor<2x3x9x9xf16>, tensor<4x3x3x3xf16>, tensor<4xf16> -> tensor<2x4x7x7xf16>
  return %y : tensor<2x4x7x7xf16>
}

// -----

// An f16 accumulator is not what the runtime computes: left for linalg.
// CHECK-LABEL: func.func @f16_accumulator
// CHECK-NOT: train.runtime_call
// CHECK: train.matmul
// CHECK-NOT: train.runtime_call
// CHECK: return
func.func @f16_accumulator(%a: tensor<4x8xf16>, %b: tensor<8x3xf16>) -> tensor<4x3xf16> {
  %0 = train.matmul %a, %b accumulate f16 : tensor<4x8xf16>, tensor<8x3xf16> -> tensor<4x3xf16>
  return %0 : tensor<4x3xf16>
}

// -----

// A strided input (a column slice) is copied into a dense buffer first.
// BUF-LABEL: func.func @strided_input
// BUF: %[[SUB:.*]] = memref.subview %arg0[0, 0] [4, 8] [1, 1] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 1]>>
// BUF: %[[DENSE:.*]] = memref.alloc() {{.*}} : memref<4x8xf32>
// BUF: memref.copy %[[SUB]], %[[DENSE]]
// BUF: memref.extract_aligned_pointer_as_index %[[DENSE]]
// BUF: call @amp_cpu_gemm(
func.func @strided_input(%a: tensor<4x16xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %s = tensor.extract_slice %a[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %0 = train.matmul %s, %b : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// The embedding gradient is the runtime's scatter-add (positions x dim
// additions; the linalg form reduces over vocabulary x dim x positions):
// params dtype(f16 = 1), positions, dim, vocab; an f32 table rounded once.
// CHECK-LABEL: func.func @embedding_grad
// CHECK: %[[T:.*]] = train.runtime_call @amp_cpu_embedding_grad(%arg0, %arg1) [1, 6, 4, 10] : (tensor<2x3x4xf16>, tensor<2x3xi32>) -> tensor<10x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[T]] : tensor<10x4xf32>) outs(%{{.*}} : tensor<10x4xf16>)
func.func @embedding_grad(%dy: tensor<2x3x4xf16>, %ids: tensor<2x3xi32>) -> tensor<10x4xf16> {
  %0 = train.embedding_grad %dy, %ids : tensor<2x3x4xf16>, tensor<2x3xi32> -> tensor<10x4xf16>
  return %0 : tensor<10x4xf16>
}

// -----

// Attention: the flash-style kernels. A boolean keep-mask becomes the
// additive f32 0 / -inf mask, passed with its strides over the scores'
// [1, 1, batch, heads, Sq, Sk] (0 where it broadcasts: ms2 = 7 for the
// batch, msCol = 1); the scale travels as its f64 bits (0.5 =
// 0x3FE0000000000000). The f32 output is rounded to bf16 once, and the
// gradient reads that rounded output and the f32 log-sum-exp.
// CHECK-LABEL: func.func @attention_runtime(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x3x5x4xbf16>, %[[K:[a-z0-9]+]]: tensor<2x3x7x4xbf16>, %[[KEEP:[a-z0-9]+]]: tensor<2x1x1x7xi1>, %[[DO:[a-z0-9]+]]: tensor<2x3x5x4xbf16>
// CHECK: %[[NEG:.*]] = train.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[ZERO:.*]] = train.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[MASK:.*]] = train.select %[[KEEP]], %[[ZERO]], %[[NEG]] : tensor<2x1x1x7xi1>, tensor<f32>, tensor<f32> -> tensor<2x1x1x7xf32>
// CHECK: %[[F:.*]]:2 = train.runtime_call @amp_cpu_attention_mask(%[[Q]], %[[K]], %[[K]], %[[MASK]]) [2, 1, 1, 2, 3, 5, 7, 4, 4, 0, 4602678819172646912, 0, 0, 0, 7, 0, 0, 1] : (tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x1x1x7xf32>) -> (tensor<2x3x5x4xf32>, tensor<2x3x5xf32>)
// CHECK: %[[O:.*]] = linalg.generic {{.*}} ins(%[[F]]#0 : tensor<2x3x5x4xf32>)
// CHECK: arith.truncf
// CHECK: train.runtime_call @amp_cpu_attention_grad_mask(%[[DO]], %[[Q]], %[[K]], %[[K]], %[[O]], %[[F]]#1, %{{.*}}) [2, 1, 1, 2, 3, 5, 7, 4, 4, 0, 4602678819172646912, 0, 0, 0, 7, 0, 0, 1] : ({{.*}}) -> (tensor<2x3x5x4xf32>, tensor<2x3x7x4xf32>, tensor<2x3x7x4xf32>)
// Where bf16 is multiplied natively the kernels keep bf16 operands as they
// are and record their own scratch (AttentionWorkspace.h: the block buffers
// and oneDNN's scratchpad bound; backward, two of each and a row term).
// NATIVE-LABEL: func.func @attention_runtime(
// NATIVE: @amp_cpu_attention_mask({{.*}}) [{{.*}}] {amp.workspace_bytes = 351232 : i64}
// NATIVE: @amp_cpu_attention_grad_mask({{.*}}) [{{.*}}] {amp.workspace_bytes = 546880 : i64}
func.func @attention_runtime(%q: tensor<2x3x5x4xbf16>, %k: tensor<2x3x7x4xbf16>, %keep: tensor<2x1x1x7xi1>, %do: tensor<2x3x5x4xbf16>)
    -> (tensor<2x3x5x4xbf16>, tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x4xbf16>) {
  %o, %lse = train.attention %q, %k, %k mask %keep scale 5.000000e-01 accumulate f32 : tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x1x1x7xi1>
  %dq, %dk, %dv = train.attention_grad %do, %q, %k, %k, %o, %lse mask %keep scale 5.000000e-01 : tensor<2x3x5x4xbf16>, tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x5xf32>, tensor<2x1x1x7xi1>
  return %o, %dq, %dk, %dv : tensor<2x3x5x4xbf16>, tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x4xbf16>
}

// -----

// A bf16 additive mask is widened by the kernel: its f32 copy joins the
// native path's scratch (35 values: 192 bytes aligned). Without native bf16
// the plan's default (no attribute) bounds the widened operands.
// CHECK-LABEL: func.func @attention_bf16_mask(
// CHECK: @amp_cpu_attention_mask(%arg0, %arg1, %arg1, %arg2) [{{[-0-9, ]*}}] :
// NATIVE-LABEL: func.func @attention_bf16_mask(
// NATIVE: @amp_cpu_attention_mask(%arg0, %arg1, %arg1, %arg2) [{{.*}}] {amp.workspace_bytes = 351424 : i64}
func.func @attention_bf16_mask(%q: tensor<2x3x5x4xbf16>, %k: tensor<2x3x7x4xbf16>, %mask: tensor<5x7xbf16>) -> tensor<2x3x5x4xbf16> {
  %o, %lse = train.attention %q, %k, %k mask %mask scale 5.000000e-01 : tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x4xbf16>, tensor<5x7xbf16>
  return %o : tensor<2x3x5x4xbf16>
}

// -----

// Rank 2 (no leading dims: all four padded with 1s), causal on non-square
// scores, f32: the result is the kernel's own f32 output.
// CHECK-LABEL: func.func @attention_rank2(
// CHECK: %[[F:.*]]:2 = train.runtime_call @amp_cpu_attention(%{{.*}}, %{{.*}}, %{{.*}}) [0, 1, 1, 1, 1, 9, 6, 8, 8, 1, 4599976659396224614] : (tensor<9x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> (tensor<9x8xf32>, tensor<9xf32>)
// CHECK-NEXT: return %[[F]]#0
func.func @attention_rank2(%q: tensor<9x8xf32>, %k: tensor<6x8xf32>) -> tensor<9x8xf32> {
  %o, %lse = train.attention %q, %k, %k causal scale 0.35 : tensor<9x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
  return %o : tensor<9x8xf32>
}

// -----

// An f16 accumulator (a policy's choice): the kernel sums in f32 all the
// same (attention has no loop lowering on the CPU).
// CHECK-LABEL: func.func @attention_f16_accumulator(
// CHECK: train.runtime_call @amp_cpu_attention(
func.func @attention_f16_accumulator(%q: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %o, %lse = train.attention %q, %q, %q scale 0.35 accumulate f16 : tensor<4x8xf16>, tensor<4x8xf16>, tensor<4x8xf16>
  return %o : tensor<4x8xf16>
}

// -----

// bf16 operands on a target not known to multiply them natively: the larger
// of the f32 rule's figure (as f16) and the bf16 rule's (the input
// gradient's image has more than 4 pixels: oneDNN's path, 8128). With
// native-bf16 every pass takes oneDNN's path (the filter gradient's image
// has more than 16 pixels) with no f32 copies: 2624 + 2304 + 3200 bytes.
// CHECK-LABEL: func.func @convs_bf16
// CHECK: @amp_cpu_conv2d(%arg0, %arg1) {{.*}} {amp.workspace_bytes = 10560 : i64}
// CHECK: @amp_cpu_conv2d_grad_input(%arg2, %arg1) {{.*}} {amp.workspace_bytes = 8128 : i64}
// CHECK: @amp_cpu_conv2d_grad_filter(%arg2, %arg0) {{.*}} {amp.workspace_bytes = 10944 : i64}
// NATIVE-LABEL: func.func @convs_bf16
// NATIVE: @amp_cpu_conv2d(%arg0, %arg1) {{.*}} {amp.workspace_bytes = 8128 : i64}
// NATIVE: @amp_cpu_conv2d_grad_input(%arg2, %arg1) {{.*}} {amp.workspace_bytes = 8128 : i64}
// NATIVE: @amp_cpu_conv2d_grad_filter(%arg2, %arg0) {{.*}} {amp.workspace_bytes = 8128 : i64}
func.func @convs_bf16(%x: tensor<2x3x9x9xbf16>, %w: tensor<4x3x3x3xbf16>, %dy: tensor<2x4x5x5xbf16>) -> (tensor<2x4x5x5xbf16>, tensor<2x3x9x9xbf16>, tensor<4x3x3x3xbf16>) {
  %y = train.conv2d %x, %w strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x3x9x9xbf16>, tensor<4x3x3x3xbf16> -> tensor<2x4x5x5xbf16>
  %dx = train.conv2d_grad_input %dy, %w strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x4x5x5xbf16>, tensor<4x3x3x3xbf16> -> tensor<2x3x9x9xbf16>
  %dw = train.conv2d_grad_filter %dy, %x strides [2, 2] padding [1, 1] accumulate f32 : tensor<2x4x5x5xbf16>, tensor<2x3x9x9xbf16> -> tensor<4x3x3x3xbf16>
  return %y, %dx, %dw : tensor<2x4x5x5xbf16>, tensor<2x3x9x9xbf16>, tensor<4x3x3x3xbf16>
}

// -----

// A bf16 linear layer on such a target: the bias's f32 row of n = 3 (12
// bytes, 64 aligned) and the scratchpad's bound, 4 x 8 x (4 + 3) bytes; no
// f32 accumulator. Elsewhere: the accumulator, the row and the widened
// operands (64 + 64 + 128 + 128).
// CHECK-LABEL: func.func @linear_bf16
// CHECK: train.runtime_call @amp_cpu_gemm_bias_round(%arg0, %arg1, %arg2) [2, 2, 2, 2, 1, 4, 3, 8, 0, 0] {amp.workspace_bytes = 384 : i64} : (tensor<4x8xbf16>
// NATIVE-LABEL: func.func @linear_bf16
// NATIVE: train.runtime_call @amp_cpu_gemm_bias_round(%arg0, %arg1, %arg2) [2, 2, 2, 2, 1, 4, 3, 8, 0, 0] {amp.workspace_bytes = 288 : i64}
func.func @linear_bf16(%x: tensor<4x8xbf16>, %w: tensor<8x3xbf16>, %b: tensor<3xbf16>) -> tensor<4x3xbf16> {
  %y = train.matmul %x, %w, %b accumulate f32 : tensor<4x8xbf16>, tensor<8x3xbf16>, tensor<3xbf16> -> tensor<4x3xbf16>
  return %y : tensor<4x3xbf16>
}

// -----

// The fused LM head: params dtype, n, k, v, transpose_weight, ignore_index
// (whether, which), label smoothing's f64 bits; f32 gradients rounded once.
// Scratch: the block's f32 logits, plus f32 copies of the operands where
// bf16 is widened, or (natively) the gradient's bf16 block and oneDNN's
// scratchpad (LinearCrossEntropyWorkspace.h).
// CHECK-LABEL: func.func @lm_head_runtime(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<f32>, %[[H:[a-z0-9]+]]: tensor<6x4xbf16>, %[[W:[a-z0-9]+]]: tensor<11x4xbf16>, %[[L:[a-z0-9]+]]: tensor<6xi32>
// CHECK: %[[LOSS:.*]] = train.runtime_call @amp_cpu_linear_cross_entropy(%[[H]], %[[W]], %[[L]]) [2, 6, 4, 11, 1, 1, -100, 4591870180066957722] {amp.workspace_bytes = 640 : i64} : (tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32>) -> tensor<f32>
// CHECK: %[[G:.*]]:2 = train.runtime_call @amp_cpu_linear_cross_entropy_grad(%[[S]], %[[H]], %[[W]], %[[L]]) [2, 6, 4, 11, 1, 1, -100, 4591870180066957722] {amp.workspace_bytes = 640 : i64} : (tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32>) -> (tensor<6x4xf32>, tensor<11x4xf32>)
// CHECK: arith.truncf
// CHECK: arith.truncf
// NATIVE-LABEL: func.func @lm_head_runtime(
// NATIVE: @amp_cpu_linear_cross_entropy({{.*}}) [{{.*}}] {amp.workspace_bytes = 768 : i64}
// NATIVE: @amp_cpu_linear_cross_entropy_grad({{.*}}) [{{.*}}] {amp.workspace_bytes = 960 : i64}
func.func @lm_head_runtime(%seed: tensor<f32>, %h: tensor<6x4xbf16>, %w: tensor<11x4xbf16>, %l: tensor<6xi32>)
    -> (tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>) {
  %loss = train.linear_cross_entropy %h, %w, %l transpose_weight ignore_index -100 label_smoothing 0.1
      : tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32> -> tensor<f32>
  %dh, %dw = train.linear_cross_entropy_grad %seed, %h, %w, %l transpose_weight ignore_index -100 label_smoothing 0.1
      : tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32>
  return %loss, %dh, %dw : tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>
}
