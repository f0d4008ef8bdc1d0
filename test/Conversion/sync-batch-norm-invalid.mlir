// RUN: amp-opt %s --amp-convert-train-to-linalg -split-input-file -verify-diagnostics

// Without a collective runtime (the lowering's default)
// a batch norm over several ranks is an error at the op.

func.func @forward(%x: tensor<4x8x2x2xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>)
    -> tensor<4x8x2x2xf32> {
  // expected-error @+1 {{'train.batch_norm' op over 2 ranks (SyncBatchNorm) needs a collective runtime to sum its statistics: lower it with amp-lower-cpu or amp-lower-cuda (this lowering has no all-reduce-callee)}}
  %y, %rm, %rv = train.batch_norm %x, %g, %g, %m, %m ranks 2 : tensor<4x8x2x2xf32>, tensor<8xf32>
  return %y : tensor<4x8x2x2xf32>
}

// -----

func.func @backward(%dy: tensor<4x8x2x2xf32>, %x: tensor<4x8x2x2xf32>, %g: tensor<8xf32>)
    -> tensor<4x8x2x2xf32> {
  // expected-error @+1 {{'train.batch_norm_grad' op over 3 ranks (SyncBatchNorm) needs a collective runtime to sum its statistics: lower it with amp-lower-cpu or amp-lower-cuda (this lowering has no all-reduce-callee)}}
  %dx, %dg, %db = train.batch_norm_grad %dy, %x, %g ranks 3 : tensor<4x8x2x2xf32>, tensor<8xf32>
  return %dx : tensor<4x8x2x2xf32>
}
