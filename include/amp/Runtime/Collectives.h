//===- Collectives.h - The processes a data-parallel step spans -*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A data-parallel step (amp-data-parallel) combines values across processes
// through `amp_cpu_all_reduce`, which calls the communicator the driver
// installed: MPI between processes (MpiCommunicator.h), or a test's own.
// The runtime itself links no communication library. On the GPU,
// `amp_cuda_all_reduce` runs NCCL, started over this communicator
// (CudaCollectives.h).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_COLLECTIVES_H
#define AMP_RUNTIME_COLLECTIVES_H

#include "amp/ABI/Collectives.h"
#include "amp/ABI/ElementTypes.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace amp {

/// The processes (ranks) of one data-parallel job. (Defined in this header
/// alone: the CPU and CUDA runtimes both call it, neither owns it.)
class Communicator {
public:
  virtual ~Communicator() = default;
  /// This process's rank, 0 .. size() - 1.
  virtual int rank() const = 0;
  /// The number of ranks.
  virtual int size() const = 0;
  /// Writes to `out` the element-wise combination of every rank's `count`
  /// values at `in`, the same bits on every rank. f16 and bf16 are summed in
  /// f32 and rounded to their type at each combination; f64 (batch-norm
  /// statistics) is summed as f64. `in` and `out` do
  /// not overlap. Returns an empty string, or what went wrong.
  virtual std::string allReduce(const void *in, void *out, int64_t count,
                                RuntimeDType type, CollectiveOp op) = 0;
  /// Copies rank `root`'s `bytes` bytes at `data` to every rank's `data`.
  virtual std::string broadcast(void *data, int64_t bytes, int root) = 0;
  /// From now on a collective still waiting at `deadline` gives up and
  /// returns an error naming what was running (`what`, e.g. "step 5") and
  /// the ranks it waits for; time_point::max(): wait for ever (the
  /// default). Communicators that cannot tell ignore it. After such an
  /// error the collective is still under way in MPI, on the caller's
  /// buffers, and the ranks are out of step: the caller must end the job
  /// (abort), not use the communicator again.
  virtual void setDeadline(std::chrono::steady_clock::time_point deadline,
                           const std::string &what) {}
  /// The deadline setDeadline set (time_point::max() for none, and from
  /// communicators that ignore it), with its `what`. The CUDA runtime's
  /// collectives run asynchronously on NCCL and hold themselves to it.
  virtual std::chrono::steady_clock::time_point
  getDeadline(std::string *what) const {
    return std::chrono::steady_clock::time_point::max();
  }
  /// Ends every rank of the job with exit status `code` (a rank that stops
  /// alone would leave the others waiting in a collective). The default
  /// ends this process only.
  [[noreturn]] virtual void abort(int code) { std::_Exit(code); }
};

/// The layout of Communicator an artifact's runtime and the MPI plugin must
/// share (the object crosses shared objects of possibly different builds):
/// bump it whenever Communicator's virtual functions change.
constexpr int64_t kCommunicatorAbi = 2;

/// `communicator`'s deadline, `seconds` from construction, until
/// destruction (nothing for a null communicator or `seconds` <= 0).
class ScopedDeadline {
public:
  ScopedDeadline(Communicator *communicator, double seconds,
                 const std::string &what)
      : communicator(seconds > 0 ? communicator : nullptr) {
    if (this->communicator)
      this->communicator->setDeadline(
          std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(seconds)),
          what);
  }
  ~ScopedDeadline() {
    if (communicator)
      communicator->setDeadline(std::chrono::steady_clock::time_point::max(),
                                "");
  }
  ScopedDeadline(const ScopedDeadline &) = delete;
  ScopedDeadline &operator=(const ScopedDeadline &) = delete;

private:
  Communicator *communicator;
};

/// Installs the communicator compiled steps' collectives use (null: none).
/// Not owned; it must outlive every step that runs while it is installed.
void setCommunicator(Communicator *communicator);

/// The installed communicator, or null.
Communicator *getCommunicator();

} // namespace amp

extern "C" {
/// train.all_reduce's call: `count` values of element type `dtype`
/// (amp::RuntimeDType) at `in`, combined with `op` (amp::CollectiveOp)
/// across the ranks of the installed communicator into `out`; the step was
/// compiled for `ranks` ranks. Without a communicator, with one of another
/// size, or when the communication fails, prints what happened and aborts
/// the process (under mpirun, that ends the job).
void amp_cpu_all_reduce(intptr_t in, intptr_t out, int64_t dtype, int64_t op,
                        int64_t count, int64_t ranks);

/// amp::setCommunicator under a name a loader finds with dlsym: an artifact
/// links its own copy of the runtime, whose communicator the process
/// installs through this entry point.
void amp_cpu_set_communicator(amp::Communicator *communicator);

/// amp::kCommunicatorAbi of this runtime: a loader installs a communicator
/// only in a runtime of its own layout.
int64_t amp_cpu_communicator_abi(void);
}

#endif // AMP_RUNTIME_COLLECTIVES_H
