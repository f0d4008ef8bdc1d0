// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-unshare-inits))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// One zero fill (of one empty tensor) shared by two reductions, and one
// empty tensor shared by two element-wise ops: every op gets its own copy
// of the chain right before it, and the originals go.
// CHECK-LABEL: func.func @shared
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F0]] : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F1]] : tensor<4xf32>)
// CHECK: arith.maximumf
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[E2]] : tensor<4x8xf32>)
// CHECK: arith.negf
// CHECK: %[[E3:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[E3]] : tensor<4x8xf32>)
// CHECK-NOT: tensor.empty
// CHECK-NOT: linalg.fill
func.func @shared(%a: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  return %s, %t, %u, %v : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Left alone: an init used once, and a shared init that is not an empty
// tensor or a fill (a function argument: its contents matter).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
// CHECK: outs(%arg1 : tensor<4xf32>)
// CHECK: outs(%arg1 : tensor<4xf32>)
func.func @kept(%a: tensor<4x8xf32>, %acc: tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %u, %s, %t : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>
}

// An init used once but built far from its use (CSE keeps the first of
// identical fills: a forward max-pool's -inf fill serving the backward's
// recomputation) moves next to it, so its buffer is not held in between.
// CHECK-LABEL: func.func @sunk
// CHECK: arith.negf
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F]] : tensor<4xf32>)
// CHECK-NOT: linalg.fill
func.func @sunk(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%u : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %u, %m : tensor<4x8xf32>, tensor<4xf32>
}

// An original that keeps another use (here a function result) stays; its
// one init use still gets a copy built right before the op.
// CHECK-LABEL: func.func @original_kept
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4xf32>)
// CHECK: arith.negf
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4xf32>)
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[F2]] : tensor<4xf32>)
// CHECK: return %[[F]],
func.func @original_kept(%a: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%u : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %o, %x : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %f, %u, %s : tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>
}

#flat = affine_map<(d0) -> (d0)>

// One empty tensor reshaped for two element-wise ops (the CPU lowering
// collapses them to one dimension): each op gets its own empty tensor and
// reshape, right before it, and the shared ones go. Without that both
// write one buffer, and bufferization's conflict analysis holds every such
// op of a network in one alias set.
// CHECK-LABEL: func.func @shared_through_reshape
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4x8xf16>
// CHECK-NEXT: %[[C0:.*]] = tensor.collapse_shape %[[E0]] {{\[\[}}0, 1]] : tensor<4x8xf16> into tensor<32xf16>
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[C0]] : tensor<32xf16>)
// CHECK: arith.truncf
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x8xf16>
// CHECK-NEXT: %[[C1:.*]] = tensor.collapse_shape %[[E1]] {{\[\[}}0, 1]] : tensor<4x8xf16> into tensor<32xf16>
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[C1]] : tensor<32xf16>)
// CHECK: arith.negf
// CHECK-NOT: tensor.empty
// CHECK-NOT: tensor.collapse_shape
func.func @shared_through_reshape(%a: tensor<32xf32>, %b: tensor<32xf16>) -> (tensor<32xf16>, tensor<32xf16>) {
  %e = tensor.empty() : tensor<4x8xf16>
  %c0 = tensor.collapse_shape %e [[0, 1]] : tensor<4x8xf16> into tensor<32xf16>
  %u = linalg.generic {indexing_maps = [#flat, #flat], iterator_types = ["parallel"]}
      ins(%a : tensor<32xf32>) outs(%c0 : tensor<32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  } -> tensor<32xf16>
  %c1 = tensor.collapse_shape %e [[0, 1]] : tensor<4x8xf16> into tensor<32xf16>
  %v = linalg.generic {indexing_maps = [#flat, #flat], iterator_types = ["parallel"]}
      ins(%b : tensor<32xf16>) outs(%c1 : tensor<32xf16>) {
  ^bb0(%x: f16, %o: f16):
    %y = arith.negf %x : f16
    linalg.yield %y : f16
  } -> tensor<32xf16>
  return %u, %v : tensor<32xf16>, tensor<32xf16>
}

// Left alone: a reshaped empty tensor used once, and a reshape of an
// argument shared by two ops (its contents matter).
// CHECK-LABEL: func.func @kept_through_reshape
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf16>
// CHECK-NEXT: %[[C:.*]] = tensor.collapse_shape %[[E]]
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[C]] : tensor<32xf16>)
// CHECK: %[[A:.*]] = tensor.collapse_shape %arg1
// CHECK: outs(%[[A]] : tensor<32xf16>)
// CHECK: outs(%[[A]] : tensor<32xf16>)
// CHECK-NOT: tensor.empty
func.func @kept_through_reshape(%a: tensor<32xf32>, %acc: tensor<4x8xf16>) -> (tensor<32xf16>, tensor<32xf16>, tensor<32xf16>) {
  %e = tensor.empty() : tensor<4x8xf16>
  %c = tensor.collapse_shape %e [[0, 1]] : tensor<4x8xf16> into tensor<32xf16>
  %u = linalg.generic {indexing_maps = [#flat, #flat], iterator_types = ["parallel"]}
      ins(%a : tensor<32xf32>) outs(%c : tensor<32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %y = arith.truncf %x : f32 to f16
    linalg.yield %y : f16
  } -> tensor<32xf16>
  %ca = tensor.collapse_shape %acc [[0, 1]] : tensor<4x8xf16> into tensor<32xf16>
  %s = linalg.generic {indexing_maps = [#flat, #flat], iterator_types = ["parallel"]}
      ins(%a : tensor<32xf32>) outs(%ca : tensor<32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    %y = arith.addf %o, %t : f16
    linalg.yield %y : f16
  } -> tensor<32xf16>
  %t = linalg.generic {indexing_maps = [#flat, #flat], iterator_types = ["parallel"]}
      ins(%a : tensor<32xf32>) outs(%ca : tensor<32xf16>) {
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    %y = arith.mulf %o, %t : f16
    linalg.yield %y : f16
  } -> tensor<32xf16>
  return %u, %s, %t : tensor<32xf16>, tensor<32xf16>, tensor<32xf16>
}
