// RUN: amp-opt %s --pass-pipeline='builtin.module(func.func(amp-vectorizable-math))' | FileCheck %s

// f32 exp: range reduction by k = x / ln 2 rounded (1.5 * 2^23 added and
// subtracted), ln 2 in two parts, the polynomial, 2^k as two exponent-bit
// powers, and selects for overflow, underflow and NaN: arith only (math
// ops such as fma would become libm calls later), no call left.
// CHECK-LABEL: func.func @exp_f32
// CHECK-NOT: math.
// CHECK: arith.constant 0x4B400000 : f32
// CHECK: arith.fptosi
// CHECK: arith.shrsi
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf uno
// CHECK-NOT: math.
// CHECK: return
func.func @exp_f32(%x: f32) -> f32 {
  %y = math.exp %x : f32
  return %y : f32
}

// f32 tanh: the small-argument polynomial and the exp form, chosen by a
// select on |x| < 0.625; the sign restored by a select on x < 0.
// CHECK-LABEL: func.func @tanh_f32
// CHECK-NOT: math.
// CHECK: arith.andi %{{.*}}, %{{.*}} : i32
// CHECK: arith.negf
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf oeq
// CHECK-NOT: math.
// CHECK: return
func.func @tanh_f32(%x: f32) -> f32 {
  %y = math.tanh %x : f32
  return %y : f32
}

// Vectors of f32 get the same arithmetic on vectors (splat constants, a
// vector<8xi32> exponent).
// CHECK-LABEL: func.func @vector
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK: arith.bitcast %{{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK: return
func.func @vector(%x: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>) {
  %e = math.exp %x : vector<8xf32>
  %t = math.tanh %x : vector<8xf32>
  return %e, %t : vector<8xf32>, vector<8xf32>
}

// Inside a linalg body, where the CPU lowering meets them.
// CHECK-LABEL: func.func @in_generic
// CHECK: linalg.generic
// CHECK-NOT: math.tanh
// CHECK: arith.divf
// CHECK: linalg.yield
#id = affine_map<(d0) -> (d0)>
func.func @in_generic(%a: tensor<16xf32>) -> tensor<16xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : tensor<16xf32>) outs(%a : tensor<16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    linalg.yield %t : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// f32 erf (GELU's): the small-argument polynomial, and 1 - erfc with
// exp(-z^2) (inline too) for |x| >= 1, z capped at 10; P below 2, R above;
// the sign restored, NaN kept, chosen by a select on |x| < 1.
// CHECK-LABEL: func.func @erf_f32
// CHECK-NOT: math.
// CHECK: arith.andi %{{.*}}, %{{.*}} : i32
// CHECK: arith.divf
// CHECK: arith.negf
// CHECK: arith.fptosi
// CHECK: arith.cmpf uno
// CHECK: arith.negf
// CHECK: arith.cmpf uno
// CHECK: arith.select
// CHECK-NOT: math.
// CHECK: return
func.func @erf_f32(%x: f32) -> f32 {
  %y = math.erf %x : f32
  return %y : f32
}

// Negative: f64 (batch-norm statistics), f16 and other functions keep
// their libm calls.
// CHECK-LABEL: func.func @left_alone
// CHECK: math.exp %{{.*}} : f64
// CHECK: math.tanh %{{.*}} : f16
// CHECK: math.log %{{.*}} : f32
// CHECK: math.erf %{{.*}} : f64
// CHECK-NOT: arith.shli
func.func @left_alone(%d: f64, %h: f16, %x: f32) -> (f64, f16, f32, f64) {
  %e = math.exp %d : f64
  %t = math.tanh %h : f16
  %l = math.log %x : f32
  %r = math.erf %d : f64
  return %e, %t, %l, %r : f64, f16, f32, f64
}
