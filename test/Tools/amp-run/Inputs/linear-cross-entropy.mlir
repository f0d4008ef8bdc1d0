// A classifier whose head is fused with its loss, as written by hand:
// train.linear_cross_entropy over [128, 64] features and a [10, 64] weight.
func.func @forward(
    %x: tensor<128x784xf32>,
    %labels: tensor<128xi32>,
    %w1: tensor<784x64xf32> {train.param, train.init = #train.init<fan_in_uniform>},
    %w2: tensor<10x64xf32> {train.param, train.init = #train.init<fan_in_uniform(fan_in = 64)>}
  ) -> tensor<f32> {
  %h = train.matmul %x, %w1 : tensor<128x784xf32>, tensor<784x64xf32> -> tensor<128x64xf32>
  %a = train.relu %h : tensor<128x64xf32>
  %loss = train.linear_cross_entropy %a, %w2, %labels transpose_weight : tensor<128x64xf32>, tensor<10x64xf32>, tensor<128xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
