//===- CudaCollectives.h - Data-parallel steps on NCCL ----------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A data-parallel CUDA step combines its gradient buckets (and SyncBatchNorm's
// statistics) across the ranks with ncclAllReduce on the step's stream, so a
// bucket's reduction runs while the GPU computes the earlier layers'
// gradients. NCCL is started over the job's Communicator (MPI): rank 0's
// ncclUniqueId is broadcast through it, the NCCL communicator is
// non-blocking and polled with ncclCommGetAsyncError, and a watchdog thread
// holds every collective to the communicator's deadline (--dp-timeout).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_CUDACOLLECTIVES_H
#define AMP_RUNTIME_CUDACOLLECTIVES_H

#include "amp/Runtime/Collectives.h"

#include <cstdint>

extern "C" {
/// Installs the job's communicator in this CUDA runtime and starts NCCL
/// over it on the runtime's device (a collective call: every rank makes it);
/// null stops NCCL and uninstalls. Failures are recorded as the runtime's
/// (amp_cuda_take_error) after every rank has agreed that one happened, so
/// no rank is left waiting in NCCL's start.
void amp_cuda_set_communicator(amp::Communicator *communicator);

/// amp::kCommunicatorAbi of this runtime (see amp_cpu_communicator_abi).
int64_t amp_cuda_communicator_abi(void);

/// train.all_reduce's call on the GPU: `count` values of element type
/// `dtype` (amp::RuntimeDType) at device address `in`, combined with `op`
/// (amp::CollectiveOp) across the ranks into `out`, enqueued on the step's
/// stream; the step was compiled for `ranks` ranks. Errors are recorded.
void amp_cuda_all_reduce(intptr_t in, intptr_t out, int64_t dtype, int64_t op,
                         int64_t count, int64_t ranks);
}

#endif // AMP_RUNTIME_CUDACOLLECTIVES_H
