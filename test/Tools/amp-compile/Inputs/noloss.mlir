// A forward without a loss: amp-pipeline's autodiff rejects it.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
