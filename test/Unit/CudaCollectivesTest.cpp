//===- CudaCollectivesTest.cpp - NCCL collectives on fakes ----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The host logic of data-parallel CUDA steps (CudaCollectives.h) on the fake
// driver and the fake NCCL (FakeNccl.cpp), with a communicator that plays
// one rank of a job whose other ranks are simulated.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CudaCollectives.h"
#include "FakeNccl.h"
#include "amp/Runtime/CudaDriver.h"
#include "amp/Runtime/CudaRuntime.h"
#include "amp/Runtime/Nccl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <vector>

using namespace amp;

namespace {

/// Rank `rank` of `size`: what it broadcasts as the root is recorded
/// (`sent`), as another rank it receives `rootData`; an all-reduce returns
/// its input, with max at least `peerMax` (what the simulated ranks hold),
/// and `error`.
class TestCommunicator final : public Communicator {
public:
  TestCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string allReduce(const void *in, void *out, int64_t count,
                        RuntimeDType type, CollectiveOp op) override {
    EXPECT_EQ(type, RuntimeDType::F32);
    ++allReduces;
    std::memcpy(out, in, size_t(count) * sizeof(float));
    if (op == CollectiveOp::Max)
      static_cast<float *>(out)[0] =
          std::max(static_cast<float *>(out)[0], peerMax);
    lastInput = static_cast<const float *>(in)[0];
    return error;
  }
  std::string broadcast(void *data, int64_t bytes, int root) override {
    if (rank_ == root)
      sent.emplace_back(static_cast<const char *>(data), size_t(bytes));
    else
      std::memcpy(data, rootData.data(),
                  std::min(size_t(bytes), rootData.size()));
    return "";
  }
  void setDeadline(std::chrono::steady_clock::time_point deadline,
                   const std::string &what) override {
    deadline_ = deadline;
    what_ = what;
  }
  std::chrono::steady_clock::time_point
  getDeadline(std::string *what) const override {
    if (what)
      *what = what_;
    return deadline_;
  }
  [[noreturn]] void abort(int code) override {
    std::fprintf(stderr, "test communicator: abort(%d)\n", code);
    std::fflush(nullptr);
    std::_Exit(code);
  }

  float peerMax = 0.0f;
  std::string error, rootData;
  std::vector<std::string> sent;
  int allReduces = 0;
  float lastInput = -1.0f;

private:
  int rank_, size_;
  std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::time_point::max();
  std::string what_;
};

/// The fake driver and the fake NCCL, in their default modes.
void useFakes() {
  setenv("AMP_CUDA_DRIVER", AMP_FAKE_CUDA_DRIVER, 1);
  setenv("AMP_NCCL_LIBRARY", AMP_FAKE_NCCL, 1);
  unsetenv("AMP_FAKE_CUDA_MODE");
  unsetenv("AMP_FAKE_NCCL_MODE");
  void *library = dlopen(AMP_FAKE_NCCL, RTLD_NOW);
  ASSERT_NE(library, nullptr);
  auto reset = reinterpret_cast<void (*)()>(dlsym(library, "fakeNcclReset"));
  ASSERT_NE(reset, nullptr);
  reset();
}

const FakeNcclRecord &fakeNccl() {
  void *library = dlopen(AMP_FAKE_NCCL, RTLD_NOW);
  EXPECT_NE(library, nullptr);
  auto get =
      reinterpret_cast<const void *(*)()>(dlsym(library, "fakeNcclRecord"));
  EXPECT_NE(get, nullptr);
  return *static_cast<const FakeNcclRecord *>(get());
}

std::string takeError() {
  char buffer[1024];
  return amp_cuda_take_error(buffer, sizeof(buffer)) ? buffer : "";
}

intptr_t deviceFloats(const std::vector<float> &values) {
  void *p = mgpuMemAlloc(values.size() * sizeof(float), nullptr, false);
  if (!p) {
    std::fprintf(stderr, "no fake device memory: %s\n", takeError().c_str());
    std::_Exit(4);
  }
  std::memcpy(p, values.data(), values.size() * sizeof(float));
  return reinterpret_cast<intptr_t>(p);
}

/// Waits on the stream, as a step does at its end: on the fake driver in
/// mode "hang" until the watchdog aborts NCCL, whose failure must then end
/// the process.
[[noreturn]] void waitForTheEnd() {
  mgpuStreamSynchronize(cuda::getStream());
  std::fprintf(stderr, "the job was not ended\n");
  std::_Exit(3);
}

constexpr int64_t kF32 = int64_t(RuntimeDType::F32);
constexpr int64_t kSum = int64_t(CollectiveOp::Sum);

/// Installs `host` on the fake driver in mode "hang" (the stream drains
/// only when NCCL is aborted) and enqueues `count` all-reduces of one value
/// under a deadline `ms` milliseconds from now (none if negative) named
/// `what`; the job's communicator then answers every all-reduce with
/// `error`.
void enqueueHanging(TestCommunicator &host, int ms, const char *what,
                    int count = 1, const char *error = "") {
  setenv("AMP_FAKE_CUDA_MODE", "hang", 1);
  amp_cuda_set_communicator(&host);
  host.error = error;
  if (ms >= 0)
    host.setDeadline(std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(ms),
                     what);
  intptr_t in = deviceFloats({1}), out = deviceFloats({0});
  for (int i = 0; i < count; ++i)
    amp_cuda_all_reduce(in, out, kF32, kSum, 1, 2);
}

[[noreturn]] void dieNcclErrorEndsTheJob() {
  useFakes();
  setenv("AMP_FAKE_NCCL_MODE", "async-error", 1);
  TestCommunicator host(0, 2);
  enqueueHanging(host, -1, "");
  waitForTheEnd();
}

[[noreturn]] void dieLateCollectiveNamesTheSilentRank() {
  useFakes();
  TestCommunicator host(0, 2);
  enqueueHanging(host, 200, "step 3 (--dp-timeout=0.2)", 2,
                 "MPI_Iallreduce (collective 9 of the run) is waiting for "
                 "rank 1 (silent for 3.0 s, last in collective 8)");
  waitForTheEnd();
}

[[noreturn]] void dieLateCollectiveWithEveryRankPresent() {
  useFakes();
  TestCommunicator host(1, 2);
  host.rootData = std::string(NCCL_UNIQUE_ID_BYTES, 'x');
  enqueueHanging(host, 0, "step 0");
  waitForTheEnd();
}

[[noreturn]] void dieUninstallingReportsALateCollective() {
  useFakes();
  TestCommunicator host(0, 2);
  enqueueHanging(host, 100, "step 9");
  // The step ended (its deadline with it); its all-reduce still runs.
  host.setDeadline(std::chrono::steady_clock::time_point::max(), "");
  amp_cuda_set_communicator(nullptr);
  std::fprintf(stderr, "the job was not ended\n");
  std::_Exit(3);
}

} // namespace

TEST(CudaCollectives, RankZeroSendsItsNcclId) {
  useFakes();
  TestCommunicator host(0, 2);
  amp_cuda_set_communicator(&host);
  EXPECT_EQ(takeError(), "");
  const FakeNcclRecord &nccl = fakeNccl();
  EXPECT_EQ(nccl.ranks, 2);
  EXPECT_EQ(nccl.rank, 0);
  EXPECT_EQ(nccl.blocking, 0) << "the communicator must be non-blocking";
  ASSERT_EQ(host.sent.size(), 1u);
  ASSERT_EQ(host.sent[0].size(), size_t(NCCL_UNIQUE_ID_BYTES));
  EXPECT_EQ(std::memcmp(host.sent[0].data(), nccl.id, NCCL_UNIQUE_ID_BYTES), 0);
  EXPECT_EQ(std::string(nccl.id).rfind("fake-id-", 0), 0u);
  // Every rank said it was ready (0) before NCCL started.
  EXPECT_EQ(host.allReduces, 1);
  EXPECT_EQ(host.lastInput, 0.0f);
  amp_cuda_set_communicator(nullptr);
  EXPECT_EQ(nccl.destroys, 1);
  EXPECT_EQ(nccl.aborts, 0);
}

TEST(CudaCollectives, OtherRanksJoinWithRankZerosId) {
  useFakes();
  TestCommunicator host(2, 3);
  host.rootData =
      std::string("rank zero's id") + std::string(NCCL_UNIQUE_ID_BYTES, '\0');
  amp_cuda_set_communicator(&host);
  EXPECT_EQ(takeError(), "");
  const FakeNcclRecord &nccl = fakeNccl();
  EXPECT_EQ(nccl.ranks, 3);
  EXPECT_EQ(nccl.rank, 2);
  EXPECT_STREQ(nccl.id, "rank zero's id");
  EXPECT_TRUE(host.sent.empty());
  amp_cuda_set_communicator(nullptr);
}

TEST(CudaCollectives, AllReducesOnTheStepsStream) {
  useFakes();
  TestCommunicator host(0, 2);
  amp_cuda_set_communicator(&host);
  intptr_t in = deviceFloats({1, 2, 3, 4}), out = deviceFloats({0, 0, 0, 0});
  amp_cuda_all_reduce(in, out, kF32, kSum, 4, 2);
  EXPECT_EQ(takeError(), "");
  const FakeNcclRecord &nccl = fakeNccl();
  EXPECT_EQ(nccl.in, reinterpret_cast<const void *>(in));
  EXPECT_EQ(nccl.out, reinterpret_cast<void *>(out));
  EXPECT_EQ(nccl.count, 4u);
  EXPECT_EQ(nccl.type, ncclFloat32);
  EXPECT_EQ(nccl.op, ncclSum);
  EXPECT_EQ(nccl.stream, cuda::getStream());
  // The fake's two ranks hold the same values.
  const float *sums = reinterpret_cast<const float *>(out);
  EXPECT_EQ(std::vector<float>(sums, sums + 4),
            (std::vector<float>{2, 4, 6, 8}));
  struct {
    RuntimeDType type;
    CollectiveOp op;
    ncclDataType_t nccl;
    ncclRedOp_t ncclOp;
  } cases[] = {{RuntimeDType::F16, CollectiveOp::Sum, ncclFloat16, ncclSum},
               {RuntimeDType::BF16, CollectiveOp::Sum, ncclBfloat16, ncclSum},
               {RuntimeDType::F64, CollectiveOp::Sum, ncclFloat64, ncclSum},
               {RuntimeDType::F32, CollectiveOp::Max, ncclFloat32, ncclMax}};
  for (const auto &c : cases) {
    amp_cuda_all_reduce(in, out, int64_t(c.type), int64_t(c.op), 2, 2);
    EXPECT_EQ(takeError(), "");
    EXPECT_EQ(nccl.type, c.nccl);
    EXPECT_EQ(nccl.op, c.ncclOp);
  }
  EXPECT_EQ(nccl.allReduces, 5);
  mgpuStreamSynchronize(cuda::getStream());
  amp_cuda_set_communicator(nullptr);
  EXPECT_EQ(nccl.destroys, 1);
}

TEST(CudaCollectives, BadCallsAreRecorded) {
  useFakes();
  intptr_t in = deviceFloats({1, 2}), out = deviceFloats({0, 0});
  amp_cuda_all_reduce(in, out, kF32, kSum, 2, 2);
  EXPECT_NE(takeError().find("amp_cuda_all_reduce: a data-parallel step "
                             "(train.all_reduce) ran without NCCL"),
            std::string::npos);
  TestCommunicator host(1, 2);
  host.rootData = std::string(NCCL_UNIQUE_ID_BYTES, 'x');
  amp_cuda_set_communicator(&host);
  amp_cuda_all_reduce(in, out, kF32, kSum, 2, 3);
  EXPECT_EQ(takeError(), "amp_cuda_all_reduce: rank 1 of 2: the step was "
                         "compiled for 3 ranks, but the job has 2");
  amp_cuda_all_reduce(in, out, 7, kSum, 2, 2);
  EXPECT_EQ(takeError(),
            "amp_cuda_all_reduce: called with element type 7, op 0, count 2");
  EXPECT_EQ(fakeNccl().allReduces, 0);
  amp_cuda_set_communicator(nullptr);
}

TEST(CudaCollectives, RanksAgreeBeforeNcclStarts) {
  useFakes();
  // Rank 1 could not prepare: nobody enters NCCL's start (it would wait
  // for that rank for ever), and every rank says why.
  TestCommunicator host(0, 2);
  host.peerMax = 2.0f;
  host.rootData = "no CUDA device: the CUDA driver reports no devices";
  host.rootData.resize(512, '\0');
  amp_cuda_set_communicator(&host);
  EXPECT_EQ(takeError(),
            "amp_cuda_set_communicator: rank 0 of 2: rank 1 could not start "
            "NCCL: no CUDA device: the CUDA driver reports no devices");
  EXPECT_EQ(fakeNccl().ranks, 0);
  // NCCL's own start failing is named.
  setenv("AMP_FAKE_NCCL_MODE", "init-error", 1);
  TestCommunicator second(0, 2);
  amp_cuda_set_communicator(&second);
  EXPECT_EQ(takeError(), "amp_cuda_set_communicator: rank 0 of 2: "
                         "ncclCommInitRankConfig failed with ncclSystemError "
                         "(unhandled system error)");
  amp_cuda_set_communicator(nullptr);
}

TEST(CudaCollectives, MissingNcclIsSaidAndShared) {
  useFakes();
  setenv("AMP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  TestCommunicator host(1, 2);
  amp_cuda_set_communicator(&host);
  std::string error = takeError();
  EXPECT_EQ(error.rfind("amp_cuda_set_communicator: rank 1 of 2: cannot load "
                        "NCCL /nonexistent/libnccl.so.2 (",
                        0),
            0u)
      << error;
  // This rank told the others it failed (its rank + 1), and why.
  EXPECT_EQ(host.lastInput, 2.0f);
  ASSERT_EQ(host.sent.size(), 1u);
  EXPECT_EQ(host.sent[0].rfind("cannot load NCCL /nonexistent/", 0), 0u);
  amp_cuda_set_communicator(nullptr);
}

TEST(CudaCollectives, NcclErrorEndsTheJob) {
  EXPECT_EXIT(
      dieNcclErrorEndsTheJob(), testing::ExitedWithCode(1),
      "amp runtime: rank 0 of 2: NCCL all-reduce 1 of the run failed: NCCL "
      "reported ncclRemoteError \\(remote process exited or there was a "
      "network error\\): fake peer went away; ending the job\n"
      "test communicator: abort\\(1\\)");
}

TEST(CudaCollectives, LateCollectiveNamesTheSilentRank) {
  EXPECT_EXIT(
      dieLateCollectiveNamesTheSilentRank(), testing::ExitedWithCode(1),
      "amp runtime: rank 0 of 2: step 3 \\(--dp-timeout=0.2\\): NCCL "
      "all-reduce 1 of the run did not complete in time; asked over MPI: "
      "MPI_Iallreduce \\(collective 9 of the run\\) is waiting for rank 1 "
      "\\(silent for 3.0 s, last in collective 8\\); ending the job");
}

TEST(CudaCollectives, LateCollectiveWithEveryRankPresent) {
  EXPECT_EXIT(
      dieLateCollectiveWithEveryRankPresent(), testing::ExitedWithCode(1),
      "rank 1 of 2: step 0: NCCL all-reduce 1 of the run did not complete in "
      "time; every rank answered over MPI, so NCCL itself is stuck; ending "
      "the job");
}

// Uninstalling waits for the enqueued all-reduces, still under their
// deadline: one that never completes ends the job there.
TEST(CudaCollectives, UninstallingReportsALateCollective) {
  EXPECT_EXIT(dieUninstallingReportsALateCollective(),
              testing::ExitedWithCode(1),
              "rank 0 of 2: step 9: NCCL all-reduce 1 of the run did not "
              "complete in time; every rank answered over MPI, so NCCL "
              "itself is stuck; ending the job");
}

TEST(CudaDriver, DeviceByLocalRank) {
  for (const char *name : {"AMP_CUDA_DEVICE", "OMPI_COMM_WORLD_LOCAL_RANK",
                           "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"})
    unsetenv(name);
  std::string error;
  EXPECT_EQ(cuda::deviceOrdinal(4, error), 0);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(cuda::deviceOrdinal(4, error), 3);
  // One visible device (CUDA_VISIBLE_DEVICES per rank) serves any rank.
  EXPECT_EQ(cuda::deviceOrdinal(1, error), 0);
  EXPECT_EQ(cuda::deviceOrdinal(2, error), -1);
  EXPECT_EQ(error, "this is local rank 3 (OMPI_COMM_WORLD_LOCAL_RANK) on a "
                   "machine whose driver reports 2 devices: a data-parallel "
                   "job runs one rank per GPU (start fewer ranks per machine, "
                   "or choose one with AMP_CUDA_DEVICE)");
  setenv("AMP_CUDA_DEVICE", "1", 1);
  EXPECT_EQ(cuda::deviceOrdinal(2, error), 1);
  setenv("AMP_CUDA_DEVICE", "2", 1);
  EXPECT_EQ(cuda::deviceOrdinal(2, error), -1);
  EXPECT_EQ(error, "AMP_CUDA_DEVICE=2 names no device (the driver reports 2)");
  unsetenv("AMP_CUDA_DEVICE");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  setenv("LOCAL_RANK", "x", 1);
  EXPECT_EQ(cuda::deviceOrdinal(2, error), -1);
  EXPECT_EQ(error, "LOCAL_RANK=x is not a local rank");
  unsetenv("LOCAL_RANK");
}

#ifdef AMP_REAL_NCCL
// The NCCL the toolkit ships has every entry point by the names Nccl.h
// resolves (no GPU is needed to load it and ask its version).
TEST(Nccl, ToolkitsLibraryResolves) {
  std::string error;
  std::unique_ptr<cuda::NcclApi> nccl = cuda::loadNccl(AMP_REAL_NCCL, error);
  ASSERT_NE(nccl, nullptr) << error;
  EXPECT_GE(nccl->version, 21800) << "NCCL 2.18 or later";
  EXPECT_EQ(
      cuda::ncclErrorName(*nccl, ncclRemoteError).rfind("ncclRemoteError (", 0),
      0u);
}
#endif
