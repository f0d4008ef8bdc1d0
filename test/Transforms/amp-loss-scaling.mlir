// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=sgd accumulate=2 clip-norm=1.0" --amp-loss-scaling | FileCheck %s --check-prefix=DYN
// RUN: amp-opt %s --amp-autocast="opt-level=O2" --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling="mode=static init-scale=128" | FileCheck %s --check-prefix=STATIC
// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling="mode=none" | FileCheck %s --check-prefix=NONE
// RUN: amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="init-scale=1024 growth-factor=4 backoff-factor=0.25 growth-interval=100 min-scale=1 max-scale=4096 hysteresis=3" | FileCheck %s --check-prefix=OPTS
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="mode=sometimes" 2>&1 | FileCheck %s --check-prefix=BADMODE
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="init-scale=0" 2>&1 | FileCheck %s --check-prefix=BADINIT
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="growth-factor=1" 2>&1 | FileCheck %s --check-prefix=BADGROW
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="backoff-factor=1" 2>&1 | FileCheck %s --check-prefix=BADBACK
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="growth-interval=0" 2>&1 | FileCheck %s --check-prefix=BADINT
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="min-scale=8 max-scale=4" 2>&1 | FileCheck %s --check-prefix=BADCAPS
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling="hysteresis=0" 2>&1 | FileCheck %s --check-prefix=BADHYST
// RUN: not amp-opt %s --amp-autodiff --amp-optimizer --amp-loss-scaling --amp-loss-scaling 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not amp-opt %s --amp-autocast="opt-level=O3" --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling="mode=static init-scale=131072" 2>&1 | FileCheck %s --check-prefix=F16LOSS
// RUN: amp-opt %s --amp-autocast="opt-level=O3" --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling="mode=static init-scale=1" | FileCheck %s --check-prefix=O3

// Dynamic (the default): the backward seed becomes the scale, a step
// argument initialised to 65536 with its growth tracker beside it. Gradients
// are unscaled once, after micro-batch accumulation and before clipping; the
// update is skipped on inf/NaN or while micro-batches are pending, and the
// scale only moves on real steps.

// DYN-LABEL: func.func @train_step(
// DYN-SAME: %[[LR:[a-z0-9]+]]: tensor<f32> {train.lr},
// DYN-SAME: %[[S:[a-z0-9]+]]: tensor<f32> {train.init = #train.init<constant(6.553600e+04)>, train.scaler_state},
// DYN-SAME: %[[T:[a-z0-9]+]]: tensor<i32> {train.init = #train.init<zeros>, train.scaler_state})
// DYN-SAME: -> (tensor<f32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<i32>, tensor<f32>, tensor<i32>, tensor<i1>, tensor<i1>, tensor<i32>)
// DYN-NOT: train.loss_seed
// DYN: train.reshape %[[S]] : tensor<f32> -> tensor<1x1xf32>
// DYN: %[[ACC:.*]]:4 = train.accumulate_grads
// DYN-NOT: train.first_nonfinite
// DYN: %[[SRC:.*]] = train.first_nonfinite %{{.*}}, %[[ACC]]#3 order [0, 1] : tensor<f32>, tensor<3x2xf32>
// DYN-NEXT: %[[U:.*]]:2 = train.unscale_grads %[[S]] grads(%[[ACC]]#3)
// DYN: %[[C:.*]]:2 = train.clip_grad_norm(%[[U]]#0)
// DYN: %[[SKIP:.*]] = train.any %[[U]]#1, %[[ACC]]#2
// DYN: %[[P:.*]] = train.sgd_update %[[LR]] params(%{{.*}}) grads(%[[C]]#0) skip(%[[SKIP]])
// DYN: %[[NS:.*]], %[[NT:.*]], %[[COL:.*]] = train.update_scale %[[S]], %[[T]], %[[U]]#1 skip(%[[ACC]]#2) max_scale
// DYN: return %{{.*}}, %[[P]], %[[ACC]]#0, %[[ACC]]#1, %[[NS]], %[[NT]], %[[U]]#1, %[[COL]], %[[SRC]]

// Static: the scale is a constant; the new results are found_inf and what
// first held an inf or NaN (the loss, then the gradient). At O2
// the parameters are f16 but the loss (here the returned reduction) is f32,
// so the scale seeds the backward graph uncast.

// STATIC-LABEL: func.func @train_step(
// STATIC-SAME: %{{[a-z0-9]+}}: tensor<f32> {train.lr})
// STATIC-SAME: -> (tensor<f32>, tensor<3x2xf16>, tensor<3x2xf32>, tensor<i1>, tensor<i32>)
// STATIC: %[[S:.*]] = train.constant dense<1.280000e+02> : tensor<f32>
// STATIC-NOT: train.cast %[[S]]
// STATIC: train.reduce_mean {{.*}} : tensor<4x2xf32> -> tensor<f32>
// STATIC: %[[SRC:.*]] = train.first_nonfinite %{{.*}}, %[[G:.*]] order [0, 1] : tensor<f32>, tensor<3x2xf32>
// STATIC: %[[U:.*]]:2 = train.unscale_grads %[[S]] grads(%[[G]]) : tensor<f32>, (tensor<3x2xf32>)
// STATIC: %[[P:.*]] = train.sgd_update %{{.*}} params(%{{.*}}) grads(%[[U]]#0) skip(%[[U]]#1)
// STATIC: return %{{.*}}, %{{.*}}, %[[P]], %[[U]]#1, %[[SRC]]

// NONE-LABEL: func.func @train_step(
// NONE-SAME: -> (tensor<f32>, tensor<3x2xf32>)
// NONE-NOT: unscale_grads
// NONE-NOT: first_nonfinite
// NONE: train.loss_seed : tensor<f32>

// OPTS: train.init<constant(1.024000e+03)>
// OPTS: train.update_scale %{{.*}}, %{{.*}}, %{{.*}} growth_factor 4.000000e+00 backoff_factor 2.500000e-01 growth_interval 100 min_scale 1.000000e+00 max_scale 4.096000e+03 hysteresis 3

// BADMODE: for the --mode option: 'sometimes' is not one of: dynamic, static, none
// BADINIT: amp-loss-scaling: init-scale must be positive and finite
// BADGROW: amp-loss-scaling: growth-factor must be greater than 1
// BADBACK: amp-loss-scaling: backoff-factor must be in (0, 1)
// BADINT: amp-loss-scaling: growth-interval must be at least 1
// BADCAPS: amp-loss-scaling: needs 0 <= min-scale < max-scale
// BADHYST: amp-loss-scaling: hysteresis must be at least 1
// TWICE: error: amp-loss-scaling: @train_step is already loss-scaled

// O3 computes the loss in f16 (Apex's pure-f16 level, static scale 1.0): a
// scale f16 cannot hold is refused at the loss; 1.0 is cast to the seed.
// F16LOSS: amp-loss-scaling.mlir:[[# @LINE + 7]]:8: error: amp-loss-scaling: the loss is computed in 'f16', whose largest value is 65504, but the loss scale is 131072; compute the loss in f32
// O3-LABEL: func.func @train_step(
// O3: %[[S:.*]] = train.constant dense<1.000000e+00> : tensor<f32>
// O3: train.cast %[[S]] : tensor<f32> to tensor<f16>

func.func @f(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {train.param}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = train.reduce_mean %y axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
