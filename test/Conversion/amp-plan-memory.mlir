// RUN: amp-opt %s --pass-pipeline='builtin.module(amp-plan-memory)' -split-input-file | FileCheck %s
// RUN: amp-opt %s --pass-pipeline='builtin.module(amp-plan-memory{workspace-function=ws})' -split-input-file | FileCheck %s --check-prefix=WS

// Buffers live at once get disjoint ranges; one freed before another is
// allocated shares its bytes. %a (4 KiB) and %b (1 KiB) overlap in time, %c
// (4 KiB) comes after %a's free: it reuses offset 0. The arena is 5 KiB, the
// most live at once.
// CHECK-LABEL: func.func @reuse
// CHECK-SAME: amp.memory_plan = {arena_bytes = 5120 : i64, at_peak = {loops = 5120 : i64}, buffers = 3 : i64, live_peak_bytes = 5120 : i64, unplanned_buffers = 0 : i64, unplanned_bytes = 0 : i64, workspaces = 0 : i64}
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<5120xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] {amp.planned_view} : memref<5120xi8> to memref<1024xf32>
// CHECK: %[[C4096:.*]] = arith.constant 4096 : index
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[C4096]]][] {amp.planned_view} : memref<5120xi8> to memref<256xf32>
// CHECK: linalg.fill {{.*}} outs(%[[A]]
// CHECK: linalg.fill {{.*}} outs(%[[B]]
// CHECK: %[[C0B:.*]] = arith.constant 0 : index
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%[[C0B]]][] {amp.planned_view} : memref<5120xi8> to memref<1024xf32>
// CHECK: linalg.fill {{.*}} outs(%[[C]]
// CHECK-NOT: memref.dealloc %[[A]]
// CHECK: memref.dealloc %[[ARENA]]
// CHECK-NEXT: return
func.func @reuse(%out: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<1024xf32>
  %b = memref.alloc() : memref<256xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<1024xf32>)
  linalg.fill ins(%zero : f32) outs(%b : memref<256xf32>)
  memref.dealloc %a : memref<1024xf32>
  %c = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<1024xf32>)
  memref.dealloc %b : memref<256xf32>
  memref.dealloc %c : memref<1024xf32>
  return
}

// -----

// Sizes are rounded to the alignment (i1 is a byte); a buffer with an
// alignment above the arena's, one of a dynamic size, one allocated in a
// loop and one never freed in the block stay with the heap.
// CHECK-LABEL: func.func @left_to_the_heap
// CHECK-SAME: buffers = 1 : i64
// CHECK-SAME: unplanned_buffers = 4 : i64, unplanned_bytes = 4144 : i64
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK: memref.view {{.*}} to memref<3xi1>
// CHECK: memref.alloc() {alignment = 128 : i64} : memref<4xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: scf.for
// CHECK:   memref.alloc() : memref<8xf32>
// CHECK: %[[KEPT:.*]] = memref.alloc() : memref<1024xf32>
// CHECK: memref.store {{.*}}, %[[KEPT]]
func.func @left_to_the_heap(%n: index, %keep: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<3xi1>
  %aligned = memref.alloc() {alignment = 128 : i64} : memref<4xf32>
  %dynamic = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %c2 step %c1 {
    %inner = memref.alloc() : memref<8xf32>
    memref.store %zero, %inner[%c0] : memref<8xf32>
    memref.dealloc %inner : memref<8xf32>
  }
  %kept = memref.alloc() : memref<1024xf32>
  memref.store %zero, %kept[%c0] : memref<1024xf32>
  memref.copy %kept, %keep : memref<1024xf32> to memref<1024xf32>
  memref.dealloc %t : memref<3xi1>
  memref.dealloc %aligned : memref<4xf32>
  memref.dealloc %dynamic : memref<?xf32>
  return
}

// -----

// Nothing to plan: the function is left as it is, with no record.
// CHECK-LABEL: func.func @nothing
// CHECK-NOT: amp.memory_plan
// CHECK-NOT: memref.alloc
func.func @nothing(%a: memref<4xf32>) {
  return
}

// -----

// A function of several blocks is not planned.
// CHECK-LABEL: func.func @branches
// CHECK-NOT: amp.memory_plan
// CHECK: memref.alloc() : memref<4xf32>
func.func @branches(%c: i1) {
  %a = memref.alloc() : memref<4xf32>
  memref.dealloc %a : memref<4xf32>
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return
^bb2:
  return
}

// -----

// A runtime call gets a workspace: room for an f32 copy of its f16 operand
// (256 x 4 bytes) and the free range after it at the call (to the arena's
// end: %out, as large and allocated first, took offset 0), lent before the
// call and taken back after it. The breakdown names the call's family.
// WS: func.func private @ws(index, i64)
// WS-LABEL: func.func @workspace
// WS-SAME: at_peak = {gemm = 1024 : i64, workspace = 1024 : i64}
// WS-SAME: workspaces = 1 : i64
// WS: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2048xi8>
// WS: %[[OUT:.*]] = memref.view %[[ARENA]][%{{.*}}][] {amp.planned_view} : memref<2048xi8> to memref<256xf32>
// WS: %[[IN:.*]] = memref.extract_aligned_pointer_as_index %arg0
// WS: %[[OUTP:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// WS: %[[C1024:.*]] = arith.constant 1024 : index
// WS: %[[W:.*]] = memref.view %[[ARENA]][%[[C1024]]][] : memref<2048xi8> to memref<1024xi8>
// WS: %[[WP:.*]] = memref.extract_aligned_pointer_as_index %[[W]]
// WS: %[[WB:.*]] = arith.constant 1024 : i64
// WS: call @ws(%[[WP]], %[[WB]]) : (index, i64) -> ()
// WS-NEXT: call @amp_cpu_gemm(%[[IN]], %[[OUTP]])
// WS-NEXT: %[[NONE:.*]] = arith.constant 0 : index
// WS-NEXT: %[[ZERO:.*]] = arith.constant 0 : i64
// WS-NEXT: call @ws(%[[NONE]], %[[ZERO]]) : (index, i64) -> ()
// The same module without the option: no workspace, no declaration.
// CHECK-LABEL: func.func @workspace
// CHECK-SAME: workspaces = 0 : i64
// CHECK-NOT: call @ws
func.func private @amp_cpu_gemm(index, index)
func.func @workspace(%a: memref<256xf16>, %r: memref<256xf32>) {
  %out = memref.alloc() : memref<256xf32>
  %pa = memref.extract_aligned_pointer_as_index %a : memref<256xf16> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<256xf32> -> index
  func.call @amp_cpu_gemm(%pa, %po) : (index, index) -> ()
  memref.copy %out, %r : memref<256xf32> to memref<256xf32>
  memref.dealloc %out : memref<256xf32>
  return
}

// -----

// A call whose lowering recorded its scratch (amp.workspace_bytes: a
// convolution's, which knows the runtime's paths) gets that, rounded up to
// the alignment, in place of the f32 room for its f16 operand (1024 bytes):
// 100 -> 128 bytes, after %out's 1024 at offset 0.
// WS-LABEL: func.func @recorded
// WS-SAME: at_peak = {convolution = 1024 : i64, workspace = 128 : i64}
// WS: memref.alloc() {alignment = 64 : i64} : memref<1152xi8>
// WS: %[[W:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<1152xi8> to memref<128xi8>
// WS: call @ws(%{{.*}}, %{{.*}}) : (index, i64) -> ()
// WS-NEXT: call @amp_cpu_conv2d(
func.func private @amp_cpu_conv2d(index, index)
func.func @recorded(%a: memref<256xf16>, %r: memref<256xf32>) {
  %out = memref.alloc() : memref<256xf32>
  %pa = memref.extract_aligned_pointer_as_index %a : memref<256xf16> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<256xf32> -> index
  func.call @amp_cpu_conv2d(%pa, %po) {amp.workspace_bytes = 100 : i64} : (index, index) -> ()
  memref.copy %out, %r : memref<256xf32> to memref<256xf32>
  memref.dealloc %out : memref<256xf32>
  return
}

// -----

// A runtime call whose scratch is not bounded in advance (a lowering's
// amp.workspace_bytes = -1) leaves its function to the heap.
// WS-LABEL: func.func @unbounded
// WS-NOT: amp.memory_plan
// WS: memref.alloc() : memref<256xf32>
// WS-NOT: call @ws
func.func private @amp_cpu_conv2d(index)
func.func @unbounded(%r: memref<256xf32>) {
  %out = memref.alloc() : memref<256xf32>
  %po = memref.extract_aligned_pointer_as_index %out : memref<256xf32> -> index
  func.call @amp_cpu_conv2d(%po) {amp.workspace_bytes = -1 : i64} : (index) -> ()
  memref.copy %out, %r : memref<256xf32> to memref<256xf32>
  memref.dealloc %out : memref<256xf32>
  return
}
