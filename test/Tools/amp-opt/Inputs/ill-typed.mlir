func.func @f(%x: tensor<128x784xf32>, %w: tensor<512x10xf32>) -> tensor<128x10xf32> {
  %0 = train.matmul %x, %w : tensor<128x784xf32>, tensor<512x10xf32> -> tensor<128x10xf32>
  return %0 : tensor<128x10xf32>
}
