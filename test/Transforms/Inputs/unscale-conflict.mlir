// Clipping (needs true values) before accumulation (needs scaled micro-batch
// gradients): no place to unscale (test/Transforms/amp-loss-scaling-transforms.mlir).
func.func @train_step(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32> {train.param}, %arg3: tensor<3x2xf32> {train.init = #train.init<zeros>, train.opt_state}, %arg5: tensor<i32> {train.init = #train.init<zeros>, train.opt_state}, %arg6: tensor<f32> {train.lr}) -> (tensor<f32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<i32>) {
  %0 = train.matmul %arg0, %arg1 : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %1 = train.reduce_mean %0 axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %2 = train.loss_seed : tensor<f32>
  %3 = train.reshape %2 : tensor<f32> -> tensor<1x1xf32>
  %4 = train.broadcast %3 : tensor<1x1xf32> -> tensor<4x2xf32>
  %7 = train.matmul %arg0, %4 transpose_lhs : tensor<4x3xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %c:2 = train.clip_grad_norm(%7) max_norm 1.000000e+00 : (tensor<3x2xf32>)
  %9:4 = train.accumulate_grads %arg5 accumulators(%arg3) grads(%c#0) steps 2 : tensor<i32>, (tensor<3x2xf32>), (tensor<3x2xf32>)
  %11 = train.sgd_update %arg6 params(%arg1) grads(%9#3) skip(%9#2) : tensor<f32>, (tensor<3x2xf32>), (tensor<3x2xf32>)
  return %1, %11, %9#0, %9#1 : tensor<f32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<i32>
}
