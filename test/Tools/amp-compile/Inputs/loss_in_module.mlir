// A model as the importer writes it: each op's location names its module
// path and the user's source line. At O3 the loss is computed in f16.
func.func @forward(%x: tensor<4x8xf32>, %labels: tensor<4xi32>,
    %w: tensor<8x4xf32> {train.param, train.init = #train.init<fan_in_uniform>}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32> loc("fc"("model.py":12:8))
  %l = train.cross_entropy %y, %labels : tensor<4x4xf32>, tensor<4xi32> -> tensor<f32> loc("criterion"("model.py":20:4))
  return %l : tensor<f32>
}
