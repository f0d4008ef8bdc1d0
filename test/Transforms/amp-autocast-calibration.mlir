// RUN: amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-ffn.json" | FileCheck %s
// RUN: amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-ffn.json calibration-margin=1" | FileCheck %s --check-prefix=MARGIN
// RUN: amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-ffn.json dtype=bf16" | FileCheck %s --check-prefix=BF16
// RUN: amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-ffn.json" --amp-precision-report 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-nonfinite.json" | FileCheck %s --check-prefix=NONFINITE
// RUN: not amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-other.json" 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: not amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-bad-entry.json" 2>&1 | FileCheck %s --check-prefix=ENTRY
// RUN: not amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-bad-format.json" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not amp-opt %s --amp-autocast="calibration=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not amp-opt %s --amp-autocast="calibration=%S/Inputs/calibration-ffn.json calibration-margin=0.5" 2>&1 | FileCheck %s --check-prefix=BADMARGIN

// Calibrated autocast (docs/Numerics.md): the calibration's entries are
// keyed by module path (the location's name), op and index among that
// module's ops of that name. An op whose measured output or inputs times the
// margin (2) do not fit f16 (65504) runs in fp32, decided
// "fp32/calibrated" with the magnitude: ffn.wi's GEMM (its output, 4.7e5),
// the scaling mul that reads it (its input), and head's first GEMM (its
// output, 40000 > 65504 / 2); ffn.wo's GEMM (1.1 from 2.2) stays in f16.
// head's second GEMM would be kept for its input (40000), but an attribute
// on the op is still stronger.
// CHECK-LABEL: func.func @f
// CHECK: train.layer_norm {{.*}}train.decision = "fp32/default"
// CHECK: train.matmul %{{.*}} {train.calibrated_magnitude = 4.700000e+05 : f64, train.decision = "fp32/calibrated"} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK: train.mul %{{.*}} {train.calibrated_magnitude = 4.700000e+05 : f64, train.decision = "fp32/calibrated"} : tensor<4x16xf32>, tensor<f32>
// CHECK: train.matmul %{{.*}} {train.calibrated_magnitude = 2.200000e+00 : f64, train.decision = "lower/default"} : tensor<4x16xf16>, tensor<16x8xf16> -> tensor<4x8xf16>
// CHECK: train.matmul %{{.*}} {train.calibrated_magnitude = 4.000000e+04 : f64, train.decision = "fp32/calibrated"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: train.matmul %{{.*}} accumulate f32 {train.calibrated_magnitude = 4.000000e+04 : f64, train.decision = "lower/attribute", train.precision = "lower"} : tensor<4x8xf16>, tensor<8x4xf16> -> tensor<4x4xf16>

// With margin 1 (the whole range: 65504) head's first GEMM (40000) fits.
// MARGIN: train.matmul {{.*}}"fp32/calibrated"{{.*}} -> tensor<4x16xf32>
// MARGIN: train.mul {{.*}}"fp32/calibrated"
// MARGIN: train.matmul {{.*}}"lower/default"{{.*}} -> tensor<4x8xf16>
// MARGIN: train.matmul {{.*}}"lower/default"{{.*}} -> tensor<4x8xf16>

// bf16's range (3.4e38) holds every measured value: the lists decide.
// BF16-NOT: /calibrated
// BF16: train.matmul {{.*}}"lower/default"{{.*}} -> tensor<4x16xbf16>
// BF16-NOT: /calibrated

// The precision report says why, with the measured magnitude (only where
// it decided).
// REPORT: train.matmul {{.*}}calibrated (measured 4.7e+05)
// REPORT-NOT: measured 2.2

// An entry that was not finite already in f32 (a mask's -inf: amp.calibrate
// marks it) decides nothing: the lists do.
// NONFINITE: train.matmul {{.*}}"lower/default"{{.*}} -> tensor<4x16xf16>
// NONFINITE: train.matmul %{{.*}} accumulate f32 {train.decision = "lower/default"} : tensor<4x16xf16>, tensor<16x8xf16> -> tensor<4x8xf16>

// A calibration of another model names the entry it finds no op for.
// OTHER: error: amp-autocast: the calibration '{{.*}}calibration-other.json' measured train.matmul #0 of module encoder.wq (other.py:3), which this model does not have: is it a calibration of another model? (amp.calibrate this one)
// ENTRY: amp-autocast: the calibration '{{.*}}calibration-bad-entry.json' entry 0 needs "module", "op", "index" and "output"
// FORMAT: amp-autocast: the calibration '{{.*}}calibration-bad-format.json' is not an amp calibration (its "format" is not "amp-calibration-1")
// MISSING: amp-autocast: cannot read the calibration '{{.*}}missing.json'
// BADMARGIN: amp-autocast: calibration-margin must be at least 1
func.func @f(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %wi: tensor<8x16xf32>,
             %wo: tensor<16x8xf32>, %h1: tensor<8x8xf32>, %h2: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %n = train.layer_norm %x, %g, %b epsilon 1.0e-5 : tensor<4x8xf32>, tensor<8xf32> loc("norm"("model.py":6:0))
  %h = train.matmul %n, %wi : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32> loc("ffn.wi"("model.py":7:0))
  %s = train.constant dense<1.0e-5> : tensor<f32> loc("ffn"("model.py":8:0))
  %a = train.mul %h, %s : tensor<4x16xf32>, tensor<f32> -> tensor<4x16xf32> loc("ffn"("model.py":8:0))
  %o = train.matmul %a, %wo : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32> loc("ffn.wo"("model.py":8:0))
  %p = train.matmul %o, %h1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("head"("model.py":12:0))
  %q = train.matmul %p, %h2 {train.precision = "lower"} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32> loc("head"("model.py":13:0))
  return %q : tensor<4x4xf32>
}
