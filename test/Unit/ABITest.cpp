//===- ABITest.cpp - The compiler's and the CPU runtime's shared names ----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Every CPU entry point amp/ABI/EntryPoints.h names (the functions compiled
// code calls) is one the CPU runtime defines and gives a JIT; the shared
// codes keep their values (artifacts built earlier pass them as numbers).
//
//===----------------------------------------------------------------------===//

#include "amp/ABI/Collectives.h"
#include "amp/ABI/ElementTypes.h"
#include "amp/ABI/EntryPoints.h"
#include "amp/Runtime/CpuRuntime.h"

#include "gtest/gtest.h"

#include <cstring>
#include <set>
#include <string>

using namespace amp;

TEST(ABI, EveryCpuEntryPointIsResolved) {
  std::set<std::string> defined;
  for (auto &[name, address] : getCpuRuntimeSymbols()) {
    EXPECT_NE(address, nullptr) << name;
    defined.insert(name);
  }
  std::set<std::string> named;
  for (const char *name : entry::kCpuEntryPoints) {
    EXPECT_TRUE(defined.count(name)) << name << " is not in the CPU runtime";
    EXPECT_EQ(std::strncmp(name, "amp_cpu_", 8), 0) << name;
    EXPECT_TRUE(named.insert(name).second) << name << " is listed twice";
  }
  // The rounded GEMMs' names are the plain ones and the suffix.
  EXPECT_EQ(std::string(entry::kCpuGemm) + entry::kRoundSuffix,
            entry::kCpuGemmRound);
  EXPECT_EQ(std::string(entry::kCpuGemmBias) + entry::kRoundSuffix,
            entry::kCpuGemmBiasRound);
}

TEST(ABI, CodesKeepTheirValues) {
  EXPECT_EQ(int64_t(RuntimeDType::F32), 0);
  EXPECT_EQ(int64_t(RuntimeDType::F16), 1);
  EXPECT_EQ(int64_t(RuntimeDType::BF16), 2);
  EXPECT_EQ(int64_t(RuntimeDType::F64), 3);
  EXPECT_EQ(int64_t(CollectiveOp::Sum), 0);
  EXPECT_EQ(int64_t(CollectiveOp::Max), 1);
}
