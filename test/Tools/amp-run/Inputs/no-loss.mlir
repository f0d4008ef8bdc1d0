// A model whose forward returns its logits, not a loss (test/Tools/amp-run/errors.test).
func.func @forward(%x: tensor<4x8xf32>, %y: tensor<4xi32>, %w: tensor<8x3xf32> {train.param, train.init = #train.init<xavier_uniform>}) -> tensor<4x3xf32> {
  %h = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}
