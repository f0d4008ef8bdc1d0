//===- CudaRuntime.cpp - Entry points of compiled CUDA steps --------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CudaRuntime.h"
#include "amp/Runtime/CachingAllocator.h"
#include "amp/Runtime/CudaDriver.h"
#include "amp/Runtime/CudaGemm.h"

#include <algorithm>
#include <cstring>
#include <mutex>

using namespace amp;
using namespace amp::cuda;

namespace {

/// The first error of the process. Never destroyed: a loaded step's module
/// destructors (mgpuModuleUnload) run at exit after the destructors of
/// function-local and namespace-scope objects.
struct ErrorState {
  std::mutex mutex;
  std::string first;
};

ErrorState &errorState() {
  static ErrorState *state = new ErrorState;
  return *state;
}

void recordError(const std::string &message) {
  amp::cuda::recordRuntimeError(message);
}

bool failed() {
  ErrorState &errors = errorState();
  std::lock_guard<std::mutex> lock(errors.mutex);
  return !errors.first.empty();
}

} // namespace

const DriverApi *amp::cuda::driverFor(const char *entry) {
  if (failed())
    return nullptr;
  std::string error;
  const DriverApi *api = getDriver(&error);
  if (!api) {
    recordError(std::string(entry) + ": " + error);
    return nullptr;
  }
  thread_local bool current = false;
  if (!current) {
    if (CUresult r = api->ctxPushCurrent(api->context)) {
      recordError(std::string(entry) + ": cuCtxPushCurrent failed with " +
                  errorName(*api, r));
      return nullptr;
    }
    current = true;
  }
  return api;
}

bool amp::cuda::hasRuntimeError() { return failed(); }

namespace {

/// Checks a driver call's result; false (error recorded) on failure.
bool check(const DriverApi &api, CUresult result, const char *entry,
           const char *call) {
  if (result == CUDA_SUCCESS)
    return true;
  recordError(std::string(entry) + ": " + call + " failed with " +
              errorName(api, result));
  return false;
}

CachingAllocator &deviceAllocator() {
  // Never destroyed, like the error state (frees may come at exit).
  static CachingAllocator *allocator = new CachingAllocator(
      [](size_t bytes) -> void * {
        const DriverApi *api = driverFor("mgpuMemAlloc");
        CUdeviceptr ptr = 0;
        if (!api || api->memAlloc(&ptr, bytes) != CUDA_SUCCESS)
          return nullptr;
        return reinterpret_cast<void *>(ptr);
      },
      [](void *ptr) {
        if (const DriverApi *api = getDriver())
          api->memFree(reinterpret_cast<CUdeviceptr>(ptr));
      });
  return *allocator;
}

void *loadModule(void *data, const char *entry) {
  const DriverApi *api = driverFor(entry);
  CUmodule module = nullptr;
  if (api)
    check(*api, api->moduleLoadData(&module, data), entry, "cuModuleLoadData");
  return module;
}

} // namespace

extern "C" void *mgpuModuleLoad(void *data, size_t) {
  return loadModule(data, "mgpuModuleLoad");
}

extern "C" void *mgpuModuleLoadJIT(void *data, int) {
  // PTX text: cuModuleLoadData JIT-compiles it for the device.
  return loadModule(data, "mgpuModuleLoadJIT");
}

extern "C" void mgpuModuleUnload(void *module) {
  // A module that never loaded (no device) needs no driver.
  if (!module)
    return;
  if (const DriverApi *api = driverFor("mgpuModuleUnload"))
    check(*api, api->moduleUnload(static_cast<CUmodule>(module)),
          "mgpuModuleUnload", "cuModuleUnload");
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  const DriverApi *api = driverFor("mgpuModuleGetFunction");
  CUfunction function = nullptr;
  if (api && module &&
      !check(*api,
             api->moduleGetFunction(&function, static_cast<CUmodule>(module),
                                    name),
             "mgpuModuleGetFunction", "cuModuleGetFunction"))
    recordError(std::string("mgpuModuleGetFunction: no kernel ") + name);
  return function;
}

extern "C" void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ, int32_t smem,
                                 void *stream, void **params, void **extra,
                                 size_t) {
  const DriverApi *api = driverFor("mgpuLaunchKernel");
  if (!api || !function)
    return;
  check(*api,
        api->launchKernel(static_cast<CUfunction>(function), gridX, gridY,
                          gridZ, blockX, blockY, blockZ, smem,
                          static_cast<CUstream>(stream), params, extra),
        "mgpuLaunchKernel", "cuLaunchKernel");
}

void *amp::cuda::getStream() {
  static std::mutex mutex;
  static CUstream stream = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!stream) {
    const DriverApi *api = driverFor("mgpuStreamCreate");
    if (api)
      check(*api, api->streamCreate(&stream, CU_STREAM_NON_BLOCKING),
            "mgpuStreamCreate", "cuStreamCreate");
  }
  return stream;
}

extern "C" void *mgpuStreamCreate() { return failed() ? nullptr : getStream(); }

extern "C" void mgpuStreamDestroy(void *) {
  // The runtime's one stream lives as long as the process.
}

extern "C" void mgpuStreamSynchronize(void *stream) {
  if (const DriverApi *api = driverFor("mgpuStreamSynchronize"))
    check(*api, api->streamSynchronize(static_cast<CUstream>(stream)),
          "mgpuStreamSynchronize", "cuStreamSynchronize");
  // A collective the watchdog gave up on ends the job from here.
  checkCollectives();
}

extern "C" void *mgpuMemAlloc(uint64_t bytes, void *, bool isHostShared) {
  if (isHostShared) {
    recordError("mgpuMemAlloc: host-shared allocations are not supported");
    return nullptr;
  }
  if (failed())
    return nullptr;
  void *ptr = deviceAllocator().allocate(bytes);
  if (!ptr)
    recordError("mgpuMemAlloc: out of device memory allocating " +
                std::to_string(bytes) + " bytes");
  return ptr;
}

extern "C" void mgpuMemFree(void *ptr, void *) {
  deviceAllocator().release(ptr);
}

extern "C" void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  if (const DriverApi *api = driverFor("mgpuMemcpy"))
    check(*api,
          api->memcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                           reinterpret_cast<CUdeviceptr>(src), bytes,
                           static_cast<CUstream>(stream)),
          "mgpuMemcpy", "cuMemcpyAsync");
}

extern "C" void mgpuMemset32(void *dst, unsigned int value, size_t count,
                             void *stream) {
  if (const DriverApi *api = driverFor("mgpuMemset32"))
    check(*api,
          api->memsetD32Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                              static_cast<CUstream>(stream)),
          "mgpuMemset32", "cuMemsetD32Async");
}

extern "C" void mgpuMemset16(void *dst, unsigned short value, size_t count,
                             void *stream) {
  if (const DriverApi *api = driverFor("mgpuMemset16"))
    check(*api,
          api->memsetD16Async(reinterpret_cast<CUdeviceptr>(dst), value, count,
                              static_cast<CUstream>(stream)),
          "mgpuMemset16", "cuMemsetD16Async");
}

void amp::cuda::recordRuntimeError(const std::string &message) {
  ErrorState &errors = errorState();
  std::lock_guard<std::mutex> lock(errors.mutex);
  if (errors.first.empty())
    errors.first = message;
}

extern "C" int amp_cuda_take_error(char *buffer, size_t size) {
  ErrorState &errors = errorState();
  std::lock_guard<std::mutex> lock(errors.mutex);
  if (errors.first.empty())
    return 0;
  if (buffer && size) {
    size_t n = std::min(size - 1, errors.first.size());
    std::memcpy(buffer, errors.first.data(), n);
    buffer[n] = '\0';
  }
  errors.first.clear();
  return 1;
}

extern "C" void amp_cuda_memory_stats(uint64_t *stats) {
  const CachingAllocator &a = deviceAllocator();
  stats[0] = a.bytesInUse();
  stats[1] = a.peakBytesInUse();
  stats[2] = a.bytesInUse() + a.bytesCached();
  stats[3] = a.peakBytesHeld();
}

size_t amp::getCudaPeakBytesHeld() { return deviceAllocator().peakBytesHeld(); }

std::vector<std::pair<const char *, void *>> amp::getCudaRuntimeSymbols() {
#define AMP_SYMBOL(name)                                                       \
  { #name, reinterpret_cast < void *>(&name) }
  return {AMP_SYMBOL(mgpuModuleLoad),       AMP_SYMBOL(mgpuModuleLoadJIT),
          AMP_SYMBOL(mgpuModuleUnload),     AMP_SYMBOL(mgpuModuleGetFunction),
          AMP_SYMBOL(mgpuLaunchKernel),     AMP_SYMBOL(mgpuStreamCreate),
          AMP_SYMBOL(mgpuStreamDestroy),    AMP_SYMBOL(mgpuStreamSynchronize),
          AMP_SYMBOL(mgpuMemAlloc),         AMP_SYMBOL(mgpuMemFree),
          AMP_SYMBOL(mgpuMemcpy),           AMP_SYMBOL(mgpuMemset32),
          AMP_SYMBOL(mgpuMemset16),         AMP_SYMBOL(amp_cuda_take_error),
          AMP_SYMBOL(amp_cuda_memory_stats)};
#undef AMP_SYMBOL
}
