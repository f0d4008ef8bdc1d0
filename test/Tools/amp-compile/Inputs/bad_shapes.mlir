// The matmul's inner dimensions disagree: its verifier rejects it.
func.func @forward(%x: tensor<4x8xf32>, %labels: tensor<4xi32>,
    %w: tensor<7x4xf32> {train.param, train.init = #train.init<fan_in_uniform>}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<4x8xf32>, tensor<7x4xf32> -> tensor<4x4xf32> loc("encoder.fc"("model.py":12:8))
  %l = train.cross_entropy %y, %labels : tensor<4x4xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
