// RUN: amp-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(amp-split-reductions))" | FileCheck %s

// Batch-norm statistics: 32 outputs of 100 352 terms. The widest reduction
// dimension (the batch, 128) is split into 128 chunks: stage 1 reduces
// (n, h, w) with n = chunk + inner into [32, 128] partials starting at the
// combiner's identity (a [1, 128] tensor bounds the new dimensions), stage 2
// adds the partials into the original init.
// CHECK-DAG: #[[$SPLIT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0 + d4, d1, d2, d3)>
// CHECK-DAG: #[[$BOUNDS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d4)>
// CHECK-DAG: #[[$PARTIAL:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d4)>
// CHECK-LABEL: func.func @stats
// CHECK: %[[B:.*]] = tensor.empty() : tensor<1x128xi1>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P0:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<32x128xf32>)
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[$SPLIT]], #[[$BOUNDS]], #[[$PARTIAL]]], iterator_types = ["reduction", "parallel", "reduction", "reduction", "parallel"]} ins(%arg0, %[[B]] : tensor<128x32x28x28xf32>, tensor<1x128xi1>) outs(%[[P0]] : tensor<32x128xf32>)
// CHECK: arith.addf
// CHECK: %[[R:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<32x128xf32>) outs(%arg1 : tensor<32xf32>)
// CHECK: arith.addf
// CHECK: return %[[R]]
func.func @stats(%x: tensor<128x32x28x28xf32>, %init: tensor<32xf32>) -> tensor<32xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<128x32x28x28xf32>) outs(%init : tensor<32xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// A max (identity -inf) of a full 4096-element vector: 128 chunks of 32.
// CHECK-LABEL: func.func @maximum
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<128xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%{{.*}} : tensor<128xf32>) outs(%arg1 : tensor<f32>)
func.func @maximum(%x: tensor<4096xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<4096xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Left alone: a small reduction; many outputs; a combiner without an
// identity here (mulf); an accumulator read outside its combiner; an index
// in the body; an OR into an i1 (amp-map-linalg-to-gpu runs it fully
// parallel).
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-6: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @left_alone(%small: tensor<1024xf32>, %rows: tensor<16384x4096xf32>, %x: tensor<4096xf32>, %i: tensor<f32>, %r: tensor<16384xf32>, %flag: tensor<i1>) -> (tensor<f32>, tensor<16384xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i1>) {
  %0 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%small : tensor<1024xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %1 = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%rows : tensor<16384x4096xf32>) outs(%r : tensor<16384xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<16384xf32>
  %2 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<4096xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.mulf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %3 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<4096xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.mulf %acc, %a : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %4 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<4096xf32>) outs(%i : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %k = linalg.index 0 : index
    %ki = arith.index_cast %k : index to i32
    %kf = arith.sitofp %ki : i32 to f32
    %t = arith.mulf %a, %kf : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %5 = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<4096xf32>) outs(%flag : tensor<i1>) {
  ^bb0(%a: f32, %acc: i1):
    %bad = arith.cmpf uno, %a, %a : f32
    %s = arith.ori %acc, %bad : i1
    linalg.yield %s : i1
  } -> tensor<i1>
  return %0, %1, %2, %3, %4, %5 : tensor<f32>, tensor<16384xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i1>
}
