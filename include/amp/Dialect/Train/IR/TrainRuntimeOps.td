//===- TrainRuntimeOps.td - Backend runtime calls ----------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Not part of a training graph: the op the backend lowerings use to hand a
// GEMM or convolution to a runtime library while still on tensors, so that
// one-shot bufferization sees exactly which tensors the call reads.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINRUNTIMEOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINRUNTIMEOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// What a runtime call reads and fills: float tensors, the byte tensors of
/// cuBLASLt's ReLU bit masks, i32 ids (the embedding gradient's) and f64
/// sums (SyncBatchNorm's statistics on the CPU).
def Train_RuntimeTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, I8, I32]>;

def Train_RuntimeCallOp : Train_Op<"runtime_call", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a runtime library call on whole tensors (lowering only)";
  let description = [{
    Produced by `amp-convert-train-to-cpu-runtime` for GEMMs and convolutions
    and consumed by one-shot bufferization, which turns it into

    ```mlir
    func.call @callee(<address of each input>, <address of a new f32 buffer>,
                      <each param as i64>)
    ```

    The op is `Pure`, also when the callee is a collective
    (`amp_cpu_all_reduce`): every rank of a data-parallel job compiles the
    same step, so CSE merging two identical calls, or DCE dropping an unused
    one, happens on every rank alike and the ranks' collectives still pair
    up.

    The inputs are read and never written; each result is a new tensor the
    callee fills (f32 for the CPU runtime's accumulators, the op's type for
    cuBLASLt; a GEMM with cuBLASLt's bias-gradient epilogue fills two, one
    with a ReLU keeping its bit mask fills the output and an `i8` tensor of
    the mask's bytes), its address passed after the inputs'. Addresses are
    `index` values of dense row-major buffers (bufferization copies a strided
    input first). `@callee` must be a function declared in the module with
    exactly that signature. A pure op on tensors: identical calls on
    identical inputs may be merged.

    ```mlir
    %c = train.runtime_call @amp_cpu_gemm(%a, %b) [1, 1, 1, 128, 256, 784, 0, 0]
        : (tensor<128x784xf16>, tensor<784x256xf16>) -> tensor<128x256xf32>
    %dw, %db = train.runtime_call @amp_cuda_gemm_bgrad(%x, %dy) [1, 1, 1, 784, 256, 128, 1, 0]
        : (tensor<128x784xf16>, tensor<128x256xf16>) -> (tensor<784x256xf16>, tensor<256xf16>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Variadic<Train_RuntimeTensor>:$inputs,
                       DenseI64ArrayAttr:$params);
  let results = (outs Variadic<Train_RuntimeTensor>:$results);
  let assemblyFormat = [{
    $callee `(` $inputs `)` $params attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINRUNTIMEOPS_TD
