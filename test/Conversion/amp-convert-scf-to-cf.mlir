// RUN: amp-opt %s --amp-convert-scf-to-cf | FileCheck %s
// The same CFG as upstream's convert-scf-to-cf, block for block:
// RUN: amp-opt %s --amp-convert-scf-to-cf -o %t.ours.mlir
// RUN: amp-opt %s --convert-scf-to-cf -o %t.upstream.mlir
// RUN: diff %t.ours.mlir %t.upstream.mlir

// Three loops in a row (the middle one nested, one inside an scf.if): every
// SCF op becomes blocks and branches, in program order, and the ops between
// the loops stay between them.
// CHECK-LABEL: func.func @loops
// CHECK-NOT: scf.
// CHECK: cf.cond_br
// CHECK: memref.store %{{.*}}, %arg0[%{{.*}}] {first}
// CHECK: arith.addf {{.*}} {between}
// CHECK: memref.store %{{.*}}, %arg0[%{{.*}}] {second}
// CHECK: cf.cond_br %arg1
// CHECK: memref.store %{{.*}}, %arg0[%{{.*}}] {third}
// CHECK: arith.mulf {{.*}} {after}
// CHECK: return
func.func @loops(%m: memref<8xf32>, %flag: i1, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %m[%i] {first} : memref<8xf32>
  }
  %y = arith.addf %x, %x {between} : f32
  scf.for %i = %c0 to %c8 step %c1 {
    scf.for %j = %c0 to %c1 step %c1 {
      memref.store %y, %m[%i] {second} : memref<8xf32>
    }
  }
  scf.if %flag {
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %x, %m[%i] {third} : memref<8xf32>
    }
  }
  %z = arith.mulf %y, %x {after} : f32
  return %z : f32
}
