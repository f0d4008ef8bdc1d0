// RUN: amp-opt %s --split-input-file --amp-convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --enable-var-scope
// The same module as upstream's convert-to-llvm makes of it:
// RUN: amp-opt %s --split-input-file --amp-convert-to-llvm --reconcile-unrealized-casts > %t.amp
// RUN: amp-opt %s --split-input-file --convert-to-llvm='allow-pattern-rollback=false' --reconcile-unrealized-casts > %t.upstream
// RUN: diff %t.amp %t.upstream

// Calls (the callee found in the symbol table), branches, arith, index, ub
// and math all reach the LLVM dialect.
// CHECK-LABEL: llvm.func @callee(i64, f32) -> f32
func.func private @callee(index, f32) -> f32

// CHECK-LABEL: llvm.func @caller
// CHECK-SAME: (%[[N:.*]]: i64, %[[X:.*]]: f32, %[[FLAG:.*]]: i1) -> f32
// CHECK: %[[R:.*]] = llvm.call @callee(%[[N]], %[[X]]) : (i64, f32) -> f32
// CHECK: llvm.cond_br %[[FLAG]], ^[[THEN:bb[0-9]+]](%[[R]] : f32), ^[[ELSE:bb[0-9]+]]
// CHECK: ^[[ELSE]]:
// CHECK: llvm.intr.exp
// CHECK: llvm.mlir.poison : f32
// CHECK: llvm.br ^[[THEN]]
// CHECK: ^[[THEN]](%[[Y:.*]]: f32):
// CHECK-NEXT: llvm.return %[[Y]] : f32
// CHECK-NOT: unrealized_conversion_cast
func.func @caller(%n: index, %x: f32, %flag: i1) -> f32 {
  %r = func.call @callee(%n, %x) : (index, f32) -> f32
  cf.cond_br %flag, ^exit(%r : f32), ^else
^else:
  %c1 = index.constant 1
  %m = index.add %n, %c1
  %e = math.exp %x : f32
  %p = ub.poison : f32
  %s = arith.addf %e, %p : f32
  cf.br ^exit(%s : f32)
^exit(%y: f32):
  return %y : f32
}

// -----

// A bare-pointer callee keeps its convention at the call (the symbol table
// finds the attribute on the callee).
// CHECK-LABEL: llvm.func @bare(!llvm.ptr)
func.func private @bare(memref<4xf32>) attributes {llvm.bareptr}

// CHECK-LABEL: llvm.func @calls_bare
// CHECK: llvm.call @bare(%{{.*}}) : (!llvm.ptr) -> ()
func.func @calls_bare(%m: memref<4xf32>) {
  func.call @bare(%m) : (memref<4xf32>) -> ()
  return
}

// -----

// What the pass does not convert stays for later passes: a function whose
// signature has no LLVM type (a tensor) is left as it is.
// CHECK-LABEL: func.func @tensor_arg
// CHECK-SAME: tensor<4xf32>
// CHECK-NEXT: return
func.func @tensor_arg(%t: tensor<4xf32>) {
  return
}
