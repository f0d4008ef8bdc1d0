// RUN: amp-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(amp-parallelize-loops))" | FileCheck %s --enable-var-scope
// RUN: amp-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(amp-parallelize-loops{min-work=64 max-tasks=4}))" | FileCheck %s --check-prefix=SMALL --enable-var-scope

// An element-wise loop over 100 352 elements (128 images of 28x28): 64
// tasks of 1568 (a multiple of 16: the inner loop keeps whole vectors).
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.forall (%[[T:.*]]) = (0) to (100352) step (1568) {
// CHECK: memref.subview %{{.*}}[%[[T]]] [1568] [1]
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<1568xf32, strided<[1], offset: ?>>) outs(%{{.*}} : memref<1568xf32, strided<[1], offset: ?>>)
// CHECK-NOT: linalg.generic
// CHECK: return
#id = affine_map<(d0) -> (d0)>
func.func @elementwise(%x: memref<100352xf32>, %y: memref<100352xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<100352xf32>) outs(%y : memref<100352xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Batch-norm statistics (reduction, channel, reduction): split by channel,
// one task each; every task sums its channels in the original order.
// CHECK-LABEL: func.func @statistics
// CHECK: scf.forall (%[[C:.*]]) in (32) {
// CHECK: memref.subview %{{.*}}[0, %[[C]], 0] [128, 1, 784] [1, 1, 1]
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction"]
#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d1)>
func.func @statistics(%x: memref<128x32x784xf32>, %s: memref<32xf32>) {
  linalg.generic {indexing_maps = [#x, #c], iterator_types = ["reduction", "parallel", "reduction"]} ins(%x : memref<128x32x784xf32>) outs(%s : memref<32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A bias gradient (rows reduced, the innermost dimension kept): the kept
// dimension in tiles of 16, 8 tasks.
// CHECK-LABEL: func.func @bias_grad
// CHECK: scf.forall (%[[F:.*]]) = (0) to (128) step (16) {
// CHECK: memref.subview %{{.*}}[0, %[[F]]] [512, 16] [1, 1]
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (d1)>
func.func @bias_grad(%dy: memref<512x128xf32>, %db: memref<128xf32>) {
  linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]} ins(%dy : memref<512x128xf32>) outs(%db : memref<128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A dimension marked parallel that an output does not vary along (legal
// linalg: the last row wins) is not split, or the tasks would race on the
// output: the next one is.
// CHECK-LABEL: func.func @output_ignores_a_parallel_dim
// CHECK: scf.forall (%[[F:.*]]) = (0) to (128) step (16) {
// CHECK: memref.subview %{{.*}}[0, %[[F]]] [512, 16] [1, 1]
#all = affine_map<(d0, d1) -> (d0, d1)>
#last = affine_map<(d0, d1) -> (d1)>
func.func @output_ignores_a_parallel_dim(%x: memref<512x128xf32>, %y: memref<128xf32>) {
  linalg.generic {indexing_maps = [#all, #last], iterator_types = ["parallel", "parallel"]} ins(%x : memref<512x128xf32>) outs(%y : memref<128xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

// Below min-work, and a full reduction (no parallel dimension): sequential.
// CHECK-LABEL: func.func @small_and_scalar
// CHECK-NOT: scf.forall
// CHECK: return
// With min-work=64 max-tasks=4 the small loop is split in 4 (100 = 4 x 32 -
// 28: tiles of 32 elements, the last one of 4, a dynamic size), the full
// reduction still not.
// SMALL-LABEL: func.func @small_and_scalar
// SMALL: scf.forall (%[[T:.*]]) = (0) to (100) step (32) {
// SMALL: %[[SIZE:.*]] = affine.min #{{.*}}(%[[T]])
// SMALL: memref.subview %{{.*}}[%[[T]]] [%[[SIZE]]] [1]
// SMALL: linalg.generic
// SMALL-NOT: scf.forall
// SMALL: linalg.generic {{.*}}iterator_types = ["reduction"]
#v = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
func.func @small_and_scalar(%x: memref<100xf32>, %y: memref<100xf32>, %sum: memref<f32>) {
  linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%x : memref<100xf32>) outs(%y : memref<100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [#v, #s], iterator_types = ["reduction"]} ins(%x : memref<100xf32>) outs(%sum : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %out, %in : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
// Ops on tensors (before bufferization) are left alone.
// CHECK-LABEL: func.func @tensors
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
func.func @tensors(%x: tensor<100352xf32>) -> tensor<100352xf32> {
  %e = tensor.empty() : tensor<100352xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<100352xf32>) outs(%e : tensor<100352xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.negf %in : f32
    linalg.yield %0 : f32
  } -> tensor<100352xf32>
  return %r : tensor<100352xf32>
}
