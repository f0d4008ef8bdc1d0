// RUN: amp-opt %s -split-input-file --amp-outline-parallel-loops | FileCheck %s --enable-var-scope

// The loop's body becomes @<function>_task0 over a range of tasks; the
// constant it uses is cloned, the buffers are passed and, reaching distinct
// memory, their pointers are noalias: amp.noalias_pointers lists their
// positions in the LLVM signature (first, last: 0, 1; each memref<64xf32>,
// static, passes as its aligned pointer alone: llvm.bareptr, on the task and
// its launch alike). The loop becomes a call of the launch declaration with
// the task count.
// CHECK-LABEL: func.func @step(
// CHECK-SAME: %[[X:.*]]: memref<64xf32>, %[[Y:.*]]: memref<64xf32>)
// CHECK: %[[N:.*]] = arith.constant 4 : index
// CHECK: call @step_task0_launch(%[[N]], %[[X]], %[[Y]]) : (index, memref<64xf32>, memref<64xf32>) -> ()
// CHECK-NOT: scf.forall
// CHECK: func.func private @step_task0(%[[FIRST:.*]]: index, %[[LAST:.*]]: index, %[[A:.*]]: memref<64xf32>, %[[B:.*]]: memref<64xf32>) attributes {amp.noalias_pointers = array<i64: 2, 3>, llvm.bareptr}
// CHECK: %[[TWO:.*]] = arith.constant 2.0
// CHECK: scf.for %[[T:.*]] = %[[FIRST]] to %[[LAST]] step %{{.*}} {
// CHECK: memref.subview %[[A]]
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// CHECK: func.func private @step_task0_launch(index, memref<64xf32>, memref<64xf32>) attributes {amp.parallel_task = @step_task0, llvm.bareptr}
#id = affine_map<(d0) -> (d0)>
#tile = affine_map<(d0) -> (d0 * 16)>
func.func @step(%x: memref<64xf32>, %y: memref<64xf32>) {
  %two = arith.constant 2.0 : f32
  scf.forall (%t) in (4) {
    %o = affine.apply #tile(%t)
    %a = memref.subview %x[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    %b = memref.subview %y[%o] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : memref<16xf32, strided<[1], offset: ?>>) outs(%b : memref<16xf32, strided<[1], offset: ?>>) {
    ^bb0(%in: f32, %out: f32):
      %0 = arith.mulf %in, %two : f32
      linalg.yield %0 : f32
    }
  }
  return
}

// -----

// Two views of one allocation reach the same memory: neither is noalias.
// A private function's arguments may be one buffer twice: not noalias. A
// buffer from an unknown op: nothing is marked, not even the allocation
// passed beside it.
// CHECK-LABEL: func.func @views(
// CHECK: call @views_task0_launch
// CHECK: func.func private @views_task0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<32xf32, strided<[1]>>, %{{.*}}: memref<32xf32, strided<[1], offset: 32>>) attributes {llvm.bareptr} {
// CHECK-LABEL: func.func private @helper(
// CHECK: func.func private @helper_task0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) attributes {llvm.bareptr} {
// @unknown's loop is @helper's, unmarked too: it calls @helper's task
// (equal functions are outlined once). @globals' is the same loop with
// noalias pointers: a task of its own.
// CHECK-LABEL: func.func @unknown(
// CHECK: call @helper_task0_launch(%{{.*}}, %{{.*}}, %{{.*}}) : (index, memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NOT: @unknown_task0
// CHECK-LABEL: func.func @globals(
// CHECK: func.func private @globals_task0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) attributes {amp.noalias_pointers = array<i64: 2, 3>, llvm.bareptr}
// A public function the module calls may get one buffer twice (@caller
// passes %b as both): not an entry point, nothing is marked. A body that
// reaches a global itself: nothing is marked either (the passed buffer
// could be that global).
// CHECK-LABEL: func.func @called(
// CHECK: call @helper_task0_launch(%{{.*}}, %{{.*}}, %{{.*}}) : (index, memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NOT: @called_task0
// CHECK-LABEL: func.func @inner_global(
// CHECK: func.func private @inner_global_task0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: memref<8xf32>) attributes {llvm.bareptr} {
#v = affine_map<(d0) -> (d0)>
func.func @views() {
  %m = memref.alloc() : memref<64xf32>
  %lo = memref.subview %m[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
  %hi = memref.subview %m[32] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1], offset: 32>>
  scf.forall (%t) in (2) {
    %v = memref.load %lo[%t] : memref<32xf32, strided<[1]>>
    memref.store %v, %hi[%t] : memref<32xf32, strided<[1], offset: 32>>
  }
  memref.dealloc %m : memref<64xf32>
  return
}
func.func private @helper(%a: memref<8xf32>, %b: memref<8xf32>) {
  scf.forall (%t) in (8) {
    %v = memref.load %a[%t] : memref<8xf32>
    memref.store %v, %b[%t] : memref<8xf32>
  }
  return
}
func.func private @make() -> memref<8xf32>
func.func @unknown() {
  %a = call @make() : () -> memref<8xf32>
  %b = memref.alloc() : memref<8xf32>
  scf.forall (%t) in (8) {
    %v = memref.load %a[%t] : memref<8xf32>
    memref.store %v, %b[%t] : memref<8xf32>
  }
  memref.dealloc %b : memref<8xf32>
  return
}
memref.global "private" constant @table : memref<8xf32> = dense<1.0>
func.func @globals(%out: memref<8xf32>) {
  %a = memref.get_global @table : memref<8xf32>
  scf.forall (%t) in (8) {
    %v = memref.load %a[%t] : memref<8xf32>
    memref.store %v, %out[%t] : memref<8xf32>
  }
  return
}
func.func @called(%a: memref<8xf32>, %b: memref<8xf32>) {
  scf.forall (%t) in (8) {
    %v = memref.load %a[%t] : memref<8xf32>
    memref.store %v, %b[%t] : memref<8xf32>
  }
  return
}
func.func @caller(%b: memref<8xf32>) {
  call @called(%b, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  return
}
memref.global "private" @scratch : memref<8xf32> = dense<0.0>
func.func @inner_global(%out: memref<8xf32>) {
  scf.forall (%t) in (8) {
    %a = memref.get_global @scratch : memref<8xf32>
    %v = memref.load %a[%t] : memref<8xf32>
    memref.store %v, %out[%t] : memref<8xf32>
  }
  return
}

// -----

// Loops that are not from amp-parallelize-loops stay: two induction
// variables, a bound that is not a constant.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-2: scf.forall
// CHECK-NOT: call
func.func @kept(%x: memref<8x8xf32>, %n: index) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i, %j) in (8, 8) {
    memref.store %zero, %x[%i, %j] : memref<8x8xf32>
  }
  scf.forall (%i) = (2) to (%n) step (1) {
    memref.store %zero, %x[%i, %i] : memref<8x8xf32>
  }
  return
}

// -----

// Bounds other than 0 and 1: task t is iteration 2 + 3t, (8 - 2) / 3
// rounded up = 2 tasks.
// CHECK-LABEL: func.func @strided
// CHECK: %[[N:.*]] = arith.constant 2 : index
// CHECK: call @strided_task0_launch(%[[N]], %{{.*}})
// CHECK: func.func private @strided_task0(
// CHECK: scf.for %[[T:.*]] = 
// CHECK: %[[I:.*]] = affine.apply #{{.*}}(%[[T]])
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %[[I]]]
func.func @strided(%x: memref<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  scf.forall (%i) = (2) to (8) step (3) {
    memref.store %zero, %x[%i, %i] : memref<8x8xf32>
  }
  return
}
