// RUN: amp-opt %s -split-input-file --amp-autocast | FileCheck %s
// RUN: amp-opt %s -split-input-file --amp-autocast="dtype=bf16" | FileCheck %s --check-prefix=BF16
// RUN: amp-opt %s -split-input-file --amp-autocast="opt-level=O0" | FileCheck %s --check-prefix=O0

// Autocast at O1 (f16 unless stated): each category, exact cast placement,
// one cast per value, region crossing, boundaries with non-train ops.

// lower: both operands cast once, right after their definitions (the top of
// the block for arguments); the result is f16 and the return casts it back.
// CHECK-LABEL: func.func @lower
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT: %[[W16:.*]] = train.cast %[[W]] : tensor<16x4xf32> to tensor<16x4xf16>
// CHECK-NEXT: %[[X16:.*]] = train.cast %[[X]] : tensor<8x16xf32> to tensor<8x16xf16>
// CHECK-NEXT: %[[Y:.*]] = train.matmul %[[X16]], %[[W16]] accumulate f32 {{.*}}: tensor<8x16xf16>, tensor<16x4xf16> -> tensor<8x4xf16>
// CHECK-NEXT: %[[Y32:.*]] = train.cast %[[Y]] : tensor<8x4xf16> to tensor<8x4xf32>
// CHECK-NEXT: return %[[Y32]] : tensor<8x4xf32>
// BF16-LABEL: func.func @lower
// BF16: train.matmul %{{.*}}, %{{.*}} accumulate f32 {{.*}}: tensor<8x16xbf16>, tensor<16x4xbf16> -> tensor<8x4xbf16>
// O0-LABEL: func.func @lower
// O0-NOT: train.cast
// O0: train.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
func.func @lower(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A weight used by three matmuls is cast once.
// CHECK-LABEL: func.func @one_cast_per_value
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x16xf32>)
// CHECK-NEXT: %[[W16:.*]] = train.cast %[[W]] : tensor<16x16xf32> to tensor<16x16xf16>
// CHECK-NEXT: %[[X16:.*]] = train.cast %[[X]] : tensor<8x16xf32> to tensor<8x16xf16>
// CHECK-NEXT: %[[A:.*]] = train.matmul %[[X16]], %[[W16]]
// CHECK-NEXT: %[[B:.*]] = train.matmul %[[A]], %[[W16]]
// CHECK-NEXT: %[[C:.*]] = train.matmul %[[B]], %[[W16]]
// CHECK-NEXT: %[[C32:.*]] = train.cast %[[C]] : tensor<8x16xf16> to tensor<8x16xf32>
// CHECK-NEXT: return %[[C32]] : tensor<8x16xf32>
func.func @one_cast_per_value(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> tensor<8x16xf32> {
  %a = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %b = train.matmul %a, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %c = train.matmul %b, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  return %c : tensor<8x16xf32>
}

// -----

// Inputs already in the low type are not round-tripped: no cast at all.
// CHECK-LABEL: func.func @low_inputs
// CHECK-NOT: train.cast
// CHECK: train.matmul %arg0, %arg1 accumulate f32 {{.*}}: tensor<8x16xf16>, tensor<16x4xf16> -> tensor<8x4xf16>
// CHECK-NOT: train.cast
func.func @low_inputs(%x: tensor<8x16xf16>, %w: tensor<16x4xf16>) -> tensor<8x4xf16> {
  %y = train.matmul %x, %w : tensor<8x16xf16>, tensor<16x4xf16> -> tensor<8x4xf16>
  return %y : tensor<8x4xf16>
}

// -----

// fp32: an f16 value is widened for softmax; an f32 one is not touched.
// CHECK-LABEL: func.func @fp32_ops
// CHECK-SAME: (%[[X:.*]]: tensor<4x10xf16>, %[[Y:.*]]: tensor<4x10xf32>)
// CHECK-NEXT: %[[X32:.*]] = train.cast %[[X]] : tensor<4x10xf16> to tensor<4x10xf32>
// CHECK-NEXT: %[[S:.*]] = train.softmax %[[X32]] axis 1 {{.*}}: tensor<4x10xf32>
// CHECK-NEXT: %[[S16:.*]] = train.cast %[[S]] : tensor<4x10xf32> to tensor<4x10xf16>
// CHECK-NEXT: %[[E:.*]] = train.exp %[[Y]] {{.*}}: tensor<4x10xf32>
// CHECK-NEXT: %[[L:.*]] = train.log %[[S]] {{.*}}: tensor<4x10xf32>
// CHECK-NEXT: %[[L16:.*]] = train.cast %[[L]] : tensor<4x10xf32> to tensor<4x10xf16>
// CHECK-NEXT: return %[[S16]], %[[E]], %[[L16]]
func.func @fp32_ops(%x: tensor<4x10xf16>, %y: tensor<4x10xf32>) -> (tensor<4x10xf16>, tensor<4x10xf32>, tensor<4x10xf16>) {
  %s = train.softmax %x axis 1 : tensor<4x10xf16>
  %e = train.exp %y : tensor<4x10xf32>
  %l = train.log %s : tensor<4x10xf16>
  return %s, %e, %l : tensor<4x10xf16>, tensor<4x10xf32>, tensor<4x10xf16>
}

// -----

// The softmax result became f32; the return casts back to the declared f16.
// CHECK-LABEL: func.func @fp32_result_at_boundary
// CHECK: %[[S:.*]] = train.softmax %{{.*}} axis 1 {{.*}}: tensor<4x10xf32>
// CHECK-NEXT: %[[S16:.*]] = train.cast %[[S]] : tensor<4x10xf32> to tensor<4x10xf16>
// CHECK-NEXT: return %[[S16]] : tensor<4x10xf16>
func.func @fp32_result_at_boundary(%x: tensor<4x10xf16>) -> tensor<4x10xf16> {
  %s = train.softmax %x axis 1 : tensor<4x10xf16>
  return %s : tensor<4x10xf16>
}

// -----

// promote: the f16 matmul result plus an f32 tensor computes in f32; a
// rank-0 f32 scalar does not promote the f16 tensor (it is cast to f16, as a
// Python scalar in PyTorch).
// CHECK-LABEL: func.func @promote
// CHECK-SAME: (%{{[a-z0-9]+}}: tensor<4x4xf32>, %{{[a-z0-9]+}}: tensor<4x4xf32>, %[[B:[a-z0-9]+]]: tensor<4x4xf32>, %[[S:[a-z0-9]+]]: tensor<f32>)
// CHECK-NEXT: %[[S16:.*]] = train.cast %[[S]] : tensor<f32> to tensor<f16>
// CHECK: %[[M:.*]] = train.matmul {{.*}} -> tensor<4x4xf16>
// CHECK-NEXT: %[[M32:.*]] = train.cast %[[M]] : tensor<4x4xf16> to tensor<4x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = train.add %[[M32]], %[[B]] {{.*}}: tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[P:.*]] = train.mul %[[M]], %[[S16]] {{.*}}: tensor<4x4xf16>, tensor<f16> -> tensor<4x4xf16>
func.func @promote(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4x4xf32>, %s: tensor<f32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %m = train.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %sum = train.add %m, %b : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %p = train.mul %m, %s : tensor<4x4xf32>, tensor<f32> -> tensor<4x4xf32>
  return %sum, %p : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// promote with f16 and bf16 operands widens to f32 (neither holds the
// other's values): a bf16 graph whose matmul autocast moves to f16.
// CHECK-LABEL: func.func @promote_mixed_low
// CHECK: %[[R:.*]] = train.relu %arg0 {{.*}}: tensor<2x2xbf16>
// CHECK-NEXT: %[[R32:.*]] = train.cast %[[R]] : tensor<2x2xbf16> to tensor<2x2xf32>
// CHECK: %[[M:.*]] = train.matmul {{.*}} -> tensor<2x2xf16>
// CHECK-NEXT: %[[M32:.*]] = train.cast %[[M]] : tensor<2x2xf16> to tensor<2x2xf32>
// CHECK-NEXT: train.concat %[[R32]], %[[M32]] axis 0 {{.*}}: tensor<2x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
func.func @promote_mixed_low(%a: tensor<2x2xbf16>, %w: tensor<2x2xbf16>) -> tensor<4x2xbf16> {
  %r = train.relu %a : tensor<2x2xbf16>
  %m = train.matmul %a, %w : tensor<2x2xbf16>, tensor<2x2xbf16> -> tensor<2x2xbf16>
  %c = train.concat %r, %m axis 0 : tensor<2x2xbf16>, tensor<2x2xbf16> -> tensor<4x2xbf16>
  return %c : tensor<4x2xbf16>
}

// -----

// follow: relu, reshape and pooling keep the f16 of the matmul.
// CHECK-LABEL: func.func @follow
// CHECK: %[[Y:.*]] = train.matmul {{.*}} -> tensor<8x4xf16>
// CHECK-NEXT: %[[R:.*]] = train.relu %[[Y]] {{.*}}: tensor<8x4xf16>
// CHECK-NEXT: %[[F:.*]] = train.reshape %[[R]] {{.*}}: tensor<8x4xf16> -> tensor<32xf16>
// CHECK-NEXT: %[[F32:.*]] = train.cast %[[F]] : tensor<32xf16> to tensor<32xf32>
// CHECK-NEXT: return %[[F32]]
func.func @follow(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<32xf32> {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %r = train.relu %y : tensor<8x4xf32>
  %f = train.reshape %r : tensor<8x4xf32> -> tensor<32xf32>
  return %f : tensor<32xf32>
}

// -----

// Batch norm at O1: f16 activation in and out, f32 parameters and running
// statistics untouched (PyTorch's mixed-precision batch norm).
// CHECK-LABEL: func.func @batch_norm_mixed
// CHECK: %[[C:.*]] = train.conv2d {{.*}} -> tensor<2x4x6x6xf16>
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = train.batch_norm %[[C]], %arg2, %arg3, %arg4, %arg5 {{.*}}: tensor<2x4x6x6xf16>, tensor<4xf32>
func.func @batch_norm_mixed(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c = train.conv2d %x, %w : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  %y, %nm, %nv = train.batch_norm %c, %g, %b, %m, %v : tensor<2x4x6x6xf32>, tensor<4xf32>
  return %y, %nm, %nv : tensor<2x4x6x6xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Losses run in f32; integer labels are never cast.
// CHECK-LABEL: func.func @loss
// CHECK-SAME: (%[[L:.*]]: tensor<4x10xf16>, %[[Y:.*]]: tensor<4xi32>)
// CHECK-NEXT: %[[L32:.*]] = train.cast %[[L]] : tensor<4x10xf16> to tensor<4x10xf32>
// CHECK-NEXT: train.cross_entropy %[[L32]], %[[Y]] {{.*}}: tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
func.func @loss(%logits: tensor<4x10xf16>, %labels: tensor<4xi32>) -> tensor<f32> {
  %l = train.cross_entropy %logits, %labels : tensor<4x10xf16>, tensor<4xi32> -> tensor<f16>
  %l32 = train.cast %l : tensor<f16> to tensor<f32>
  return %l32 : tensor<f32>
}

// -----

// Values cross region boundaries: the weight is cast once outside the loop;
// the loop-carried value is cast at the top of the body and cast back at the
// scf.yield, so the loop's types are unchanged.
// CHECK-LABEL: func.func @region_crossing
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>, %[[W:.*]]: tensor<4x4xf32>)
// CHECK-NEXT: %[[W16:.*]] = train.cast %[[W]] : tensor<4x4xf32> to tensor<4x4xf16>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[X]]) -> (tensor<4x4xf32>)
// CHECK-NEXT: %[[A16:.*]] = train.cast %[[ACC]] : tensor<4x4xf32> to tensor<4x4xf16>
// CHECK-NEXT: %[[M:.*]] = train.matmul %[[A16]], %[[W16]] accumulate f32 {{.*}}: tensor<4x4xf16>, tensor<4x4xf16> -> tensor<4x4xf16>
// CHECK-NEXT: %[[M32:.*]] = train.cast %[[M]] : tensor<4x4xf16> to tensor<4x4xf32>
// CHECK-NEXT: scf.yield %[[M32]] : tensor<4x4xf32>
func.func @region_crossing(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %x) -> (tensor<4x4xf32>) {
    %m = train.matmul %acc, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    scf.yield %m : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// A value used inside an scf.if is cast once, before the region.
// CHECK-LABEL: func.func @if_region
// CHECK-NEXT: %[[W16:.*]] = train.cast %arg1
// CHECK-NEXT: %[[X16:.*]] = train.cast %arg0
// CHECK-NEXT: scf.if
// CHECK-NEXT: train.matmul %[[X16]], %[[W16]]
// CHECK: } else {
// CHECK-NEXT: train.matmul %[[X16]], %[[W16]]
func.func @if_region(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>, %p: i1) -> tensor<4x4xf32> {
  %r = scf.if %p -> (tensor<4x4xf32>) {
    %a = train.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    scf.yield %a : tensor<4x4xf32>
  } else {
    %b = train.matmul %x, %w transpose_rhs : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    scf.yield %b : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

// Per-op overrides win over the lists: this matmul stays f32, this softmax
// runs in the low type.
// CHECK-LABEL: func.func @attribute_override
// CHECK-NOT: train.cast %arg0
// CHECK: %[[Y:.*]] = train.matmul %arg0, %arg1 {{.*}}train.precision = "fp32"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[Y16:.*]] = train.cast %[[Y]] : tensor<4x4xf32> to tensor<4x4xf16>
// CHECK-NEXT: train.softmax %[[Y16]] axis 1 {{.*}}train.precision = "lower"} : tensor<4x4xf16>
func.func @attribute_override(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %y = train.matmul %x, %w {train.precision = "fp32"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %s = train.softmax %y axis 1 {train.precision = "lower"} : tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// -----

// User-written casts are kept as they are.
// CHECK-LABEL: func.func @user_cast
// CHECK: %[[H:.*]] = train.cast %arg0 : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: train.relu %[[H]] {{.*}}: tensor<4xbf16>
func.func @user_cast(%x: tensor<4xf32>) -> tensor<4xbf16> {
  %h = train.cast %x : tensor<4xf32> to tensor<4xbf16>
  %r = train.relu %h : tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// -----

// Division by a tensor of a rank-0 numerator is fp32 (PyTorch computes c / x
// as reciprocal(x) * c, on the fp32 list: 1/x overflows f16 below 1.5e-5);
// a tensor divided by a scalar or by a tensor promotes as before, so its
// f16 numerator stays f16.
// CHECK-LABEL: func.func @scalar_division
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>, %[[W:.*]]: tensor<16x4xf32>, %[[C:.*]]: tensor<f32>)
// CHECK: %[[C16:.*]] = train.cast %[[C]] : tensor<f32> to tensor<f16>
// CHECK: %[[Y:.*]] = train.matmul {{.*}} -> tensor<8x4xf16>
// CHECK: %[[Y32:.*]] = train.cast %[[Y]] : tensor<8x4xf16> to tensor<8x4xf32>
// CHECK: %[[R:.*]] = train.div %[[C]], %[[Y32]] {{.*}}: tensor<f32>, tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK: %[[Q:.*]] = train.div %[[Y]], %[[C16]] {{.*}}: tensor<8x4xf16>, tensor<f16> -> tensor<8x4xf16>
// CHECK: %[[T:.*]] = train.div %[[Y]], %[[Y]] {{.*}}: tensor<8x4xf16>, tensor<8x4xf16> -> tensor<8x4xf16>
// O0-LABEL: func.func @scalar_division
// O0-NOT: train.cast
func.func @scalar_division(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %c: tensor<f32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %r = train.div %c, %y : tensor<f32>, tensor<8x4xf32> -> tensor<8x4xf32>
  %q = train.div %y, %c : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
  %t = train.div %y, %y : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return %r, %q, %t : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Integer and boolean ops have no precision: a comparison of token ids is
// left as it is (no decision), a comparison of floats and a select promote
// to their widest float operand (the -1e9 fill becomes f16's -inf, which
// select passes exactly), and a convert of an i1 stays f32 for its user.
// CHECK-LABEL: func.func @integer_and_boolean
// CHECK: train.compare %{{.*}}, %{{.*}} ne : tensor<4x8xi32>, tensor<i32> -> tensor<4x8xi1>
// CHECK-NOT: train.decision
// CHECK: train.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[FILL:.*]] = train.cast %{{.*}} : tensor<f32> to tensor<f16>
// CHECK: train.select %{{.*}}, %{{.*}}, %[[FILL]] {train.decision = "promote/default"} : tensor<4x8xi1>, tensor<4x8xf16>, tensor<f16> -> tensor<4x8xf16>
// CHECK: train.compare %{{.*}}, %[[FILL]] gt {train.decision = "promote/default"} : tensor<4x8xf16>, tensor<f16> -> tensor<4x8xi1>
// CHECK: train.convert %{{.*}} : tensor<4x8xi1> to tensor<4x8xf32>
// O0-LABEL: func.func @integer_and_boolean
// O0-NOT: train.cast
func.func @integer_and_boolean(%x: tensor<4x8xf32>, %ids: tensor<4x8xi32>, %w: tensor<8x8xf32> {train.param}) -> tensor<f32> {
  %pad = train.constant dense<0> : tensor<i32>
  %keep = train.compare %ids, %pad ne : tensor<4x8xi32>, tensor<i32> -> tensor<4x8xi1>
  %h = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %big = train.constant dense<-1.0e9> : tensor<f32>
  %s = train.select %keep, %h, %big : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %pos = train.compare %h, %big gt : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1>
  %m = train.convert %pos : tensor<4x8xi1> to tensor<4x8xf32>
  %p = train.mul %s, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %l = train.reduce_sum %p axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
