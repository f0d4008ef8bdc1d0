//===- MpiCommunicator.cpp - Collectives over MPI -------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/MpiCommunicator.h"
#include "amp/Runtime/Float16.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <set>
#include <thread>
#include <vector>

using namespace amp;

namespace {

/// MPI's text for an error code.
std::string mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return std::string(call) + " failed (MPI error " + std::to_string(code) +
           ")";
  return std::string(call) + " failed: " + std::string(text, length);
}

/// Element-wise `inout[i] = combine(in[i], inout[i])` over 2-byte floats,
/// through f32.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), bool Max>
void combine16(void *in, void *inout, int *count, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *count; ++i) {
    float x = Widen(a[i]), y = Widen(b[i]);
    b[i] = Narrow(Max ? (x > y ? x : y) : x + y);
  }
}

/// amp's MPI operations for f16 and bf16, made once after MPI_Init.
struct HalfOps {
  MPI_Op sum[2] = {MPI_OP_NULL, MPI_OP_NULL}; // f16, bf16
  MPI_Op max[2] = {MPI_OP_NULL, MPI_OP_NULL};
};
HalfOps &halfOps() {
  static HalfOps ops = [] {
    HalfOps o;
    MPI_Op_create(&combine16<halfToFloat, floatToHalf, false>, 1, &o.sum[0]);
    MPI_Op_create(&combine16<bfloatToFloat, floatToBFloat, false>, 1,
                  &o.sum[1]);
    MPI_Op_create(&combine16<halfToFloat, floatToHalf, true>, 1, &o.max[0]);
    MPI_Op_create(&combine16<bfloatToFloat, floatToBFloat, true>, 1, &o.max[1]);
    return o;
  }();
  return ops;
}

} // namespace

bool MpiCommunicator::launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::create(std::string &error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (int code =
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        code != MPI_SUCCESS) {
      error = mpiError("MPI_Init_thread", code);
      return nullptr;
    }
    // Finalize at exit (after every communicator is gone, or stopped).
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    });
  }
  // Whoever finalizes MPI (this process's atexit, or a library that
  // initialized it), the heartbeats of a communicator kept to the end stop
  // first: MPI_Finalize deletes MPI_COMM_SELF's attributes before anything.
  static const bool teardown = [] {
    int key = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(
        MPI_COMM_NULL_COPY_FN,
        [](MPI_Comm, int, void *, void *) -> int {
          for (MpiCommunicator *live : liveCommunicators())
            live->heartbeats_.reset();
          return MPI_SUCCESS;
        },
        &key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    return true;
  }();
  (void)teardown;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(rank, size));
}

/// The heartbeats of the other ranks: on a communicator of their own (a
/// duplicate of MPI_COMM_WORLD), one receive posted per peer for its next
/// heartbeat, and this rank's sends until they complete.
struct MpiCommunicator::Heartbeats {
  MPI_Comm comm = MPI_COMM_NULL;
  /// Per rank: the number of the last collective it entered (0: none yet),
  /// when its last heartbeat arrived, and the buffer and request of the
  /// receive posted for its next one.
  std::vector<int64_t> seen, inbox;
  std::vector<std::chrono::steady_clock::time_point> heard;
  std::vector<MPI_Request> receives;
  /// This rank's heartbeats in flight: each buffer lives until its send
  /// completes.
  std::deque<std::pair<MPI_Request, std::unique_ptr<int64_t>>> sends;
  /// The collectives this rank has entered.
  int64_t entered = 0;

  explicit Heartbeats(int size)
      : seen(size, 0), inbox(size, 0),
        heard(size, std::chrono::steady_clock::now()),
        receives(size, MPI_REQUEST_NULL) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    for (int r = 0; r < size; ++r)
      if (r != rank)
        post(r);
  }
  ~Heartbeats() {
    for (MPI_Request &request : receives)
      if (request != MPI_REQUEST_NULL) {
        MPI_Cancel(&request);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
      }
    for (auto &[request, buffer] : sends)
      MPI_Wait(&request, MPI_STATUS_IGNORE);
    MPI_Comm_free(&comm);
  }
  void post(int from) {
    MPI_Irecv(&inbox[from], 1, MPI_INT64_T, from, 0, comm, &receives[from]);
  }
  /// Takes the heartbeats that arrived (each peer's latest) and retires the
  /// completed sends.
  void poll() {
    for (size_t r = 0; r < receives.size(); ++r) {
      int done = 0;
      while (receives[r] != MPI_REQUEST_NULL &&
             MPI_Test(&receives[r], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
             done) {
        seen[r] = std::max(seen[r], inbox[r]);
        heard[r] = std::chrono::steady_clock::now();
        post(int(r));
      }
    }
    while (!sends.empty()) {
      int done = 0;
      if (MPI_Test(&sends.front().first, &done, MPI_STATUS_IGNORE) !=
              MPI_SUCCESS ||
          !done)
        break;
      sends.pop_front();
    }
  }
  /// Tells every other rank that this one is alive in collective
  /// `entered` (after entering its next one when `next`).
  void beat(int self, bool next) {
    entered += next;
    for (size_t r = 0; r < receives.size(); ++r) {
      if (int(r) == self)
        continue;
      auto buffer = std::make_unique<int64_t>(entered);
      MPI_Request request;
      if (MPI_Isend(buffer.get(), 1, MPI_INT64_T, int(r), 0, comm, &request) ==
          MPI_SUCCESS)
        sends.emplace_back(request, std::move(buffer));
    }
    poll();
  }
};

MpiCommunicator::MpiCommunicator(int rank, int size)
    : rank_(rank), size_(size) {
  if (size > 1)
    heartbeats_ = std::make_unique<Heartbeats>(size);
  liveCommunicators().insert(this);
}

MpiCommunicator::~MpiCommunicator() { liveCommunicators().erase(this); }

std::set<MpiCommunicator *> &MpiCommunicator::liveCommunicators() {
  static auto *live = new std::set<MpiCommunicator *>();
  return *live;
}

void MpiCommunicator::setDeadline(
    std::chrono::steady_clock::time_point deadline, const std::string &what) {
  deadline_ = deadline;
  what_ = what;
}

std::chrono::steady_clock::time_point
MpiCommunicator::getDeadline(std::string *what) const {
  if (what)
    *what = what_;
  return deadline_;
}

std::string MpiCommunicator::complete(void *started, const char *call) {
  auto *request = static_cast<MPI_Request *>(started);
  if (!heartbeats_) {
    if (int code = MPI_Wait(request, MPI_STATUS_IGNORE); code != MPI_SUCCESS)
      return mpiError(call, code);
    return "";
  }
  using Clock = std::chrono::steady_clock;
  // While waiting, a heartbeat every kAlive: a rank silent for kSilent is
  // not waiting with this one (stopped, hung, dead, or still computing).
  constexpr auto kAlive = std::chrono::milliseconds(200);
  constexpr auto kSilent = std::chrono::seconds(1);
  heartbeats_->beat(rank_, /*next=*/true);
  Clock::time_point lastBeat = Clock::now();
  for (uint64_t spin = 0;; ++spin) {
    int done = 0;
    if (int code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
        code != MPI_SUCCESS)
      return mpiError(call, code);
    if (done)
      return "";
    // Check the clock and the heartbeats every so often; let other
    // processes on this core run while waiting long.
    if (spin % 64 != 63)
      continue;
    heartbeats_->poll();
    if (spin > 100000)
      std::this_thread::yield();
    Clock::time_point now = Clock::now();
    if (now - lastBeat >= kAlive) {
      heartbeats_->beat(rank_, /*next=*/false);
      lastBeat = now;
    }
    if (now < deadline_)
      continue;
    // Given up: name the ranks this one waits for, those not in this
    // collective or silent (SIGSTOP leaves a rank inside it).
    int64_t number = heartbeats_->entered;
    std::string waiting;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_)
        continue;
      double silent =
          std::chrono::duration<double>(now - heartbeats_->heard[r]).count();
      if (heartbeats_->seen[r] >= number && now - heartbeats_->heard[r] < kSilent)
        continue;
      char text[160];
      std::snprintf(text, sizeof(text),
                    "%srank %d (silent for %.1f s, last in collective %lld)",
                    waiting.empty() ? "" : ", ", r, silent,
                    static_cast<long long>(heartbeats_->seen[r]));
      waiting += text;
    }
    std::string message = what_ + " did not complete in time: " + call +
                          " (collective " + std::to_string(number) +
                          " of the run) ";
    if (waiting.empty())
      return message + "is stuck though every rank is in it and responding";
    return message + "is waiting for " + waiting;
  }
}

std::string MpiCommunicator::allReduce(const void *in, void *out, int64_t count,
                                       RuntimeDType type, CollectiveOp op) {
  if (count > std::numeric_limits<int>::max())
    return "all-reduce of " + std::to_string(count) +
           " values: more than MPI's int count (split the bucket: "
           "amp-data-parallel's bucket-mb)";
  bool max = op == CollectiveOp::Max;
  MPI_Datatype datatype = MPI_FLOAT;
  MPI_Op mpiOp = max ? MPI_MAX : MPI_SUM;
  if (type == RuntimeDType::F64) {
    datatype = MPI_DOUBLE;
  } else if (type != RuntimeDType::F32) {
    int which = type == RuntimeDType::F16 ? 0 : 1;
    datatype = MPI_UINT16_T;
    mpiOp = max ? halfOps().max[which] : halfOps().sum[which];
  }
  MPI_Request request;
  if (int code = MPI_Iallreduce(in, out, int(count), datatype, mpiOp,
                                MPI_COMM_WORLD, &request);
      code != MPI_SUCCESS)
    return mpiError("MPI_Iallreduce", code);
  return complete(&request, "MPI_Iallreduce");
}

std::string MpiCommunicator::broadcast(void *data, int64_t bytes, int root) {
  if (bytes > std::numeric_limits<int>::max())
    return "broadcast of " + std::to_string(bytes) +
           " bytes: more than MPI's int count";
  MPI_Request request;
  if (int code = MPI_Ibcast(data, int(bytes), MPI_BYTE, root, MPI_COMM_WORLD,
                            &request);
      code != MPI_SUCCESS)
    return mpiError("MPI_Ibcast", code);
  return complete(&request, "MPI_Ibcast");
}

void MpiCommunicator::abort(int code) {
  std::fflush(nullptr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return; in case it does
}
