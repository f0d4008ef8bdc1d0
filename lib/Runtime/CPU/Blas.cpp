//===- Blas.cpp - OpenBLAS, loaded with kernels for this CPU --------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Blas.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

using namespace amp;

namespace {

/// The shared library the runtime loads: the variant Debian's alternatives
/// system selects (libopenblas0-pthread by default).
constexpr const char *kOpenBlasFile = "libopenblas.so.0";

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr,
               "amp runtime: %s\n(OpenBLAS comes from Debian's libopenblas0; "
               "scripts/setup.sh installs it)\n",
               what.c_str());
  std::abort();
}

template <typename T> void resolve(void *handle, const char *name, T &out) {
  out = reinterpret_cast<T>(dlsym(handle, name));
  if (!out)
    fail(std::string("cannot find ") + name + " in " + kOpenBlasFile);
}

BlasLibrary load() {
  // OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded.
  if (!std::getenv("OPENBLAS_CORETYPE"))
    if (const char *core = chooseOpenBlasCore(getCpuFeatures()))
      setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  void *handle = dlopen(kOpenBlasFile, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    fail(std::string("cannot load ") + kOpenBlasFile + ": " + dlerror());
  BlasLibrary blas;
  blas.file = kOpenBlasFile;
  resolve(handle, "cblas_sgemm", blas.sgemm);
  resolve(handle, "openblas_get_corename", blas.coreName);
  resolve(handle, "openblas_set_num_threads", blas.setNumThreads);
  resolve(handle, "openblas_get_num_threads", blas.getNumThreads);
  return blas;
}

} // namespace

const BlasLibrary &amp::getBlas() {
  static const BlasLibrary blas = load();
  return blas;
}

const char *amp::chooseOpenBlasCore(const CpuFeatures &f) {
  if (!f.intel)
    return nullptr;
  if (f.hasAvx512Core())
    return "SkylakeX"; // its f32 kernels serve every later AVX-512 model

  if (f.avx2 && f.fma)
    return "Haswell";
  if (f.avx)
    return "Sandybridge";
  return nullptr;
}

std::string amp::describeBlas() {
  const BlasLibrary &blas = getBlas();
  return std::string("OpenBLAS (") + blas.coreName() + " kernels, " +
         std::to_string(blas.getNumThreads()) + " threads)";
}
