//===- Nccl.h - NCCL, loaded at run time ------------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CUDA runtime's collectives run on NCCL, opened with dlopen the first
// time a data-parallel step needs it (as the driver is: CudaDriver.h), so a
// CUDA artifact builds and starts where NCCL is absent and says so when a
// data-parallel step runs there. No MLIR or LLVM dependency.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_NCCL_H
#define AMP_RUNTIME_NCCL_H

#include <nccl.h>

#include <memory>
#include <string>

namespace amp {
namespace cuda {

/// The NCCL entry points amp uses, resolved by their unversioned names.
struct NcclApi {
#define AMP_NCCL_FUNCTIONS(X)                                                  \
  X(getVersion, "ncclGetVersion", ncclResult_t, int *)                         \
  X(getErrorString, "ncclGetErrorString", const char *, ncclResult_t)          \
  X(getLastError, "ncclGetLastError", const char *, ncclComm_t)                \
  X(getUniqueId, "ncclGetUniqueId", ncclResult_t, ncclUniqueId *)              \
  X(commInitRankConfig, "ncclCommInitRankConfig", ncclResult_t, ncclComm_t *,  \
    int, ncclUniqueId, int, ncclConfig_t *)                                    \
  X(commGetAsyncError, "ncclCommGetAsyncError", ncclResult_t, ncclComm_t,      \
    ncclResult_t *)                                                            \
  X(commAbort, "ncclCommAbort", ncclResult_t, ncclComm_t)                      \
  X(commFinalize, "ncclCommFinalize", ncclResult_t, ncclComm_t)                \
  X(commDestroy, "ncclCommDestroy", ncclResult_t, ncclComm_t)                  \
  X(allReduce, "ncclAllReduce", ncclResult_t, const void *, void *, size_t,    \
    ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)

#define AMP_NCCL_DECLARE(member, symbol, ret, ...)                             \
  ret (*member)(__VA_ARGS__) = nullptr;
  AMP_NCCL_FUNCTIONS(AMP_NCCL_DECLARE)
#undef AMP_NCCL_DECLARE

  /// ncclGetVersion's code, e.g. 22809 for 2.28.9.
  int version = 0;
};

/// Opens the NCCL library `path` and resolves every entry point; null with
/// `error` set when it cannot. Not cached.
std::unique_ptr<NcclApi> loadNccl(const std::string &path, std::string &error);

/// The process's NCCL: `libnccl.so.2`, or the library the AMP_NCCL_LIBRARY
/// environment variable names, loadNccl'ed once per library.
const NcclApi *getNccl(std::string *error = nullptr);

/// "ncclSystemError (<NCCL's explanation>)" for a result.
std::string ncclErrorName(const NcclApi &api, ncclResult_t result);

} // namespace cuda
} // namespace amp

#endif // AMP_RUNTIME_NCCL_H
