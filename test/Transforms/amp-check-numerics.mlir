// RUN: amp-opt %s -split-input-file --amp-autocast --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling --amp-check-numerics | FileCheck %s --enable-var-scope
// RUN: amp-opt %s -split-input-file --amp-pipeline="optimizer=sgd" | FileCheck %s --check-prefix=OFF
// RUN: amp-opt %s -split-input-file --amp-pipeline="optimizer=sgd check-numerics=true" | FileCheck %s --check-prefix=PIPE

// amp-check-numerics (docs/Numerics.md): one train.check_numerics over the
// float arguments the forward reads (x, w, b; not the labels, the learning
// rate or the scaler's state) and the results of the ops that can make an
// inf or NaN from finite inputs, forward and backward, in program order; its
// vector is the step's last result. The relu, its gradient and the
// widening cast are looked through (their outputs are finite when their
// inputs are); the
// mask constant is an entry measured at compile time (its -inf is the
// model's own, so it never counts as born); the update and loss-scaling
// machinery is not checked. Backward ops carry their forward op's line.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32>, %{{[a-z0-9]+}}: tensor<4xi32>, %[[W:[a-z0-9]+]]: tensor<3x2xf32> {{.*}}, %[[B:[a-z0-9]+]]: tensor<2xf32>
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<f32>, tensor<i32>, tensor<i1>, tensor<i1>, tensor<i32>, tensor<13xf32>)
// CHECK-SAME: train.numerics = [
// CHECK-SAME: {argument = 0 : i64, check = 0 : i64, kind = "argument"}, {argument = 2 : i64, check = 1 : i64, kind = "argument"}, {argument = 3 : i64, check = 2 : i64, kind = "argument"},
// The three narrowing casts of autocast (which can overflow), each reading
// its argument's entry:
// CHECK-SAME: {check = 3 : i64, {{.*}}inputs = array<i64: 2>, kind = "op", line = [[@LINE+36]] : i64, op = "train.cast", stage = "forward"},
// CHECK-SAME: {check = 4 : i64, {{.*}}inputs = array<i64: 1>, kind = "op", line = [[@LINE+34]] : i64, op = "train.cast", stage = "forward"},
// CHECK-SAME: {check = 5 : i64, {{.*}}inputs = array<i64: 0>, kind = "op", line = [[@LINE+32]] : i64, op = "train.cast", stage = "forward"},
// CHECK-SAME: {check = 6 : i64, {{.*}}inputs = array<i64: 5, 4, 3>, kind = "op", line = [[@LINE+34]] : i64, op = "train.matmul", stage = "forward"},
// CHECK-SAME: {kind = "constant", magnitude = 0x7FF0000000000000 : f64},
// The add reads the matmul's entry through the relu and the widening cast:
// CHECK-SAME: {check = 7 : i64, {{.*}}inputs = array<i64: 6, 7>, kind = "op", line = [[@LINE+34]] : i64, op = "train.add", stage = "forward"},
// CHECK-SAME: {check = 8 : i64, {{.*}}op = "train.cross_entropy", stage = "forward"},
// CHECK-SAME: {check = 9 : i64, {{.*}}line = [[@LINE+33]] : i64, op = "train.cross_entropy_grad", stage = "backward"},
// CHECK-SAME: {check = 10 : i64, {{.*}}op = "train.cast", stage = "backward"},
// CHECK-SAME: {check = 11 : i64, {{.*}}inputs = array<i64: 5, 11>, kind = "op", line = [[@LINE+27]] : i64, op = "train.matmul", stage = "backward"},
// CHECK-SAME: {check = 12 : i64, {{.*}}inputs = array<i64: 11>, kind = "op", line = {{[0-9]+}} : i64, op = "train.reduce_sum", stage = "backward"}]
// CHECK: %[[B16:.*]] = train.cast %[[B]]
// CHECK: %[[W16:.*]] = train.cast %[[W]]
// CHECK: %[[X16:.*]] = train.cast %[[X]]
// CHECK: %[[H:.*]] = train.matmul
// CHECK: %[[R:.*]] = train.relu %[[H]]
// CHECK: %[[M:.*]] = train.add
// CHECK: %[[L:.*]] = train.cross_entropy %[[M]]
// CHECK: %[[DM:.*]] = train.cross_entropy_grad
// CHECK: %[[DM16:.*]] = train.cast %[[DM]]
// CHECK: train.relu_grad
// CHECK: %[[DW:.*]] = train.matmul
// CHECK: %[[DB:.*]] = train.reduce_sum
// CHECK: train.update_scale
// CHECK-NEXT: %[[V:.*]] = train.check_numerics %[[X]], %[[W]], %[[B]], %[[B16]], %[[W16]], %[[X16]], %[[H]], %[[M]], %[[L]], %[[DM]], %[[DM16]], %[[DW]], %[[DB]] :
// CHECK-NEXT: return {{.*}}, %[[V]] :

// Without the option the step is unchanged; amp-pipeline runs it after the
// cast cleanup.
// OFF-NOT: train.check_numerics
// OFF-NOT: train.numerics
// PIPE: train.numerics = [
// PIPE: train.check_numerics
func.func @forward(%x: tensor<4x3xf32>, %labels: tensor<4xi32>,
                   %w: tensor<3x2xf32> {train.param, train.init = #train.init<zeros>},
                   %b: tensor<2xf32> {train.param, train.init = #train.init<zeros>}) -> tensor<f32> {
  %h = train.matmul %x, %w, %b : tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %r = train.relu %h : tensor<4x2xf32>
  %mask = train.constant dense<[[0.0, 0xFF800000], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]> : tensor<4x2xf32>
  %m = train.add %r, %mask : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<4x2xf32>
  %l = train.cross_entropy %m, %labels : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
