//===- Nccl.cpp - NCCL, loaded at run time --------------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Nccl.h"

#include <cstdlib>
#include <dlfcn.h>
#include <memory>

using namespace amp::cuda;

std::string amp::cuda::ncclErrorName(const NcclApi &api, ncclResult_t result) {
  static const char *const names[] = {
      "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
      "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
      "ncclRemoteError",   "ncclInProgress"};
  std::string name = unsigned(result) < sizeof(names) / sizeof(names[0])
                         ? names[result]
                         : "ncclResult " + std::to_string(int(result));
  if (api.getErrorString)
    if (const char *text = api.getErrorString(result))
      name += std::string(" (") + text + ")";
  return name;
}

static std::unique_ptr<NcclApi> loadNccl(const std::string &path,
                                         std::string &error) {
  // Never closed: the communicator lives as long as the process.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    error = "cannot load NCCL " + path + " (" + (why ? why : "unknown reason") +
            "; it ships with the CUDA toolkit as libnccl.so.2)";
    return nullptr;
  }
  auto api = std::make_unique<NcclApi>();
#define AMP_NCCL_RESOLVE(member, symbol, ret, ...)                             \
  api->member =                                                                \
      reinterpret_cast<ret (*)(__VA_ARGS__)>(dlsym(library, symbol));          \
  if (!api->member) {                                                          \
    error = "NCCL " + path + " has no " symbol " (NCCL 2.18 or later is "      \
            "needed)";                                                         \
    return nullptr;                                                            \
  }
  AMP_NCCL_FUNCTIONS(AMP_NCCL_RESOLVE)
#undef AMP_NCCL_RESOLVE
  if (ncclResult_t r = api->getVersion(&api->version)) {
    error = "ncclGetVersion failed with " + ncclErrorName(*api, r);
    return nullptr;
  }
  return api;
}

const NcclApi *amp::cuda::getNccl(std::string *error) {
  // Never destroyed, like the driver.
  static std::string *loadError = new std::string;
  static const NcclApi *nccl = [] {
    const char *path = std::getenv("AMP_NCCL_LIBRARY");
    return loadNccl(path && *path ? path : "libnccl.so.2", *loadError)
        .release();
  }();
  if (!nccl && error)
    *error = *loadError;
  return nccl;
}
