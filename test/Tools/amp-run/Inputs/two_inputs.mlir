// A model of two inputs, an "image" (16 values) and a feature vector (4),
// named as amp.to_mlir names them (the forward's parameter names), then the
// labels: --dataset=safetensors finds each input's tensor by its name.
func.func @forward(
    %image: tensor<32x16xf32> loc("image"),
    %features: tensor<32x4xf32> loc("features"),
    %labels: tensor<32xi32>,
    %w1: tensor<20x32xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b1: tensor<32xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 20)>},
    %w2: tensor<32x3xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %b2: tensor<3xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 32)>}
  ) -> tensor<f32> {
  %x = train.concat %image, %features axis 1 : tensor<32x16xf32>, tensor<32x4xf32> -> tensor<32x20xf32>
  %h = train.matmul %x, %w1, %b1 : tensor<32x20xf32>, tensor<20x32xf32>, tensor<32xf32> -> tensor<32x32xf32>
  %a = train.relu %h : tensor<32x32xf32>
  %logits = train.matmul %a, %w2, %b2 : tensor<32x32xf32>, tensor<32x3xf32>, tensor<3xf32> -> tensor<32x3xf32>
  %loss = train.cross_entropy %logits, %labels : tensor<32x3xf32>, tensor<32xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
