//===- CachingAllocator.h - Reuse of device allocations ---------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A training step allocates the same buffers every step; cuMemAlloc and
// cuMemFree synchronize the device. The caching allocator keeps released
// blocks in free lists by rounded size and hands them out again, calling the
// backing allocator only for sizes it has no block of. All work is on one
// stream, so a block released by a kernel's last use may be reused by a later
// kernel on that stream without synchronization (stream order).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_CACHINGALLOCATOR_H
#define AMP_RUNTIME_CACHINGALLOCATOR_H

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace amp {

class CachingAllocator {
public:
  /// Backing allocation: returns null when out of memory.
  using AllocateFn = std::function<void *(size_t)>;
  using ReleaseFn = std::function<void(void *)>;

  CachingAllocator(AllocateFn allocate, ReleaseFn release)
      : backingAllocate(std::move(allocate)),
        backingRelease(std::move(release)) {}
  ~CachingAllocator() { trim(); }

  /// Sizes are rounded up to multiples of 512 bytes (0 becomes 512).
  static size_t roundSize(size_t bytes);

  /// A block of at least `bytes`: a cached one of the same rounded size, or a
  /// new one. When the backing allocator fails, the cache is trimmed and the
  /// allocation retried once; null if it fails again.
  void *allocate(size_t bytes);
  /// Returns a block from allocate() to the cache; null is ignored.
  void release(void *block);
  /// Frees every cached (not in use) block.
  void trim();

  size_t bytesInUse() const;
  size_t bytesCached() const;
  /// The largest bytesInUse() + bytesCached() so far: device memory held.
  size_t peakBytesHeld() const;
  /// The most bytes in use (allocated, not cached) at any time.
  size_t peakBytesInUse() const;

private:
  AllocateFn backingAllocate;
  ReleaseFn backingRelease;
  mutable std::mutex mutex;
  std::map<size_t, std::vector<void *>> cached;
  std::unordered_map<void *, size_t> inUse;
  size_t inUseBytes = 0, cachedBytes = 0, peak = 0, peakInUse = 0;
};

} // namespace amp

#endif // AMP_RUNTIME_CACHINGALLOCATOR_H
