// Parameter groups (PyTorch's param_groups): train.param_group gives each
// parameter its group's learning rate, from a [G] lr argument;
// train.weight_decay overrides the optimizer's weight decay per parameter.
// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=momentum momentum=0.9 weight-decay=0.01" | FileCheck %s --check-prefix=SGD
// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=adamw weight-decay=0.01" | FileCheck %s --check-prefix=ADAM
// RUN: amp-opt %s --amp-pipeline="opt-level=O1 optimizer=momentum" | FileCheck %s --check-prefix=SCALED
// RUN: amp-opt %s --amp-pipeline="opt-level=O1 optimizer=adamw" --amp-lower-cpu | FileCheck %s --check-prefix=LOWERED

func.func @forward(%x: tensor<4x8xf32>, %labels: tensor<4xi32>,
    %w: tensor<8x3xf32> {train.param, train.init = #train.init<zeros>},
    %b: tensor<3xf32> {train.param, train.init = #train.init<zeros>, train.param_group = 1 : i64, train.weight_decay = 0.0 : f64},
    %w2: tensor<3x3xf32> {train.param, train.init = #train.init<zeros>, train.param_group = 2 : i64})
    -> tensor<f32> {
  %h = train.matmul %x, %w, %b : tensor<4x8xf32>, tensor<8x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %y = train.matmul %h, %w2 : tensor<4x3xf32>, tensor<3x3xf32> -> tensor<4x3xf32>
  %l = train.cross_entropy %y, %labels : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// Three groups: one rate each; the weight decays are the option's except
// where a parameter has its own.
// SGD-LABEL: func.func @train_step
// SGD-SAME: %[[LR:arg[0-9]+]]: tensor<3xf32> {train.lr}
// SGD: train.sgd_update %[[LR]] params({{.*}}) {{.*}} momentum 9.000000e-01 weight_decay 1.000000e-02 {lr_groups = array<i64: 0, 1, 2>, weight_decays = array<f64: 1.000000e-02, 0.000000e+00, 1.000000e-02>} : tensor<3xf32>,

// ADAM-LABEL: func.func @train_step
// ADAM: train.adam_update %{{.*}}, %{{.*}} params({{.*}}) {{.*}} decoupled weight_decay 1.000000e-02 {lr_groups = array<i64: 0, 1, 2>, weight_decays = array<f64: 1.000000e-02, 0.000000e+00, 1.000000e-02>} : tensor<3xf32>, tensor<i32>

// Loss scaling still finds the one update and skips it on overflow.
// SCALED: %[[UNSCALED:.*]]:4 = train.unscale_grads
// SCALED: train.sgd_update {{.*}} skip(%[[UNSCALED]]#3) {{.*}}lr_groups = array<i64: 0, 1, 2>

// Each group's rate is a slice of the lr argument.
// LOWERED-LABEL: llvm.func @train_step
// LOWERED-NOT: memrefCopy
