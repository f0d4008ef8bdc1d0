// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-capture-scalar-inputs))' | FileCheck %s --enable-var-scope
// The rewritten generics still lower to the LLVM dialect (the integration
// tests run the CPU pipeline, this pass included, against PyTorch):
// RUN: amp-opt %s --amp-capture-scalar-inputs --amp-lower-cpu | FileCheck %s --check-prefix=LOWERED

#id = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#scalar2 = affine_map<(d0, d1) -> ()>

// Two generics take one rank-0 tensor (a step's inverse scale): one read
// right after its definition, captured by both bodies; the operand, its
// block argument and its indexing map are gone.
// CHECK-LABEL: func.func @shared
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[Y:.*]]: tensor<2x4xf32>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[INV:.*]] = linalg.generic
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// CHECK: }
// CHECK-NEXT: %[[V:.*]] = tensor.extract %[[INV]][] : tensor<f32>
// CHECK-NOT: tensor.extract
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel"]} ins(%[[X]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.mulf %[[IN]], %[[V]] : f32
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[Y]] : tensor<2x4xf32>)
// CHECK-NEXT: ^bb0(%[[IN2:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.mulf %[[IN2]], %[[V]] : f32
func.func @shared(%x: tensor<8xf32>, %y: tensor<2x4xf32>, %s: tensor<f32>)
    -> (tensor<8xf32>, tensor<2x4xf32>) {
  %e0 = tensor.empty() : tensor<f32>
  // A rank-0 generic (no loops) keeps its rank-0 input.
  %inv = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
                         iterator_types = []} ins(%s : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %r = arith.divf %one, %a : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%x, %inv : tensor<8xf32>, tensor<f32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<2x4xf32>
  %1 = linalg.generic {indexing_maps = [#id2, #scalar2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%y, %inv : tensor<2x4xf32>, tensor<f32>) outs(%e2 : tensor<2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x4xf32>
  return %0, %1 : tensor<8xf32>, tensor<2x4xf32>
}

// A function argument is read at the top of the function; two rank-0 inputs
// of one generic (first and last) both go, the rank-1 input between them
// stays and keeps its map.
// CHECK-LABEL: func.func @arguments
// CHECK-SAME: (%[[A:.*]]: tensor<f32>, %[[X:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<f32>)
// CHECK-DAG: %[[VA:.*]] = tensor.extract %[[A]][] : tensor<f32>
// CHECK-DAG: %[[VB:.*]] = tensor.extract %[[B]][] : tensor<f32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel"]} ins(%[[X]] : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[VA]], %[[IN]] : f32
// CHECK-NEXT: arith.addf %[[M]], %[[VB]] : f32
func.func @arguments(%a: tensor<f32>, %x: tensor<8xf32>, %b: tensor<f32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.generic {indexing_maps = [#scalar, #id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%a, %x, %b : tensor<f32>, tensor<8xf32>, tensor<f32>) outs(%e : tensor<8xf32>) {
  ^bb0(%va: f32, %vx: f32, %vb: f32, %o: f32):
    %m = arith.mulf %va, %vx : f32
    %s = arith.addf %m, %vb : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// Left alone: a rank-0 init (the result is the scalar), a rank-1 input of
// one element, and a generic on buffers.
// CHECK-LABEL: func.func @untouched
// CHECK-NOT: tensor.extract
// CHECK: ins(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<1xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK: ins(%{{.*}}, %{{.*}} : memref<8xf32>, memref<f32>)
func.func @untouched(%x: tensor<8xf32>, %one: tensor<1xf32>, %init: tensor<f32>,
                     %bx: memref<8xf32>, %bs: memref<f32>, %bo: memref<8xf32>) -> tensor<f32> {
  %0 = linalg.generic {indexing_maps = [#id, affine_map<(d0) -> (0)>, #scalar], iterator_types = ["reduction"]}
      ins(%x, %one : tensor<8xf32>, tensor<1xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  linalg.generic {indexing_maps = [#id, #scalar, #id], iterator_types = ["parallel"]}
      ins(%bx, %bs : memref<8xf32>, memref<f32>) outs(%bo : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  }
  return %0 : tensor<f32>
}

// LOWERED-LABEL: llvm.func @shared
// LOWERED-LABEL: llvm.func @arguments
// LOWERED-LABEL: llvm.func @untouched
