// A tanh layer whose VJP builds a rank-0 1.0 of the loss's type, like the
// backward seed (amp-pipeline-canonicalize.test).
func.func @net(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {train.param, train.init = #train.init<zeros>}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %t = train.tanh %y : tensor<4x2xf32>
  %l = train.reduce_mean %t axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
