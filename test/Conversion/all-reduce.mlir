// RUN: amp-opt %s --amp-convert-train-to-cpu-runtime | FileCheck %s
// RUN: amp-opt %s --amp-lower-cpu | FileCheck %s --check-prefix=LLVM --implicit-check-not=train.
// RUN: amp-opt %s --amp-convert-train-to-cuda-runtime | FileCheck %s --check-prefix=CUDA

// train.all_reduce on the CPU: one call of amp_cpu_all_reduce per bucket on
// the inputs packed into one buffer of the wire type ([element type, op,
// count, ranks]), cut back into the inputs' shapes and types; a mean
// pre-divides in f32; flags travel as 0/1 in f32 with max; with skip
// nothing is packed or sent. On the GPU the same, with amp_cuda_all_reduce
// (NCCL on the step's stream). (The numbers: test/Integration/CPU/
// CollectivesTest.cpp; across processes: test/Integration/MPI.)

// CHECK: func.func private @amp_cpu_all_reduce(index, index, i64, i64, i64, i64)
// CUDA: func.func private @amp_cuda_all_reduce(index, index, i64, i64, i64, i64)
// CUDA-LABEL: func.func @bucket
// CUDA: train.runtime_call @amp_cuda_all_reduce(%{{.*}}) [0, 0, 10, 2] : (tensor<10xf32>) -> tensor<10xf32>
// CUDA-LABEL: func.func @mean_f16_wire
// CUDA: train.runtime_call @amp_cuda_all_reduce(%{{.*}}) [1, 0, 8, 4] : (tensor<8xf16>) -> tensor<8xf16>
// CUDA-LABEL: func.func @flags_with_skip
// CUDA: train.runtime_call @amp_cuda_all_reduce(%{{.*}}) [0, 1, 1, 2] : (tensor<1xf32>) -> tensor<1xf32>

// CHECK-LABEL: func.func @bucket
// CHECK-SAME: (%[[ARGA:.*]]: tensor<2x3xf32>, %[[ARGB:.*]]: tensor<4xf32>)
// CHECK: %[[A:.*]] = train.reshape %[[ARGA]] : tensor<2x3xf32> -> tensor<6xf32>
// CHECK: %[[P:.*]] = train.concat %[[A]], %[[ARGB]] axis 0 : tensor<6xf32>, tensor<4xf32> -> tensor<10xf32>
// CHECK: %[[R:.*]] = train.runtime_call @amp_cpu_all_reduce(%[[P]]) [0, 0, 10, 2] : (tensor<10xf32>) -> tensor<10xf32>
// CHECK: %[[SA:.*]] = train.slice %[[R]] offsets [0] : tensor<10xf32> -> tensor<6xf32>
// CHECK: %[[RA:.*]] = train.reshape %[[SA]] : tensor<6xf32> -> tensor<2x3xf32>
// CHECK: %[[RB:.*]] = train.slice %[[R]] offsets [6] : tensor<10xf32> -> tensor<4xf32>
// CHECK: return %[[RA]], %[[RB]]
func.func @bucket(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<4xf32>) {
  %r:2 = train.all_reduce sum(%a, %b) ranks 2 : (tensor<2x3xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<2x3xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @mean_f16_wire
// CHECK: train.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[S:.*]] = train.mul %{{.*}}, %{{.*}} : tensor<8xf32>, tensor<f32> -> tensor<8xf32>
// CHECK: %[[H:.*]] = train.cast %[[S]] : tensor<8xf32> to tensor<8xf16>
// CHECK: %[[R:.*]] = train.runtime_call @amp_cpu_all_reduce(%[[H]]) [1, 0, 8, 4] : (tensor<8xf16>) -> tensor<8xf16>
// CHECK: train.cast %[[R]] : tensor<8xf16> to tensor<8xf32>
func.func @mean_f16_wire(%a: tensor<8xf32>) -> tensor<8xf32> {
  %r = train.all_reduce mean(%a) ranks 4 wire f16 : (tensor<8xf32>)
  return %r : tensor<8xf32>
}

// CHECK-LABEL: func.func @flags_with_skip
// CHECK: %[[C:.*]] = tensor.extract %{{.*}}[] : tensor<i1>
// CHECK: scf.if %[[C]] -> (tensor<i1>) {
// CHECK-NEXT: scf.yield %{{.*}} : tensor<i1>
// CHECK-NEXT: } else {
// CHECK: arith.uitofp
// CHECK: train.runtime_call @amp_cpu_all_reduce(%{{.*}}) [0, 1, 1, 2] : (tensor<1xf32>) -> tensor<1xf32>
// CHECK: arith.cmpf one
func.func @flags_with_skip(%f: tensor<i1>, %pending: tensor<i1>) -> tensor<i1> {
  %r = train.all_reduce max(%f) skip(%pending) ranks 2 : (tensor<i1>)
  return %r : tensor<i1>
}

// Through to the LLVM dialect the calls remain; nothing of the train dialect
// does.
// LLVM: llvm.func @amp_cpu_all_reduce(i64, i64, i64, i64, i64, i64) attributes {sym_visibility = "private"}
// LLVM: llvm.func @bucket(
// LLVM: llvm.call @amp_cpu_all_reduce(
// LLVM: llvm.func @mean_f16_wire(
// LLVM: llvm.call @amp_cpu_all_reduce(
// LLVM: llvm.func @flags_with_skip(
// LLVM: llvm.call @amp_cpu_all_reduce(
