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

/// The shared libraries the runtime loads, the first found: Debian's OpenMP
/// build of OpenBLAS (libopenblas0-openmp), whose threads are OpenMP's pool
/// the rest of a step runs on, else whichever variant the alternatives
/// system selects (libopenblas0-pthread by default): its own threads spin
/// for a while after each call and compete with the pool's for the cores.
constexpr const char *kOpenBlasFiles[] = {
#if defined(__x86_64__)
    "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
#elif defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0",
#endif
    "libopenblas.so.0"};

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr,
               "amp runtime: %s\n(OpenBLAS comes from Debian's libopenblas0; "
               "scripts/setup.sh installs it)\n",
               what.c_str());
  std::abort();
}

template <typename T>
void resolve(void *handle, const std::string &file, const char *name, T &out) {
  out = reinterpret_cast<T>(dlsym(handle, name));
  if (!out)
    fail(std::string("cannot find ") + name + " in " + file);
}

BlasLibrary load() {
  // OpenBLAS reads OPENBLAS_CORETYPE once, when it is loaded.
  if (!std::getenv("OPENBLAS_CORETYPE"))
    if (const char *core = chooseOpenBlasCore(getCpuFeatures()))
      setenv("OPENBLAS_CORETYPE", core, /*overwrite=*/0);
  void *handle = nullptr;
  std::string file, errors;
  for (const char *candidate : kOpenBlasFiles) {
    if ((handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL))) {
      file = candidate;
      break;
    }
    errors += std::string("\n  ") + dlerror();
  }
  if (!handle)
    fail("cannot load OpenBLAS:" + errors);
  BlasLibrary blas;
  blas.file = file;
  resolve(handle, file, "cblas_sgemm", blas.sgemm);
  resolve(handle, file, "openblas_get_corename", blas.coreName);
  resolve(handle, file, "openblas_set_num_threads", blas.setNumThreads);
  resolve(handle, file, "openblas_get_num_threads", blas.getNumThreads);
  blas.openmp = file.find("openblas-openmp") != std::string::npos;
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
         std::to_string(blas.getNumThreads()) +
         (blas.openmp ? " OpenMP threads)" : " threads)");
}
