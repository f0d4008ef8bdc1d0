// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=momentum momentum=0.9 weight-decay=0.0001" | FileCheck %s --check-prefix=MOM
// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=adamw weight-decay=0.01" | FileCheck %s --check-prefix=ADAMW
// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=SGD
// RUN: amp-opt %s --amp-autocast="opt-level=O2" --amp-autodiff --amp-optimizer --amp-cast-cleanup | FileCheck %s --check-prefix=O2
// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=momentum accumulate=4 clip-norm=1.0" | FileCheck %s --check-prefix=ACC
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer="accumulate=0" 2>&1 | FileCheck %s --check-prefix=BADACC
// RUN: not amp-opt %s --amp-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer="optimizer=lamb" 2>&1 | FileCheck %s --check-prefix=BADOPT

// The step ABI: the forward's arguments, then masters, then optimizer state
// (zero-initialized), then the learning rate; results: loss, new state, new
// parameters, new masters, new optimizer state.

// MOM-LABEL: func.func @train_step(
// MOM-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32>, %[[L:[a-z0-9]+]]: tensor<4xi32>,
// MOM-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf32> {train.param}, %[[B:[a-z0-9]+]]: tensor<2xf32> {train.param},
// MOM-SAME: %[[MW:[a-z0-9]+]]: tensor<3x2xf32> {train.init = #train.init<zeros>, train.opt_state},
// MOM-SAME: %[[MB:[a-z0-9]+]]: tensor<2xf32> {train.init = #train.init<zeros>, train.opt_state},
// MOM-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {train.lr})
// MOM-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>)
// MOM: %[[U:.*]]:4 = train.sgd_update %[[LR]] params(%[[W]], %[[B]]) grads(%{{.*}}, %{{.*}}) momentum_buffers(%[[MW]], %[[MB]]) momentum 9.000000e-01 weight_decay 1.000000e-04
// MOM: return %{{.*}}, %[[U]]#0, %[[U]]#1, %[[U]]#2, %[[U]]#3

// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: %{{[a-z0-9]+}}: tensor<i32> {train.init = #train.init<zeros>, train.opt_state}, %[[LR:[a-z0-9]+]]: tensor<f32> {train.lr})
// ADAMW-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<i32>)
// ADAMW: train.adam_update %[[LR]], %{{.*}} params({{.*}}) grads({{.*}}) exp_avgs({{.*}}) exp_avg_sqs({{.*}}) decoupled weight_decay 1.000000e-02

// SGD-LABEL: func.func @train_step(
// SGD-SAME: %{{[a-z0-9]+}}: tensor<2xf32> {train.param}, %[[LR:[a-z0-9]+]]: tensor<f32> {train.lr})
// SGD-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>)
// SGD: train.sgd_update %[[LR]] params(%{{.*}}, %{{.*}}) grads(%{{.*}}, %{{.*}}) : tensor<f32>

// At O2 the parameters are f16 with f32 masters; f16 gradients are widened; the update runs on
// the masters and the new parameters are the rounded masters.
// O2-LABEL: func.func @train_step(
// O2-SAME: %[[W:[a-z0-9]+]]: tensor<3x2xf16> {train.param}
// O2-SAME: %[[MW:[a-z0-9]+]]: tensor<3x2xf32> {train.master}
// O2: %[[DW:.*]] = train.cast %{{.*}} : tensor<3x2xf16> to tensor<3x2xf32>
// O2: %[[U:.*]]:7 = train.adam_update %{{.*}}, %{{.*}} params(%[[MW]], %{{.*}}) grads(%[[DW]], %{{.*}})
// O2: %[[NW:.*]] = train.cast %[[U]]#0 : tensor<3x2xf32> to tensor<3x2xf16>
// O2: return %{{.*}}, %[[NW]], %{{.*}}, %[[U]]#0, %[[U]]#1

// Accumulation state (accumulators, count) precedes the optimizer's; the
// update is skipped while micro-batches are pending; clipping runs on the
// mean gradients.
// ACC-LABEL: func.func @train_step(
// ACC-SAME: %[[AW:[a-z0-9]+]]: tensor<3x2xf32> {train.init = #train.init<zeros>, train.opt_state}, %[[AB:[a-z0-9]+]]: tensor<2xf32> {train.init = #train.init<zeros>, train.opt_state},
// ACC-SAME: %[[N:[a-z0-9]+]]: tensor<i32> {train.init = #train.init<zeros>, train.opt_state},
// ACC: %[[A:.*]]:6 = train.accumulate_grads %[[N]] accumulators(%[[AW]], %[[AB]]) grads(%{{.*}}, %{{.*}}) steps 4
// ACC: %[[C:.*]]:3 = train.clip_grad_norm(%[[A]]#4, %[[A]]#5) max_norm 1.000000e+00
// ACC: %[[U:.*]]:4 = train.sgd_update %{{.*}} params(%{{.*}}, %{{.*}}) grads(%[[C]]#0, %[[C]]#1) momentum_buffers(%{{.*}}, %{{.*}}) skip(%[[A]]#3)
// ACC: return %{{.*}}, %[[U]]#0, %[[U]]#1, %[[A]]#0, %[[A]]#1, %[[A]]#2, %[[U]]#2, %[[U]]#3

// BADACC: error: amp-optimizer: accumulate must be at least 1, got 0
// NOGRAD: error: amp-optimizer: no gradient function (@<name>_grad); run amp-autodiff first
// BADOPT: for the --optimizer option: 'lamb' is not one of: sgd, momentum, adam, adamw
func.func @forward(%x: tensor<4x3xf32>, %labels: tensor<4xi32>, %w: tensor<3x2xf32> {train.param}, %b: tensor<2xf32> {train.param}) -> tensor<f32> {
  %y = train.matmul %x, %w, %b : tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %l = train.cross_entropy %y, %labels : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
