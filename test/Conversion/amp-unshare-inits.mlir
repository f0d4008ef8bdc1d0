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
