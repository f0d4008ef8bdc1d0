//===- CudaRuntime.h - Entry points of compiled CUDA steps ------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The functions MLIR 22's GPU lowering calls from host code (gpu-to-llvm and
// the translation of gpu.launch_func): Debian ships no
// libmlir_cuda_runtime.so, so amp provides them, on the driver loaded at run
// time (CudaDriver.h) and a caching device allocator. Signatures are those
// the lowering emits (checked by test/Conversion lit tests of the lowered
// host code). They cannot return errors: the first failure is recorded and
// later calls do nothing until the host takes it with amp_cuda_take_error().
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_CUDARUNTIME_H
#define AMP_RUNTIME_CUDARUNTIME_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

extern "C" {
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleLoadJIT(void *data, int optLevel);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamDestroy(void *stream);
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemset16(void *dst, unsigned short value, size_t count, void *stream);

/// Copies the first recorded failure ("mgpuLaunchKernel: cuLaunchKernel
/// failed with CUDA_ERROR_...") into `buffer` (NUL-terminated, truncated to
/// `size`), clears it and returns 1; returns 0 when nothing failed.
int amp_cuda_take_error(char *buffer, size_t size);

/// The device allocator's bytes: stats[0] in use now, [1] the most in use
/// at once, [2] held now (in use + cached free blocks), [3] the most held.
void amp_cuda_memory_stats(uint64_t *stats);
}

namespace amp {

/// The entry points by symbol name, for a JIT to resolve.
std::vector<std::pair<const char *, void *>> getCudaRuntimeSymbols();

namespace cuda {
struct DriverApi;

/// The driver with its device's context current on this thread, or null
/// (error recorded, naming `entry`) when there is none or an earlier call
/// failed.
const DriverApi *driverFor(const char *entry);

/// The one stream a compiled step runs on: created on first use, returned by
/// every mgpuStreamCreate (whose mgpuStreamDestroy then does nothing), and
/// used by the cuBLASLt calls, so kernels and GEMMs run in program order with
/// no synchronization between them. Null (error recorded) without a device.
void *getStream();

/// Records `message` as the runtime's first failure (ignored when one is
/// already recorded: later failures are usually its consequences).
void recordRuntimeError(const std::string &message);

/// Whether a failure is recorded.
bool hasRuntimeError();

/// A data-parallel step's NCCL collectives that failed or missed their
/// deadline (found by the collectives' watchdog thread): reports them,
/// naming the rank waited for when the job's communicator can tell, and
/// ends the job. Called on the step's thread wherever the runtime waits for
/// the stream; returns when nothing failed.
void checkCollectives();
} // namespace cuda

/// Device memory the runtime holds (in use + cached) at most, in bytes.
size_t getCudaPeakBytesHeld();

} // namespace amp

#endif // AMP_RUNTIME_CUDARUNTIME_H
