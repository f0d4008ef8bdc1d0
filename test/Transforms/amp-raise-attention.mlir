// RUN: amp-opt %s -split-input-file --amp-raise-attention | FileCheck %s --enable-var-scope

// examples/transformer_block.mlir's form: q k^T, a constant scale, a causal
// softmax, @ v.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<32x16x8xf32>, %[[K:[a-z0-9]+]]: tensor<32x16x8xf32>, %[[V:[a-z0-9]+]]: tensor<32x16x4xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = train.attention %[[Q]], %[[K]], %[[V]] causal scale 1.250000e-01 : tensor<32x16x8xf32>, tensor<32x16x8xf32>, tensor<32x16x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @causal(%q: tensor<32x16x8xf32>, %k: tensor<32x16x8xf32>, %v: tensor<32x16x4xf32>) -> tensor<32x16x4xf32> {
  %s0 = train.batch_matmul %q, %k transpose_rhs : tensor<32x16x8xf32>, tensor<32x16x8xf32> -> tensor<32x16x16xf32>
  %c = train.constant dense<0.125> : tensor<f32>
  %s1 = train.mul %s0, %c : tensor<32x16x16xf32>, tensor<f32> -> tensor<32x16x16xf32>
  %p = train.softmax %s1 axis 2 causal : tensor<32x16x16xf32>
  %o = train.batch_matmul %p, %v : tensor<32x16x16xf32>, tensor<32x16x4xf32> -> tensor<32x16x4xf32>
  return %o : tensor<32x16x4xf32>
}

// -----

// The scale as a division (on the left of a mul works too), an additive
// mask on either side of the add; rank 4.
// CHECK-LABEL: func.func @divided_and_masked(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<2x4x6x8xf32>, %[[M:[a-z0-9]+]]: tensor<2x1x1x6xf32>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = train.attention %[[Q]], %[[Q]], %[[Q]] mask %[[M]] scale 2.500000e-01 : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x1x1x6xf32>
// CHECK-NEXT: %[[O2:.*]], %{{.*}} = train.attention %[[Q]], %[[Q]], %[[Q]] mask %[[M]] scale 5.000000e-01
// CHECK-NEXT: return %[[O]], %[[O2]]
func.func @divided_and_masked(%q: tensor<2x4x6x8xf32>, %m: tensor<2x1x1x6xf32>) -> (tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>) {
  %s0 = train.batch_matmul %q, %q transpose_rhs : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x6xf32>
  %c = train.constant dense<4.0> : tensor<f32>
  %s1 = train.div %s0, %c : tensor<2x4x6x6xf32>, tensor<f32> -> tensor<2x4x6x6xf32>
  %s2 = train.add %m, %s1 : tensor<2x1x1x6xf32>, tensor<2x4x6x6xf32> -> tensor<2x4x6x6xf32>
  %p = train.softmax %s2 axis 3 : tensor<2x4x6x6xf32>
  %o = train.batch_matmul %p, %q : tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %t0 = train.batch_matmul %q, %q transpose_rhs : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x6xf32>
  %h = train.constant dense<0.5> : tensor<f32>
  %t1 = train.mul %h, %t0 : tensor<f32>, tensor<2x4x6x6xf32> -> tensor<2x4x6x6xf32>
  %t2 = train.add %t1, %m : tensor<2x4x6x6xf32>, tensor<2x1x1x6xf32> -> tensor<2x4x6x6xf32>
  %p2 = train.softmax %t2 axis 3 : tensor<2x4x6x6xf32>
  %o2 = train.batch_matmul %p2, %q : tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  return %o, %o2 : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>
}

// -----

// A boolean keep-mask selecting -inf; no scale (1.0).
// CHECK-LABEL: func.func @boolean_mask(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<3x5x4xf32>, %[[KEEP:[a-z0-9]+]]: tensor<3x1x5xi1>
// CHECK-NEXT: %[[O:.*]], %{{.*}} = train.attention %[[Q]], %[[Q]], %[[Q]] mask %[[KEEP]] scale 1.000000e+00 : tensor<3x5x4xf32>, tensor<3x5x4xf32>, tensor<3x5x4xf32>, tensor<3x1x5xi1>
// CHECK-NEXT: return %[[O]]
func.func @boolean_mask(%q: tensor<3x5x4xf32>, %keep: tensor<3x1x5xi1>) -> tensor<3x5x4xf32> {
  %s = train.batch_matmul %q, %q transpose_rhs : tensor<3x5x4xf32>, tensor<3x5x4xf32> -> tensor<3x5x5xf32>
  %ninf = train.constant dense<0xFF800000> : tensor<f32>
  %sm = train.select %keep, %s, %ninf : tensor<3x1x5xi1>, tensor<3x5x5xf32>, tensor<f32> -> tensor<3x5x5xf32>
  %p = train.softmax %sm axis 2 : tensor<3x5x5xf32>
  %o = train.batch_matmul %p, %q : tensor<3x5x5xf32>, tensor<3x5x4xf32> -> tensor<3x5x4xf32>
  return %o : tensor<3x5x4xf32>
}

// -----

// Left alone: the probabilities are used again (the model returns them);
// the scale is not a constant; the key is broadcast over the heads; the
// softmax is over another axis; a select with a finite value.
// CHECK-LABEL: func.func @not_raised(
// CHECK-NOT: train.attention
// CHECK: return
func.func @not_raised(%q: tensor<2x4x6x8xf32>, %k1: tensor<2x1x6x8xf32>, %c: tensor<f32>, %keep: tensor<2x4x6x6xi1>)
    -> (tensor<2x4x6x8xf32>, tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>) {
  %s0 = train.batch_matmul %q, %q transpose_rhs : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x6xf32>
  %p0 = train.softmax %s0 axis 3 : tensor<2x4x6x6xf32>
  %o0 = train.batch_matmul %p0, %q : tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %s1 = train.batch_matmul %q, %q transpose_rhs : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x6xf32>
  %t1 = train.mul %s1, %c : tensor<2x4x6x6xf32>, tensor<f32> -> tensor<2x4x6x6xf32>
  %p1 = train.softmax %t1 axis 3 : tensor<2x4x6x6xf32>
  %o1 = train.batch_matmul %p1, %q : tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %s2 = train.batch_matmul %q, %k1 transpose_rhs : tensor<2x4x6x8xf32>, tensor<2x1x6x8xf32> -> tensor<2x4x6x6xf32>
  %p2 = train.softmax %s2 axis 3 : tensor<2x4x6x6xf32>
  %o2 = train.batch_matmul %p2, %q : tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %s3 = train.batch_matmul %q, %q transpose_rhs : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x6xf32>
  %p3 = train.softmax %s3 axis 2 : tensor<2x4x6x6xf32>
  %o3 = train.batch_matmul %p3, %q : tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  %s4 = train.batch_matmul %q, %q transpose_rhs : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x6xf32>
  %low = train.constant dense<-1.0e4> : tensor<f32>
  %m4 = train.select %keep, %s4, %low : tensor<2x4x6x6xi1>, tensor<2x4x6x6xf32>, tensor<f32> -> tensor<2x4x6x6xf32>
  %p4 = train.softmax %m4 axis 3 : tensor<2x4x6x6xf32>
  %o4 = train.batch_matmul %p4, %q : tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32> -> tensor<2x4x6x8xf32>
  return %o0, %p0, %o1, %o2, %o3, %o4 : tensor<2x4x6x8xf32>, tensor<2x4x6x6xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>
}

// -----

// A learned additive mask (computed from a parameter) is left to the
// decomposed form, whose add gives it a gradient; an input mask is raised.
// CHECK-LABEL: func.func @learned_mask(
// CHECK: train.softmax
// CHECK: train.attention %{{.*}} mask %{{.*}} scale 1.000000e+00
// CHECK-NOT: train.attention
// CHECK: return
func.func @learned_mask(%q: tensor<3x5x4xf32>, %m: tensor<5x5xf32>, %bias: tensor<5x5xf32> {train.param}) -> (tensor<3x5x4xf32>, tensor<3x5x4xf32>) {
  %s = train.batch_matmul %q, %q transpose_rhs : tensor<3x5x4xf32>, tensor<3x5x4xf32> -> tensor<3x5x5xf32>
  %learned = train.mul %bias, %m : tensor<5x5xf32>, tensor<5x5xf32> -> tensor<5x5xf32>
  %sm = train.add %s, %learned : tensor<3x5x5xf32>, tensor<5x5xf32> -> tensor<3x5x5xf32>
  %p = train.softmax %sm axis 2 : tensor<3x5x5xf32>
  %o = train.batch_matmul %p, %q : tensor<3x5x5xf32>, tensor<3x5x4xf32> -> tensor<3x5x4xf32>
  %s2 = train.batch_matmul %q, %q transpose_rhs : tensor<3x5x4xf32>, tensor<3x5x4xf32> -> tensor<3x5x5xf32>
  %sm2 = train.add %s2, %m : tensor<3x5x5xf32>, tensor<5x5xf32> -> tensor<3x5x5xf32>
  %p2 = train.softmax %sm2 axis 2 : tensor<3x5x5xf32>
  %o2 = train.batch_matmul %p2, %q : tensor<3x5x5xf32>, tensor<3x5x4xf32> -> tensor<3x5x4xf32>
  return %o, %o2 : tensor<3x5x4xf32>, tensor<3x5x4xf32>
}
