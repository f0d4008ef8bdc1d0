//===- Blas.h - OpenBLAS, loaded with kernels for this CPU ------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's GEMMs are OpenBLAS's. OpenBLAS picks its kernels when it
// is loaded, from a table of CPU models; Debian's 0.3.21 predates Sapphire
// Rapids and falls back to its SSE3 "Prescott" kernels on CPUs it does not
// know (OpenBLAS issue 4267, fixed in 0.3.25): about 4x slower than its
// AVX-512 kernels, and summing in another order. So the runtime loads
// OpenBLAS itself, at first use, after choosing the kernel family from the
// CPU's features (OPENBLAS_CORETYPE, read by OpenBLAS when it loads); a
// user's own OPENBLAS_CORETYPE is kept.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_BLAS_H
#define AMP_RUNTIME_BLAS_H

#include "amp/Runtime/CpuFeatures.h"

#include <cblas.h>

#include <string>

namespace amp {

/// The OpenBLAS entry points the runtime calls.
struct BlasLibrary {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&openblas_get_corename) coreName = nullptr;
  decltype(&openblas_set_num_threads) setNumThreads = nullptr;
  decltype(&openblas_get_num_threads) getNumThreads = nullptr;
  /// The library file's name as loaded.
  std::string file;
  /// Whether it is OpenBLAS's OpenMP build (threads from OpenMP's pool).
  bool openmp = false;
};

/// OpenBLAS, loaded on the first call (thread-safe). A library that cannot
/// be loaded, or lacks an entry point, ends the process with a message
/// naming the file and the package to install: compiled code calls the
/// runtime and has no way to handle an error.
const BlasLibrary &getBlas();

/// The OpenBLAS kernel family ("SkylakeX", "Haswell", "Sandybridge") amp
/// asks for on a CPU with `features`, or nullptr to leave the choice to
/// OpenBLAS. Intel CPUs get the family of their widest vector
/// extensions (OpenBLAS 0.3.21 detects Intel CPUs by model number and
/// treats newer models as Prescott); AMD CPUs keep OpenBLAS's own choice.
const char *chooseOpenBlasCore(const CpuFeatures &features);

/// "OpenBLAS (SkylakeX kernels, 2 threads)": for logs and benchmark tables.
std::string describeBlas();

/// Gives OpenBLAS the thread count of OpenMP's pool (which every other part
/// of a step uses) if it changed since the last call; returns it. Called
/// before each GEMM.
int syncBlasThreads();

} // namespace amp

#endif // AMP_RUNTIME_BLAS_H
