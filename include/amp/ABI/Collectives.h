//===- Collectives.h - The collective operations' codes ---------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// How a data-parallel step's all-reduce combines the ranks' values: the code
// the compiler passes to amp_cpu_all_reduce / amp_cuda_all_reduce and the
// runtimes' communicators receive (amp/Runtime/Collectives.h).
// Header-only and free of MLIR and of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_ABI_COLLECTIVES_H
#define AMP_ABI_COLLECTIVES_H

#include <cstdint>

namespace amp {

/// How the values of the ranks are combined; the code `amp_cpu_all_reduce`
/// receives. (train.all_reduce's `mean` arrives pre-divided, as a sum.)
enum class CollectiveOp : int64_t { Sum = 0, Max = 1 };

} // namespace amp

#endif // AMP_ABI_COLLECTIVES_H
