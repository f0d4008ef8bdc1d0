//===- Scratch.h - The runtime's counted scratch and widened operands -----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Internal to the CPU runtime (CpuRuntime.cpp, Dnnl.cpp): scratch memory
// from the counted heap (amp_cpu_malloc), so a step's peak memory includes
// it, and an operand of any runtime element type as f32.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_CPU_SCRATCH_H
#define AMP_LIB_RUNTIME_CPU_SCRATCH_H

#include "amp/Runtime/CpuRuntime.h"

#include <cstdint>
#include <memory>

namespace amp::runtime {

/// `bytes` of scratch, 64-byte aligned: from the workspace the compiled
/// code lent this thread for the current call (amp_cpu_set_workspace) where
/// it has room, else from the counted heap. Null only where the heap is
/// exhausted.
void *allocateScratch(uint64_t bytes);
/// Gives back what allocateScratch returned (null: nothing).
void releaseScratch(void *p);

/// Scratch bytes (allocateScratch), freed with the object.
struct CountedBuffer {
  explicit CountedBuffer(uint64_t bytes);
  ~CountedBuffer() { releaseScratch(data); }
  CountedBuffer(const CountedBuffer &) = delete;
  CountedBuffer &operator=(const CountedBuffer &) = delete;
  void *data;
};

/// Floats of scratch (allocateScratch).
struct CountedFree {
  void operator()(float *p) const { releaseScratch(p); }
};
using Scratch = std::unique_ptr<float[], CountedFree>;
Scratch scratch(int64_t count);

/// An operand of element type `dtype` (amp::RuntimeDType) as f32: the buffer
/// itself, or an exact widened copy in counted scratch.
class FloatOperand {
public:
  FloatOperand(intptr_t address, int64_t dtype, int64_t count);
  const float *get() const { return data; }
  /// Frees the widened copy (get() is then invalid).
  void release() {
    copy.reset();
    data = nullptr;
  }

private:
  Scratch copy;
  const float *data = nullptr;
};

/// c (m x n) = op(a) op(b) (+ c where `accumulate`), the products summed
/// in f32: amp_cpu_gemm's path for one matrix (bf16 operands on a CPU that
/// multiplies them natively through oneDNN; others widened into the
/// counted scratch, then OpenBLAS).
void gemmF32(const void *a, int64_t dtypeA, const void *b, int64_t dtypeB,
             float *c, bool accumulate, int64_t m, int64_t n, int64_t k,
             bool transposeA, bool transposeB);

} // namespace amp::runtime

#endif // AMP_LIB_RUNTIME_CPU_SCRATCH_H
