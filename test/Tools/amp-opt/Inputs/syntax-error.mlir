func.func @f(%x: tensor<4xf32> -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
