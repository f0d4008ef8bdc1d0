// RUN: amp-opt %s --amp-autocast="policy=%S/Inputs/policy-swap.json" | FileCheck %s
// RUN: not amp-opt %s --amp-autocast="policy=%S/Inputs/policy-bad-category.json" 2>&1 | FileCheck %s --check-prefix=CATEGORY
// RUN: not amp-opt %s --amp-autocast="policy=%S/Inputs/policy-bad-op.json" 2>&1 | FileCheck %s --check-prefix=OPNAME
// RUN: not amp-opt %s --amp-autocast="policy=%S/Inputs/policy-not-array.json" 2>&1 | FileCheck %s --check-prefix=ARRAY
// RUN: not amp-opt %s --amp-autocast="policy=%S/Inputs/policy-not-json.json" 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: not amp-opt %s --amp-autocast="policy=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not amp-opt %s --amp-autocast="dtype=f8" 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not amp-opt %s --amp-autocast="opt-level=O4" 2>&1 | FileCheck %s --check-prefix=LEVEL

// The policy file moves matmul to fp32 and softmax to lower; the attribute on
// the second matmul is stronger than the file.
// CHECK-LABEL: func.func @f
// CHECK: %[[A:.*]] = train.matmul %arg0, %arg1 {{.*}}: tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// CHECK: %[[B:.*]] = train.matmul {{.*}} {{.*}}train.precision = "lower"} : tensor<4x4xf16>, tensor<4x4xf16> -> tensor<4x4xf16>
// CHECK: train.softmax %{{.*}} axis 1 {{.*}}: tensor<4x4xf16>
func.func @f(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = train.matmul %x, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %b = train.matmul %a, %w {train.precision = "lower"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %s = train.softmax %b axis 1 : tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// CATEGORY: error: amp-autocast: policy file '{{.*}}policy-bad-category.json' unknown category 'fast' (expected lower, fp32, promote or follow)
// OPNAME: error: amp-autocast: policy file '{{.*}}policy-bad-op.json' 'train.matmull' under 'fp32' is not a train op with a precision policy
// ARRAY: error: amp-autocast: policy file '{{.*}}policy-not-array.json' category 'fp32' must map to an array of op names
// JSON: error: amp-autocast: policy file '{{.*}}policy-not-json.json' is not valid JSON
// MISSING: error: amp-autocast: cannot read policy file: cannot open input file '{{.*}}missing.json'
// DTYPE: for the --dtype option: 'f8' is not one of: f16, bf16
// LEVEL: for the --opt-level option: 'O4' is not one of: O0, O1, O2, O3
