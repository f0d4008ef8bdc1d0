// Fashion-MNIST CNN: 2 x (conv3x3 + batch_norm + relu + max_pool 2x2) and two
// linear layers, batch 128 (the "2 conv + pooling + batch norm" model of the
// Fashion-MNIST benchmark table, 0.934 published accuracy).
//
//   [128,1,28,28] -conv 1->32-> [128,32,28,28] -pool-> [128,32,14,14]
//                 -conv 32->64-> [128,64,14,14] -pool-> [128,64,7,7]
//                 -flatten-> [128,3136] -linear-> [128,128] -linear-> [128,10]
//
// Batch norm runs in training mode: its running statistics are `train.state`
// arguments, and the function returns the loss followed by their new values
// in argument order.

func.func @forward(
    %x: tensor<128x1x28x28xf32>,
    %labels: tensor<128xi32>,
    %c1: tensor<32x1x3x3xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %g1: tensor<32xf32> {train.param, train.init = #train.init<ones>},
    %be1: tensor<32xf32> {train.param, train.init = #train.init<zeros>},
    %m1: tensor<32xf32> {train.state, train.init = #train.init<zeros>},
    %v1: tensor<32xf32> {train.state, train.init = #train.init<ones>},
    %c2: tensor<64x32x3x3xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %g2: tensor<64xf32> {train.param, train.init = #train.init<ones>},
    %be2: tensor<64xf32> {train.param, train.init = #train.init<zeros>},
    %m2: tensor<64xf32> {train.state, train.init = #train.init<zeros>},
    %v2: tensor<64xf32> {train.state, train.init = #train.init<ones>},
    %w3: tensor<3136x128xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b3: tensor<128xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 3136)>},
    %w4: tensor<128x10xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b4: tensor<10xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 128)>}
  ) -> (tensor<f32>, tensor<32xf32>, tensor<32xf32>, tensor<64xf32>, tensor<64xf32>) {
  // Block 1.
  %y1 = train.conv2d %x, %c1 padding [1, 1] : tensor<128x1x28x28xf32>, tensor<32x1x3x3xf32> -> tensor<128x32x28x28xf32>
  %n1, %m1n, %v1n = train.batch_norm %y1, %g1, %be1, %m1, %v1 : tensor<128x32x28x28xf32>, tensor<32xf32>
  %r1 = train.relu %n1 : tensor<128x32x28x28xf32>
  %p1 = train.max_pool2d %r1 kernel [2, 2] strides [2, 2] : tensor<128x32x28x28xf32> -> tensor<128x32x14x14xf32>
  // Block 2.
  %y2 = train.conv2d %p1, %c2 padding [1, 1] : tensor<128x32x14x14xf32>, tensor<64x32x3x3xf32> -> tensor<128x64x14x14xf32>
  %n2, %m2n, %v2n = train.batch_norm %y2, %g2, %be2, %m2, %v2 : tensor<128x64x14x14xf32>, tensor<64xf32>
  %r2 = train.relu %n2 : tensor<128x64x14x14xf32>
  %p2 = train.max_pool2d %r2 kernel [2, 2] strides [2, 2] : tensor<128x64x14x14xf32> -> tensor<128x64x7x7xf32>
  // Classifier.
  %f = train.reshape %p2 : tensor<128x64x7x7xf32> -> tensor<128x3136xf32>
  %h3 = train.matmul %f, %w3, %b3 : tensor<128x3136xf32>, tensor<3136x128xf32>, tensor<128xf32> -> tensor<128x128xf32>
  %a3 = train.relu %h3 : tensor<128x128xf32>
  %logits = train.matmul %a3, %w4, %b4 : tensor<128x128xf32>, tensor<128x10xf32>, tensor<10xf32> -> tensor<128x10xf32>
  %loss = train.cross_entropy %logits, %labels : tensor<128x10xf32>, tensor<128xi32> -> tensor<f32>
  return %loss, %m1n, %v1n, %m2n, %v2n : tensor<f32>, tensor<32xf32>, tensor<32xf32>, tensor<64xf32>, tensor<64xf32>
}
