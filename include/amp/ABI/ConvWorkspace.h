//===- ConvWorkspace.h - A convolution call's scratch, bounded --*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The geometry of the CPU runtime's convolutions and the scratch one call
// takes, header-only: the runtime sizes its im2col chunks with it, and the
// compiler reserves it in a step's memory plan (amp-plan-memory lends each
// runtime call a workspace of the arena; lib/Conversion/TrainToRuntime sets
// a convolution call's amp.workspace_bytes from convWorkspaceBytes).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_ABI_CONVWORKSPACE_H
#define AMP_ABI_CONVWORKSPACE_H

#include <algorithm>
#include <array>
#include <cstdint>

namespace amp {

/// The geometry of a 2-D convolution, NCHW input and OIHW filter; padding
/// (ph, pw) on both sides, output (oh, ow) as the op's result type says.
struct ConvGeometry {
  int64_t n, c, h, w, f, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
  /// Rows of an image's column matrix: one per (channel, kernel offset).
  int64_t patch() const { return c * kh * kw; }
  /// Columns of an image's column matrix: one per output pixel.
  int64_t pixels() const { return oh * ow; }
  int64_t inputSize() const { return c * h * w; }
  int64_t outputSize() const { return f * oh * ow; }
};

/// The three passes of a convolution's training step.
enum class ConvPass { Forward, BackwardData, BackwardWeights };

/// The alignment of each scratch allocation of the CPU runtime.
inline constexpr int64_t kConvScratchAlignment = 64;

/// Images per im2col GEMM: all of them, unless the column matrix of a chunk
/// would pass 1 Mi floats (4 MiB); at least one.
inline int64_t imagesPerChunk(const ConvGeometry &g) {
  int64_t perImage = std::max<int64_t>(g.patch() * g.pixels(), 1);
  return std::clamp<int64_t>((int64_t(1) << 20) / perImage, 1,
                             std::max<int64_t>(g.n, 1));
}

/// The element counts of a convolution pass's two operands, in the entry
/// points' order: Forward (x, filter), BackwardData (dy, filter),
/// BackwardWeights (dy, x).
inline std::array<int64_t, 2> convOperandCounts(ConvPass pass,
                                                const ConvGeometry &g) {
  int64_t images = g.n * g.inputSize(), grads = g.n * g.outputSize(),
          filters = g.f * g.patch();
  switch (pass) {
  case ConvPass::Forward:
    return {images, filters};
  case ConvPass::BackwardData:
    return {grads, filters};
  case ConvPass::BackwardWeights:
    return {grads, images};
  }
  return {0, 0};
}

/// The two ways the CPU runtime computes a convolution pass.
enum class ConvPath { Im2col, OneDnn };

/// The path a convolution pass of this geometry takes by the measured rule,
/// with bf16 operands multiplied natively (`bf16`) or f32 ones
/// (chooseConvPath in Dnnl.h applies it unless AMP_CPU_CONV overrides it).
/// amp-bench-conv-paths on the benchmark models' convolutions (Sapphire
/// Rapids, AMX; docs/benchmarks.md): oneDNN is 1.1-9x faster except where
/// its blocked layouts have little to block - the filter gradient of small
/// images (a 4x4 or 2x2 image with 256-512 channels: 0.3-0.7x in bf16, 0.6x
/// in f32 at 2x2) and the f32 input gradient of a 1- or 3-channel input
/// (0.4-0.65x).
inline ConvPath measuredConvPath(ConvPass pass, const ConvGeometry &g,
                                 bool bf16) {
  switch (pass) {
  case ConvPass::Forward:
    return ConvPath::OneDnn;
  case ConvPass::BackwardData:
    if (bf16)
      return g.pixels() <= 4 ? ConvPath::Im2col : ConvPath::OneDnn;
    return g.c < 8 ? ConvPath::Im2col : ConvPath::OneDnn;
  case ConvPass::BackwardWeights:
    return g.pixels() <= (bf16 ? 16 : 4) ? ConvPath::Im2col : ConvPath::OneDnn;
  }
  return ConvPath::OneDnn;
}

/// The scratch bytes one convolution call takes (each allocation rounded to
/// kConvScratchAlignment). Its operands `a` and `b` (in the entry points'
/// order: Forward (x, filter), BackwardData (dy, filter), BackwardWeights
/// (dy, x)) have `bytesA` and `bytesB` bytes per element (2: f16/bf16);
/// `bf16Operands` says both are bf16, and `nativeBf16` that the CPU is
/// known to multiply bf16 natively (they then go to oneDNN as they are).
/// The runtime takes, on the path the measured rule picks:
/// - im2col: an f32 copy of each 16-bit operand, and the two chunk
///   matrices, [patch, chunk * pixels] and [f, chunk * pixels] floats (one
///   float more each, as allocated);
/// - oneDNN: the f32 copies unless native, and oneDNN's copies of the three
///   tensors in its blocked layouts, bounded as f32 with the channels
///   padded to 16 (the filter's input channels to 32, AMX's block; below 4
///   channels, to 4: oneDNN keeps such images plain).
/// bf16 operands on a CPU not known to multiply them natively take the
/// larger of both rules' figures. Not in it: oneDNN's own scratchpad (its
/// size depends on the kernel and the thread count chosen at run time:
/// per-thread image copies and a filter-sized reduction for the filter
/// gradient; 0 for most forward kernels), and a shape oneDNN has no kernel
/// for (the runtime then takes im2col). Those take the workspace's free
/// room where it fits, the counted heap otherwise.
inline int64_t convWorkspaceBytes(ConvPass pass, const ConvGeometry &g,
                                  int64_t bytesA, int64_t bytesB,
                                  bool bf16Operands, bool nativeBf16) {
  auto aligned = [](int64_t bytes) {
    return (std::max<int64_t>(bytes, 1) + kConvScratchAlignment - 1) /
           kConvScratchAlignment * kConvScratchAlignment;
  };
  auto [countA, countB] = convOperandCounts(pass, g);
  int64_t widened = (bytesA < 4 ? aligned(countA * 4) : 0) +
                    (bytesB < 4 ? aligned(countB * 4) : 0);
  int64_t chunk = imagesPerChunk(g);
  int64_t im2col = widened + aligned((g.patch() * chunk * g.pixels() + 1) * 4) +
                   aligned((g.f * chunk * g.pixels() + 1) * 4);
  auto padded = [](int64_t channels, int64_t block) {
    return channels < 4 ? int64_t(4) : (channels + block - 1) / block * block;
  };
  int64_t c = padded(g.c, 16), f = padded(g.f, 16), filterC = padded(g.c, 32);
  int64_t blocked = aligned(g.n * c * g.h * g.w * 4) +
                    aligned(f * filterC * g.kh * g.kw * 4) +
                    aligned(g.n * f * g.oh * g.ow * 4);
  // The figure on the path rule `bf16` picks, operands native or widened.
  auto onPath = [&](bool bf16, bool native) {
    return measuredConvPath(pass, g, bf16) == ConvPath::Im2col
               ? im2col
               : (native ? 0 : widened) + blocked;
  };
  if (!bf16Operands)
    return onPath(false, false);
  if (nativeBf16)
    return onPath(true, true);
  return std::max(onPath(false, false), onPath(true, true));
}

} // namespace amp

#endif // AMP_ABI_CONVWORKSPACE_H
