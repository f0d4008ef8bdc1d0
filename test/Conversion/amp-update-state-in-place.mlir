// RUN: amp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(amp-update-state-in-place))' | FileCheck %s --check-prefix=TENSOR
// RUN: amp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(amp-update-state-in-place),amp-one-shot-bufferize,func.func(amp-drop-in-place-results),canonicalize)' | FileCheck %s --check-prefix=BUFFER
// RUN: amp-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(amp-update-state-in-place),amp-one-shot-bufferize{copy-before-write=true},func.func(amp-drop-in-place-results))' | FileCheck %s --check-prefix=COPY

#id = affine_map<(d0) -> (d0)>

// A step-like function: result 0 is a loss, results 1 and 2 the next values
// of arguments 1 and 2 (an SGD update and a counter), result 3 a flag.
// The update's empty init becomes its argument; the counter, made by an op
// without an init, is copied into its argument where it is made; both
// arguments are marked writable. After bufferization results 1 and 2 are
// gone and the record says where they went.
// TENSOR-LABEL: func.func @step
// TENSOR-SAME: %[[W:[^:]+]]: tensor<8xf32> {bufferization.writable = true}
// TENSOR-SAME: %[[N:[^:]+]]: tensor<i32> {bufferization.writable = true}
// TENSOR: %[[U:.*]] = linalg.generic {{.*}} ins(%[[W]], %{{.*}} : tensor<8xf32>, tensor<8xf32>) outs(%[[W]] : tensor<8xf32>)
// TENSOR: %[[NN:.*]] = tensor.from_elements
// TENSOR-NEXT: %[[MN:.*]] = linalg.copy ins(%[[NN]] : tensor<i32>) outs(%[[N]] : tensor<i32>)
// TENSOR: return %{{.*}}, %[[U]], %[[MN]], %{{.*}} :
// BUFFER-LABEL: func.func @step
// BUFFER-SAME: (%{{.*}}: memref<8xf32>, %[[W:[^:]+]]: memref<8xf32>, %[[N:[^:]+]]: memref<i32>) -> (memref<f32>, memref<i1>)
// BUFFER-SAME: amp.result_arguments = array<i64: -1, 1, 2, -1>
// BUFFER: linalg.generic {{.*}} ins(%[[W]], %{{.*}} : memref<8xf32>, memref<8xf32>) outs(%[[W]] : memref<8xf32>)
// BUFFER-NOT: memref.copy %{{.*}}, %[[W]]
// BUFFER: return %{{.*}}, %{{.*}} : memref<f32>, memref<i1>
// Without bufferization's analysis every write is into a copy: nothing is
// in place and every result stays.
// COPY-LABEL: func.func @step
// COPY-SAME: -> (memref<f32>, memref<8xf32>, memref<i32>, memref<i1>)
// COPY-SAME: amp.result_arguments = array<i64: -1, -1, -1, -1>
func.func @step(%g: tensor<8xf32>, %w: tensor<8xf32>, %n: tensor<i32>) -> (tensor<f32>, tensor<8xf32>, tensor<i32>, tensor<i1>)
    attributes {amp.result_arguments = array<i64: -1, 1, 2, -1>} {
  %e = tensor.empty() : tensor<8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%w, %g : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %c1 = arith.constant 1 : i32
  %n0 = tensor.extract %n[] : tensor<i32>
  %n1 = arith.addi %n0, %c1 : i32
  %nn = tensor.from_elements %n1 : tensor<i32>
  %loss = arith.constant dense<0.5> : tensor<f32>
  %flag = arith.constant dense<false> : tensor<i1>
  return %loss, %u, %nn, %flag : tensor<f32>, tensor<8xf32>, tensor<i32>, tensor<i1>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The old value is read after the new one is computed: bufferization
// computes the new one into a buffer of its own, which stays a result.
// BUFFER-LABEL: func.func @read_after
// BUFFER-SAME: -> (memref<8xf32>, memref<8xf32>)
// BUFFER-SAME: amp.result_arguments = array<i64: -1, -1>
func.func @read_after(%w: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {amp.result_arguments = array<i64: 0, -1>} {
  %e = tensor.empty() : tensor<8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%w : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.negf %a : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %e2 = tensor.empty() : tensor<8xf32>
  %v = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%u, %w : tensor<8xf32>, tensor<8xf32>) outs(%e2 : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.addf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  return %u, %v : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// The old value is itself a result (read after the new one is written):
// the new one keeps a buffer of its own and stays a result.
// BUFFER-LABEL: func.func @old_returned
// BUFFER-SAME: -> (memref<8xf32>, memref<8xf32>)
// BUFFER-SAME: amp.result_arguments = array<i64: -1, -1>
func.func @old_returned(%w: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
    attributes {amp.result_arguments = array<i64: 0, -1>} {
  %e = tensor.empty() : tensor<8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%w : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.negf %a : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  return %u, %w : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Computed in a collapsed shape and expanded to the argument's: the init
// is the argument collapsed.
// TENSOR-LABEL: func.func @reshaped
// TENSOR-SAME: %[[W:[^:]+]]: tensor<2x4xf32> {bufferization.writable = true}
// TENSOR: %[[C:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// TENSOR: linalg.generic {{.*}} ins(%[[C]] : tensor<8xf32>) outs(%[[C]] : tensor<8xf32>)
// BUFFER-LABEL: func.func @reshaped
// BUFFER-SAME: (%[[W:[^:]+]]: memref<2x4xf32>) attributes {amp.result_arguments = array<i64: 0>}
// BUFFER-NEXT: %[[C:.*]] = memref.collapse_shape %[[W]]
// BUFFER-NEXT: linalg.generic {{.*}} ins(%[[C]] : memref<8xf32>) outs(%[[C]] : memref<8xf32>)
// BUFFER-NOT: memref.copy
// BUFFER: return
func.func @reshaped(%w: tensor<2x4xf32>) -> tensor<2x4xf32>
    attributes {amp.result_arguments = array<i64: 0>} {
  %flat = tensor.collapse_shape %w [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  %e = tensor.empty() : tensor<8xf32>
  %u = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%flat : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.mulf %a, %a : f32
    linalg.yield %d : f32
  } -> tensor<8xf32>
  %r = tensor.expand_shape %u [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// A function without the record is left alone.
// TENSOR-LABEL: func.func @no_record
// TENSOR-NOT: bufferization
// BUFFER-LABEL: func.func @no_record
// BUFFER-SAME: -> memref<4xf32>
func.func @no_record(%w: tensor<4xf32>) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// A value made by an op without an init is copied into its argument after
// the old value's last read, not before it (where the copy would have to
// go out of place): the counter stays in place.
// TENSOR-LABEL: func.func @copy_after_last_read
// TENSOR-SAME: %[[N:[^:]+]]: tensor<i32> {bufferization.writable = true}
// TENSOR: %[[NN:.*]] = tensor.from_elements
// TENSOR: %[[OLD:.*]] = tensor.extract %[[N]][]
// TENSOR-NEXT: %[[C:.*]] = linalg.copy ins(%[[NN]] : tensor<i32>) outs(%[[N]] : tensor<i32>)
// TENSOR: return %[[C]], %{{.*}}
// BUFFER-LABEL: func.func @copy_after_last_read
// BUFFER-SAME: -> memref<i32>
// BUFFER-SAME: amp.result_arguments = array<i64: 0, -1>
func.func @copy_after_last_read(%n: tensor<i32>) -> (tensor<i32>, tensor<i32>)
    attributes {amp.result_arguments = array<i64: 0, -1>} {
  %c1 = arith.constant 1 : i32
  %n0 = tensor.extract %n[] : tensor<i32>
  %n1 = arith.addi %n0, %c1 : i32
  %nn = tensor.from_elements %n1 : tensor<i32>
  %old = tensor.extract %n[] : tensor<i32>
  %twice = arith.addi %old, %old : i32
  %t = tensor.from_elements %twice : tensor<i32>
  return %nn, %t : tensor<i32>, tensor<i32>
}
