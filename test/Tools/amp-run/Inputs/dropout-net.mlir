// two_inputs.mlir with dropout and parameters that start at constants, so
// that with a data file and --shuffle=false only the dropout masks depend on
// --seed: the masks' step counter starts where the seed says
// (#train.init<seed>).
func.func @forward(
    %image: tensor<32x16xf32> loc("image"),
    %features: tensor<32x4xf32> loc("features"),
    %labels: tensor<32xi32>,
    %w1: tensor<20x64xf32> {train.param, train.init = #train.init<constant(0.05)>},
    %w2: tensor<64x3xf32> {train.param, train.init = #train.init<constant(0.02)>},
    %count: tensor<i32> {train.state, train.init = #train.init<seed>}
  ) -> (tensor<f32>, tensor<i32>) {
  %x = train.concat %image, %features axis 1 : tensor<32x16xf32>, tensor<32x4xf32> -> tensor<32x20xf32>
  %h = train.matmul %x, %w1 : tensor<32x20xf32>, tensor<20x64xf32> -> tensor<32x64xf32>
  %a = train.relu %h : tensor<32x64xf32>
  %d = train.dropout %a rate 0.5 seed 1 step %count : tensor<32x64xf32>
  %logits = train.matmul %d, %w2 : tensor<32x64xf32>, tensor<64x3xf32> -> tensor<32x3xf32>
  %loss = train.cross_entropy %logits, %labels : tensor<32x3xf32>, tensor<32xi32> -> tensor<f32>
  %next = train.increment %count : tensor<i32>
  return %loss, %next : tensor<f32>, tensor<i32>
}
