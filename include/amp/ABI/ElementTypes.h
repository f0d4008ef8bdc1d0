//===- ElementTypes.h - The runtime's element-type codes --------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The code of an operand's element type that a compiled step passes to the
// runtime's entry points (an i64 parameter of amp_cpu_gemm, amp_cpu_conv2d,
// amp_cpu_all_reduce, amp_cuda_gemm, ...). Header-only and free of MLIR and
// of the runtime: the compiler (lib/Conversion) writes these codes, the
// runtimes (lib/Runtime) read them.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_ABI_ELEMENTTYPES_H
#define AMP_ABI_ELEMENTTYPES_H

#include <cstdint>

namespace amp {

/// Element-type codes of the runtime's operands (F64: amp_cpu_all_reduce's
/// batch-norm statistics only).
enum class RuntimeDType : int64_t { F32 = 0, F16 = 1, BF16 = 2, F64 = 3 };

} // namespace amp

#endif // AMP_ABI_ELEMENTTYPES_H
