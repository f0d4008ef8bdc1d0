// RUN: amp-opt %s --amp-convert-train-to-linalg="norm-statistics=f64 all-reduce-callee=amp_cpu_all_reduce" | FileCheck %s
// RUN: amp-opt %s --amp-lower-cpu | FileCheck %s --check-prefix=LLVM --implicit-check-not=train.

// SyncBatchNorm (`ranks 2`): each per-channel sum of the statistics is
// summed across the ranks by the collective runtime ([element type 3 = f64,
// op 0 = sum, 8 channels, 2 ranks]), and every count is the global one: 16
// values per channel here, 32 over both ranks.

// CHECK-LABEL: func.func @forward
// The sum, all-reduced, then the deviations from the global mean (sum / 32),
// all-reduced.
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK: %[[GSUM:.*]] = train.runtime_call @amp_cpu_all_reduce(%[[SUM]]) [3, 0, 8, 2] : (tensor<8xf64>) -> tensor<8xf64>
// CHECK: %[[DEV:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[GSUM]] :
// CHECK: arith.constant 3.200000e+01 : f64
// CHECK: %[[GDEV:.*]] = train.runtime_call @amp_cpu_all_reduce(%[[DEV]]) [3, 0, 8, 2]
// The output normalizes with both; the unbiased running variance divides by 31.
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[GSUM]], %[[GDEV]],
// CHECK: arith.constant 3.200000e+01 : f32
// CHECK: arith.constant 3.100000e+01 : f32
// CHECK-NOT: amp_cpu_all_reduce
// CHECK: return
func.func @forward(%x: tensor<4x8x2x2xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                   %m: tensor<8xf32>, %v: tensor<8xf32>)
    -> (tensor<4x8x2x2xf32>, tensor<8xf32>, tensor<8xf32>) {
  %y, %rm, %rv = train.batch_norm %x, %g, %b, %m, %v ranks 2 : tensor<4x8x2x2xf32>, tensor<8xf32>
  return %y, %rm, %rv : tensor<4x8x2x2xf32>, tensor<8xf32>, tensor<8xf32>
}

// Backward: the statistics as forward's (two all-reduces), then the two
// parameter-gradient sums: this rank's are returned, their all-reduced
// copies feed dx.
// CHECK-LABEL: func.func @backward
// CHECK: train.runtime_call @amp_cpu_all_reduce
// CHECK: train.runtime_call @amp_cpu_all_reduce
// CHECK: %[[SUMS:.*]]:2 = linalg.generic
// CHECK: %[[G0:.*]] = train.runtime_call @amp_cpu_all_reduce(%[[SUMS]]#0) [3, 0, 8, 2]
// CHECK: %[[G1:.*]] = train.runtime_call @amp_cpu_all_reduce(%[[SUMS]]#1) [3, 0, 8, 2]
// CHECK: linalg.generic {{.*}} ins({{.*}}, %[[G0]], %[[G1]] :
// CHECK: %[[DSCALE:.*]] = linalg.generic {{.*}} ins(%[[SUMS]]#0 :
// CHECK: %[[DBIAS:.*]] = linalg.generic {{.*}} ins(%[[SUMS]]#1 :
// CHECK: return %{{.*}}, %[[DSCALE]], %[[DBIAS]]
func.func @backward(%dy: tensor<4x8x2x2xf32>, %x: tensor<4x8x2x2xf32>, %g: tensor<8xf32>)
    -> (tensor<4x8x2x2xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dg, %db = train.batch_norm_grad %dy, %x, %g ranks 2 : tensor<4x8x2x2xf32>, tensor<8xf32>
  return %dx, %dg, %db : tensor<4x8x2x2xf32>, tensor<8xf32>, tensor<8xf32>
}

// The whole CPU lowering: six calls of the one runtime declaration (two in
// @forward, four in @backward).
// LLVM: llvm.func @amp_cpu_all_reduce(
// LLVM-COUNT-6: llvm.call @amp_cpu_all_reduce(
// LLVM-NOT: llvm.call @amp_cpu_all_reduce(

