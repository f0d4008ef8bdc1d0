//===- AttentionWorkspace.h - An attention call's scratch -------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU attention kernels' block sizes and the scratch the calling thread
// of one call takes, header-only: the runtime (lib/Runtime/CPU/Attention.cpp)
// blocks its loops with them, and the compiler reserves the scratch in a
// step's memory plan (lib/Conversion/TrainToRuntime sets an attention call's
// amp.workspace_bytes from attentionWorkspaceBytes where its bf16 operands
// are multiplied natively; elsewhere the plan's default, an f32 copy of each
// 16-bit operand, bounds what the kernels widen). The kernels' other
// threads take their blocks from the counted heap.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_ABI_ATTENTIONWORKSPACE_H
#define AMP_ABI_ATTENTIONWORKSPACE_H

#include <algorithm>
#include <cstdint>

namespace amp {

/// Queries and keys per block for f32 products (OpenBLAS): a block's
/// scores, probabilities and their gradient (3 x 64 x 128 floats) stay in
/// the L2 cache with the operand rows.
inline constexpr int64_t kAttentionQueryBlockF32 = 64;
inline constexpr int64_t kAttentionKeyBlockF32 = 128;
/// For bf16 products through oneDNN's matmul, larger blocks (3 x 128 x 256
/// floats, 384 KiB): each call's fixed cost is a smaller share, and the
/// backward pass reads each key block's operands for fewer query blocks
/// (1.2-1.5x faster than 64 x 128 blocks on Sapphire Rapids:
/// amp-bench-attention, bench/tools/attention_paths.cpp).
inline constexpr int64_t kAttentionQueryBlockBf16 = 128;
inline constexpr int64_t kAttentionKeyBlockBf16 = 256;

/// The scratch one attention call (the forward pass, or the backward one)
/// with bf16 operands multiplied natively takes on its calling thread, in
/// 64-byte aligned pieces: a 16-bit additive mask of `maskElements16`
/// values widened to f32 (0: no mask, or an f32 one), the block buffers
/// (f32 scores and their bf16 copy; backward: the probabilities, their
/// gradient, both in bf16 too, and a row term per query), and a bound on
/// oneDNN's scratchpad for one block product (its packed copies of the two
/// blocks: at most four bytes per element of each, and 16 KiB).
inline int64_t attentionWorkspaceBytes(bool backward, int64_t queryLen,
                                       int64_t headDim, int64_t valueDim,
                                       int64_t maskElements16) {
  auto aligned = [](int64_t bytes) {
    return (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  };
  const int64_t qb = kAttentionQueryBlockBf16, kb = kAttentionKeyBlockBf16;
  int64_t bytes = maskElements16 > 0 ? aligned(4 * maskElements16) : 0;
  int64_t blocks = backward ? 2 : 1;
  bytes += blocks * (aligned(4 * qb * kb) + aligned(2 * qb * kb));
  bytes += backward ? aligned(4 * queryLen) : 2 * aligned(4 * qb);
  int64_t widest = std::max(headDim, valueDim);
  bytes += aligned(4 * (qb * kb + (qb + kb) * widest) + (16 << 10));
  return bytes;
}

} // namespace amp

#endif // AMP_ABI_ATTENTIONWORKSPACE_H
