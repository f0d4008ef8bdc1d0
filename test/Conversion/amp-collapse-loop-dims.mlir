// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-collapse-loop-dims))' -split-input-file | FileCheck %s

// An element-wise op on identically laid out operands: one flat loop.
// CHECK-LABEL: func.func @elementwise
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2, 3]] : tensor<2x3x4x5xf32> into tensor<120xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%{{.*}}, %{{.*}} : tensor<120xf32>, tensor<120xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1, 2, 3]] output_shape [2, 3, 4, 5]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @elementwise(%a: tensor<2x3x4x5xf32>, %b: tensor<2x3x4x5xf32>) -> tensor<?x3x4x5xf32> {
  %e = tensor.empty() : tensor<2x3x4x5xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a, %b : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>) outs(%e : tensor<2x3x4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x3x4x5xf32>
  %c = tensor.cast %r : tensor<2x3x4x5xf32> to tensor<?x3x4x5xf32>
  return %c : tensor<?x3x4x5xf32>
}

// -----

// Batch-norm statistics over N, H, W per channel: H and W merge (one
// 20-iteration inner loop); N and C are not adjacent runs of one iterator type.
// CHECK-LABEL: func.func @channel_sum
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<2x3x4x5xf32> into tensor<2x3x20xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]} ins(%{{.*}} : tensor<2x3x20xf32>) outs(%{{.*}} : tensor<3xf32>)
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @channel_sum(%a: tensor<2x3x4x5xf32>, %init: tensor<3xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id4, #chan], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%a : tensor<2x3x4x5xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %o, %x : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %c = tensor.cast %r : tensor<3xf32> to tensor<?xf32>
  return %c : tensor<?xf32>
}

// -----

// A per-channel operand splits the parallel dimensions at C: [N], [C], [H*W].
// CHECK-LABEL: func.func @channel_broadcast
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1], [2, 3]] : tensor<2x3x4x5xf32> into tensor<2x3x20xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<2x3x20xf32>, tensor<3xf32>)
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d1)>
func.func @channel_broadcast(%a: tensor<2x3x4x5xf32>, %s: tensor<3xf32>) -> tensor<?x3x4x5xf32> {
  %e = tensor.empty() : tensor<2x3x4x5xf32>
  %r = linalg.generic {indexing_maps = [#id4, #chan, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a, %s : tensor<2x3x4x5xf32>, tensor<3xf32>) outs(%e : tensor<2x3x4x5xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  } -> tensor<2x3x4x5xf32>
  %c = tensor.cast %r : tensor<2x3x4x5xf32> to tensor<?x3x4x5xf32>
  return %c : tensor<?x3x4x5xf32>
}

// -----

// Left alone: a transposed operand (d0, d1 not contiguous in it), adjacent
// dimensions of different iterator types, an op reading linalg.index, and a
// gather through a non-permutation map.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: tensor.collapse_shape
// CHECK: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#tr2 = affine_map<(d0, d1) -> (d1, d0)>
#row = affine_map<(d0, d1) -> (d0)>
#half = affine_map<(d0, d1) -> (d0, d1 floordiv 2)>
func.func @untouched(%a: tensor<4x4xf32>, %r0: tensor<4xf32>, %h: tensor<4x2xf32>) -> (tensor<?x4xf32>, tensor<?xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %e = tensor.empty() : tensor<4x4xf32>
  %t = linalg.generic {indexing_maps = [#tr2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  %s = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x4xf32>) outs(%r0 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %i = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %j = linalg.index 1 : index
    %k = arith.index_cast %j : index to i32
    %f = arith.sitofp %k : i32 to f32
    %y = arith.addf %x, %f : f32
    linalg.yield %y : f32
  } -> tensor<4x4xf32>
  %g = linalg.generic {indexing_maps = [#half, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x2xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  %ct = tensor.cast %t : tensor<4x4xf32> to tensor<?x4xf32>
  %cs = tensor.cast %s : tensor<4xf32> to tensor<?xf32>
  %ci = tensor.cast %i : tensor<4x4xf32> to tensor<?x4xf32>
  %cg = tensor.cast %g : tensor<4x4xf32> to tensor<?x4xf32>
  return %ct, %cs, %ci, %cg : tensor<?x4xf32>, tensor<?xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// A generic whose result is returned keeps its shape (after bufferization
// the result becomes the caller's out-parameter only as a plain buffer).
// CHECK-LABEL: func.func @returned
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @returned(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
