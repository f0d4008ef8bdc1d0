// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-split-entry-block{min-arguments=3}))' | FileCheck %s
// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-split-entry-block))' | FileCheck %s --check-prefix=DEFAULT
// The split function still lowers, its arguments' casts in the entry block:
// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-split-entry-block{min-arguments=3}),finalize-memref-to-llvm,convert-to-llvm,reconcile-unrealized-casts)' | FileCheck %s --check-prefix=LLVM

// Three arguments: the entry block keeps only a branch; the body, its own
// branches included, moves to the next block unchanged.
// CHECK-LABEL: func.func @many
// CHECK-SAME: (%[[M:.*]]: memref<4xf32>, %[[X:.*]]: f32, %[[FLAG:.*]]: i1)
// CHECK-NEXT: cf.br ^[[BODY:bb[0-9]+]]
// CHECK-NEXT: ^[[BODY]]:
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.store %[[X]], %[[M]][%[[C0]]]
// CHECK-NEXT: cf.cond_br %[[FLAG]], ^[[THEN:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// CHECK: ^[[THEN]]:
// CHECK-NEXT: arith.addf %[[X]], %[[X]]
// CHECK: ^[[EXIT]]:
// CHECK-NEXT: return
// DEFAULT-LABEL: func.func @many
// DEFAULT-NEXT: arith.constant 0
// LLVM-LABEL: llvm.func @many
// LLVM-NEXT: llvm.mlir.poison
// LLVM: llvm.br ^bb1
// LLVM-NEXT: ^bb1:
// LLVM-NOT: unrealized_conversion_cast
// LLVM: llvm.store
func.func @many(%m: memref<4xf32>, %x: f32, %flag: i1) {
  %c0 = arith.constant 0 : index
  memref.store %x, %m[%c0] : memref<4xf32>
  cf.cond_br %flag, ^then, ^exit
^then:
  %y = arith.addf %x, %x : f32
  memref.store %y, %m[%c0] : memref<4xf32>
  cf.br ^exit
^exit:
  return
}

// Fewer arguments than min-arguments: unchanged.
// CHECK-LABEL: func.func @few
// CHECK-NEXT: arith.addf
// CHECK-NEXT: return
func.func @few(%x: f32, %y: f32) -> f32 {
  %s = arith.addf %x, %y : f32
  return %s : f32
}

// A declaration has no body to move.
// CHECK-LABEL: func.func private @declared
// CHECK-NOT: cf.br
func.func private @declared(f32, f32, f32, f32)

// An empty body of three arguments: the return moves too.
// CHECK-LABEL: func.func @returns_only
// CHECK-NEXT: cf.br ^[[B:bb[0-9]+]]
// CHECK-NEXT: ^[[B]]:
// CHECK-NEXT: return
func.func @returns_only(%a: f32, %b: f32, %c: f32) {
  return
}
