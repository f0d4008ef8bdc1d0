//===- CachingAllocator.cpp - Reuse of device allocations -----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CachingAllocator.h"

#include <algorithm>

using namespace amp;

size_t CachingAllocator::roundSize(size_t bytes) {
  constexpr size_t granule = 512;
  return std::max<size_t>(1, (bytes + granule - 1) / granule) * granule;
}

void *CachingAllocator::allocate(size_t bytes) {
  size_t size = roundSize(bytes);
  std::lock_guard<std::mutex> lock(mutex);
  void *block = nullptr;
  auto it = cached.find(size);
  if (it != cached.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    cachedBytes -= size;
  } else {
    block = backingAllocate(size);
    if (!block) {
      // Out of memory: give the cached blocks back and try once more.
      for (auto &[blockSize, blocks] : cached)
        for (void *b : blocks)
          backingRelease(b);
      cached.clear();
      cachedBytes = 0;
      block = backingAllocate(size);
      if (!block)
        return nullptr;
    }
  }
  inUse[block] = size;
  inUseBytes += size;
  peak = std::max(peak, inUseBytes + cachedBytes);
  peakInUse = std::max(peakInUse, inUseBytes);
  return block;
}

void CachingAllocator::release(void *block) {
  if (!block)
    return;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = inUse.find(block);
  if (it == inUse.end())
    return; // not ours: ignore rather than corrupt the cache
  size_t size = it->second;
  inUse.erase(it);
  inUseBytes -= size;
  cached[size].push_back(block);
  cachedBytes += size;
}

void CachingAllocator::trim() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &[size, blocks] : cached)
    for (void *b : blocks)
      backingRelease(b);
  cached.clear();
  cachedBytes = 0;
}

size_t CachingAllocator::bytesInUse() const {
  std::lock_guard<std::mutex> lock(mutex);
  return inUseBytes;
}

size_t CachingAllocator::bytesCached() const {
  std::lock_guard<std::mutex> lock(mutex);
  return cachedBytes;
}

size_t CachingAllocator::peakBytesHeld() const {
  std::lock_guard<std::mutex> lock(mutex);
  return peak;
}

size_t CachingAllocator::peakBytesInUse() const {
  std::lock_guard<std::mutex> lock(mutex);
  return peakInUse;
}
