// RUN: amp-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(amp-update-state-in-place))' -o /dev/null

// A malformed role record (amp.result_arguments) is an error at the function.

// expected-error @+1 {{'amp.result_arguments' of @wrong_count: has 1 entries for 2 results}}
func.func @wrong_count(%w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {amp.result_arguments = array<i64: 0>} {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'amp.result_arguments' of @out_of_range: result 0 updates argument 3 of 1}}
func.func @out_of_range(%w: tensor<4xf32>) -> tensor<4xf32>
    attributes {amp.result_arguments = array<i64: 3>} {
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'amp.result_arguments' of @twice: argument 0 is updated by two results}}
func.func @twice(%w: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {amp.result_arguments = array<i64: 0, 0>} {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{'amp.result_arguments' of @wrong_type: result 0 ('tensor<4xf16>') updates argument 0 ('tensor<4xf32>')}}
func.func @wrong_type(%w: tensor<4xf32>) -> tensor<4xf16>
    attributes {amp.result_arguments = array<i64: 0>} {
  %e = tensor.empty() : tensor<4xf16>
  return %e : tensor<4xf16>
}
