//===- FakeNccl.cpp - A stand-in libnccl for runtime tests ----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Exports the NCCL entry points amp's CUDA runtime loads, for its host logic
// on a machine without a GPU (device memory is the fake driver's host
// memory). Each process is one rank whose peers hold the same values: a sum
// over N ranks is N times the input, a max is the input. Communicators are
// non-blocking when asked (their calls return ncclInProgress once).
// AMP_FAKE_NCCL_MODE: "init-error" fails ncclCommInitRankConfig, "async-error"
// makes the communicator report ncclRemoteError after its first all-reduce.
// ncclCommAbort releases the fake driver's stream (its mode "hang").
// With AMP_FAKE_NCCL_TRACE set, calls are printed on stderr
// ("fake-nccl: init rank R of N id ID", "fake-nccl: all-reduce COUNT type T
// op O", "fake-nccl: abort", "fake-nccl: destroy").
//
//===----------------------------------------------------------------------===//

#include "FakeNccl.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>

struct ncclComm {
  int ranks, rank;
  bool blocking;
  ncclResult_t state;
  int allReduces;
};

namespace {
std::string mode() {
  const char *m = std::getenv("AMP_FAKE_NCCL_MODE");
  return m ? m : "";
}
bool tracing() { return std::getenv("AMP_FAKE_NCCL_TRACE") != nullptr; }

FakeNcclRecord record;

/// The communicator state a non-blocking call leaves: in progress until the
/// next ncclCommGetAsyncError.
ncclResult_t started(ncclComm *comm) {
  if (comm->blocking)
    return ncclSuccess;
  comm->state = ncclInProgress;
  return ncclInProgress;
}

template <typename T> void scale(void *out, const void *in, size_t n, T by) {
  const T *x = static_cast<const T *>(in);
  T *y = static_cast<T *>(out);
  for (size_t i = 0; i < n; ++i)
    y[i] = x[i] * by;
}
} // namespace

extern "C" {
#define FAKE_EXPORT __attribute__((visibility("default")))
FAKE_EXPORT ncclResult_t ncclGetVersion(int *version) {
  *version = 22809;
  return ncclSuccess;
}
FAKE_EXPORT const char *ncclGetErrorString(ncclResult_t r) {
  return r == ncclRemoteError ? "remote process exited or there was a network "
                                "error"
         : r == ncclSystemError ? "unhandled system error"
                                : "fake";
}
FAKE_EXPORT const char *ncclGetLastError(ncclComm_t) {
  return mode() == "async-error" ? "fake peer went away" : "";
}
FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  std::memset(id->internal, 0, sizeof(id->internal));
  std::snprintf(id->internal, sizeof(id->internal), "fake-id-%d",
                int(getpid()));
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int ranks,
                                                ncclUniqueId id, int rank,
                                                ncclConfig_t *config) {
  std::memcpy(record.id, id.internal, sizeof(record.id));
  record.ranks = ranks;
  record.rank = rank;
  record.blocking = config->blocking;
  if (tracing())
    std::fprintf(stderr, "fake-nccl: init rank %d of %d id %.32s\n", rank,
                 ranks, id.internal);
  if (mode() == "init-error")
    return ncclSystemError;
  *comm = new ncclComm{ranks, rank, config->blocking != 0, ncclSuccess, 0};
  return started(*comm);
}
FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm,
                                               ncclResult_t *state) {
  if (comm->state == ncclInProgress)
    comm->state = ncclSuccess;
  else if (mode() == "async-error" && comm->allReduces > 0)
    comm->state = ncclRemoteError;
  *state = comm->state;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  ++record.aborts;
  if (tracing())
    std::fprintf(stderr, "fake-nccl: abort\n");
  // NCCL's kernels end: the fake driver's stream (mode "hang") drains.
  if (const char *driver = std::getenv("AMP_CUDA_DRIVER"))
    if (void *handle = dlopen(driver, RTLD_NOW | RTLD_NOLOAD))
      if (auto release =
              reinterpret_cast<void (*)()>(dlsym(handle, "fakeCudaRelease")))
        release();
  delete comm;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return started(comm);
}
FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  ++record.destroys;
  if (tracing())
    std::fprintf(stderr, "fake-nccl: destroy\n");
  delete comm;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclAllReduce(const void *in, void *out, size_t count,
                                       ncclDataType_t type, ncclRedOp_t op,
                                       ncclComm_t comm, cudaStream_t stream) {
  record.in = in;
  record.out = out;
  record.count = count;
  record.type = type;
  record.op = op;
  record.stream = stream;
  ++comm->allReduces;
  ++record.allReduces;
  if (tracing())
    std::fprintf(stderr, "fake-nccl: all-reduce %zu type %d op %d\n", count,
                 int(type), int(op));
  int by = op == ncclSum ? comm->ranks : 1;
  switch (type) {
  case ncclFloat32:
    scale<float>(out, in, count, float(by));
    break;
  case ncclFloat64:
    scale<double>(out, in, count, double(by));
    break;
  default: // 16-bit values are copied (the tests sum f32 and f64).
    std::memmove(out, in, count * 2);
  }
  return started(comm);
}
/// Test hooks: the last calls' arguments, and forgetting them.
FAKE_EXPORT const void *fakeNcclRecord() { return &record; }
FAKE_EXPORT void fakeNcclReset() { record = FakeNcclRecord(); }
}
