func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.bogus %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
