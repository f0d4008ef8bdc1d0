// RUN: amp-opt %s --amp-autocast="opt-level=O2" | FileCheck %s --check-prefix=O2
// RUN: amp-opt %s --amp-autocast="opt-level=O3" | FileCheck %s --check-prefix=O3
// RUN: amp-opt %s --amp-autocast="opt-level=O2 dtype=bf16" | FileCheck %s --check-prefix=O2BF16

// At O2 parameters are stored in the low type except batch norm's, which keeps
// its parameters and statistics in f32 and takes the f16 activation as it
// arrives (Apex's keep_batchnorm_fp32: no cast around batch norm); the ops of
// the model run in the low type, the loss (here the reduction returned as the
// loss) in f32, as Apex casts the model's outputs to f32.
// O2-LABEL: func.func @net
// O2-SAME: %{{[a-z0-9]+}}: tensor<2x3x8x8xf32>
// O2-SAME: %{{[a-z0-9]+}}: tensor<4x3x3x3xf16> {train.param}
// O2-SAME: %{{[a-z0-9]+}}: tensor<4xf32> {train.param}, %{{[a-z0-9]+}}: tensor<4xf32> {train.param}
// O2-SAME: %{{[a-z0-9]+}}: tensor<4xf32> {train.state}
// O2-SAME: %{{[a-z0-9]+}}: tensor<4xf32> {train.state}
// O2-SAME: -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>)
// O2: %[[C:.*]] = train.conv2d {{.*}} : tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16> -> tensor<2x4x6x6xf16>
// O2-NOT: train.cast
// O2: %[[Y:.*]], %{{.*}}, %{{.*}} = train.batch_norm %[[C]], {{.*}} : tensor<2x4x6x6xf16>, tensor<4xf32>
// O2-NOT: train.cast
// O2: %[[R:.*]] = train.relu %[[Y]] {{.*}}: tensor<2x4x6x6xf16>
// O2: %[[R32:.*]] = train.cast %[[R]] : tensor<2x4x6x6xf16> to tensor<2x4x6x6xf32>
// O2: %[[L:.*]] = train.reduce_mean %[[R32]] {{.*}} : tensor<2x4x6x6xf32> -> tensor<f32>
// O2-NOT: train.cast
// O2: return %[[L]]
// O2BF16: train.conv2d {{.*}} -> tensor<2x4x6x6xbf16>

// At O3 everything, state included,, in the low type; the new state is returned
// in the low type, the loss is cast back at the return.
// O3-LABEL: func.func @net
// O3-SAME: %{{[a-z0-9]+}}: tensor<4x3x3x3xf16> {train.param}
// O3-SAME: %{{[a-z0-9]+}}: tensor<4xf16> {train.param}
// O3-SAME: %{{[a-z0-9]+}}: tensor<4xf16> {train.state}
// O3-SAME: -> (tensor<f32>, tensor<4xf16>, tensor<4xf16>)
// O3: train.batch_norm {{.*}} : tensor<2x4x6x6xf16>, tensor<4xf16>
// O3: %[[L:.*]] = train.reduce_mean {{.*}} -> tensor<f16>
// O3: %[[L32:.*]] = train.cast %[[L]] : tensor<f16> to tensor<f32>
// O3: return %[[L32]], %{{.*}}, %{{.*}} : tensor<f32>, tensor<4xf16>, tensor<4xf16>
func.func @net(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32> {train.param}, %g: tensor<4xf32> {train.param},
               %b: tensor<4xf32> {train.param}, %m: tensor<4xf32> {train.state}, %v: tensor<4xf32> {train.state})
    -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
  %c = train.conv2d %x, %w : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x6x6xf32>
  %y, %nm, %nv = train.batch_norm %c, %g, %b, %m, %v : tensor<2x4x6x6xf32>, tensor<4xf32>
  %r = train.relu %y : tensor<2x4x6x6xf32>
  %l = train.reduce_mean %r axes [0, 1, 2, 3] : tensor<2x4x6x6xf32> -> tensor<f32>
  return %l, %nm, %nv : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
