//===- embedding_grad.cpp - Time the embedding gradient on the CPU --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-bench-embedding-grad VOCAB DIM POSITIONS REPEATS [loops]: JIT-compiles
// `train.embedding_grad` of a [POSITIONS, DIM] f32 gradient into a
// [VOCAB, DIM] table and prints the median of REPEATS calls. By default the
// CPU lowering's scatter-add (amp_cpu_embedding_grad); `loops` takes the
// linalg lowering (--backend=cpu-loops's), a reduction over
// VOCAB x DIM x POSITIONS. bench/embedding_grad.sh runs both.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/CpuJit.h"
#include "amp/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 5) {
    llvm::errs() << "usage: amp-bench-embedding-grad VOCAB DIM POSITIONS "
                    "REPEATS [loops]\n";
    return 2;
  }
  int64_t vocab = std::atoll(argv[1]), dim = std::atoll(argv[2]),
          positions = std::atoll(argv[3]), repeats = std::atoll(argv[4]);
  bool loops = argc > 5 && std::string(argv[5]) == "loops";
  std::string p = std::to_string(positions), d = std::to_string(dim),
              v = std::to_string(vocab);
  std::string source =
      "func.func @g(%dy: tensor<" + p + "x" + d + "xf32>, %ids: tensor<" + p +
      "xi32>) -> tensor<" + v + "x" + d + "xf32> {\n  %0 = train.embedding_grad %dy, %ids : tensor<" +
      p + "x" + d + "xf32>, tensor<" + p + "xi32> -> tensor<" + v + "x" + d +
      "xf32>\n  return %0 : tensor<" + v + "x" + d + "xf32>\n}\n";

  amp::ToolContext tool;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &tool.getContext());
  if (!module)
    return 1;
  amp::CpuCompileOptions options;
  options.blas = !loops;
  auto fn = amp::CpuFunction::compile(*module, "g", options);
  if (!fn) {
    llvm::errs() << llvm::toString(fn.takeError()) << "\n";
    return 1;
  }
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> value(-1, 1);
  std::uniform_int_distribution<int32_t> id(0, int32_t(vocab - 1));
  std::vector<float> dy(positions * dim);
  for (float &x : dy)
    x = value(rng);
  std::vector<int32_t> ids(positions);
  for (int32_t &x : ids)
    x = id(rng);
  amp::HostTensor dyT =
      amp::HostTensor::fromFloats(amp::ElementKind::F32, {positions, dim}, dy);
  amp::HostTensor idsT = amp::HostTensor::fromInts({positions}, ids);
  std::vector<double> times;
  for (int64_t r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    auto out = (*fn)->call({&dyT, &idsT});
    if (!out) {
      llvm::errs() << llvm::toString(out.takeError()) << "\n";
      return 1;
    }
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  llvm::outs() << (loops ? "reduction" : "scatter-add") << " vocab " << vocab
               << " dim " << dim << " positions " << positions << ": median "
               << times[times.size() / 2] << " ms over " << repeats
               << " calls\n";
  return 0;
}
