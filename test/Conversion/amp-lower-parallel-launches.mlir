// RUN: amp-opt %s -split-input-file -verify-diagnostics --amp-lower-parallel-launches | FileCheck %s --enable-var-scope

// A launch's arguments go into a stack struct (allocated in the caller's
// entry block); amp_cpu_parallel_for gets the runner, the struct and the
// task count; the runner loads them and calls the task, whose pointers
// listed in amp.noalias_pointers are llvm.noalias now. The declaration is
// gone.
// CHECK-LABEL: llvm.func @step(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr, %[[Q:.*]]: !llvm.ptr, %[[K:.*]]: i64)
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, i64)>
// CHECK: llvm.br
// CHECK: %[[F0:.*]] = llvm.getelementptr %[[SLOT]][0, 0]
// CHECK: llvm.store %[[P]], %[[F0]]
// CHECK: %[[F2:.*]] = llvm.getelementptr %[[SLOT]][0, 2]
// CHECK: llvm.store %[[K]], %[[F2]]
// CHECK: %[[RUNNER:.*]] = llvm.mlir.addressof @step_task0_run
// CHECK: llvm.call @amp_cpu_parallel_for(%[[RUNNER]], %[[SLOT]], %{{.*}})
// CHECK-NOT: step_task0_launch
// CHECK: llvm.func @step_task0(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: !llvm.ptr, %{{.*}}: i64) {
// CHECK: llvm.func internal @step_task0_run(%[[CTX:.*]]: !llvm.ptr, %[[FIRST:.*]]: i64, %[[LAST:.*]]: i64)
// CHECK: %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[B:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[C:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: llvm.call @step_task0(%[[FIRST]], %[[LAST]], %[[A]], %[[B]], %[[C]])
// CHECK: llvm.func @amp_cpu_parallel_for(!llvm.ptr, !llvm.ptr, i64)
llvm.func @step(%p: !llvm.ptr, %q: !llvm.ptr, %k: i64) {
  llvm.br ^body
^body:
  %n = llvm.mlir.constant(4 : i64) : i64
  llvm.call @step_task0_launch(%n, %p, %q, %k) : (i64, !llvm.ptr, !llvm.ptr, i64) -> ()
  llvm.return
}
llvm.func @step_task0(%first: i64, %last: i64, %a: !llvm.ptr, %b: !llvm.ptr, %c: i64) attributes {amp.noalias_pointers = array<i64: 2>} {
  llvm.return
}
llvm.func @step_task0_launch(i64, !llvm.ptr, !llvm.ptr, i64) attributes {amp.parallel_task = @step_task0}

// -----

// expected-error @+1 {{amp-lower-parallel-launches: no task function @missing in the LLVM dialect}}
llvm.func @orphan_launch(i64) attributes {amp.parallel_task = @missing}

// -----

// expected-error @+1 {{amp-lower-parallel-launches: amp.noalias_pointers names parameter 2, which is not a pointer}}
llvm.func @bad_task(%first: i64, %last: i64, %c: i64) attributes {amp.noalias_pointers = array<i64: 2>} {
  llvm.return
}
llvm.func @bad_task_launch(i64, i64) attributes {amp.parallel_task = @bad_task}
