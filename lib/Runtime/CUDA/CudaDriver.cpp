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

int amp::cuda::deviceOrdinal(int count, std::string &error) {
  auto parse = [](const char *text) {
    char *end = nullptr;
    long value = text && *text ? std::strtol(text, &end, 10) : -1;
    return end && *end == '\0' && value >= 0 && value < 1 << 20 ? int(value)
                                                                  : -1;
  };
  if (const char *chosen = std::getenv("AMP_CUDA_DEVICE")) {
    int ordinal = parse(chosen);
    if (ordinal < 0 || ordinal >= count) {
      error = "AMP_CUDA_DEVICE=" + std::string(chosen) +
              " names no device (the driver reports " + std::to_string(count) +
              ")";
      return -1;
    }
    return ordinal;
  }
  // One GPU per rank of a job on this machine, as NCCL requires: the local
  // rank of OpenMPI, MPICH, Slurm or torchrun.
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char *text = std::getenv(name);
    if (!text)
      continue;
    int local = parse(text);
    if (local < 0) {
      error = std::string(name) + "=" + text + " is not a local rank";
      return -1;
    }
    // One device visible (CUDA_VISIBLE_DEVICES set per rank): that one.
    if (count == 1)
      return 0;
    if (local >= count) {
      error = "this is local rank " + std::to_string(local) + " (" + name +
              ") on a machine whose driver reports " + std::to_string(count) +
              " devices: a data-parallel job runs one rank per GPU (start fewer "
              "ranks per machine, or choose one with AMP_CUDA_DEVICE)";
      return -1;
    }
    return local;
  }
  return 0;
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
  std::string why;
  int ordinal = deviceOrdinal(count, why);
  if (ordinal < 0)
    return fail(why);
  if (CUresult r = api->deviceGet(&api->device, ordinal))
    return fail("cuDeviceGet(" + std::to_string(ordinal) + ") failed with " +
                errorName(*api, r));
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
