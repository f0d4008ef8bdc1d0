//===- FakeCudaDriver.cpp - A stand-in libcuda for runtime tests ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Exports the driver entry points amp's CUDA runtime loads, backed by host
// memory, so that the runtime's host logic (loading, error paths, the caching
// allocator, argument packing of launches) runs on a machine without a GPU.
// AMP_FAKE_CUDA_MODE selects cuInit's behaviour: "no-device" fails with
// CUDA_ERROR_NO_DEVICE, "zero" reports no devices, "hang" completes the
// stream's work only when released (below), anything else works; AMP_FAKE_CUDA_DEVICES sets the device count
// (1).
// With AMP_FAKE_CUDA_TRACE set, launches and copies are printed on stderr
// ("fake-cuda: launch NAME", "fake-cuda: memcpy BYTES"), and so is the
// device chosen ("fake-cuda: device N").
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>

namespace {
std::string mode() {
  const char *m = std::getenv("AMP_FAKE_CUDA_MODE");
  return m ? m : "";
}
bool tracing() {
  static bool on = std::getenv("AMP_FAKE_CUDA_TRACE") != nullptr;
  return on;
}
int allocations = 0;
std::atomic<bool> released{false};
struct Launch {
  unsigned grid[3], block[3], smem;
  void **params;
  const char *function;
  const void *module;
} lastLaunch;
const void *lastModule = nullptr;
} // namespace

extern "C" {
#define FAKE_EXPORT __attribute__((visibility("default")))
FAKE_EXPORT CUresult cuInit(unsigned int) {
  return mode() == "no-device" ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGetErrorName(CUresult r, const char **name) {
  *name = r == CUDA_ERROR_NO_DEVICE       ? "CUDA_ERROR_NO_DEVICE"
          : r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
          : r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE"
                                          : nullptr;
  return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
FAKE_EXPORT CUresult cuDeviceGetCount(int *count) {
  const char *devices = std::getenv("AMP_FAKE_CUDA_DEVICES");
  *count = mode() == "zero" ? 0 : devices ? std::atoi(devices) : 1;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  if (tracing())
    std::fprintf(stderr, "fake-cuda: device %d\n", ordinal);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  std::strncpy(name, "fake", len);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  static int context;
  *ctx = reinterpret_cast<CUcontext>(&context);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  *module = reinterpret_cast<CUmodule>(const_cast<void *>(image));
  lastModule = image;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *function, CUmodule,
                                         const char *name) {
  if (std::strcmp(name, "missing") == 0)
    return CUDA_ERROR_NOT_FOUND;
  // The function handle is its name, kept here (the caller's may not live).
  static std::set<std::string> *names = new std::set<std::string>;
  *function = reinterpret_cast<CUfunction>(
      const_cast<char *>(names->insert(name).first->c_str()));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned gx,
                                    unsigned gy, unsigned gz, unsigned bx,
                                    unsigned by, unsigned bz, unsigned smem,
                                    CUstream, void **params, void **) {
  lastLaunch = {{gx, gy, gz},
                {bx, by, bz},
                smem,
                params,
                reinterpret_cast<const char *>(function),
                lastModule};
  if (tracing())
    std::fprintf(stderr, "fake-cuda: launch %s\n",
                 reinterpret_cast<const char *>(function));
  return bx * by * bz > 1024 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  static int s;
  *stream = reinterpret_cast<CUstream>(&s);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream) { return CUDA_SUCCESS; }
// In mode "hang" the stream's work (a collective waiting for a rank that
// does not come) ends only when fakeCudaRelease is called (the fake NCCL's
// ncclCommAbort does), or after 10 s.
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream) {
  if (mode() == "hang")
    for (int i = 0; i < 10000 && !released.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  if (bytes > (size_t(1) << 30))
    return CUDA_ERROR_OUT_OF_MEMORY;
  ++allocations;
  // Zeroed, so that results of kernels that do not run are deterministic.
  *ptr = reinterpret_cast<CUdeviceptr>(std::calloc(1, bytes));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
  std::free(reinterpret_cast<void *>(ptr));
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                                   size_t bytes, CUstream) {
  if (tracing())
    std::fprintf(stderr, "fake-cuda: memcpy %zu\n", bytes);
  std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<void *>(src),
              bytes);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int value,
                                      size_t count, CUstream) {
  auto *p = reinterpret_cast<unsigned int *>(dst);
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value,
                                      size_t count, CUstream) {
  auto *p = reinterpret_cast<unsigned short *>(dst);
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventCreate(CUevent *event, unsigned int) {
  static int e;
  *event = reinterpret_cast<CUevent>(&e);
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
FAKE_EXPORT CUresult cuEventQuery(CUevent) {
  return mode() == "hang" && !released.load() ? CUDA_ERROR_NOT_READY
                                              : CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 0.0f;
  return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent) { return CUDA_SUCCESS; }
/// Test hooks.
FAKE_EXPORT void fakeCudaRelease() { released.store(true); }
FAKE_EXPORT int fakeAllocations() { return allocations; }
FAKE_EXPORT const void *fakeLastLaunch() { return &lastLaunch; }
}
