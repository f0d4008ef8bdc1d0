//===- CpuFeatures.cpp - What the CPU running the process offers ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CpuFeatures.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

using namespace amp;

namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(unsigned reg, unsigned n) { return (reg >> n) & 1u; }

/// The register state the operating system saves (XCR0), or 0 without
/// OSXSAVE.
unsigned long long enabledState(unsigned leaf1Ecx) {
  if (!bit(leaf1Ecx, 27)) // OSXSAVE
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d))
    return f;
  unsigned maxLeaf = a;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  f.intel = std::strcmp(vendor, "GenuineIntel") == 0;
  f.amd = std::strcmp(vendor, "AuthenticAMD") == 0;

  __get_cpuid(1, &a, &b, &c, &d);
  unsigned long long xcr0 = enabledState(c);
  bool ymm = (xcr0 & 0x6) == 0x6;          // SSE + AVX state
  bool zmm = ymm && (xcr0 & 0xe0) == 0xe0; // opmask, ZMM_Hi256, Hi16_ZMM
  bool tiles = (xcr0 & 0x60000) == 0x60000; // XTILECFG + XTILEDATA
  f.avx = ymm && bit(c, 28);
  f.fma = ymm && bit(c, 12);
  f.f16c = ymm && bit(c, 29);
  if (maxLeaf < 7)
    return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm && bit(b, 5);
  f.avx512f = zmm && bit(b, 16);
  f.avx512dq = zmm && bit(b, 17);
  f.avx512cd = zmm && bit(b, 28);
  f.avx512bw = zmm && bit(b, 30);
  f.avx512vl = zmm && bit(b, 31);
  f.avx512fp16 = zmm && bit(d, 23);
  f.amxBf16 = tiles && bit(d, 22);
  f.amxTile = tiles && bit(d, 24);
  unsigned subleaves = a;
  if (subleaves >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512bf16 = zmm && bit(a, 5);
  }
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

} // namespace

std::string CpuFeatures::describe() const {
  std::string out;
  auto add = [&](bool on, const char *name) {
    if (!on)
      return;
    if (!out.empty())
      out += ' ';
    out += name;
  };
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512cd, "avx512cd");
  add(avx512dq, "avx512dq");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512bf16, "avx512_bf16");
  add(avx512fp16, "avx512_fp16");
  add(amxTile, "amx_tile");
  add(amxBf16, "amx_bf16");
  return out.empty() ? "no AVX" : out;
}

const CpuFeatures &amp::getCpuFeatures() {
  static const CpuFeatures features = detect();
  return features;
}
