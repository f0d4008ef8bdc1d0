//===- Memory.cpp - The allocator of compiled CPU steps, with a count -----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A compiled step's buffers (its memref.alloc / dealloc, whose calls of
// aligned_alloc, malloc and free routeStepAllocations sends here) and the
// runtime's own scratch (widened operands, im2col matrices) come from the C
// heap through these functions, which count the bytes the heap hands out
// (malloc_usable_size: what the step holds, rounding included). The count
// is the step's working memory: the benchmark's "peak step memory". The
// arguments (parameters, moments, the batch) are the caller's and are not
// counted; nor is what OpenBLAS allocates inside.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CpuRuntime.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {
std::atomic<uint64_t> inUse{0}, peak{0};

/// The bytes the heap gave `p` (0 where the C library cannot say).
uint64_t blockSize(void *p) {
#if defined(__GLIBC__)
  return p ? malloc_usable_size(p) : 0;
#else
  (void)p;
  return 0;
#endif
}

void *counted(void *p) {
  uint64_t now = inUse.fetch_add(blockSize(p), std::memory_order_relaxed) +
                 blockSize(p);
  uint64_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen &&
         !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed))
    ;
  return p;
}

/// Blocks from this size up are kept when freed, for the next allocation of
/// about their size: a planned step's arena (amp-plan-memory), allocated
/// and freed by every call, would otherwise come from a fresh mapping each
/// time above glibc's mmap threshold, every page faulted in again.
constexpr uint64_t kLargeBlock = uint64_t(64) << 20;
/// At most this many such blocks are kept (a step's and its evaluation
/// function's arenas).
constexpr size_t kKeptBlocks = 2;

struct KeptBlock {
  void *p;
  uint64_t bytes, alignment;
};
std::mutex keptMutex;
std::vector<KeptBlock> kept;

/// A kept block of `size` bytes (at most an eighth more) aligned to
/// `alignment`, taken from the cache; null where none is.
void *takeKept(uint64_t alignment, uint64_t size) {
  if (size < kLargeBlock)
    return nullptr;
  std::lock_guard<std::mutex> lock(keptMutex);
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i].bytes >= size && kept[i].bytes - size <= size / 8 &&
        kept[i].alignment % alignment == 0) {
      void *p = kept[i].p;
      kept.erase(kept.begin() + i);
      return p;
    }
  return nullptr;
}

/// Keeps a freed block of `bytes` (the oldest kept one goes); false where it
/// is too small to keep.
bool keep(void *p, uint64_t bytes) {
  if (bytes < kLargeBlock)
    return false;
  std::lock_guard<std::mutex> lock(keptMutex);
  if (kept.size() == kKeptBlocks) {
    std::free(kept.front().p);
    kept.erase(kept.begin());
  }
  uint64_t alignment = uint64_t(1) << __builtin_ctzll(uintptr_t(p));
  kept.push_back({p, bytes, alignment});
  return true;
}
} // namespace

extern "C" void *amp_cpu_malloc(uint64_t size) {
  return counted(std::malloc(std::max<uint64_t>(size, 1)));
}

extern "C" void *amp_cpu_aligned_alloc(uint64_t alignment, uint64_t size) {
  // aligned_alloc wants a power-of-two alignment of at least a pointer and
  // a size that is a multiple of it; memref-to-llvm already rounds the size.
  alignment = std::max<uint64_t>(alignment, sizeof(void *));
  if (size > UINT64_MAX - alignment)
    return nullptr;
  size = std::max<uint64_t>((size + alignment - 1) / alignment * alignment,
                            alignment);
  if (void *p = takeKept(alignment, size))
    return counted(p);
  return counted(std::aligned_alloc(alignment, size));
}

extern "C" void amp_cpu_free(void *p) {
  if (!p)
    return;
  uint64_t bytes = blockSize(p);
  inUse.fetch_sub(bytes, std::memory_order_relaxed);
  if (!keep(p, bytes))
    std::free(p);
}

extern "C" void amp_cpu_memory_stats(uint64_t *bytesInUse,
                                     uint64_t *peakBytes) {
  if (bytesInUse)
    *bytesInUse = inUse.load(std::memory_order_relaxed);
  if (peakBytes)
    *peakBytes = peak.load(std::memory_order_relaxed);
}

extern "C" void amp_cpu_memory_reset_peak(void) {
  peak.store(inUse.load(std::memory_order_relaxed), std::memory_order_relaxed);
}
