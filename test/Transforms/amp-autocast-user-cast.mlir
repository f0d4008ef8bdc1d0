// RUN: amp-opt %s --amp-autocast | FileCheck %s
// RUN: amp-opt %s --amp-autocast --amp-precision-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: amp-opt %s --amp-autocast="opt-level=O0" --amp-cast-cleanup | FileCheck %s --check-prefix=O0

// The model's own x.float() (a user cast) at O1, as PyTorch's autocast
// treats it: the cast keeps f32 though the matmul before it is f16 (a real
// f16 -> f32 cast now), the relu after it follows its f32 input, the next
// matmul (lower list) still casts down to f16. The report lists the cast
// as an op of the model: fp32, reason "user cast". At O0 (and after
// amp-cast-cleanup in any case) the cast of f32 to f32 is nothing.

// CHECK-LABEL: func.func @forward
// CHECK: %[[H:.*]] = train.matmul {{.*}} -> tensor<4x8xf16>
// CHECK: %[[F:.*]] = train.cast %[[H]] user {train.decision = "fp32/user cast"} : tensor<4x8xf16> to tensor<4x8xf32>
// CHECK: %[[R:.*]] = train.relu %[[F]] {train.decision = "follow/default"} : tensor<4x8xf32>
// CHECK: %[[D:.*]] = train.cast %[[R]] : tensor<4x8xf32> to tensor<4x8xf16>
// CHECK: train.matmul %[[D]]
// REPORT: train.cast {{ *}}f32 {{ *}}fp32 {{ *}}user cast
// O0-LABEL: func.func @forward
// O0-NOT: train.cast
func.func @forward(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {train.param}, %w2: tensor<8x8xf32> {train.param}) -> tensor<f32> {
  %h = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %f = train.cast %h user : tensor<4x8xf32> to tensor<4x8xf32>
  %r = train.relu %f : tensor<4x8xf32>
  %g = train.matmul %r, %w2 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %l = train.reduce_sum %g axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
