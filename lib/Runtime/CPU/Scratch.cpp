//===- Scratch.cpp - The runtime's counted scratch and widened operands ---===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "Scratch.h"
#include "amp/Runtime/Float16.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

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

} // namespace

CountedBuffer::CountedBuffer(uint64_t bytes)
    : data(amp_cpu_aligned_alloc(64, std::max<uint64_t>(bytes, 64))) {}

Scratch amp::runtime::scratch(int64_t count) {
  return Scratch(static_cast<float *>(
      amp_cpu_malloc(uint64_t(std::max<int64_t>(count, 1)) * sizeof(float))));
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
  case RuntimeDType::F16: {
    const float *table = halfTable();
    const auto *bits = reinterpret_cast<const uint16_t *>(address);
    copy = scratch(count);
    float *out = copy.get();
#pragma omp parallel for schedule(static) if (count >= kParallelCopy)
    for (int64_t i = 0; i < count; ++i)
      out[i] = table[bits[i]];
    break;
  }
  case RuntimeDType::BF16: {
    const auto *bits = reinterpret_cast<const uint16_t *>(address);
    copy = scratch(count);
    float *out = copy.get();
#pragma omp parallel for schedule(static) if (count >= kParallelCopy)
    for (int64_t i = 0; i < count; ++i)
      out[i] = bfloatToFloat(bits[i]);
    break;
  }
  }
  data = copy.get();
}
