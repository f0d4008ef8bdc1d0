//===- Initializers.cpp - Initial values of parameters --------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The distributions alone, without MLIR: the artifact loader draws from them
// too (InitAttrs.cpp resolves the attributes).
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Initializers.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>

using namespace amp;

llvm::Expected<std::vector<float>>
amp::initialValues(const InitSpec &init, int64_t count, std::mt19937_64 &rng) {
  std::vector<float> values(count, 0.0f);
  auto uniform = [&](double bound) {
    std::uniform_real_distribution<double> u(-bound, bound);
    for (float &v : values)
      v = float(u(rng));
  };
  auto normal = [&](double stddev) {
    std::normal_distribution<double> n(0.0, stddev);
    for (float &v : values)
      v = float(n(rng));
  };
  double fanIn = double(init.fanIn), fanOut = double(init.fanOut);
  enum { FanIn = 1, FanOut = 2 };
  int needs =
      llvm::StringSwitch<int>(init.kind)
          .Cases({"fan_in_uniform", "kaiming_uniform", "kaiming_normal"}, FanIn)
          .Cases({"xavier_uniform", "xavier_normal"}, FanIn | FanOut)
          .Default(0);
  if (((needs & FanIn) && init.fanIn <= 0) ||
      ((needs & FanOut) && init.fanOut <= 0))
    return llvm::createStringError("initializer " + init.kind +
                                   " needs positive fans, has fan_in " +
                                   std::to_string(init.fanIn) + ", fan_out " +
                                   std::to_string(init.fanOut));
  if (init.kind == "seed")
    return llvm::createStringError(
        "initializer seed starts an i32 counter, not a float tensor");
  if (init.kind == "zeros")
    return values;
  if (init.kind == "ones")
    std::fill(values.begin(), values.end(), 1.0f);
  else if (init.kind == "constant")
    std::fill(values.begin(), values.end(), float(init.value));
  else if (init.kind == "normal")
    normal(init.value);
  else if (init.kind == "uniform")
    uniform(init.value);
  else if (init.kind == "fan_in_uniform")
    uniform(1.0 / std::sqrt(fanIn));
  else if (init.kind == "kaiming_uniform")
    uniform(std::sqrt(6.0 / fanIn));
  else if (init.kind == "kaiming_normal")
    normal(std::sqrt(2.0 / fanIn));
  else if (init.kind == "xavier_uniform")
    uniform(std::sqrt(6.0 / (fanIn + fanOut)));
  else if (init.kind == "xavier_normal")
    normal(std::sqrt(2.0 / (fanIn + fanOut)));
  else
    return llvm::createStringError("unknown initializer '" + init.kind + "'");
  return values;
}

llvm::Expected<std::vector<int32_t>>
amp::initialInts(const InitSpec &init, int64_t count, std::mt19937_64 &rng) {
  if (init.kind == "seed") {
    std::uniform_int_distribution<int32_t> start(0, INT32_MAX);
    std::vector<int32_t> values(count);
    for (int32_t &v : values)
      v = start(rng);
    return values;
  }
  auto floats = initialValues(init, count, rng);
  if (!floats)
    return floats.takeError();
  return std::vector<int32_t>(floats->begin(), floats->end());
}
