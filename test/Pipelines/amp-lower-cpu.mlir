// RUN: amp-opt %s --amp-lower-cpu | FileCheck %s
// RUN: amp-opt %examples/mlp.mlir --amp-lower-cpu | FileCheck %s --check-prefix=MLP --implicit-check-not=@expf
// RUN: amp-opt %examples/cnn.mlir --amp-lower-cpu | FileCheck %s --check-prefix=LLVM-ONLY
// RUN: amp-opt %examples/transformer_block.mlir --amp-lower-cpu | FileCheck %s --check-prefix=LLVM-ONLY
// RUN: amp-opt %examples/vgg16_cifar.mlir --amp-lower-cpu | FileCheck %s --check-prefix=LLVM-ONLY
// Without bufferization's analysis (what the JIT and amp-compile pick for modules of
// 2 000 train ops and more): the same functions, fully lowered.
// RUN: amp-opt %examples/cnn.mlir --amp-pipeline --amp-lower-cpu="copy-before-write=true" | FileCheck %s --check-prefix=LLVM-ONLY
// RUN: amp-opt %s --amp-lower-cpu="copy-before-write=true" | FileCheck %s
// Buffers come from aligned_alloc, never malloc plus pointer arithmetic
// (which hides them from LLVM's alias analysis).
// RUN: amp-opt %examples/cnn.mlir --amp-pipeline --amp-lower-cpu | FileCheck %s --check-prefix=ALLOC --implicit-check-not=@malloc
// ALLOC: llvm.call @aligned_alloc

// The whole CPU pipeline ends in the LLVM dialect; the function's result
// becomes a trailing out-parameter (two more pointers in the expanded memref
// descriptor) and nothing is returned.

// CHECK-LABEL: llvm.func @scale
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %[[LAST:.*]]: i64) {
// CHECK: llvm.fmul
// CHECK: llvm.return
// CHECK-NOT: llvm.return %
func.func @scale(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = train.constant dense<2.0> : tensor<f32>
  %r = train.mul %x, %c : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// MLP-LABEL: llvm.func @forward
// MLP-NOT: {{(train|linalg|memref|tensor|scf|arith|math)\.}}
// f32 exp is inline arithmetic (amp-vectorizable-math); log calls libm.
// MLP: llvm.call @logf

// LLVM-ONLY-NOT: {{(train|linalg|memref|tensor|scf|arith|math|bufferization)\.}}
