//===- LinearCrossEntropyWorkspace.h - A fused head's scratch ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The rows per block of the CPU runtime's fused head and loss
// (lib/Runtime/CPU/LinearCrossEntropy.cpp) and the scratch one call takes,
// header-only: the runtime blocks its loop with them and the compiler
// reserves the scratch in the step's memory plan (lib/Conversion/
// TrainToRuntime sets the call's amp.workspace_bytes).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_ABI_LINEARCROSSENTROPYWORKSPACE_H
#define AMP_ABI_LINEARCROSSENTROPYWORKSPACE_H

#include <algorithm>
#include <cstdint>

namespace amp {

/// A block of rows: its f32 logits take about this many bytes, and it is
/// at least kHeadMinBlockRows rows (as many as there are, if fewer). The
/// floor keeps the block products efficient GEMMs and bounds how often the
/// backward pass reads and adds to the f32 weight gradient ([V, K]: 77 MB
/// for GPT-2's head, once per block): GPT-2's 50257 classes take 256-row
/// blocks of 51 MB, against the 823 MB of its whole f32 logits at 4096
/// rows; a 512-class head 1024-row blocks of 2 MiB.
inline constexpr int64_t kHeadBlockBytes = 2 << 20;
inline constexpr int64_t kHeadMinBlockRows = 256;

/// Rows per block for `rows` rows of `vocab` classes.
inline int64_t linearCrossEntropyBlockRows(int64_t rows, int64_t vocab) {
  int64_t block = std::max<int64_t>(
      kHeadBlockBytes / 4 / std::max<int64_t>(vocab, 1), kHeadMinBlockRows);
  return std::max<int64_t>(std::min(block, rows), 1);
}

/// The scratch of one call, in 64-byte aligned pieces: the block's f32
/// logits (and, backward with bf16 operands multiplied natively, their
/// gradient's bf16 copy); f32 copies of the input and weight where 16-bit
/// operands are widened (elementBytes 2, not `nativeBf16`); and a bound on
/// oneDNN's scratchpad for one product (its packed copies, at most four
/// bytes per element of the block and weight, and 4 MiB, Dnnl.cpp's
/// allowance).
inline int64_t linearCrossEntropyWorkspaceBytes(bool backward, int64_t rows,
                                                int64_t features, int64_t vocab,
                                                int64_t elementBytes,
                                                bool nativeBf16) {
  auto aligned = [](int64_t bytes) {
    return (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  };
  int64_t block = linearCrossEntropyBlockRows(rows, vocab);
  int64_t bytes = aligned(4 * block * vocab);
  bool widened = elementBytes == 2 && !nativeBf16;
  if (backward && elementBytes == 2 && nativeBf16)
    bytes += aligned(2 * block * vocab);
  if (widened)
    bytes += aligned(4 * rows * features) + aligned(4 * features * vocab);
  if (elementBytes == 2 && nativeBf16)
    bytes += aligned(std::min<int64_t>(
        4 * (block * std::max(vocab, features) + features * vocab), 4 << 20));
  return bytes;
}

} // namespace amp

#endif // AMP_ABI_LINEARCROSSENTROPYWORKSPACE_H
