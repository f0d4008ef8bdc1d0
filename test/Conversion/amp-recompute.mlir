// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-recompute{budget=0.5}))' -split-input-file | FileCheck %s
// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-recompute))' -split-input-file | FileCheck %s --check-prefix=NONE
// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-recompute{budget=0.5 recompute-gemms=true}))' -split-input-file | FileCheck %s --check-prefix=GEMM

// A forward value (%h = exp(%x), 256 KiB) read early and again late: the
// late read gets a clone computed from %x (an argument: alive anyway)
// right before it, so %h is free while %y, %z and %w peak in between. The
// estimated peak drops from four live buffers to three.
// CHECK-LABEL: func.func @recompute
// CHECK-SAME: amp.recompute = {bytes = 262144 : i64, estimated_peak_after = 786432 : i64, estimated_peak_before = 1048576 : i64, gemms = 0 : i64, values = 1 : i64}
// CHECK: %[[H:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<65536xf32>)
// CHECK: math.exp
// CHECK: ins(%[[H]] : tensor<65536xf32>)
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<65536xf32>, tensor<65536xf32>)
// CHECK: %[[H2:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<65536xf32>) outs(%{{.*}} : tensor<65536xf32>) attrs = {{ *}}{amp.recomputed}
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[W]], %[[H2]] : tensor<65536xf32>, tensor<65536xf32>)
// With the default budget (1) nothing changes.
// NONE-LABEL: func.func @recompute
// NONE-NOT: amp.recompute
#map = affine_map<(d0) -> (d0)>
func.func @recompute(%x: tensor<65536xf32>) -> tensor<65536xf32> {
  %e0 = tensor.empty() : tensor<65536xf32>
  %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<65536xf32>) outs(%e0 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e1 = tensor.empty() : tensor<65536xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%h : tensor<65536xf32>) outs(%e1 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e2 = tensor.empty() : tensor<65536xf32>
  %z = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%y : tensor<65536xf32>) outs(%e2 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e3 = tensor.empty() : tensor<65536xf32>
  %w = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%z, %y : tensor<65536xf32>, tensor<65536xf32>) outs(%e3 : tensor<65536xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e4 = tensor.empty() : tensor<65536xf32>
  %g = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%w, %h : tensor<65536xf32>, tensor<65536xf32>) outs(%e4 : tensor<65536xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  return %g : tensor<65536xf32>
}

// -----

// Read late through a view (a reshape: the same buffer): the clone gets a
// view of its own for the late read.
// CHECK-LABEL: func.func @through_a_view
// CHECK: amp.recompute = {{{.*}}values = 1 : i64}
// CHECK: %[[H:.*]] = linalg.generic
// CHECK: tensor.expand_shape %[[H]]
// CHECK: %[[H2:.*]] = linalg.generic {{.*}} attrs = {{ *}}{amp.recomputed}
// CHECK: %[[V2:.*]] = tensor.expand_shape %[[H2]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[V2]] : tensor<256x256xf32>, tensor<256x256xf32>)
#map = affine_map<(d0) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @through_a_view(%x: tensor<65536xf32>) -> tensor<256x256xf32> {
  %e0 = tensor.empty() : tensor<65536xf32>
  %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<65536xf32>) outs(%e0 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %v = tensor.expand_shape %h [[0, 1]] output_shape [256, 256] : tensor<65536xf32> into tensor<256x256xf32>
  %e1 = tensor.empty() : tensor<256x256xf32>
  %y = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%v : tensor<256x256xf32>) outs(%e1 : tensor<256x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e2 = tensor.empty() : tensor<256x256xf32>
  %z = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<256x256xf32>) outs(%e2 : tensor<256x256xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e3 = tensor.empty() : tensor<256x256xf32>
  %w = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%z, %y : tensor<256x256xf32>, tensor<256x256xf32>) outs(%e3 : tensor<256x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e4 = tensor.empty() : tensor<256x256xf32>
  %g = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%w, %v : tensor<256x256xf32>, tensor<256x256xf32>) outs(%e4 : tensor<256x256xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  return %g : tensor<256x256xf32>
}

// -----

// A chain: %h's input %t is dead by the late read, but %t is element-wise
// work on %x (alive anyway): the late read gets %t and then %h computed
// again, in that order. %s, a reduction to a scalar, is below min-bytes.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: amp.recompute = {bytes = 262144 : i64, {{.*}}values = 1 : i64}
// CHECK: %[[T2:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<65536xf32>) outs(%{{.*}} : tensor<65536xf32>) attrs = {{ *}}{amp.recomputed}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.addf
// CHECK: %[[H2:.*]] = linalg.generic {{.*}} ins(%[[T2]] : tensor<65536xf32>) outs(%{{.*}} : tensor<65536xf32>) attrs = {{ *}}{amp.recomputed}
// CHECK-NEXT: ^bb0
// CHECK-NEXT: math.exp
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[H2]] : tensor<65536xf32>, tensor<65536xf32>)
#map = affine_map<(d0) -> (d0)>
#sum = affine_map<(d0) -> ()>
func.func @chain(%x: tensor<65536xf32>) -> (tensor<65536xf32>, tensor<f32>) {
  %e0 = tensor.empty() : tensor<65536xf32>
  %t = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<65536xf32>) outs(%e0 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e1 = tensor.empty() : tensor<65536xf32>
  %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%t : tensor<65536xf32>) outs(%e1 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %s = linalg.generic {indexing_maps = [#map, #sum], iterator_types = ["reduction"]} ins(%h : tensor<65536xf32>) outs(%zero : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<65536xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<65536xf32>) outs(%e2 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e3 = tensor.empty() : tensor<65536xf32>
  %z = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%y : tensor<65536xf32>) outs(%e3 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e4 = tensor.empty() : tensor<65536xf32>
  %g = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%z, %h : tensor<65536xf32>, tensor<65536xf32>) outs(%e4 : tensor<65536xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  return %g, %s : tensor<65536xf32>, tensor<f32>
}

// -----

// A chain through a read from above: %h reads %t from its body
// (tensor.extract, as an embedding's lookup does), and %t is dead by the
// late read: %t is computed again, and the clone of %h extracts from it.
// CHECK-LABEL: func.func @reads_from_above
// CHECK: %[[T2:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<65536xf32>) {{.*}} attrs = {{ *}}{amp.recomputed}
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<65536xf32>) attrs = {{ *}}{amp.recomputed}
// CHECK: tensor.extract %[[T2]]
#map = affine_map<(d0) -> (d0)>
func.func @reads_from_above(%x: tensor<65536xf32>) -> tensor<65536xf32> {
  %e0 = tensor.empty() : tensor<65536xf32>
  %t = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<65536xf32>) outs(%e0 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e1 = tensor.empty() : tensor<65536xf32>
  %h = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel"]} outs(%e1 : tensor<65536xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %t[%i] : tensor<65536xf32>
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e2 = tensor.empty() : tensor<65536xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%h : tensor<65536xf32>) outs(%e2 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e3 = tensor.empty() : tensor<65536xf32>
  %z = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%y : tensor<65536xf32>) outs(%e3 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e4 = tensor.empty() : tensor<65536xf32>
  %w = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%z, %y : tensor<65536xf32>, tensor<65536xf32>) outs(%e4 : tensor<65536xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e5 = tensor.empty() : tensor<65536xf32>
  %g = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%w, %h : tensor<65536xf32>, tensor<65536xf32>) outs(%e5 : tensor<65536xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  return %g : tensor<65536xf32>
}

// -----

// A GEMM of the runtime: %h = exp(%c) is kept for the late read, and %c is
// dead by then. Without recompute-gemms nothing is recomputed (computing %h
// again needs the GEMM); with it, the GEMM and then the exp run again
// before the late read, from the arguments.
// CHECK-LABEL: func.func @gemm
// CHECK-NOT: amp.recomputed
// GEMM-LABEL: func.func @gemm
// GEMM-SAME: amp.recompute = {bytes = 262144 : i64, {{.*}}gemms = 1 : i64{{.*}}values = 1 : i64}
// GEMM: %[[C:.*]] = train.runtime_call @amp_cpu_gemm(%arg0, %arg1)
// GEMM-NOT: amp.recomputed
// GEMM: %[[C2:.*]] = train.runtime_call @amp_cpu_gemm(%arg0, %arg1) [1, 1, 1, 256, 256, 256, 0, 0] {amp.recomputed}
// GEMM: %[[H2:.*]] = linalg.generic {{.*}} ins(%[[C2]] : tensor<256x256xf32>) {{.*}} attrs = {{ *}}{amp.recomputed}
// GEMM: linalg.generic {{.*}} ins(%{{.*}}, %[[H2]] : tensor<256x256xf32>, tensor<256x256xf32>)
func.func private @amp_cpu_gemm(index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
#map2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @gemm(%a: tensor<256x256xf16>, %b: tensor<256x256xf16>) -> tensor<256x256xf32> {
  %c = train.runtime_call @amp_cpu_gemm(%a, %b) [1, 1, 1, 256, 256, 256, 0, 0] : (tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<256x256xf32>
  %e0 = tensor.empty() : tensor<256x256xf32>
  %h = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<256x256xf32>) outs(%e0 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e1 = tensor.empty() : tensor<256x256xf32>
  %y = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<256x256xf32>) outs(%e1 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e2 = tensor.empty() : tensor<256x256xf32>
  %z = linalg.generic {indexing_maps = [#map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<256x256xf32>) outs(%e2 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e3 = tensor.empty() : tensor<256x256xf32>
  %w = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%z, %y : tensor<256x256xf32>, tensor<256x256xf32>) outs(%e3 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %r = arith.subf %x, %v : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e4 = tensor.empty() : tensor<256x256xf32>
  %g = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%w, %h : tensor<256x256xf32>, tensor<256x256xf32>) outs(%e4 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %r = arith.mulf %x, %v : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  return %g : tensor<256x256xf32>
}

// -----

// Read late through a slice (a view of the same buffer after
// bufferization): the slice is cloned with the value.
// CHECK-LABEL: func.func @through_a_slice
// CHECK: amp.recompute = {{{.*}}values = 1 : i64}
// CHECK: %[[H2:.*]] = linalg.generic {{.*}} attrs = {{ *}}{amp.recomputed}
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[H2]][0] [32768] [1]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[S2]] : tensor<32768xf32>, tensor<32768xf32>)
#map = affine_map<(d0) -> (d0)>
func.func @through_a_slice(%x: tensor<65536xf32>) -> tensor<32768xf32> {
  %e0 = tensor.empty() : tensor<65536xf32>
  %h = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<65536xf32>) outs(%e0 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e1 = tensor.empty() : tensor<65536xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%h : tensor<65536xf32>) outs(%e1 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e2 = tensor.empty() : tensor<65536xf32>
  %z = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%y : tensor<65536xf32>) outs(%e2 : tensor<65536xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %e3 = tensor.empty() : tensor<65536xf32>
  %w = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%z, %y : tensor<65536xf32>, tensor<65536xf32>) outs(%e3 : tensor<65536xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<65536xf32>
  %ws = tensor.extract_slice %w[0] [32768] [1] : tensor<65536xf32> to tensor<32768xf32>
  %hs = tensor.extract_slice %h[0] [32768] [1] : tensor<65536xf32> to tensor<32768xf32>
  %e4 = tensor.empty() : tensor<32768xf32>
  %g = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]} ins(%ws, %hs : tensor<32768xf32>, tensor<32768xf32>) outs(%e4 : tensor<32768xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<32768xf32>
  return %g : tensor<32768xf32>
}

// -----

// A GEMM that writes its bf16 result itself (amp_cpu_gemm_round) is a value
// to recompute of its own with recompute-gemms: %c is kept for the late
// read only; the GEMM runs again there, from the arguments.
// CHECK-LABEL: func.func @rounded_gemm
// CHECK-NOT: amp.recomputed
// GEMM-LABEL: func.func @rounded_gemm
// GEMM-SAME: amp.recompute = {bytes = 131072 : i64, {{.*}}gemms = 1 : i64{{.*}}values = 1 : i64}
// GEMM: %[[C:.*]] = train.runtime_call @amp_cpu_gemm_round(%arg0, %arg1)
// GEMM-NOT: amp.recomputed
// GEMM: %[[C2:.*]] = train.runtime_call @amp_cpu_gemm_round(%arg0, %arg1) [2, 2, 2, 1, 256, 256, 256, 0, 0] {amp.recomputed}
// GEMM: linalg.generic {{.*}} ins(%{{.*}}, %[[C2]] : tensor<256x256xf32>, tensor<256x256xbf16>)
func.func private @amp_cpu_gemm_round(index, index, index, i64, i64, i64, i64, i64, i64, i64, i64, i64)
#map3 = affine_map<(d0, d1) -> (d0, d1)>
func.func @rounded_gemm(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>) -> tensor<256x256xf32> {
  %c = train.runtime_call @amp_cpu_gemm_round(%a, %b) [2, 2, 2, 1, 256, 256, 256, 0, 0] : (tensor<256x256xbf16>, tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %e1 = tensor.empty() : tensor<256x256xf32>
  %y = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%c : tensor<256x256xbf16>) outs(%e1 : tensor<256x256xf32>) {
  ^bb0(%x: bf16, %o: f32):
    %f = arith.extf %x : bf16 to f32
    %r = arith.mulf %f, %f : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e2 = tensor.empty() : tensor<256x256xf32>
  %z = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<256x256xf32>) outs(%e2 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.addf %x, %x : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e3 = tensor.empty() : tensor<256x256xf32>
  %w = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%z, %y : tensor<256x256xf32>, tensor<256x256xf32>) outs(%e3 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %r = arith.subf %x, %v : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  %e4 = tensor.empty() : tensor<256x256xf32>
  %g = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%w, %c : tensor<256x256xf32>, tensor<256x256xbf16>) outs(%e4 : tensor<256x256xf32>) {
  ^bb0(%x: f32, %v: bf16, %o: f32):
    %f = arith.extf %v : bf16 to f32
    %r = arith.mulf %x, %f : f32
    linalg.yield %r : f32
  } -> tensor<256x256xf32>
  return %g : tensor<256x256xf32>
}
