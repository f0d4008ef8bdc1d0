// RUN: amp-opt %s --split-input-file --amp-autocast | FileCheck %s
// RUN: amp-opt %s --split-input-file --amp-autocast="opt-level=O2" | FileCheck %s --check-prefix=O2
// RUN: amp-opt %s --split-input-file --amp-autocast="opt-level=O3" | FileCheck %s --check-prefix=O3

// Autocast leaves valid IR whatever it changes (issue 18, item 4).

// An f16 contraction that an override moves to fp32 no longer accumulates
// in f16 ("accumulate type must be f32 or the operand type" before).
// CHECK-LABEL: func.func @accumulate_cleared
// CHECK-DAG: %[[A:.*]] = train.cast %arg0 : tensor<4x4xf16> to tensor<4x4xf32>
// CHECK-DAG: %[[B:.*]] = train.cast %arg1 : tensor<4x4xf16> to tensor<4x4xf32>
// CHECK: train.matmul %[[A]], %[[B]] {train.decision = "fp32/attribute", train.precision = "fp32"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// An f32 accumulator of an f16 contraction that stays f16 is kept.
// CHECK: train.matmul %arg0, %arg1 accumulate f32 {{.*}}: tensor<4x4xf16>, tensor<4x4xf16> -> tensor<4x4xf16>
func.func @accumulate_cleared(%a: tensor<4x4xf16>, %b: tensor<4x4xf16>) -> (tensor<4x4xf16>, tensor<4x4xf16>) {
  %y = train.matmul %a, %b accumulate f16 {train.precision = "fp32"} : tensor<4x4xf16>, tensor<4x4xf16> -> tensor<4x4xf16>
  %z = train.matmul %a, %b accumulate f32 : tensor<4x4xf16>, tensor<4x4xf16> -> tensor<4x4xf16>
  return %y, %z : tensor<4x4xf16>, tensor<4x4xf16>
}

// -----

// At O2 a function's parameters are stored in the low type; its callers
// pass a cast (a `func.call` operand type mismatch before).
// O2-LABEL: func.func @net
// O2-SAME: tensor<4x4xf16> {train.param}
// O2-LABEL: func.func @caller
// O2: %[[W:.*]] = train.cast %arg1 : tensor<4x4xf32> to tensor<4x4xf16>
// O2: %[[L:.*]] = call @net(%arg0, %[[W]]) : (tensor<2x4xf32>, tensor<4x4xf16>) -> tensor<f32>
// O2: return %[[L]]
func.func @net(%x: tensor<2x4xf32>, %w: tensor<4x4xf32> {train.param}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  %l = train.reduce_mean %h axes [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
func.func @caller(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<f32> {
  %l = call @net(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}


// -----

// At O3 state is stored in the low type, in the callee and in a caller that
// returns the callee's new state as its own: the return gets the caller's
// result type (it got the f32 cast-back of the call's result before).
// O3-LABEL: func.func @step
// O3-SAME: %arg1: tensor<4xf16> {train.state}) -> (tensor<f32>, tensor<4xf16>)
// O3: %[[R:.*]]:2 = call @stats(%arg0, %{{.*}}) : (tensor<2x4xf32>, tensor<4xf16>) -> (tensor<f32>, tensor<4xf16>)
// O3: %[[W:.*]] = train.cast %[[R]]#1 : tensor<4xf16> to tensor<4xf32>
// O3: %[[N:.*]] = train.cast %[[W]] : tensor<4xf32> to tensor<4xf16>
// O3: return %[[R]]#0, %[[N]] : tensor<f32>, tensor<4xf16>
func.func @stats(%x: tensor<2x4xf32>, %m: tensor<4xf32> {train.state}) -> (tensor<f32>, tensor<4xf32>) {
  %y = train.add %x, %m : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  %l = train.reduce_mean %y axes [0, 1] : tensor<2x4xf32> -> tensor<f32>
  %s = train.reduce_mean %y axes [0] : tensor<2x4xf32> -> tensor<4xf32>
  return %l, %s : tensor<f32>, tensor<4xf32>
}
func.func @step(%x: tensor<2x4xf32>, %m: tensor<4xf32> {train.state}) -> (tensor<f32>, tensor<4xf32>) {
  %l, %s = call @stats(%x, %m) : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return %l, %s : tensor<f32>, tensor<4xf32>
}
