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
  for (size_t at = source.find("ranks N"); at != std::string::npos;
       at = source.find("ranks N"))
    source.replace(at, 7, "ranks " + std::to_string(size));
  std::unique_ptr<CpuFunction> fn = test::compileFunction(context, source);
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
