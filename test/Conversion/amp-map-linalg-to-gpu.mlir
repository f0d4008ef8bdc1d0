// RUN: amp-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(amp-map-linalg-to-gpu))" | FileCheck %s

// Element-wise: one launch over the 1024*256 points, 256 threads a block,
// guarded, innermost dimension fastest; the host waits once, at the return.
// CHECK-LABEL: func.func @elementwise
// CHECK: %[[START:.*]] = gpu.wait async
// CHECK: %[[DONE:.*]] = gpu.launch async [%[[START]]] blocks({{.*}}) in (%{{.*}} = %c1024{{(_[0-9]+)?}}, {{.*}}) threads({{.*}}) in (%{{.*}} = %c256{{(_[0-9]+)?}},
// CHECK: arith.cmpi ult
// CHECK: scf.if
// CHECK: arith.remui
// CHECK: memref.load
// CHECK: arith.maximumf
// CHECK: memref.store
// CHECK-NOT: linalg.generic
// CHECK: gpu.wait [%[[DONE]]]
// CHECK-NEXT: return
func.func @elementwise(%a: memref<1024x256xf32>, %b: memref<1024x256xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<1024x256xf32>) outs(%b : memref<1024x256xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A reduction over the rows (reduction dimension first): dimensions are
// reordered so each of the 256 column threads loops over the rows.
// CHECK-LABEL: func.func @column_sums
// CHECK: gpu.launch
// CHECK: scf.if
// CHECK: scf.for
// CHECK: arith.addf
func.func @column_sums(%a: memref<128x256xf32>, %s: memref<256xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]}
      ins(%a : memref<128x256xf32>) outs(%s : memref<256xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A full reduction runs in one thread; buffers become device buffers; one
// chain of async tokens orders every GPU op as the program does (the
// runtime runs them on one stream), with no host wait before the return.
// CHECK-LABEL: func.func @total
// CHECK: %[[START:.*]] = gpu.wait async
// CHECK: %[[T:.*]], %[[ALLOCATED:.*]] = gpu.alloc async [%[[START]]] () : memref<f32>
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[SUMMED:.*]] = gpu.launch async [%[[ALLOCATED]]] blocks({{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads({{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]])
// CHECK: scf.for
// CHECK-NOT: gpu.wait
// The copy is a kernel too (it could share a launch with others).
// CHECK: %[[COPIED:.*]] = gpu.launch async [%[[SUMMED]]]
// CHECK: %[[V:.*]] = memref.load %[[T]][]
// CHECK: memref.store %[[V]], %arg1[]
// CHECK: %[[FREED:.*]] = gpu.dealloc async [%[[COPIED]]] %[[T]]
// CHECK-NEXT: gpu.wait [%[[FREED]]]
// CHECK-NEXT: return
func.func @total(%a: memref<64xf32>, %out: memref<f32>) {
  %t = memref.alloc() : memref<f32>
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%a : memref<64xf32>) outs(%t : memref<f32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  }
  memref.copy %t, %out : memref<f32> to memref<f32>
  memref.dealloc %t : memref<f32>
  return
}

// -----

// An OR into an i1 (loss scaling's non-finite check) runs every iteration in
// parallel: a thread stores `true` where it finds a NaN, never `false`, so
// the order of the threads' stores does not matter.
// CHECK-LABEL: func.func @any_nonfinite
// CHECK: gpu.launch async {{.*}} in (%{{.*}} = %c8, {{.*}} threads({{.*}}) in (%{{.*}} = %c256,
// CHECK-NOT: scf.for
// CHECK: %[[BAD:.*]] = arith.cmpf uno
// CHECK: scf.if %[[BAD]] {
// CHECK-NEXT: %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT: memref.store %[[TRUE]], %arg1[]
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
func.func @any_nonfinite(%g: memref<64x32xf32>, %flag: memref<i1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}
      ins(%g : memref<64x32xf32>) outs(%flag : memref<i1>) {
  ^bb0(%x: f32, %acc: i1):
    %bad = arith.cmpf uno, %x, %x : f32
    %r = arith.ori %acc, %bad : i1
    linalg.yield %r : i1
  }
  return
}

// -----

// Any other reduction into an i1 (here AND) stays sequential per output.
// CHECK-LABEL: func.func @all_finite
// CHECK: gpu.launch async {{.*}} in (%{{.*}} = %c1, {{.*}} threads({{.*}}) in (%{{.*}} = %c1,
// CHECK: scf.for
// CHECK: arith.andi
func.func @all_finite(%g: memref<64xf32>, %flag: memref<i1>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> ()>], iterator_types = ["reduction"]}
      ins(%g : memref<64xf32>) outs(%flag : memref<i1>) {
  ^bb0(%x: f32, %acc: i1):
    %ok = arith.cmpf ord, %x, %x : f32
    %r = arith.andi %acc, %ok : i1
    linalg.yield %r : i1
  }
  return
}

// -----

// Horizontal fusion: independent kernels (the per-tensor updates of a
// multi-tensor op) share one launch, a segment of blocks each: 4 + 1 blocks
// of 256 threads; the second segment's 100 points idle the rest of its
// block, and its block index restarts at 0.
// CHECK-LABEL: func.func @independent
// CHECK: gpu.launch async {{.*}} blocks(%[[BX:[^,]*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c5{{(_[0-9]+)?}}, {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{(_[0-9]+)?}},
// CHECK: %[[IN0:.*]] = arith.andi
// CHECK: scf.if %[[IN0]] {
// CHECK: arith.cmpi ult, %{{.*}}, %c1024{{(_[0-9]+)?}}
// CHECK: arith.mulf
// CHECK: %[[IN1:.*]] = arith.andi
// CHECK: scf.if %[[IN1]] {
// CHECK: %[[LOCAL:.*]] = arith.subi %[[BX]], %c4{{(_[0-9]+)?}}
// CHECK: arith.muli %[[LOCAL]]
// CHECK: arith.cmpi ult, %{{.*}}, %c100{{(_[0-9]+)?}}
// CHECK: arith.addf
// CHECK-NOT: gpu.launch
// CHECK: gpu.wait
func.func @independent(%a: memref<1024xf32>, %b: memref<1024xf32>,
                       %c: memref<100xf32>, %d: memref<100xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<1024xf32>) outs(%b : memref<1024xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%c : memref<100xf32>) outs(%d : memref<100xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A kernel that reads what another writes stays a launch after it; a host
// call (a cuBLASLt GEMM) between kernels is never crossed.
// CHECK-LABEL: func.func @dependent
// CHECK: %[[FIRST:.*]] = gpu.launch async
// CHECK: arith.mulf
// CHECK: %[[SECOND:.*]] = gpu.launch async [%[[FIRST]]]
// CHECK: arith.addf
// CHECK: call @gemm
// CHECK: gpu.launch async [%[[SECOND]]]
// CHECK: arith.subf
func.func private @gemm()
func.func @dependent(%a: memref<64xf32>, %b: memref<64xf32>, %c: memref<64xf32>,
                     %d: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%b : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.mulf %x, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%b : memref<64xf32>) outs(%c : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %x, %x : f32
    linalg.yield %r : f32
  }
  func.call @gemm() : () -> ()
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<64xf32>) outs(%d : memref<64xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.subf %x, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Dynamic shapes have no static launch size.
func.func @dynamic(%a: memref<?xf32>, %b: memref<?xf32>) {
  // expected-error @+1 {{amp-map-linalg-to-gpu: loop bounds must be constants (static shapes)}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32>) outs(%b : memref<?xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}
