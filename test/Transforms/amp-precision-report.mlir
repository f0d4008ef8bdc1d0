// RUN: amp-opt %s --amp-pipeline="optimizer=none" --amp-precision-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=TEXT
// RUN: amp-opt %s --amp-pipeline="optimizer=none" --amp-precision-report="format=json output=%t.json" -o /dev/null
// RUN: %python -c "import json, sys; d = json.load(open(sys.argv[1])); f = d['functions'][0]; print(f['name'], len(f['ops']), len(f['casts']), f['ops_by_precision'], round(f['activation_bytes']['saved_fraction'], 6))" %t.json | FileCheck %s --check-prefix=JSON
// RUN: amp-opt %s --amp-pipeline="optimizer=none" --amp-precision-report="format=dot output=-" -o /dev/null | FileCheck %s --check-prefix=DOT
// RUN: amp-opt %s --amp-precision-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNCHANGED
// RUN: not amp-opt %s --amp-precision-report="format=xml" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not amp-opt %s --amp-precision-report="output=%t.missing/r.txt" 2>&1 | FileCheck %s --check-prefix=WRITE

// The report reads what autocast recorded (issue 18, item 5): the opt level
// autocast ran at, its decisions (the loss at O3 is f16 by the opt level, not
// "fp32 list"; at O0 nothing is lowered), the policy file, and backward ops in
// their forward op's type.
// RUN: amp-opt %examples/mlp.mlir --amp-pipeline="opt-level=O3" --amp-precision-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=O3
// RUN: amp-opt %examples/mlp.mlir --amp-pipeline="opt-level=O0" --amp-precision-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=O0
// RUN: amp-opt %examples/mlp.mlir --amp-pipeline="policy=%S/Inputs/matmul-fp32.json" --amp-precision-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=POLICY
// The report goes to standard error: the IR on standard output still parses.
// RUN: amp-opt %examples/mlp.mlir --amp-pipeline --amp-precision-report 2>/dev/null | amp-opt --amp-lower-cpu -o /dev/null

// The report states each op's precision and why, the casts, counts, bytes.
// TEXT: amp precision report: @net (opt-level O1 f16)
// TEXT: train.matmul f16 lower lower list {{.*}}amp-precision-report.mlir:[[@LINE+32]]:8
// TEXT: train.relu f16 follow follows its input {{.*}}:[[@LINE+32]]:8
// TEXT: train.softmax f32 fp32 fp32 list {{.*}}:[[@LINE+32]]:8
// TEXT: train.add f32 promote widest non-scalar operand
// TEXT: train.matmul f32 fp32 attribute
// 5 results of 256 elements: 5120 bytes in f32; 2 in f16 + 3 in f32 = 4096;
// casts of x and w (512 elements to f16) and of the relu output (to f32).
// TEXT: casts: 3
// TEXT-NEXT: f32 -> f16 512 elements {{.*}}:[[@LINE+23]]:16
// TEXT-NEXT: f32 -> f16 512 elements {{.*}}:[[@LINE+22]]:39
// TEXT-NEXT: f16 -> f32 256 elements {{.*}}:[[@LINE+23]]:8
// TEXT: ops by precision: f16 2 f32 3
// TEXT: activation bytes: 5120 in f32, 4096 mixed (20.0% saved); cast copies: 3072 bytes

// JSON: net 5 3 {'f16': 2, 'f32': 3} 0.2

// DOT: digraph amp {
// DOT: [label="matmul\nf16", fillcolor=palegreen];
// DOT: [label="softmax\nf32", fillcolor=orange];
// DOT: [label="cast\nf32->f16", fillcolor=lightgrey, shape=ellipse];
// DOT: "net_{{[0-9]+}}" -> "net_{{[0-9]+}}";

// Without autocast everything is f32 and nothing is saved.
// UNCHANGED: amp precision report: @net (opt-level none: amp-autocast has not run)
// UNCHANGED: train.matmul f32 - autocast not run
// UNCHANGED: casts: 0
// UNCHANGED: ops by precision: f32 5
// UNCHANGED: (0.0% saved)

// FORMAT: for the --format option: 'xml' is not one of: text, json, dot
// WRITE: error: amp-precision-report: cannot write '{{.*}}r.txt'
func.func @net(%x: tensor<16x32xf32>, %w: tensor<32x16xf32>, %b: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %h = train.matmul %x, %w : tensor<16x32xf32>, tensor<32x16xf32> -> tensor<16x16xf32>
  %r = train.relu %h : tensor<16x16xf32>
  %s = train.softmax %r axis 1 : tensor<16x16xf32>
  %a = train.add %s, %b : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  %m = train.matmul %a, %a {train.precision = "fp32"} : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  return %m : tensor<16x16xf32>
}

// O3: amp precision report: @forward (opt-level O3 f16)
// O3: train.cross_entropy f16 lower opt-level
// O3-LABEL: amp precision report: @forward_grad
// O3: train.cross_entropy f16 lower opt-level
// O3: train.matmul f16 - gradient (forward's type) {{.*}}mlp.mlir:25:13
// O3: train.reduce_sum f16 - gradient (forward's type) {{.*}}mlp.mlir:25:13

// O0: amp precision report: @forward (opt-level O0)
// O0-NEXT: op
// O0-NEXT: train.matmul f32 fp32 opt-level
// O0-NOT: lower
// O0: casts: 0

// POLICY: amp precision report: @forward (opt-level O1 f16, policy {{.*}}matmul-fp32.json)
// POLICY-NEXT: op
// POLICY-NEXT: train.matmul f32 fp32 policy file
// POLICY-NEXT: train.relu f32 follow follows its input
// POLICY: train.cross_entropy f32 fp32 fp32 list
