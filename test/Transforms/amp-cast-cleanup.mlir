// RUN: amp-opt %s -split-input-file --amp-cast-cleanup | FileCheck %s

// Each rewrite of amp-cast-cleanup with a case where it must not fire.

// An exact round trip folds.
// CHECK-LABEL: func.func @roundtrip_exact
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>)
// CHECK-NEXT: %[[R:.*]] = train.relu %[[X]]
func.func @roundtrip_exact(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = train.cast %x : tensor<4xf16> to tensor<4xf32>
  %1 = train.cast %0 : tensor<4xf32> to tensor<4xf16>
  %r = train.relu %1 : tensor<4xf16>
  return %r : tensor<4xf16>
}

// -----

// f32 -> f16 -> f32 rounds: never folded.
// CHECK-LABEL: func.func @roundtrip_rounding
// CHECK: train.cast %{{.*}} : tensor<4xf32> to tensor<4xf16>
// CHECK: train.cast %{{.*}} : tensor<4xf16> to tensor<4xf32>
func.func @roundtrip_rounding(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = train.cast %0 : tensor<4xf16> to tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// bf16 -> f32 -> f16 is one rounding: one cast.
// CHECK-LABEL: func.func @compose_widening
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NEXT: %[[C:.*]] = train.cast %[[X]] : tensor<4xbf16> to tensor<4xf16>
// CHECK-NEXT: return %[[C]]
func.func @compose_widening(%x: tensor<4xbf16>) -> tensor<4xf16> {
  %0 = train.cast %x : tensor<4xbf16> to tensor<4xf32>
  %1 = train.cast %0 : tensor<4xf32> to tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// f32 -> bf16 -> f16 rounds twice: both kept.
// CHECK-LABEL: func.func @compose_rounding_kept
// CHECK: train.cast %{{.*}} : tensor<4xf32> to tensor<4xbf16>
// CHECK: train.cast %{{.*}} : tensor<4xbf16> to tensor<4xf16>
func.func @compose_rounding_kept(%x: tensor<4xf32>) -> tensor<4xf16> {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xbf16>
  %1 = train.cast %0 : tensor<4xbf16> to tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// A constant is converted at compile time, rounding to nearest even:
// 0.1 -> 0x2E66 (0.0999755859375) in f16, 1e6 overflows to inf (0x7C00).
// CHECK-LABEL: func.func @constant
// CHECK-NEXT: %[[C:.*]] = train.constant dense<[9.997550e-02, 0x7C00]> : tensor<2xf16>
// CHECK-NEXT: return %[[C]]
func.func @constant() -> tensor<2xf16> {
  %c = train.constant dense<[0.1, 1.0e6]> : tensor<2xf32>
  %0 = train.cast %c : tensor<2xf32> to tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

// A non-constant input is not folded.
// CHECK-LABEL: func.func @non_constant
// CHECK: train.cast %arg0 : tensor<2xf32> to tensor<2xf16>
func.func @non_constant(%x: tensor<2xf32>) -> tensor<2xf16> {
  %0 = train.cast %x : tensor<2xf32> to tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

// Casts of one value to one type merge into one, right after the definition.
// CHECK-LABEL: func.func @merge
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[C:.*]] = train.cast %[[X]] : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT: %[[A:.*]] = train.relu %[[C]]
// CHECK-NEXT: %[[B:.*]] = train.tanh %[[C]]
// CHECK-NOT: train.cast
func.func @merge(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xf16>) {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xf16>
  %a = train.relu %0 : tensor<4xf16>
  %1 = train.cast %x : tensor<4xf32> to tensor<4xf16>
  %b = train.tanh %1 : tensor<4xf16>
  return %a, %b : tensor<4xf16>, tensor<4xf16>
}

// -----

// Casts to different types do not merge.
// CHECK-LABEL: func.func @no_merge
// CHECK-DAG: train.cast %arg0 : tensor<4xf32> to tensor<4xf16>
// CHECK-DAG: train.cast %arg0 : tensor<4xf32> to tensor<4xbf16>
func.func @no_merge(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<4xbf16>) {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xf16>
  %1 = train.cast %x : tensor<4xf32> to tensor<4xbf16>
  return %0, %1 : tensor<4xf16>, tensor<4xbf16>
}

// -----

// Unused casts are erased.
// CHECK-LABEL: func.func @dead
// CHECK-NOT: train.cast
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.cast %x : tensor<4xf32> to tensor<4xf16>
  return %x : tensor<4xf32>
}

// -----

// After autocast a user cast is a cast like any other: of a value to its own
// type it goes, of an f16 value to f32 it stays (without its mark).
// CHECK-LABEL: func.func @user_casts
// CHECK-NOT: user
// CHECK: %[[W:.*]] = train.cast %{{.*}} : tensor<4xf16> to tensor<4xf32>
// CHECK-NOT: train.cast
// CHECK: return %{{.*}}, %[[W]]
func.func @user_casts(%x: tensor<4xf32>, %h: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = train.cast %x user {train.decision = "fp32/user cast"} : tensor<4xf32> to tensor<4xf32>
  %1 = train.cast %h user {train.decision = "fp32/user cast"} : tensor<4xf16> to tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
