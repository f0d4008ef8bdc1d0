// RUN: amp-opt %s -amp-convert-train-to-linalg -split-input-file | FileCheck %s
// RUN: amp-opt %s -amp-convert-train-to-linalg="norm-statistics=f64" -split-input-file | FileCheck %s --check-prefix=F64
// RUN: not amp-opt %s -amp-convert-train-to-linalg="norm-statistics=f16" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: amp-convert-train-to-linalg: norm-statistics must be f32 or f64, got 'f16'

// The numerics of every lowering are checked through the JIT in
// test/Integration/CPU; these tests pin the structure: f32 accumulation,
// single rounding, broadcasting maps, padding, causal masks.

// f16 matmul: f16 operands, f32 accumulator, one truncation at the end;
// transpose_rhs is an indexing map, not a copy.
// CHECK-DAG: #[[$LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$RHST:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_f16
// CHECK: %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK: %[[MM:.*]] = linalg.matmul indexing_maps = [#[[$LHS]], #[[$RHST]], #[[$OUT]]] ins(%{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<6x8xf16>) outs(%[[ACC]] : tensor<4x6xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%[[MM]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @matmul_f16(%a: tensor<4x8xf16>, %b: tensor<6x8xf16>) -> tensor<4x6xf16> {
  %r = train.matmul %a, %b transpose_rhs : tensor<4x8xf16>, tensor<6x8xf16> -> tensor<4x6xf16>
  return %r : tensor<4x6xf16>
}

// -----

// An f16 accumulator (O3-style pure f16) accumulates in f16 and needs no
// rounding step.
// CHECK-LABEL: func.func @matmul_f16_accumulate
// CHECK: linalg.fill ins(%{{.*}} : f16) outs(%{{.*}} : tensor<4x6xf16>)
// CHECK: %[[MM:.*]] = linalg.matmul {{.*}} outs(%{{.*}} : tensor<4x6xf16>)
// CHECK-NEXT: return %[[MM]]
func.func @matmul_f16_accumulate(%a: tensor<4x8xf16>, %b: tensor<8x6xf16>) -> tensor<4x6xf16> {
  %r = train.matmul %a, %b accumulate f16 : tensor<4x8xf16>, tensor<8x6xf16> -> tensor<4x6xf16>
  return %r : tensor<4x6xf16>
}

// -----

// f32 matmul: no rounding step.
// CHECK-LABEL: func.func @matmul_f32
// CHECK: %[[MM:.*]] = linalg.matmul
// CHECK-NOT: arith.truncf
// CHECK: return %[[MM]]
func.func @matmul_f32(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %r = train.matmul %a, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// Broadcasting reads the bias through a projected map; f16 arithmetic runs in
// f32 and rounds once.
// CHECK-DAG: #[[$ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[$ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast_f16
// CHECK: linalg.generic {indexing_maps = [#[[$ID]], #[[$ROW]], #[[$ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: %[[X:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: %[[Y:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK: arith.truncf %[[S]] : f32 to f16
func.func @add_broadcast_f16(%a: tensor<4x8xf16>, %b: tensor<8xf16>) -> tensor<4x8xf16> {
  %r = train.add %a, %b : tensor<4x8xf16>, tensor<8xf16> -> tensor<4x8xf16>
  return %r : tensor<4x8xf16>
}

// -----

// A unit dimension that broadcasts is collapsed away before the generic.
// CHECK-LABEL: func.func @mul_unit_dim
// CHECK: %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<4x1xf32> into tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[C]] : tensor<4x5xf32>, tensor<4xf32>)
// CHECK-NOT: arith.extf
// CHECK: arith.mulf
func.func @mul_unit_dim(%a: tensor<4x5xf32>, %b: tensor<4x1xf32>) -> tensor<4x5xf32> {
  %r = train.mul %a, %b : tensor<4x5xf32>, tensor<4x1xf32> -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

// Convolution pads with zeros, then runs linalg's NCHW convolution.
// CHECK-LABEL: func.func @conv
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[P]], %{{.*}} : tensor<1x2x7x7xf32>, tensor<3x2x3x3xf32>)
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  %r = train.conv2d %x, %w strides [2, 2] padding [1, 1] : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return %r : tensor<1x3x3x3xf32>
}

// -----

// A convolution's bias starts the f32 accumulator: broadcast along the
// channel dimension (d1) and widened, before the single rounding.
// CHECK: #[[$CHANNEL:.*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @conv_bias
// CHECK: %[[INIT:.*]] = linalg.generic {indexing_maps = [#[[$CHANNEL]], #{{.*}}]{{.*}} ins(%arg2 : tensor<3xf16>) outs(%{{.*}} : tensor<1x3x3x3xf32>)
// CHECK: arith.extf
// CHECK: linalg.conv_2d_nchw_fchw {{.*}} outs(%[[INIT]] : tensor<1x3x3x3xf32>)
// CHECK: arith.truncf
func.func @conv_bias(%x: tensor<1x2x5x5xf16>, %w: tensor<3x2x3x3xf16>, %b: tensor<3xf16>) -> tensor<1x3x3x3xf16> {
  %r = train.conv2d %x, %w, %b : tensor<1x2x5x5xf16>, tensor<3x2x3x3xf16>, tensor<3xf16> -> tensor<1x3x3x3xf16>
  return %r : tensor<1x3x3x3xf16>
}

// -----

// Unpadded convolution needs no tensor.pad.
// CHECK-LABEL: func.func @conv_no_padding
// CHECK-NOT: tensor.pad
// CHECK: linalg.conv_2d_nchw_fchw
func.func @conv_no_padding(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  %r = train.conv2d %x, %w : tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32> -> tensor<1x3x3x3xf32>
  return %r : tensor<1x3x3x3xf32>
}

// -----

// Max pooling pads with -inf so padding never wins.
// CHECK-LABEL: func.func @max_pool_padded
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: tensor.pad {{.*}} low[0, 0, 1, 1]
// CHECK: tensor.yield %[[NEGINF]]
// CHECK: linalg.pooling_nchw_max
func.func @max_pool_padded(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %r = train.max_pool2d %x kernel [3, 3] strides [2, 2] padding [1, 1] : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
  return %r : tensor<1x1x2x2xf32>
}

// -----

// A dilated max pool is linalg's pooling with dilations; its gradient finds
// each window's first maximum at rows 2*oh + 2*kh, then gathers (2x2 windows
// with stride 2 tile nothing when dilated).
// CHECK-DAG: #[[$DILATED:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d4 * 2, d3 * 2 + d5 * 2)>
// CHECK-LABEL: func.func @max_pool_dilated(
// CHECK: linalg.pooling_nchw_max {dilations = dense<[2, 1]> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-LABEL: func.func @max_pool_dilated_grad
// CHECK: linalg.generic {indexing_maps = [#[[$DILATED]],
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
func.func @max_pool_dilated(%x: tensor<1x1x8x8xf32>) -> tensor<1x1x3x4xf32> {
  %r = train.max_pool2d %x kernel [2, 2] strides [2, 2] dilation [2, 1] : tensor<1x1x8x8xf32> -> tensor<1x1x3x4xf32>
  return %r : tensor<1x1x3x4xf32>
}
func.func @max_pool_dilated_grad(%dy: tensor<1x1x3x3xf32>, %x: tensor<1x1x8x8xf32>) -> tensor<1x1x8x8xf32> {
  %r = train.pool2d_grad %dy, %x max kernel [2, 2] strides [2, 2] dilation [2, 2] : tensor<1x1x3x3xf32>, tensor<1x1x8x8xf32>
  return %r : tensor<1x1x8x8xf32>
}

// -----

// Batch norm without running statistics returns them unchanged: only the
// output's elementwise pass follows the statistics' reductions.
// CHECK-LABEL: func.func @batch_norm_untracked
// CHECK-SAME: %[[M:arg[0-9]+]]: tensor<3xf32>, %[[V:arg[0-9]+]]: tensor<3xf32>)
// CHECK: linalg.generic
// CHECK: return %{{.*}}, %[[M]], %[[V]]
func.func @batch_norm_untracked(%x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %r:3 = train.batch_norm %x, %g, %g, %m, %v track_running_stats false : tensor<2x3x4x4xf32>, tensor<3xf32>
  return %r#0, %r#1, %r#2 : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Max-pooling windows that tile the input (stride = kernel, no padding): the
// window's first maximum is found once per window, then each input position
// takes its window's gradient where it is that maximum - element-wise, read
// at (h floordiv 2, w floordiv 2), with no zero fill and no reduction.
// CHECK-DAG: #[[$WINDOW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2 floordiv 2, d3 floordiv 2)>
// CHECK-LABEL: func.func @max_pool_grad_tiled
// CHECK: %[[ARGMAX:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: arith.cmpf ogt
// CHECK-NOT: linalg.fill
// CHECK: linalg.generic {indexing_maps = [#[[$WINDOW]], #[[$WINDOW]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}}, %[[ARGMAX]]#1 : tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>)
// CHECK: arith.cmpi eq
// CHECK: arith.select
// CHECK-NOT: arith.addf
// CHECK: return
func.func @max_pool_grad_tiled(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32> {
  %r = train.pool2d_grad %dy, %x max kernel [2, 2] strides [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  return %r : tensor<2x3x8x8xf32>
}

// -----

// Overlapping windows (3x3, stride 2) and a partial last window (2x2 on 7
// columns) keep the gather: each input position sums the windows it is in.
// CHECK-LABEL: func.func @avg_pool_grad_overlapping
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: tensor.extract
// CHECK: arith.addf
// CHECK-LABEL: func.func @max_pool_grad_partial
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
func.func @avg_pool_grad_overlapping(%dy: tensor<2x3x3x3xf32>, %x: tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32> {
  %r = train.pool2d_grad %dy, %x kernel [3, 3] strides [2, 2] : tensor<2x3x3x3xf32>, tensor<2x3x8x8xf32>
  return %r : tensor<2x3x8x8xf32>
}
func.func @max_pool_grad_partial(%dy: tensor<1x1x3x3xf32>, %x: tensor<1x1x7x7xf32>) -> tensor<1x1x7x7xf32> {
  %r = train.pool2d_grad %dy, %x max kernel [2, 2] strides [2, 2] : tensor<1x1x3x3xf32>, tensor<1x1x7x7xf32>
  return %r : tensor<1x1x7x7xf32>
}

// -----

// Softmax on f16: the max and sum reductions accumulate in f32.
// CHECK-LABEL: func.func @softmax_f16
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x10xf16>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<4x10xf16>, tensor<4xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
// CHECK: arith.divf
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @softmax_f16(%x: tensor<4x10xf16>) -> tensor<4x10xf16> {
  %r = train.softmax %x axis 1 : tensor<4x10xf16>
  return %r : tensor<4x10xf16>
}

// -----

// Causal softmax compares the column index with the row index.
// CHECK-LABEL: func.func @causal_softmax
// CHECK: %[[ROW:.*]] = linalg.index 1 : index
// CHECK: %[[COL:.*]] = linalg.index 2 : index
// CHECK: arith.cmpi ule, %[[COL]], %[[ROW]] : index
func.func @causal_softmax(%x: tensor<2x5x5xf32>) -> tensor<2x5x5xf32> {
  %r = train.softmax %x axis 2 causal : tensor<2x5x5xf32>
  return %r : tensor<2x5x5xf32>
}

// -----

// f16 -> bf16 widens exactly to f32 and rounds once.
// CHECK-LABEL: func.func @cast_f16_bf16
// CHECK: %[[W:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: arith.truncf %[[W]] : f32 to bf16
func.func @cast_f16_bf16(%x: tensor<4xf16>) -> tensor<4xbf16> {
  %r = train.cast %x : tensor<4xf16> to tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// -----

// The embedding clamps indices into the table.
// CHECK-LABEL: func.func @embedding
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<10x4xf32>
func.func @embedding(%t: tensor<10x4xf32>, %i: tensor<3xi32>) -> tensor<3x4xf32> {
  %r = train.embedding %t, %i : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// -----

// Reshape goes through rank 1; keep_dims reductions expand at the end.
// CHECK-LABEL: func.func @reshape_and_reduce
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [6, 1] : tensor<6xf32> into tensor<6x1xf32>
func.func @reshape_and_reduce(%x: tensor<2x3x4xf32>) -> tensor<6x1xf32> {
  %0 = train.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = train.reduce_sum %0 axes [1] keep_dims : tensor<6x4xf32> -> tensor<6x1xf32>
  return %1 : tensor<6x1xf32>
}

// -----

// Non-train ops are left alone.
// CHECK-LABEL: func.func @other_ops
// CHECK: %[[C:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: return %[[C]]
func.func @other_ops(%a: f32, %b: f32) -> f32 {
  %c = arith.addf %a, %b : f32
  return %c : f32
}

// -----

// No train op survives the conversion.
// CHECK-LABEL: func.func @mlp_layer
// CHECK-NOT: train.
// CHECK: return
func.func @mlp_layer(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>, %l: tensor<8xi32>) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %hb = train.add %h, %b : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %a = train.relu %hb : tensor<8x4xf32>
  %loss = train.cross_entropy %a, %l : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Parameter groups: each parameter reads its group's rate, a rank-0 slice
// of the [G] lr, and its own weight decay (0: no decay term at all).
// CHECK-LABEL: func.func @sgd_groups
// CHECK: %[[S1:.*]] = tensor.extract_slice %arg0[1] [1] [1] : tensor<2xf32> to tensor<1xf32>
// CHECK: %[[LR1:.*]] = tensor.collapse_shape %[[S1]] [] : tensor<1xf32> into tensor<f32>
// CHECK: linalg.generic {{.*}} ins(%arg1, %arg3, %[[LR1]] :
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: %[[S0:.*]] = tensor.extract_slice %arg0[0] [1] [1] : tensor<2xf32> to tensor<1xf32>
// CHECK: %[[LR0:.*]] = tensor.collapse_shape %[[S0]] [] : tensor<1xf32> into tensor<f32>
// CHECK: linalg.generic {{.*}} ins(%arg2, %arg4, %[[LR0]] :
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.subf
// CHECK-NEXT: linalg.yield
func.func @sgd_groups(%lr: tensor<2xf32>, %w: tensor<4xf32>, %b: tensor<3xf32>, %gw: tensor<4xf32>, %gb: tensor<3xf32>) -> (tensor<4xf32>, tensor<3xf32>) {
  %0:2 = train.sgd_update %lr params(%w, %b) grads(%gw, %gb) weight_decay 1.000000e-02 {lr_groups = array<i64: 1, 0>, weight_decays = array<f64: 5.000000e-01, 0.000000e+00>} : tensor<2xf32>, (tensor<4xf32>, tensor<3xf32>), (tensor<4xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<4xf32>, tensor<3xf32>
}

// -----

// A dropout with a step counter reads it as a rank-0 operand of its generic
// and keys the mask with seed + step * 0xD1B54A32D192ED03; the counter
// advances by a wrapping addi.
// CHECK-LABEL: func.func @dropout_step
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR:.*]], #{{.*}}]{{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<i32>)
// CHECK: ^bb0(%{{.*}}: f32, %[[STEP:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[WIDE:.*]] = arith.extui %[[STEP]] : i32 to i64
// CHECK: arith.muli %[[WIDE]], %{{.*}} : i64
// CHECK: linalg.generic
// CHECK: arith.addi %{{.*}}, %{{.*}} : i32
func.func @dropout_step(%x: tensor<4x8xf32>, %count: tensor<i32>) -> (tensor<4x8xf32>, tensor<i32>) {
  %0 = train.dropout %x rate 0.25 seed 5 step %count : tensor<4x8xf32>
  %1 = train.increment %count : tensor<i32>
  return %0, %1 : tensor<4x8xf32>, tensor<i32>
}

// -----

// pow: PyTorch's CPU special cases as products and reciprocals, powf
// otherwise.
// CHECK-LABEL: func.func @pow
// CHECK: linalg.generic
// CHECK: %[[SQ:.*]] = arith.mulf %[[X:.*]], %[[X]] : f32
// CHECK-NEXT: arith.mulf %[[SQ]], %[[X]] : f32
// CHECK: linalg.generic
// CHECK: %[[S:.*]] = math.sqrt
// CHECK: arith.divf %{{.*}}, %[[S]] : f32
// CHECK: linalg.generic
// CHECK: math.powf %{{.*}}, %{{.*}} : f32
func.func @pow(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = train.pow %x exponent 3.0 : tensor<4x8xf32>
  %1 = train.pow %x exponent -0.5 : tensor<4x8xf32>
  %2 = train.pow %x exponent 1.5 : tensor<4x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// clamp: minimumf with max, then maximumf with min (NaN kept).
// CHECK-LABEL: func.func @clamp
// CHECK: linalg.generic
// CHECK: %[[HI:.*]] = arith.minimumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf %[[HI]], %{{.*}} : f32
func.func @clamp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = train.clamp %x min 0.0 max 6.0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A depthwise convolution: the input and filter split into groups by
// expand_shape (no data moved), one affine contraction over (n, g, fg, oh,
// ow | cg, kh, kw), the result merged back to NCHW.
// CHECK-LABEL: func.func @depthwise
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] {{.*}} : tensor<2x4x10x10xf32> into tensor<2x4x1x10x10xf32>
// CHECK: tensor.expand_shape %arg1 {{\[\[}}0, 1], [2], [3], [4]] {{.*}} : tensor<4x1x3x3xf32> into tensor<4x1x1x3x3xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<2x4x1x8x8xf32> into tensor<2x4x8x8xf32>
func.func @depthwise(%x: tensor<2x4x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<2x4x8x8xf32> {
  %0 = train.conv2d %x, %w padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// -----

// Batch norm's statistics and its gradient's sums in the accumulator asked
// for: f32 by default, f64 with norm-statistics=f64 (the input widened in the
// sum); normalizing stays in f32, reading the sums rounded once.
// CHECK-LABEL: func.func @batch_norm_statistics
// CHECK-NOT: f64
// CHECK: return
// F64-LABEL: func.func @batch_norm_statistics
// F64: linalg.generic {{.*}} ins(%arg0 : tensor<2x3x4x4xf16>) outs(%{{.*}} : tensor<3xf64>)
// F64: arith.extf %{{.*}} : f16 to f64
// F64: arith.addf %{{.*}} : f64
// F64: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg0, %{{.*}}, %{{.*}}, %arg1, %arg1 : tensor<2x3x4x4xf16>, tensor<3xf64>, tensor<3xf64>, tensor<3xf32>, tensor<3xf32>)
// F64: arith.truncf %{{.*}} : f64 to f32
// F64: math.sqrt %{{.*}} : f32
// F64-LABEL: func.func @batch_norm_grad_statistics
// F64: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<3xf64>, tensor<3xf64>)
// F64: math.sqrt %{{.*}} : f64
// F64-LABEL: func.func @layer_norm_statistics
// F64: outs(%{{.*}} : tensor<4xf64>)
func.func @batch_norm_statistics(%x: tensor<2x3x4x4xf16>, %g: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<2x3x4x4xf16>, tensor<3xf32>, tensor<3xf32>) {
  %r:3 = train.batch_norm %x, %g, %g, %m, %v : tensor<2x3x4x4xf16>, tensor<3xf32>
  return %r#0, %r#1, %r#2 : tensor<2x3x4x4xf16>, tensor<3xf32>, tensor<3xf32>
}
func.func @batch_norm_grad_statistics(%dy: tensor<2x3x4x4xf32>, %x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %r:3 = train.batch_norm_grad %dy, %x, %g : tensor<2x3x4x4xf32>, tensor<3xf32>
  return %r#0, %r#1, %r#2 : tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>
}
func.func @layer_norm_statistics(%x: tensor<4x8xf32>, %g: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = train.layer_norm %x, %g, %g : tensor<4x8xf32>, tensor<8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// The forward's output marks are for evaluation: dropped here (bufferization
// would make them argument attributes of out-parameters).
// CHECK-LABEL: func.func @outputs(
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32>) {
// CHECK-NOT: train.output
func.func @outputs(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {train.output}) {
  %l = train.reduce_sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// -----

// train.check_numerics: each value's largest magnitude reduced on its bits
// (sign cleared, an unsigned maximum: inf above every finite value, NaN
// above inf) right after the op that makes it, so no activation stays alive
// for the check; then the rank-0 results gathered into the vector.
// CHECK-LABEL: func.func @check_numerics(
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<4x8xf16>)
// CHECK: arith.maximumf
// CHECK: %[[RB:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]} ins(%[[R]] : tensor<4x8xf16>) outs(%{{.*}} : tensor<i16>)
// CHECK: arith.bitcast %{{.*}} : f16 to i16
// CHECK: arith.andi %{{.*}}, %{{.*}} : i16
// CHECK: arith.maxui
// CHECK: %[[RM:.*]] = linalg.generic {{.*}} ins(%[[RB]] : tensor<i16>) outs(%{{.*}} : tensor<f32>)
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK-NEXT: arith.extf
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<8xf32>)
// CHECK: math.exp
// CHECK: %[[EB:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<8xf32>) outs(%{{.*}} : tensor<i32>)
// CHECK: arith.andi %{{.*}}, %{{.*}} : i32
// CHECK: %[[EM:.*]] = linalg.generic {{.*}} ins(%[[EB]] : tensor<i32>) outs(%{{.*}} : tensor<f32>)
// CHECK: linalg.generic {{.*}} ins(%[[RM]], %[[EM]] : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<2xf32>)
// CHECK: linalg.index 0
// CHECK: arith.select
func.func @check_numerics(%x: tensor<4x8xf16>, %w: tensor<8xf32>) -> (tensor<4x8xf16>, tensor<2xf32>) {
  %r = train.relu %x : tensor<4x8xf16>
  %e = train.exp %w : tensor<8xf32>
  %m = train.check_numerics %r, %e : tensor<4x8xf16>, tensor<8xf32>
  return %r, %m : tensor<4x8xf16>, tensor<2xf32>
}

// -----

// A value of 65536 elements or more in two stages, so that the CPU's
// threads share it: its elements as 64 rows (a parallel dimension), each
// row's maximum, then the maximum of the 64.
// CHECK-LABEL: func.func @check_numerics_split(
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1]] : tensor<256x512xf16> into tensor<131072xf16>
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %[[FLAT]] {{\[}}[0, 1]] output_shape [64, 2048] : tensor<131072xf16> into tensor<64x2048xf16>
// CHECK: %[[PART:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[ROWS]] : tensor<64x2048xf16>) outs(%{{.*}} : tensor<64xi16>)
// CHECK: arith.bitcast %{{.*}} : f16 to i16
// CHECK: arith.maxui
// CHECK: %[[ALL:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[PART]] : tensor<64xi16>) outs(%{{.*}} : tensor<i16>)
// CHECK-NOT: arith.bitcast
// CHECK: arith.maxui
// CHECK: linalg.generic {{.*}} ins(%[[ALL]] : tensor<i16>) outs(%{{.*}} : tensor<f32>)
func.func @check_numerics_split(%x: tensor<256x512xf16>) -> tensor<1xf32> {
  %m = train.check_numerics %x : tensor<256x512xf16>
  return %m : tensor<1xf32>
}
