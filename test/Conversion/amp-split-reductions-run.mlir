// The split reduction computes the same sums, more accurately: a sum over
// (n, h, w) per channel of x = n*c + h + w on a 128x4x28x28 tensor, run on
// the CPU. Exact sums (f64): 2709504, 9081856, 15454208, 21826560. The
// chunked sums print as the exact values (to 6 digits); one sequential f32
// sum of 100 352 terms drifts past 2^24 (2.18204e+07, 3e-4 low).
// RUN: amp-opt %s --amp-lower-cpu="blas=false split-reductions=true parallel=false" | mlir-runner -e main --entry-point-result=void --shared-libs=%llvm_lib_dir/libmlir_runner_utils%shlibext,%llvm_lib_dir/libmlir_c_runner_utils%shlibext | FileCheck %s --check-prefix=SPLIT
// RUN: amp-opt %s --amp-lower-cpu="blas=false parallel=false" | mlir-runner -e main --entry-point-result=void --shared-libs=%llvm_lib_dir/libmlir_runner_utils%shlibext,%llvm_lib_dir/libmlir_c_runner_utils%shlibext | FileCheck %s --check-prefix=SEQUENTIAL
// SPLIT: [2.7095e+06,  9.08186e+06,  1.54542e+07,  2.18266e+07]
// SEQUENTIAL: [2.7095e+06,  9.08186e+06,  1.54542e+07,  2.18204e+07]
func.func @main() {
  %e = tensor.empty() : tensor<128x4x28x28xf32>
  %x = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<128x4x28x28xf32>) {
  ^bb0(%o: f32):
    %n = linalg.index 0 : index
    %c = linalg.index 1 : index
    %h = linalg.index 2 : index
    %w = linalg.index 3 : index
    %a = arith.muli %n, %c : index
    %b = arith.addi %a, %h : index
    %d = arith.addi %b, %w : index
    %i = arith.index_cast %d : index to i32
    %f = arith.sitofp %i : i32 to f32
    linalg.yield %f : f32
  } -> tensor<128x4x28x28xf32>
  %z = arith.constant 0.0 : f32
  %ie = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%z : f32) outs(%ie : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (c)>], iterator_types = ["reduction", "parallel", "reduction", "reduction"]}
      ins(%x : tensor<128x4x28x28xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %u = tensor.cast %r : tensor<4xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
func.func private @printMemrefF32(tensor<*xf32>)
