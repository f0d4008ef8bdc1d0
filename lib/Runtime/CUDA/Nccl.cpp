//===- Nccl.cpp - NCCL, loaded at run time --------------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Nccl.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>

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

std::unique_ptr<NcclApi> amp::cuda::loadNccl(const std::string &path,
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
    error = "NCCL " + path +                                                   \
            " has no " symbol " (NCCL 2.18 or later is "                       \
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
  const char *named = std::getenv("AMP_NCCL_LIBRARY");
  std::string path = named && *named ? named : "libnccl.so.2";
  // Each library once, never destroyed (like the driver); the error of one
  // that did not load is kept too.
  static std::mutex mutex;
  static auto *loaded =
      new std::map<std::string, std::pair<const NcclApi *, std::string>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = loaded->try_emplace(path);
  if (inserted)
    it->second.first = loadNccl(path, it->second.second).release();
  if (!it->second.first && error)
    *error = it->second.second;
  return it->second.first;
}
