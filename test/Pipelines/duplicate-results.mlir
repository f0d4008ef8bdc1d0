// RUN: amp-opt %s --amp-lower-cpu | FileCheck %s
// RUN: %if cuda %{ amp-opt %s --amp-lower-cuda | FileCheck %s --check-prefix=CUDA %}

// A value returned twice: each result gets its own out-parameter, the repeat
// a copy (amp-unshare-inits). MLIR 22's buffer-results-to-out-params crashed
// (segfault) on one buffer returned twice (llvm-project #219492).
// CHECK-LABEL: llvm.func @dup
// The relu into the first result, the copy into the second.
// CHECK-COUNT-2: llvm.store
// CUDA: gpu.binary
func.func @dup(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = train.relu %x : tensor<4xf32>
  return %0, %0 : tensor<4xf32>, tensor<4xf32>
}
