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

#ifndef AMP_RUNTIME_CONVWORKSPACE_H
#define AMP_RUNTIME_CONVWORKSPACE_H

#include <algorithm>
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
/// kConvScratchAlignment), on the path the measured rule picks for it. Its
/// operands `a` and `b` (in the entry points' order: Forward (x, filter),
/// BackwardData (dy, filter), BackwardWeights (dy, x)) have `bytesA` and
/// `bytesB` bytes per element (2: f16/bf16); `nativeBf16` says both are bf16
/// and the CPU multiplies them natively (they then go to oneDNN as they
/// are). The runtime takes:
/// - on the im2col path: an f32 copy of each 16-bit operand, and the two
///   chunk matrices, [patch, chunk * pixels] and [f, chunk * pixels] floats
///   (one float more each, as allocated);
/// - on oneDNN's: the f32 copies unless native, and oneDNN's copies of the
///   three tensors in its blocked layouts, bounded as f32 with the channels
///   padded to 16 (to 4 below 16 channels).
/// oneDNN's own scratchpad is not in it: its size depends on the kernel and
/// the thread count chosen at run time (per-thread image copies and a
/// filter-sized reduction for the filter gradient; 0 for most forward
/// kernels). It takes the workspace's free room where it fits, the counted
/// heap otherwise, as does all scratch where AMP_CPU_CONV overrides the
/// rule or oneDNN has no kernel for the shape.
inline int64_t convWorkspaceBytes(ConvPass pass, const ConvGeometry &g,
                                  int64_t bytesA, int64_t bytesB,
                                  bool nativeBf16) {
  auto aligned = [](int64_t bytes) {
    return (std::max<int64_t>(bytes, 1) + kConvScratchAlignment - 1) /
           kConvScratchAlignment * kConvScratchAlignment;
  };
  int64_t images = g.n * g.inputSize(), grads = g.n * g.outputSize(),
          filters = g.f * g.patch();
  int64_t countA = pass == ConvPass::Forward ? images : grads;
  int64_t countB = pass == ConvPass::BackwardWeights ? images : filters;
  int64_t widened = (bytesA < 4 ? aligned(countA * 4) : 0) +
                    (bytesB < 4 ? aligned(countB * 4) : 0);
  if (measuredConvPath(pass, g, nativeBf16) == ConvPath::Im2col) {
    int64_t chunk = imagesPerChunk(g);
    return widened + aligned((g.patch() * chunk * g.pixels() + 1) * 4) +
           aligned((g.f * chunk * g.pixels() + 1) * 4);
  }
  auto padded = [](int64_t channels) {
    return channels < 16 ? (channels + 3) / 4 * 4 : (channels + 15) / 16 * 16;
  };
  int64_t c = padded(g.c), f = padded(g.f);
  return (nativeBf16 ? 0 : widened) + aligned(g.n * c * g.h * g.w * 4) +
         aligned(f * c * g.kh * g.kw * 4) + aligned(g.n * f * g.oh * g.ow * 4);
}

} // namespace amp

#endif // AMP_RUNTIME_CONVWORKSPACE_H
