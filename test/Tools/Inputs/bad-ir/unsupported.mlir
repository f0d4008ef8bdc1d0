// Inputs that parse but that amp-pipeline cannot turn into a training step:
// each must give an error naming the problem (bad_ir_corpus.py).

// A loss that is not a scalar.
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {train.param}) -> tensor<4x2xf32> {
  %0 = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// No parameters to train.
func.func @forward(%x: tensor<4x10xf32>, %l: tensor<4xi32>) -> tensor<f32> {
  %0 = train.cross_entropy %x, %l : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Control flow in the forward function.
func.func @forward(%x: tensor<4x10xf32>, %l: tensor<4xi32>, %w: tensor<10x10xf32> {train.param}) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %h = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %x) -> tensor<4x10xf32> {
    %m = train.matmul %a, %w : tensor<4x10xf32>, tensor<10x10xf32> -> tensor<4x10xf32>
    scf.yield %m : tensor<4x10xf32>
  }
  %0 = train.cross_entropy %h, %l : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// An op autodiff has no rule for (upstream arith on tensors).
func.func @forward(%x: tensor<4x10xf32>, %l: tensor<4xi32>, %w: tensor<4x10xf32> {train.param}) -> tensor<f32> {
  %h = arith.addf %x, %w : tensor<4x10xf32>
  %0 = train.cross_entropy %h, %l : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A parameter of an integer type.
func.func @forward(%x: tensor<4x10xf32>, %l: tensor<4xi32>, %w: tensor<4xi32> {train.param}) -> tensor<f32> {
  %0 = train.cross_entropy %x, %l : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// No function at all.
module {
}

// -----

// A forward function that is only declared.
func.func private @forward(%x: tensor<4x10xf32>, %w: tensor<10x10xf32> {train.param}) -> tensor<f32>
