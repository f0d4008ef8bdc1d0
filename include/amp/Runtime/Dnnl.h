//===- Dnnl.h - Convolutions through oneDNN ---------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's convolutions (forward, input gradient, filter gradient)
// run through oneDNN (Debian's libdnnl, the library PyTorch's CPU
// convolutions use) where it is faster than im2col + OpenBLAS, and with
// 16-bit operands where the CPU multiplies them natively: bf16 operands on a
// CPU with AVX-512 BF16 (or AMX-BF16) go to oneDNN as bf16, with f32
// accumulation and an f32 result - the arithmetic of the im2col path, which
// widens them exactly, in another order of summation. oneDNN picks its
// blocked layouts; the runtime reorders the dense NCHW / OIHW buffers of a
// step into them and back, in its counted scratch.
//
// Which path a shape takes (chooseConvPath) is a fixed rule measured on the
// benchmark models (docs/benchmarks.md, "Convolutions"), not a timing at run
// time: a step sums in the same order on every run at a thread count.
// AMP_CPU_CONV=im2col or =onednn overrides it for the whole process. GEMMs
// with bf16 operands go to oneDNN's bf16 matmul on such CPUs
// (AMP_CPU_GEMM=openblas keeps them on OpenBLAS, widened).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_DNNL_H
#define AMP_RUNTIME_DNNL_H

#include "amp/ABI/ConvWorkspace.h"
#include "amp/Runtime/CpuRuntime.h"

#include <cstdint>
#include <optional>
#include <string>

namespace amp {

/// Where a GEMM with bf16 operands runs on a CPU that multiplies bf16
/// natively: oneDNN's bf16 matmul, or OpenBLAS on widened copies.
enum class GemmPath { OpenBlas, OneDnn };

/// The path a convolution pass of this geometry takes, with bf16 operands
/// multiplied natively or f32 ones: AMP_CPU_CONV's choice when set
/// ("im2col", "onednn"), else the measured rule.
ConvPath chooseConvPath(ConvPass pass, const ConvGeometry &g, bool bf16);

/// Overrides chooseConvPath for the whole process, AMP_CPU_CONV included
/// (none: the rule). For tests and benchmarks.
void setConvPathOverride(std::optional<ConvPath> path);

/// Runs one pass through oneDNN. The operands, dense and row-major, in the
/// entry points' order: Forward (x, filter) -> y, BackwardData (dy, filter)
/// -> dx, BackwardWeights (dy, x) -> dfilter, of element types `typeA` and
/// `typeB`. Two bf16 operands go to oneDNN as they are where the CPU
/// multiplies bf16 natively (dnnlNativeBf16); any other 16-bit operand is
/// widened exactly to f32, and where oneDNN wants another layout the
/// widened copy is freed as soon as it is reordered, before the
/// convolution runs. The result is f32 and overwritten. Returns false,
/// having touched nothing, where oneDNN has no kernel for the shape or the
/// types (the caller then takes the im2col path); the answer is cached per
/// shape.
bool runDnnlConvolution(ConvPass pass, const ConvGeometry &g, const void *a,
                        RuntimeDType typeA, const void *b, RuntimeDType typeB,
                        float *out);

/// oneDNN, unless AMP_CPU_GEMM=openblas or an override says otherwise (f32
/// GEMMs are OpenBLAS's either way).
GemmPath chooseGemmPath();

/// Whether two bf16 operands are multiplied as they are by oneDNN's matmul
/// (the CPU multiplies bf16 natively and chooseGemmPath says oneDNN) rather
/// than widened for OpenBLAS.
bool bf16GemmsOnOneDnn();

/// Overrides chooseGemmPath for the whole process (none: oneDNN). For
/// tests and benchmarks.
void setGemmPathOverride(std::optional<GemmPath> path);

/// c[i] (+)= op(a[i]) x op(b[i]) for `batch` row-major matrices through
/// oneDNN's matmul: op(a) m x k, op(b) k x n (each stored transposed when
/// asked), c m x n f32, added onto (`accumulate`) or overwritten. `bf16`:
/// a and b are bf16 (else f32). False, having touched nothing, where oneDNN
/// has no kernel.
bool runDnnlMatmul(const void *a, const void *b, float *c, bool bf16,
                   bool accumulate, int64_t batch, int64_t m, int64_t n,
                   int64_t k, bool transposeA, bool transposeB);

/// c[i] = op(a[i]) x op(b[i]) (+ bias, n f32 values broadcast over the
/// rows, where not null) of bf16 a and b, the f32 sums rounded once to the
/// bf16 c (to nearest even), through oneDNN's matmul: no f32 result is
/// written. False, having touched nothing, where oneDNN has no kernel.
bool runDnnlMatmulBf16Out(const void *a, const void *b, const float *bias,
                          void *c, int64_t batch, int64_t m, int64_t n,
                          int64_t k, bool transposeA, bool transposeB);

/// Whether bf16 operands go to oneDNN as they are: the CPU has AVX-512
/// BF16 or AMX-BF16.
bool dnnlNativeBf16();

/// "oneDNN 2.6.3 (avx512_core_amx)": for logs and benchmark tables.
std::string describeDnnl();

} // namespace amp

#endif // AMP_RUNTIME_DNNL_H
