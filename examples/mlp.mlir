// Fashion-MNIST MLP 784-256-128-10 with ReLU and cross-entropy, batch 128.
//
// The training graph in FP32, as a user writes it: a forward function whose
// inputs are the batch (images flattened to 784 values), the integer labels,
// and the parameters, marked `train.param` with PyTorch nn.Linear's default
// initializer. amp's passes turn it into a mixed-precision training step.

func.func @forward(
    %x: tensor<128x784xf32>,
    %labels: tensor<128xi32>,
    %w1: tensor<784x256xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b1: tensor<256xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 784)>},
    %w2: tensor<256x128xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b2: tensor<128xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 256)>},
    %w3: tensor<128x10xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b3: tensor<10xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 128)>}
  ) -> tensor<f32> {
  // Layer 1: 784 -> 256, ReLU.
  %h1 = train.matmul %x, %w1, %b1 : tensor<128x784xf32>, tensor<784x256xf32>, tensor<256xf32> -> tensor<128x256xf32>
  %a1 = train.relu %h1 : tensor<128x256xf32>
  // Layer 2: 256 -> 128, ReLU.
  %h2 = train.matmul %a1, %w2, %b2 : tensor<128x256xf32>, tensor<256x128xf32>, tensor<128xf32> -> tensor<128x128xf32>
  %a2 = train.relu %h2 : tensor<128x128xf32>
  // Classifier: 128 -> 10 logits.
  %logits = train.matmul %a2, %w3, %b3 : tensor<128x128xf32>, tensor<128x10xf32>, tensor<10xf32> -> tensor<128x10xf32>
  %loss = train.cross_entropy %logits, %labels : tensor<128x10xf32>, tensor<128xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
