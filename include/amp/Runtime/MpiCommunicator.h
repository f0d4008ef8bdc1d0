//===- MpiCommunicator.h - Ranks of an mpirun job ----------------*- C++
//-*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_MPICOMMUNICATOR_H
#define AMP_RUNTIME_MPICOMMUNICATOR_H

#include "amp/Runtime/Collectives.h"

#include <memory>
#include <set>
#include <string>

namespace amp {

/// The processes of an `mpirun` job (MPI_COMM_WORLD). The first one made
/// initializes MPI (MPI_THREAD_FUNNELED: collectives come from the thread
/// that runs the step) and the process finalizes it at exit; MPI errors are
/// returned, not fatal. f16 and bf16 travel as 2-byte elements combined by
/// amp's own MPI operations (OpenMPI 4.1 has no 16-bit float type), which
/// add in f32 and round once per combination.
class MpiCommunicator : public Communicator {
public:
  /// Joins the job; `error` says why not (null on success).
  static std::unique_ptr<MpiCommunicator> create(std::string &error);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string allReduce(const void *in, void *out, int64_t count,
                        RuntimeDType type, CollectiveOp op) override;
  std::string broadcast(void *data, int64_t bytes, int root) override;
  /// Collectives are non-blocking MPI calls polled until they complete or
  /// the deadline passes. Each rank tells every other one when it enters a
  /// collective (a heartbeat: the collective's number in the run), so that
  /// a rank that gives up names the ranks that never arrived.
  void setDeadline(std::chrono::steady_clock::time_point deadline,
                   const std::string &what) override;
  std::chrono::steady_clock::time_point
  getDeadline(std::string *what) const override;
  /// MPI_Abort: mpirun ends every rank.
  [[noreturn]] void abort(int code) override;

  /// True when this process was started by mpirun (or another MPI
  /// launcher): its environment names a rank. Does not initialize MPI.
  static bool launchedByMpi();

private:
  struct Heartbeats;
  MpiCommunicator(int rank, int size);
  /// Sends this rank's heartbeat for the next collective, then polls
  /// `request` (a started MPI_I* call named `call`) to completion or the
  /// deadline.
  std::string complete(void *request, const char *call);
  /// The communicators not yet destroyed (MPI_Finalize stops their
  /// heartbeats first).
  static std::set<MpiCommunicator *> &liveCommunicators();
  int rank_;
  int size_;
  std::unique_ptr<Heartbeats> heartbeats_;
  std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::time_point::max();
  std::string what_;
};

} // namespace amp

extern "C" {
/// The plugin's entry point: MpiCommunicator::create, the communicator
/// owned by the caller, whose amp::kCommunicatorAbi is `abi`; on failure
/// (another layout, no job to join) null and the reason in `error`.
amp::Communicator *amp_mpi_join(int64_t abi, char *error, size_t capacity);
}

#endif // AMP_RUNTIME_MPICOMMUNICATOR_H
