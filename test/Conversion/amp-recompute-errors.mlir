// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-recompute{budget=0}))' -verify-diagnostics
// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-recompute{budget=1.5}))' -verify-diagnostics

// The budget is a fraction of the peak in (0, 1].
// expected-error @+1 {{is not in (0, 1]: the fraction of the estimated peak of live tensors to reach}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
