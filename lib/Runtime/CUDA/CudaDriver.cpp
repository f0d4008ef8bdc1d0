//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>

using namespace amp::cuda;

std::string amp::cuda::errorName(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  if (api.getErrorName && api.getErrorName(result, &name) == CUDA_SUCCESS &&
      name)
    return name;
  return "CUresult " + std::to_string(int(result));
}

std::unique_ptr<DriverApi> amp::cuda::loadDriver(const std::string &path,
                                                 std::string *error) {
  auto fail = [&](const std::string &why) -> std::unique_ptr<DriverApi> {
    if (error)
      *error = "no CUDA device: " + why;
    return nullptr;
  };
  // The handle is never closed: the entry points stay valid for the process.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    return fail("cannot load the CUDA driver " + path + " (" +
                (why ? why : "unknown reason") + ")");
  }
  auto api = std::make_unique<DriverApi>();
#define AMP_CUDA_RESOLVE(member, symbol, ret, ...)                             \
  api->member =                                                                \
      reinterpret_cast<ret (*)(__VA_ARGS__)>(dlsym(library, symbol));          \
  if (!api->member)                                                            \
    return fail("the CUDA driver " + path +                                    \
                " has no " symbol " (a driver older than CUDA 12?)");
  AMP_CUDA_DRIVER_FUNCTIONS(AMP_CUDA_RESOLVE)
#undef AMP_CUDA_RESOLVE

  if (CUresult r = api->init(0))
    return fail("cuInit failed with " + errorName(*api, r));
  int count = 0;
  if (CUresult r = api->deviceGetCount(&count))
    return fail("cuDeviceGetCount failed with " + errorName(*api, r));
  if (count < 1)
    return fail("the CUDA driver reports no devices");
  if (CUresult r = api->deviceGet(&api->device, 0))
    return fail("cuDeviceGet(0) failed with " + errorName(*api, r));
  if (CUresult r = api->primaryCtxRetain(&api->context, api->device))
    return fail("cuDevicePrimaryCtxRetain failed with " + errorName(*api, r));
  return api;
}

const DriverApi *amp::cuda::getDriver(std::string *error) {
  // Never destroyed: a loaded step's module destructors (mgpuModuleUnload)
  // run at exit, after the destructors of function-local statics.
  static std::string *loadError = new std::string;
  static const DriverApi *driver = [] {
    const char *path = std::getenv("AMP_CUDA_DRIVER");
    return loadDriver(path && *path ? path : "libcuda.so.1", loadError)
        .release();
  }();
  if (!driver && error)
    *error = *loadError;
  return driver;
}
