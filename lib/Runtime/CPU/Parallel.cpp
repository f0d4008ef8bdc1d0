//===- Parallel.cpp - The thread pool of compiled CPU steps ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// One pool for everything a step runs: OpenMP's (libgomp), whose thread
// count (omp_set_num_threads, OMP_NUM_THREADS) is the one setting. The
// generated loops reach it through amp_cpu_parallel_for, the runtime's
// copies through `omp parallel for`, and OpenBLAS and oneDNN use it (or, for
// Debian's default pthreads OpenBLAS, its own threads, kept at the same
// count: syncBlasThreads) - so the parts of a step take turns on the same
// cores instead of oversubscribing them.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Blas.h"
#include "amp/Runtime/CpuRuntime.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

namespace {
/// The thread count before amp changed it: the cores available to the
/// process, or OMP_NUM_THREADS.
int defaultThreads() {
  static const int threads = omp_get_max_threads();
  return threads;
}
} // namespace

extern "C" void amp_cpu_parallel_for(void (*fn)(void *, int64_t, int64_t),
                                     void *context, int64_t tasks) {
  if (tasks <= 0)
    return;
  int64_t threads =
      omp_in_parallel() ? 1 : std::min<int64_t>(omp_get_max_threads(), tasks);
  if (threads <= 1) {
    fn(context, 0, tasks);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(threads))
  {
    int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    int64_t first = tasks * t / n, last = tasks * (t + 1) / n;
    if (first < last)
      fn(context, first, last);
  }
}

extern "C" void amp_cpu_set_num_threads(int64_t n) {
  int initial = defaultThreads(); // read before the first change
  omp_set_num_threads(n < 1 ? initial
                            : static_cast<int>(std::min<int64_t>(n, 1 << 16)));
}

int amp::syncBlasThreads() {
  int threads = omp_get_max_threads();
  // OpenBLAS's count is one per process.
  static std::atomic<int> blasThreads{0};
  if (blasThreads.exchange(threads) != threads)
    getBlas().setNumThreads(threads);
  return threads;
}

extern "C" int64_t amp_cpu_get_num_threads(void) {
  (void)defaultThreads(); // the first call (amp_cpu_runtime_init) reads it
  return omp_get_max_threads();
}
