//===- CudaCollectives.cpp - Data-parallel steps on NCCL ------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CudaCollectives.h"
#include "amp/Runtime/CudaDriver.h"
#include "amp/Runtime/CudaRuntime.h"
#include "amp/Runtime/Nccl.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

using namespace amp;
using namespace amp::cuda;

namespace {

using Clock = std::chrono::steady_clock;

/// How often the watchdog looks at NCCL's state and the pending collectives.
constexpr auto kPollInterval = std::chrono::milliseconds(10);
/// How long a rank whose collective missed its deadline waits for the other
/// ranks over the job's communicator, to learn which one is silent.
constexpr double kProbeSeconds = 3.0;

/// An enqueued all-reduce: `done` is recorded on the stream after it.
struct Pending {
  CUevent done;
  int64_t number;
  Clock::time_point deadline;
  std::string what;
};

/// NCCL started over a job's communicator, and the thread that watches it.
struct NcclJob {
  Communicator *host;
  const NcclApi *nccl;
  const DriverApi *driver;
  ncclComm_t comm;
  /// All-reduces enqueued in the run (the step's thread only).
  int64_t collectives = 0;

  /// Guards what follows, and the communicator's use: the watchdog aborts
  /// it under the lock, the step's thread enqueues under it.
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Pending> pending;
  std::vector<CUevent> spareEvents;
  bool stopping = false;
  /// Set once (failJob: by the watchdog, or by a failed enqueue), before
  /// the communicator is aborted.
  std::atomic<bool> failed{false};
  bool timedOut = false;
  std::string failure;
  Pending failedCollective{nullptr, 0, Clock::time_point::max(), ""};
  std::thread watchdog;
};

/// The installed job (the step's thread sets it; the watchdog has its own
/// pointer).
NcclJob *installed = nullptr;

const char *const kEntry = "amp_cuda_all_reduce";

/// Fails `job` (its lock held): records what failed, marks it failed, then
/// aborts the NCCL communicator, which ends NCCL's kernels, so the stream
/// drains and the step's thread, waiting on it, finds the failure
/// (checkCollectives) -- never before it is marked.
void failJob(NcclJob &job, bool timedOut, const std::string &why) {
  job.timedOut = timedOut;
  job.failure = why;
  if (!job.pending.empty())
    job.failedCollective = job.pending.front();
  else
    job.failedCollective.number = job.collectives;
  job.failed.store(true);
  job.nccl->commAbort(job.comm);
}

/// The watchdog: fails the job when NCCL reports an error or the oldest
/// pending all-reduce is still running at its deadline. The step's thread
/// reports it (checkCollectives).
void watch(NcclJob &job) {
  // Events belong to the device's context.
  job.driver->ctxPushCurrent(job.driver->context);
  std::unique_lock<std::mutex> lock(job.mutex);
  while (!job.stopping && !job.failed.load()) {
    job.wake.wait_for(lock, kPollInterval);
    if (job.stopping)
      break;
    std::string why;
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = job.nccl->commGetAsyncError(job.comm, &state))
      why = "ncclCommGetAsyncError failed with " + ncclErrorName(*job.nccl, r);
    else if (state != ncclSuccess && state != ncclInProgress) {
      why = "NCCL reported " + ncclErrorName(*job.nccl, state);
      if (const char *last = job.nccl->getLastError(job.comm); last && *last)
        why += std::string(": ") + last;
    }
    while (why.empty() && !job.pending.empty()) {
      CUresult r = job.driver->eventQuery(job.pending.front().done);
      if (r == CUDA_ERROR_NOT_READY)
        break;
      if (r != CUDA_SUCCESS) {
        why = "cuEventQuery failed with " + errorName(*job.driver, r);
        break;
      }
      job.spareEvents.push_back(job.pending.front().done);
      job.pending.pop_front();
    }
    bool late = why.empty() && !job.pending.empty() &&
                Clock::now() >= job.pending.front().deadline;
    if (why.empty() && !late)
      continue;
    failJob(job, late, why);
  }
}

void record(const std::string &message) {
  recordRuntimeError(std::string(kEntry) + ": " + message);
}

std::string rankOf(const Communicator &host) {
  return "rank " + std::to_string(host.rank()) + " of " +
         std::to_string(host.size());
}

/// Waits for a non-blocking communicator's pending operation; its result.
ncclResult_t settle(const NcclApi &nccl, ncclComm_t comm, ncclResult_t r,
                    Clock::time_point deadline, bool &late) {
  late = false;
  while (r == ncclInProgress) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t q = nccl.commGetAsyncError(comm, &state))
      return q;
    r = state;
    if (r != ncclInProgress)
      break;
    if (Clock::now() >= deadline) {
      late = true;
      return r;
    }
    std::this_thread::yield();
  }
  return r;
}

[[noreturn]] void reportFailure(NcclJob &job);

/// How long a rank's NCCL teardown waits for the other ranks
/// (ncclCommFinalize completes once the communicator is globally quiescent)
/// before it frees its resources alone (ncclCommAbort: nothing is lost, its
/// collectives have completed).
constexpr auto kFinalizeWait = std::chrono::seconds(2);

/// Stops `job` and frees it: its enqueued all-reduces complete first (the
/// watchdog still holding each to its deadline; a failure ends the job),
/// then the watchdog stops and NCCL is finalized.
void stop(NcclJob *job) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(job->mutex);
      if (job->pending.empty() || job->failed.load())
        break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (job->failed.load())
    reportFailure(*job);
  {
    std::lock_guard<std::mutex> lock(job->mutex);
    job->stopping = true;
  }
  job->wake.notify_all();
  job->watchdog.join();
  if (void *stream = getStream())
    job->driver->streamSynchronize(static_cast<CUstream>(stream));
  bool late = false;
  ncclResult_t r =
      settle(*job->nccl, job->comm, job->nccl->commFinalize(job->comm),
             Clock::now() + kFinalizeWait, late);
  if (r == ncclSuccess)
    job->nccl->commDestroy(job->comm);
  else
    job->nccl->commAbort(job->comm);
  for (CUevent e : job->spareEvents)
    job->driver->eventDestroy(e);
  delete job;
}

/// Starts NCCL over `host`; null with the runtime's error recorded when it
/// cannot. Every rank agrees over `host` whether each could prepare, so a
/// rank that cannot load NCCL does not leave the others in NCCL's start.
NcclJob *start(Communicator &host) {
  const char *entry = "amp_cuda_set_communicator";
  std::string error;
  const NcclApi *nccl = getNccl(&error);
  const DriverApi *driver = nullptr;
  void *stream = nullptr;
  if (nccl && !hasRuntimeError()) {
    driver = driverFor(entry);
    stream = driver ? getStream() : nullptr;
    if (!stream)
      error = "no CUDA device for NCCL (the runtime's error says why)";
  } else if (nccl) {
    error = "the CUDA runtime failed before NCCL started";
  }
  ncclUniqueId id{};
  if (error.empty() && host.rank() == 0)
    if (ncclResult_t r = nccl->getUniqueId(&id))
      error = "ncclGetUniqueId failed with " + ncclErrorName(*nccl, r);
  // Rank 0's id to every rank, then whether every rank is ready: the
  // highest rank that is not (plus one), whose reason every rank then gets
  // (the first rank to stop ends the job: its message must say why).
  std::string hostError = host.broadcast(&id, sizeof(id), 0);
  float failed = error.empty() ? 0.0f : float(host.rank() + 1), anyFailed = 0;
  if (hostError.empty())
    hostError = host.allReduce(&failed, &anyFailed, 1, RuntimeDType::F32,
                               CollectiveOp::Max);
  char reason[512] = {};
  int root = int(anyFailed) - 1;
  if (hostError.empty() && root >= 0) {
    if (root == host.rank())
      std::snprintf(reason, sizeof(reason), "%s", error.c_str());
    hostError = host.broadcast(reason, sizeof(reason), root);
  }
  if (!hostError.empty()) {
    recordRuntimeError(std::string(entry) + ": " + rankOf(host) +
                       ": sending NCCL's id failed: " + hostError);
    return nullptr;
  }
  if (root >= 0) {
    // The first error wins: a driver failure recorded above stays.
    recordRuntimeError(std::string(entry) + ": " + rankOf(host) + ": " +
                       (root == host.rank()
                            ? error
                            : "rank " + std::to_string(root) +
                                  " could not start NCCL: " + reason));
    return nullptr;
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Non-blocking: calls return at once (ncclInProgress) and the watchdog can
  // abort the communicator while the step's thread waits on the stream.
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  std::string what;
  Clock::time_point deadline = host.getDeadline(&what);
  bool late = false;
  ncclResult_t r =
      nccl->commInitRankConfig(&comm, host.size(), id, host.rank(), &config);
  if (comm)
    r = settle(*nccl, comm, r, deadline, late);
  if (r != ncclSuccess) {
    if (comm)
      nccl->commAbort(comm);
    recordRuntimeError(
        std::string(entry) + ": " + rankOf(host) + ": " +
        (late ? "NCCL's start did not complete by the deadline of " + what
              : "ncclCommInitRankConfig failed with " +
                    ncclErrorName(*nccl, r)));
    return nullptr;
  }
  auto *job = new NcclJob{&host, nccl, driver, comm};
  job->watchdog = std::thread([job] { watch(*job); });
  return job;
}

std::optional<ncclDataType_t> ncclTypeOf(int64_t dtype) {
  switch (RuntimeDType(dtype)) {
  case RuntimeDType::F32:
    return ncclFloat32;
  case RuntimeDType::F16:
    return ncclFloat16;
  case RuntimeDType::BF16:
    return ncclBfloat16;
  case RuntimeDType::F64:
    return ncclFloat64;
  }
  return std::nullopt;
}

} // namespace

namespace {

/// Enqueues one all-reduce on `stream` (the step's thread); a failure
/// fails the job.
void enqueue(NcclJob &job, intptr_t in, intptr_t out, ncclDataType_t type,
             int64_t op, int64_t count, void *stream,
             Clock::time_point deadline, const std::string &what) {
  std::lock_guard<std::mutex> lock(job.mutex);
  if (job.failed.load())
    return; // Reported by the caller.
  ++job.collectives;
  bool late = false;
  ncclResult_t r = settle(
      *job.nccl, job.comm,
      job.nccl->allReduce(reinterpret_cast<const void *>(in),
                          reinterpret_cast<void *>(out), size_t(count), type,
                          op == int64_t(CollectiveOp::Max) ? ncclMax : ncclSum,
                          job.comm, static_cast<cudaStream_t>(stream)),
      deadline, late);
  if (r != ncclSuccess) {
    // The ranks are out of step: the job ends (the caller's checkCollectives).
    failJob(job, late,
            "ncclAllReduce of " + std::to_string(count) + " values " +
                (late ? "was not enqueued by the deadline"
                      : "failed with " + ncclErrorName(*job.nccl, r)));
    return;
  }
  CUevent done = nullptr;
  if (!job.spareEvents.empty()) {
    done = job.spareEvents.back();
    job.spareEvents.pop_back();
  } else if (CUresult e =
                 job.driver->eventCreate(&done, CU_EVENT_DISABLE_TIMING)) {
    record("cuEventCreate failed with " + errorName(*job.driver, e));
    return;
  }
  if (CUresult e =
          job.driver->eventRecord(done, static_cast<CUstream>(stream))) {
    job.spareEvents.push_back(done);
    record("cuEventRecord failed with " + errorName(*job.driver, e));
    return;
  }
  job.pending.push_back({done, job.collectives, deadline, what});
}

/// Reports `job`'s failure on the step's thread and ends the job. NCCL
/// cannot tell which rank is missing; the job's communicator can: the other
/// ranks' watchdogs send them here too, where they enter an all-reduce with
/// a short deadline, and a stopped, hung or dead rank stays silent.
void reportFailure(NcclJob &job) {
  bool timedOut;
  std::string failure;
  Pending collective;
  {
    // Waits for the watchdog to finish failing the job.
    std::lock_guard<std::mutex> lock(job.mutex);
    timedOut = job.timedOut;
    failure = job.failure;
    collective = job.failedCollective;
  }
  Communicator &host = *job.host;
  host.setDeadline(
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(kProbeSeconds)),
      collective.what.empty() ? "NCCL's failure" : collective.what);
  float one = 1.0f, ranks = 0.0f;
  std::string silent =
      host.allReduce(&one, &ranks, 1, RuntimeDType::F32, CollectiveOp::Sum);
  std::string message = "amp runtime: " + rankOf(host) + ": ";
  if (!collective.what.empty())
    message += collective.what + ": ";
  message +=
      "NCCL all-reduce " + std::to_string(collective.number) + " of the run ";
  if (timedOut)
    message += "did not complete in time; " +
               (silent.empty() ? std::string("every rank answered over MPI, "
                                             "so NCCL itself is stuck")
                               : "asked over MPI: " + silent);
  else
    message += "failed: " + failure +
               (silent.empty() ? "" : "; asked over MPI: " + silent);
  std::fprintf(stderr, "%s; ending the job\n", message.c_str());
  std::fflush(nullptr);
  host.abort(1);
  std::_Exit(1); // (Communicator::abort does not return.)
}

} // namespace

void amp::cuda::checkCollectives() {
  if (NcclJob *job = installed; job && job->failed.load())
    reportFailure(*job);
}

extern "C" void amp_cuda_set_communicator(Communicator *communicator) {
  if (NcclJob *job = installed) {
    installed = nullptr;
    stop(job);
  }
  // One rank needs no NCCL (and its steps have no all-reduce).
  if (communicator && communicator->size() > 1)
    installed = start(*communicator);
}

extern "C" int64_t amp_cuda_communicator_abi(void) { return kCommunicatorAbi; }

extern "C" void amp_cuda_all_reduce(intptr_t in, intptr_t out, int64_t dtype,
                                    int64_t op, int64_t count, int64_t ranks) {
  if (hasRuntimeError())
    return;
  NcclJob *job = installed;
  if (!job) {
    record("a data-parallel step (train.all_reduce) ran without NCCL; run it "
           "with --data-parallel under mpirun (amp-run, amp-train)");
    return;
  }
  std::optional<ncclDataType_t> type = ncclTypeOf(dtype);
  if (!type ||
      (op != int64_t(CollectiveOp::Sum) && op != int64_t(CollectiveOp::Max)) ||
      count < 0) {
    record("called with element type " + std::to_string(dtype) + ", op " +
           std::to_string(op) + ", count " + std::to_string(count));
    return;
  }
  Communicator &host = *job->host;
  if (ranks != host.size()) {
    record(rankOf(host) + ": the step was compiled for " +
           std::to_string(ranks) + " ranks, but the job has " +
           std::to_string(host.size()));
    return;
  }
  void *stream = getStream();
  if (!stream)
    return;
  std::string what;
  Clock::time_point deadline = host.getDeadline(&what);
  enqueue(*job, in, out, *type, op, count, stream, deadline, what);
  // A failure of this enqueue, or one the watchdog found since the last
  // wait (enqueue then does nothing), ends the job here.
  checkCollectives();
}
