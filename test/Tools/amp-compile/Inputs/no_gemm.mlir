// A model without GEMMs (a per-class bias on 300 features), so that its
// CUDA step runs to the end on the stand-in driver: 1 200-byte parameter.
func.func @forward(%x: tensor<64x300xf32>, %labels: tensor<64xi32>,
    %b: tensor<300xf32> {train.param, train.init = #train.init<zeros>}) -> tensor<f32> {
  %y = train.add %x, %b : tensor<64x300xf32>, tensor<300xf32> -> tensor<64x300xf32>
  %loss = train.cross_entropy %y, %labels : tensor<64x300xf32>, tensor<64xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
