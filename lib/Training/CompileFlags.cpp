//===- CompileFlags.cpp - Command-line flags of step compilation ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/CompileFlags.h"

#include <cmath>

using namespace amp;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &amp::getCompileFlagsCategory() {
  static cl::OptionCategory category("compile options");
  return category;
}

namespace {

cl::OptionCategory &compileCategory = getCompileFlagsCategory();

cl::opt<std::string> optLevel("opt-level", cl::desc("O0, O1, O2 or O3"),
                              cl::init("O1"), cl::cat(compileCategory));
cl::opt<std::string> dtype("dtype", cl::desc("f16 or bf16"), cl::init("f16"),
                           cl::cat(compileCategory));
cl::opt<std::string> optimizer("optimizer",
                               cl::desc("sgd, momentum, adam or adamw"),
                               cl::init("adam"), cl::cat(compileCategory));
cl::opt<double> initScale(
    "init-scale",
    cl::desc("Initial loss scale (f16 at O1/O2; 0: 65536, GradScaler's)"),
    cl::init(0.0), cl::cat(compileCategory));

cl::opt<int64_t>
    growthInterval("growth-interval",
                   cl::desc("Clean steps before the dynamic loss scale grows "
                            "(GradScaler's growth_interval)"),
                   cl::init(2000), cl::cat(compileCategory));

cl::opt<int64_t> accumulate(
    "accumulate",
    cl::desc("Micro-batches whose gradients are accumulated into one update "
             "(one step call per micro-batch)"),
    cl::init(1), cl::cat(compileCategory));

} // namespace

llvm::Error amp::readCompileFlags(AmpPipelineOptions &options) {
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  if (optLevel != "O0" && optLevel != "O1" && optLevel != "O2" &&
      optLevel != "O3")
    return err("--opt-level must be O0, O1, O2 or O3, got '" + optLevel + "'");
  if (dtype != "f16" && dtype != "bf16")
    return err("--dtype must be f16 or bf16, got '" + dtype + "'");
  if (!(initScale >= 0) || !std::isfinite(initScale))
    return err("--init-scale must be positive and finite (0: the default)");
  if (growthInterval < 1)
    return err("--growth-interval must be at least 1, got " +
               llvm::Twine(growthInterval.getValue()));
  if (accumulate < 1)
    return err("--accumulate must be at least 1, got " +
               llvm::Twine(accumulate.getValue()));
  options.optLevel = optLevel;
  options.dtype = dtype;
  options.optimizer = optimizer;
  options.initScale = initScale;
  options.growthInterval = growthInterval;
  options.accumulate = accumulate;
  return llvm::Error::success();
}
