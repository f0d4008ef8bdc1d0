//===- Collectives.cpp - Compiled steps' all-reduce -----------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Collectives.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

using namespace amp;

namespace {
std::atomic<Communicator *> installed{nullptr};
} // namespace

void amp::setCommunicator(Communicator *communicator) {
  installed.store(communicator);
}

Communicator *amp::getCommunicator() { return installed.load(); }

extern "C" void amp_cpu_set_communicator(Communicator *communicator) {
  setCommunicator(communicator);
}

extern "C" int64_t amp_cpu_communicator_abi(void) { return kCommunicatorAbi; }

extern "C" void amp_cpu_all_reduce(intptr_t in, intptr_t out, int64_t dtype,
                                   int64_t op, int64_t count, int64_t ranks) {
  Communicator *communicator = getCommunicator();
  if (!communicator) {
    std::fprintf(stderr,
                 "amp runtime: a data-parallel step (train.all_reduce) ran "
                 "without a communicator; run it with --data-parallel under "
                 "mpirun (amp-run, amp-train)\n");
    std::abort();
  }
  // Only compiled code calls in, with codes the lowering wrote.
  if (dtype < int64_t(RuntimeDType::F32) ||
      dtype > int64_t(RuntimeDType::F64) ||
      (op != int64_t(CollectiveOp::Sum) && op != int64_t(CollectiveOp::Max)) ||
      count < 0) {
    std::fprintf(stderr,
                 "amp runtime: amp_cpu_all_reduce called with element type "
                 "%lld, op %lld, count %lld\n",
                 static_cast<long long>(dtype), static_cast<long long>(op),
                 static_cast<long long>(count));
    std::abort();
  }
  if (ranks != communicator->size()) {
    std::fprintf(stderr,
                 "amp runtime: rank %d: the step was compiled for %lld ranks, "
                 "but the job has %d (compile it with amp-data-parallel's "
                 "ranks=%d)\n",
                 communicator->rank(), static_cast<long long>(ranks),
                 communicator->size(), communicator->size());
    std::abort();
  }
  std::string error = communicator->allReduce(
      reinterpret_cast<const void *>(in), reinterpret_cast<void *>(out), count,
      RuntimeDType(dtype), CollectiveOp(op));
  if (!error.empty()) {
    std::fprintf(stderr,
                 "amp runtime: rank %d of %d: all-reduce of %lld "
                 "values failed: %s; ending the job\n",
                 communicator->rank(), communicator->size(),
                 static_cast<long long>(count), error.c_str());
    // Every rank, not only this one (under mpirun: MPI_Abort).
    communicator->abort(1);
  }
}
