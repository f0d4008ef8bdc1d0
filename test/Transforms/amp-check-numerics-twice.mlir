// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-check-numerics --amp-check-numerics -verify-diagnostics -o /dev/null

// A step is checked once: a second run of the pass is an error, not a
// second vector.
// expected-error @+1 {{amp-check-numerics: @train_step is checked already; was the pass run twice?}}
func.func @forward(%x: tensor<4x3xf32>, %labels: tensor<4xi32>,
                   %w: tensor<3x2xf32> {train.param, train.init = #train.init<zeros>}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = train.cross_entropy %h, %labels : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}
