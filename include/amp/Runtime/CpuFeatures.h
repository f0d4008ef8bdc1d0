//===- CpuFeatures.h - What the CPU running the process offers --*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU's vector extensions, read once from cpuid (and xgetbv, for the
// operating system's support of the wider register state). The CPU runtime
// chooses library kernels by them; benchmarks print them.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_CPUFEATURES_H
#define AMP_RUNTIME_CPUFEATURES_H

#include <string>

namespace amp {

/// The x86 vector extensions amp's CPU runtime cares about; all false on
/// other architectures. An extension counts only when the operating system
/// saves its registers (AVX: the YMM state; AVX-512: the opmask and ZMM
/// state; AMX: the tile state).
struct CpuFeatures {
  bool intel = false, amd = false;
  bool avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512cd = false, avx512dq = false, avx512bw = false,
       avx512vl = false;
  /// VCVTNE2PS2BF16 / VDPBF16PS: bf16 dot products with f32 accumulation.
  bool avx512bf16 = false;
  /// Native f16 arithmetic.
  bool avx512fp16 = false;
  /// AMX tiles with bf16 multiplication.
  bool amxTile = false, amxBf16 = false;

  /// The AVX-512 subset of Skylake-SP and later (F, CD, DQ, BW, VL).
  bool hasAvx512Core() const {
    return avx512f && avx512cd && avx512dq && avx512bw && avx512vl;
  }
  /// The flags that are set, in lscpu's spelling ("avx2 fma f16c avx512f
  /// ... avx512_bf16 amx_bf16"), for logs and benchmark tables.
  std::string describe() const;
};

/// The features of the CPU this process runs on (read once).
const CpuFeatures &getCpuFeatures();

} // namespace amp

#endif // AMP_RUNTIME_CPUFEATURES_H
