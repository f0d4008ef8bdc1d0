// A small convolutional net whose batch is BATCH, for the data-parallel
// tests that compare N ranks of batch B with one process of batch N x B
// (the test writes the batch in with sed). The relu reads RELU_IN: n, the
// batch-normalized convolution (the SyncBatchNorm comparison), or y, the
// convolution itself, leaving the batch norm unused (the comparison without
// batch norm).
//
//   [B,1,28,28] -conv 1->8 3x3-> [B,8,28,28] -batch norm, relu-> -pool 4x4->
//   [B,8,7,7] -flatten-> [B,392] -linear-> [B,10]

func.func @forward(
    %x: tensor<BATCHx1x28x28xf32>,
    %labels: tensor<BATCHxi32>,
    %c: tensor<8x1x3x3xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %g: tensor<8xf32> {train.param, train.init = #train.init<ones>},
    %be: tensor<8xf32> {train.param, train.init = #train.init<zeros>},
    %m: tensor<8xf32> {train.state, train.init = #train.init<zeros>},
    %v: tensor<8xf32> {train.state, train.init = #train.init<ones>},
    %w: tensor<392x10xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b: tensor<10xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 392)>}
  ) -> (tensor<f32>, tensor<8xf32>, tensor<8xf32>) {
  %y = train.conv2d %x, %c padding [1, 1] : tensor<BATCHx1x28x28xf32>, tensor<8x1x3x3xf32> -> tensor<BATCHx8x28x28xf32>
  %n, %mn, %vn = train.batch_norm %y, %g, %be, %m, %v : tensor<BATCHx8x28x28xf32>, tensor<8xf32>
  %r = train.relu %RELU_IN : tensor<BATCHx8x28x28xf32>
  %p = train.max_pool2d %r kernel [4, 4] strides [4, 4] : tensor<BATCHx8x28x28xf32> -> tensor<BATCHx8x7x7xf32>
  %f = train.reshape %p : tensor<BATCHx8x7x7xf32> -> tensor<BATCHx392xf32>
  %logits = train.matmul %f, %w, %b : tensor<BATCHx392xf32>, tensor<392x10xf32>, tensor<10xf32> -> tensor<BATCHx10xf32>
  %loss = train.cross_entropy %logits, %labels : tensor<BATCHx10xf32>, tensor<BATCHxi32> -> tensor<f32>
  return %loss, %mn, %vn : tensor<f32>, tensor<8xf32>, tensor<8xf32>
}
