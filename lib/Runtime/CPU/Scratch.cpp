//===- Scratch.cpp - The runtime's counted scratch and widened operands ---===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "Scratch.h"
#include "amp/ABI/ConvWorkspace.h"
#include "amp/Runtime/CpuFeatures.h"
#include "amp/Runtime/Float16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace amp;
using namespace amp::runtime;

namespace {

/// Elements from which a conversion is split across the threads.
constexpr int64_t kParallelCopy = 1 << 16;

/// All 65536 f16 values as f32: widening is one load per element.
const float *halfTable() {
  static const std::unique_ptr<float[]> table = [] {
    std::unique_ptr<float[]> t(new float[65536]);
    for (uint32_t i = 0; i < 65536; ++i)
      t[i] = halfToFloat(uint16_t(i));
    return t;
  }();
  return table.get();
}

/// Widens `count` f16 values with the lookup table.
void widenHalfTable(const uint16_t *in, float *out, int64_t count) {
  const float *table = halfTable();
  for (int64_t i = 0; i < count; ++i)
    out[i] = table[in[i]];
}

/// Widens `count` f16 values with the F16C conversion instruction (exact,
/// as the table: every f16 value is an f32 value), 8 or 16 a time; the
/// table takes the tail.
__attribute__((target("avx,f16c"))) void widenHalfF16c(const uint16_t *in,
                                                       float *out,
                                                       int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(in + i))));
  widenHalfTable(in + i, out + i, count - i);
}

// GCC 12's _mm512_cvtph_ps reads an undefined register it then masks off.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void widenHalfAvx512(const uint16_t *in,
                                                        float *out,
                                                        int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_ps(out + i,
                     _mm512_cvtph_ps(_mm256_loadu_si256(
                         reinterpret_cast<const __m256i *>(in + i))));
  widenHalfTable(in + i, out + i, count - i);
}

#pragma GCC diagnostic pop

/// f16 -> f32 of `count` values, split across the threads in blocks.
void widenHalf(const uint16_t *in, float *out, int64_t count) {
  static const auto widen = [] {
    const CpuFeatures &cpu = getCpuFeatures();
    if (cpu.avx512f)
      return &widenHalfAvx512;
    if (cpu.avx && cpu.f16c)
      return &widenHalfF16c;
    return &widenHalfTable;
  }();
  constexpr int64_t kBlock = 1 << 14;
  int64_t blocks = (count + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (count >= kParallelCopy)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t first = b * kBlock;
    widen(in + first, out + first, std::min(kBlock, count - first));
  }
}

} // namespace

namespace {
/// The workspace of the current runtime call on this thread: a free range
/// of the step's arena (amp-plan-memory), used as a stack.
struct Workspace {
  char *base = nullptr;
  uint64_t size = 0;
  /// For each live allocation, in allocation order, the bytes used before
  /// it (it starts at their alignedOffset).
  std::vector<uint64_t> offsets;
  uint64_t used = 0;
};
thread_local Workspace workspace;
constexpr uint64_t kScratchAlignment = 64;
// The compiler's bound of a convolution's scratch rounds each allocation as
// this does.
static_assert(kScratchAlignment == uint64_t(kConvScratchAlignment));
/// Where an allocation starts after `used` bytes of a workspace.
uint64_t alignedOffset(uint64_t used) {
  return (used + kScratchAlignment - 1) / kScratchAlignment *
         kScratchAlignment;
}
} // namespace

extern "C" void amp_cpu_set_workspace(intptr_t base, int64_t bytes) {
  Workspace &w = workspace;
  w.base = reinterpret_cast<char *>(base);
  w.size = base && bytes > 0 ? uint64_t(bytes) : 0;
  w.offsets.clear();
  w.used = 0;
}

void *amp::runtime::allocateScratch(uint64_t bytes) {
  bytes = std::max<uint64_t>(bytes, 1);
  Workspace &w = workspace;
  uint64_t offset = alignedOffset(w.used);
  uintptr_t start = reinterpret_cast<uintptr_t>(w.base) + offset;
  if (w.size && start % kScratchAlignment == 0 && offset <= w.size &&
      bytes <= w.size - offset) {
    w.offsets.push_back(w.used);
    w.used = offset + bytes;
    return w.base + offset;
  }
  return amp_cpu_aligned_alloc(kScratchAlignment, bytes);
}

void amp::runtime::releaseScratch(void *p) {
  Workspace &w = workspace;
  char *c = static_cast<char *>(p);
  if (w.size && c >= w.base && c < w.base + w.size) {
    // The most recent allocation frees its bytes; others stay taken until
    // the call ends (the workspace is reset with the next one).
    if (!w.offsets.empty() && w.base + alignedOffset(w.offsets.back()) == c) {
      w.used = w.offsets.back();
      w.offsets.pop_back();
    }
    return;
  }
  amp_cpu_free(p);
}

CountedBuffer::CountedBuffer(uint64_t bytes) : data(allocateScratch(bytes)) {}

Scratch amp::runtime::scratch(int64_t count) {
  return Scratch(static_cast<float *>(
      allocateScratch(uint64_t(std::max<int64_t>(count, 1)) * sizeof(float))));
}

FloatOperand::FloatOperand(intptr_t address, int64_t dtype, int64_t count) {
  // Only compiled code calls in, with codes the lowering wrote.
  if (dtype < int64_t(RuntimeDType::F32) ||
      dtype > int64_t(RuntimeDType::BF16)) {
    std::fprintf(stderr, "amp runtime: unknown element type code %lld\n",
                 static_cast<long long>(dtype));
    std::abort();
  }
  switch (RuntimeDType(dtype)) {
  case RuntimeDType::F32:
    data = reinterpret_cast<const float *>(address);
    return;
  case RuntimeDType::F16:
    copy = scratch(count);
    widenHalf(reinterpret_cast<const uint16_t *>(address), copy.get(), count);
    break;
  case RuntimeDType::BF16: {
    const auto *bits = reinterpret_cast<const uint16_t *>(address);
    copy = scratch(count);
    float *out = copy.get();
    // bf16 is f32's upper half: a shift, inline (a loop that vectorizes,
    // where a call of bfloatToFloat per value did not).
#pragma omp parallel for schedule(static) if (count >= kParallelCopy)
    for (int64_t i = 0; i < count; ++i) {
      uint32_t wide = uint32_t(bits[i]) << 16;
      std::memcpy(&out[i], &wide, sizeof(float));
    }
    break;
  }
  case RuntimeDType::F64: // excluded above
    std::abort();
  }
  data = copy.get();
}
