//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp never links libcuda: the driver is opened with dlopen the first time a
// CUDA entry point needs it, so every CUDA-enabled binary builds, starts and
// reports a clear error on a machine without a GPU or driver. No MLIR or LLVM
// dependency (the runtime travels to GPU machines without them).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_CUDADRIVER_H
#define AMP_RUNTIME_CUDADRIVER_H

#include <cuda.h>

#include <memory>
#include <string>

namespace amp {
namespace cuda {

/// The driver entry points amp uses. Members are named without the `cu`
/// prefix because cuda.h maps many cu* names to versioned symbols with
/// macros; the symbol each is loaded from is spelled out (the _v2 ABI with
/// 64-bit sizes where one exists).
struct DriverApi {
#define AMP_CUDA_DRIVER_FUNCTIONS(X)                                           \
  X(init, "cuInit", CUresult, unsigned int)                                    \
  X(getErrorName, "cuGetErrorName", CUresult, CUresult, const char **)         \
  X(deviceGetCount, "cuDeviceGetCount", CUresult, int *)                       \
  X(deviceGet, "cuDeviceGet", CUresult, CUdevice *, int)                       \
  X(deviceGetName, "cuDeviceGetName", CUresult, char *, int, CUdevice)         \
  X(primaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, CUcontext *,       \
    CUdevice)                                                                  \
  X(ctxPushCurrent, "cuCtxPushCurrent_v2", CUresult, CUcontext)                \
  X(ctxPopCurrent, "cuCtxPopCurrent_v2", CUresult, CUcontext *)                \
  X(moduleLoadData, "cuModuleLoadData", CUresult, CUmodule *, const void *)    \
  X(moduleUnload, "cuModuleUnload", CUresult, CUmodule)                        \
  X(moduleGetFunction, "cuModuleGetFunction", CUresult, CUfunction *,          \
    CUmodule, const char *)                                                    \
  X(launchKernel, "cuLaunchKernel", CUresult, CUfunction, unsigned, unsigned,  \
    unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **,       \
    void **)                                                                   \
  X(streamCreate, "cuStreamCreate", CUresult, CUstream *, unsigned int)        \
  X(streamDestroy, "cuStreamDestroy_v2", CUresult, CUstream)                   \
  X(streamSynchronize, "cuStreamSynchronize", CUresult, CUstream)              \
  X(memAlloc, "cuMemAlloc_v2", CUresult, CUdeviceptr *, size_t)                \
  X(memFree, "cuMemFree_v2", CUresult, CUdeviceptr)                            \
  X(memcpyAsync, "cuMemcpyAsync", CUresult, CUdeviceptr, CUdeviceptr, size_t,  \
    CUstream)                                                                  \
  X(memsetD32Async, "cuMemsetD32Async", CUresult, CUdeviceptr, unsigned int,   \
    size_t, CUstream)                                                          \
  X(memsetD16Async, "cuMemsetD16Async", CUresult, CUdeviceptr, unsigned short, \
    size_t, CUstream)                                                          \
  X(eventCreate, "cuEventCreate", CUresult, CUevent *, unsigned int)           \
  X(eventRecord, "cuEventRecord", CUresult, CUevent, CUstream)                 \
  X(eventSynchronize, "cuEventSynchronize", CUresult, CUevent)                 \
  X(eventQuery, "cuEventQuery", CUresult, CUevent)                             \
  X(eventElapsedTime, "cuEventElapsedTime_v2", CUresult, float *, CUevent,     \
    CUevent)                                                                   \
  X(eventDestroy, "cuEventDestroy_v2", CUresult, CUevent)

#define AMP_CUDA_DECLARE(member, symbol, ret, ...)                             \
  ret (*member)(__VA_ARGS__) = nullptr;
  AMP_CUDA_DRIVER_FUNCTIONS(AMP_CUDA_DECLARE)
#undef AMP_CUDA_DECLARE

  /// The device the runtime uses (deviceOrdinal) and its primary context.
  CUdevice device = 0;
  CUcontext context = nullptr;
};

/// The device a process uses among the driver's `count`: the ordinal
/// AMP_CUDA_DEVICE names, else the process's local rank when a launcher
/// (mpirun, srun, torchrun) started it and more than one device is visible
/// (one GPU per rank), else 0; -1 with `error` set when that device does
/// not exist.
int deviceOrdinal(int count, std::string &error);

/// Opens the driver library `path`, resolves every entry point, initializes
/// it and retains the primary context of the device deviceOrdinal chooses. Null with `error` set to
/// "no CUDA device: <why>" when any of that fails. Not cached.
std::unique_ptr<DriverApi> loadDriver(const std::string &path,
                                      std::string *error);

/// The process's driver: loadDriver of `libcuda.so.1` (or of the library the
/// AMP_CUDA_DRIVER environment variable names), once.
const DriverApi *getDriver(std::string *error = nullptr);

/// "CUDA_ERROR_NO_DEVICE" for a CUresult, "CUresult <n>" when the driver
/// cannot name it.
std::string errorName(const DriverApi &api, CUresult result);

} // namespace cuda
} // namespace amp

#endif // AMP_RUNTIME_CUDADRIVER_H
