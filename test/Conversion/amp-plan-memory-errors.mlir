// RUN: amp-opt %s --pass-pipeline='builtin.module(amp-plan-memory{alignment=48})' -verify-diagnostics

// expected-error@+1 {{amp-plan-memory: alignment 48 is not a power of two}}
module {
  func.func @f() {
    %a = memref.alloc() : memref<4xf32>
    memref.dealloc %a : memref<4xf32>
    return
  }
}
