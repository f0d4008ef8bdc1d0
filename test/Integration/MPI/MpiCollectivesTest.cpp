//===- MpiCollectivesTest.cpp - train.all_reduce across processes ---------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Run by ctest under `mpirun -np N` (N = 2, 3): every rank compiles the same
// function of train.all_reduce ops, feeds it values that depend on its rank,
// and checks the results against the combination it computes itself. The
// values are small integers and halves, so every sum is exact whatever
// order MPI adds in, and every rank must get the same bits.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/Execution/CpuJit.h"
#include "amp/Runtime/Float16.h"
#include "amp/Runtime/MpiCommunicator.h"

#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace amp;
using namespace mlir;

namespace {

MpiCommunicator *world = nullptr;

/// `source` compiled for a job of `size` ranks: each `ranks N` of its ops
/// becomes `ranks <size>` (the runtime checks the count).
std::unique_ptr<CpuFunction> compileForJob(test::TestContext &context,
                                           std::string source, int size) {
  for (size_t at = source.find("ranks N"); at != std::string::npos;
       at = source.find("ranks N"))
    source.replace(at, 7, "ranks " + std::to_string(size));
  return test::compileFunction(context, source);
}

TEST(Mpi, AllReduceAcrossRanks) {
  ASSERT_TRUE(world);
  const int rank = world->rank(), size = world->size();
  test::TestContext context;
  // The step is compiled for this job's size (the runtime checks it).
  std::string source = R"mlir(
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf16>, %c: tensor<3xbf16>, %flag: tensor<i1>, %pending: tensor<i1>)
    -> (tensor<2x3xf32>, tensor<4xf16>, tensor<3xbf16>, tensor<2x3xf32>, tensor<i1>, tensor<2x3xf32>) {
  %s:3 = train.all_reduce sum(%a, %b, %c) ranks N : (tensor<2x3xf32>, tensor<4xf16>, tensor<3xbf16>)
  %m = train.all_reduce mean(%a) ranks N wire bf16 : (tensor<2x3xf32>)
  %f = train.all_reduce max(%flag) ranks N : (tensor<i1>)
  %k = train.all_reduce sum(%a) skip(%pending) ranks N : (tensor<2x3xf32>)
  return %s#0, %s#1, %s#2, %m, %f, %k : tensor<2x3xf32>, tensor<4xf16>, tensor<3xbf16>, tensor<2x3xf32>, tensor<i1>, tensor<2x3xf32>
}
)mlir";
  std::unique_ptr<CpuFunction> fn = compileForJob(context, source, size);
  ASSERT_TRUE(fn);

  // Rank r's values, and their sums over the ranks.
  auto a = [](int r, int i) { return float(r * 10 + i) - 2.5f; };
  auto b = [](int r, int i) { return float((r + 1) * (i - 1)); };
  auto c = [](int r, int i) { return 0.5f * float(r + i); };
  std::vector<float> av, bv, cv, aSum(6, 0), bSum(4, 0), cSum(3, 0);
  for (int i = 0; i < 6; ++i)
    av.push_back(a(rank, i));
  for (int i = 0; i < 4; ++i)
    bv.push_back(b(rank, i));
  for (int i = 0; i < 3; ++i)
    cv.push_back(c(rank, i));
  for (int r = 0; r < size; ++r) {
    for (int i = 0; i < 6; ++i)
      aSum[i] += a(r, i);
    for (int i = 0; i < 4; ++i)
      bSum[i] += b(r, i);
    for (int i = 0; i < 3; ++i)
      cSum[i] += c(r, i);
  }
  HostTensor at = HostTensor::fromFloats(ElementKind::F32, {2, 3}, av);
  HostTensor bt = HostTensor::fromFloats(ElementKind::F16, {4}, bv);
  HostTensor ct = HostTensor::fromFloats(ElementKind::BF16, {3}, cv);
  HostTensor flag = HostTensor::fromBools({}, {rank == size - 1});
  for (bool pending : {false, true}) {
    HostTensor pt = HostTensor::fromBools({}, {pending});
    auto out = fn->call({&at, &bt, &ct, &flag, &pt});
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    EXPECT_EQ((*out)[0].toFloats(), aSum) << "rank " << rank;
    EXPECT_EQ((*out)[1].toFloats(), bSum) << "rank " << rank;
    EXPECT_EQ((*out)[2].toFloats(), cSum) << "rank " << rank;
    // mean: each rank sends bf16(a * float(1 / size)), summed in bf16
    // steps in MPI's order: within 2 bf16 ulps of the exact mean, and the
    // same bits on every rank (rank 0's broadcast).
    std::vector<float> mean = (*out)[3].toFloats();
    for (int i = 0; i < 6; ++i) {
      float exact = aSum[i] / float(size);
      EXPECT_NEAR(mean[i], exact, std::abs(exact) * (2.0f / 128) + 1e-6f)
          << "rank " << rank << " element " << i;
    }
    std::vector<float> rankZero(mean);
    ASSERT_EQ(world->broadcast(rankZero.data(),
                               int64_t(rankZero.size() * sizeof(float)), 0),
              "");
    EXPECT_EQ(mean, rankZero) << "rank " << rank;
    EXPECT_EQ((*out)[4].getAsDouble(0), 1.0) << "rank " << rank;
    EXPECT_EQ((*out)[5].toFloats(), pending ? av : aSum) << "rank " << rank;
  }
}

// SyncBatchNorm: each rank normalizes its shard with the statistics of all
// ranks' shards, and backward's dx uses the global sums; checked on every
// rank against the whole batch's formulas in double (within 1e-5).
TEST(Mpi, SyncBatchNormAcrossRanks) {
  ASSERT_TRUE(world);
  const int rank = world->rank(), size = world->size();
  test::TestContext context;
  std::string source = R"mlir(
func.func @f(%x: tensor<2x2x3xf32>, %dy: tensor<2x2x3xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>)
    -> (tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>) {
  %y, %rm, %rv = train.batch_norm %x, %g, %b, %m, %v ranks N : tensor<2x2x3xf32>, tensor<2xf32>
  %dx, %dg, %db = train.batch_norm_grad %dy, %x, %g ranks N : tensor<2x2x3xf32>, tensor<2xf32>
  return %y, %rm, %rv, %dx, %dg, %db : tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32>
}
)mlir";
  std::unique_ptr<CpuFunction> fn = compileForJob(context, source, size);
  ASSERT_TRUE(fn);

  // Element i = (n * 2 + c) * 3 + s of rank r's shard; channel c.
  auto x = [](int r, int i) { return std::sin(1.3 * i + 2.1 * r) * (1 + r); };
  auto dy = [](int r, int i) { return std::cos(0.7 * i - r); };
  auto channel = [](int i) { return (i / 3) % 2; };
  const double g[2] = {1.5, -0.5}, b[2] = {0.25, 2.0}, eps = 1e-5;
  std::vector<float> xv, dyv;
  for (int i = 0; i < 12; ++i) {
    xv.push_back(float(x(rank, i)));
    dyv.push_back(float(dy(rank, i)));
  }
  // The whole batch's statistics, from the f32 values every rank holds.
  double count = 6.0 * size, sum[2] = {0, 0}, dev[2] = {0, 0};
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < 12; ++i)
      sum[channel(i)] += double(float(x(r, i)));
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < 12; ++i) {
      double d = double(float(x(r, i))) - sum[channel(i)] / count;
      dev[channel(i)] += d * d;
    }
  auto xhat = [&](int r, int i) {
    int c = channel(i);
    return (double(float(x(r, i))) - sum[c] / count) /
           std::sqrt(dev[c] / count + eps);
  };
  double sumDy[2] = {0, 0}, sumDyXhat[2] = {0, 0}, localDy[2] = {0, 0},
         localDyXhat[2] = {0, 0};
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < 12; ++i) {
      double d = double(float(dy(r, i)));
      sumDy[channel(i)] += d;
      sumDyXhat[channel(i)] += d * xhat(r, i);
      if (r == rank) {
        localDy[channel(i)] += d;
        localDyXhat[channel(i)] += d * xhat(r, i);
      }
    }

  HostTensor xt = HostTensor::fromFloats(ElementKind::F32, {2, 2, 3}, xv);
  HostTensor dyt = HostTensor::fromFloats(ElementKind::F32, {2, 2, 3}, dyv);
  HostTensor gt = HostTensor::fromFloats(ElementKind::F32, {2}, {1.5f, -0.5f});
  HostTensor bt = HostTensor::fromFloats(ElementKind::F32, {2}, {0.25f, 2.0f});
  HostTensor mt = HostTensor::fromFloats(ElementKind::F32, {2}, {0.0f, 1.0f});
  HostTensor vt = HostTensor::fromFloats(ElementKind::F32, {2}, {1.0f, 3.0f});
  auto out = fn->call({&xt, &dyt, &gt, &bt, &mt, &vt});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<float> y = (*out)[0].toFloats(), rm = (*out)[1].toFloats(),
                     rv = (*out)[2].toFloats(), dx = (*out)[3].toFloats(),
                     dg = (*out)[4].toFloats(), db = (*out)[5].toFloats();
  const double running[2][2] = {{0.0, 1.0}, {1.0, 3.0}};
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(rm[c], 0.9 * running[0][c] + 0.1 * sum[c] / count, 1e-5)
        << "rank " << rank << " channel " << c;
    EXPECT_NEAR(rv[c], 0.9 * running[1][c] + 0.1 * dev[c] / (count - 1),
                1e-5)
        << "rank " << rank << " channel " << c;
    // This rank's parameter gradients (data parallelism sums them).
    EXPECT_NEAR(dg[c], localDyXhat[c], 1e-5) << "rank " << rank;
    EXPECT_NEAR(db[c], localDy[c], 1e-5) << "rank " << rank;
  }
  for (int i = 0; i < 12; ++i) {
    int c = channel(i);
    EXPECT_NEAR(y[i], xhat(rank, i) * g[c] + b[c], 1e-5)
        << "rank " << rank << " element " << i;
    double rstd = 1.0 / std::sqrt(dev[c] / count + eps);
    double expected = rstd * g[c] *
                      (double(dyv[i]) - sumDy[c] / count -
                       xhat(rank, i) * sumDyXhat[c] / count);
    EXPECT_NEAR(dx[i], expected, 1e-5) << "rank " << rank << " element " << i;
  }
}

TEST(Mpi, BroadcastFromRankZero) {
  ASSERT_TRUE(world);
  std::vector<int> data(5, world->rank() + 100);
  if (world->rank() == 0)
    data = {1, 2, 3, 4, 5};
  EXPECT_EQ(
      world->broadcast(data.data(), int64_t(data.size() * sizeof(int)), 0), "");
  EXPECT_EQ(data, (std::vector<int>{1, 2, 3, 4, 5}));
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string error;
  std::unique_ptr<MpiCommunicator> communicator =
      MpiCommunicator::create(error);
  if (!communicator) {
    std::fprintf(stderr, "cannot join the MPI job: %s\n", error.c_str());
    return 1;
  }
  world = communicator.get();
  setCommunicator(world);
  int failed = RUN_ALL_TESTS();
  setCommunicator(nullptr);
  return failed;
}
