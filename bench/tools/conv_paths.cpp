//===- conv_paths.cpp - im2col + OpenBLAS against oneDNN, per shape -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Times the CPU runtime's three convolution passes on the convolutions of
// the benchmark models (the Fashion-MNIST CNN at batch 128, VGG16-CIFAR at
// batch 32), once through im2col + OpenBLAS and once through oneDNN, with
// f32 operands and with bf16 ones, and prints a markdown table: the
// measurements behind chooseConvPath's rule (docs/benchmarks.md,
// "Convolutions"). Usage: amp-bench-conv-paths [repeats] [threads].
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/Float16.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

using namespace amp;

namespace {

struct Shape {
  const char *model;
  int64_t n, c, hw, f;
};

// 3x3 convolutions, padding 1, stride 1: every convolution of both models
// (VGG16's repeated shapes once).
const Shape kShapes[] = {
    {"cnn", 128, 1, 28, 32},    {"cnn", 128, 32, 14, 64},
    {"vgg16", 32, 3, 32, 64},   {"vgg16", 32, 64, 32, 64},
    {"vgg16", 32, 64, 16, 128}, {"vgg16", 32, 128, 16, 128},
    {"vgg16", 32, 128, 8, 256}, {"vgg16", 32, 256, 8, 256},
    {"vgg16", 32, 256, 4, 512}, {"vgg16", 32, 512, 4, 512},
    {"vgg16", 32, 512, 2, 512},
};

double medianMs(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Random operand bits of `count` elements: f32, or bf16 (2 bytes each).
std::vector<uint32_t> operand(int64_t count, bool bf16, std::mt19937 &rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<uint32_t> words(bf16 ? (count + 1) / 2 : count);
  if (bf16) {
    auto *half = reinterpret_cast<uint16_t *>(words.data());
    for (int64_t i = 0; i < count; ++i)
      half[i] = floatToBFloat(u(rng));
  } else {
    auto *f = reinterpret_cast<float *>(words.data());
    for (int64_t i = 0; i < count; ++i)
      f[i] = u(rng);
  }
  return words;
}

} // namespace

int main(int argc, char **argv) {
  int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  if (argc > 2)
    amp_cpu_set_num_threads(std::atoi(argv[2]));
  std::printf("%s, %lld thread(s); median of %d calls after one warm-up, ms\n\n",
              describeDnnl().c_str(),
              static_cast<long long>(amp_cpu_get_num_threads()), repeats);
  std::printf("| model | shape (n c hw -> f) | operands | pass | im2col + "
              "OpenBLAS | oneDNN | oneDNN speed-up |\n|---|---|---|---|---:|"
              "---:|---:|\n");
  std::mt19937 rng(3);
  const char *passNames[] = {"forward", "input grad", "filter grad"};
  for (const Shape &s : kShapes) {
    ConvGeometry g{s.n, s.c, s.hw, s.hw, s.f, 3, 3, s.hw, s.hw,
                   1,   1,   1,    1,    1,   1};
    for (bool bf16 : {false, true}) {
      int64_t type = int64_t(bf16 ? RuntimeDType::BF16 : RuntimeDType::F32);
      auto x = operand(g.n * g.inputSize(), bf16, rng);
      auto w = operand(g.f * g.patch(), bf16, rng);
      auto dy = operand(g.n * g.outputSize(), bf16, rng);
      std::vector<float> out(
          std::max({g.n * g.inputSize(), g.n * g.outputSize(),
                    g.f * g.patch()}));
      auto addr = [](const std::vector<uint32_t> &v) {
        return reinterpret_cast<intptr_t>(v.data());
      };
      auto o = reinterpret_cast<intptr_t>(out.data());
      for (int pass = 0; pass < 3; ++pass) {
        double ms[2];
        for (ConvPath path : {ConvPath::Im2col, ConvPath::OneDnn}) {
          setConvPathOverride(path);
          auto call = [&] {
#define GEOMETRY                                                               \
  g.n, g.c, g.h, g.w, g.f, g.kh, g.kw, g.oh, g.ow, g.sh, g.sw, g.ph, g.pw,     \
      g.dh, g.dw
            if (pass == 0)
              amp_cpu_conv2d(addr(x), addr(w), o, type, type, GEOMETRY);
            else if (pass == 1)
              amp_cpu_conv2d_grad_input(addr(dy), addr(w), o, type, type,
                                        GEOMETRY);
            else
              amp_cpu_conv2d_grad_filter(addr(dy), addr(x), o, type, type,
                                         GEOMETRY);
#undef GEOMETRY
          };
          call();
          std::vector<double> times;
          for (int r = 0; r < repeats; ++r) {
            auto start = std::chrono::steady_clock::now();
            call();
            times.push_back(std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - start)
                                .count());
          }
          ms[path == ConvPath::OneDnn] = medianMs(times);
        }
        std::printf("| %s | %lld %lld %lld -> %lld | %s | %s | %.3f | %.3f | "
                    "%.2fx |\n",
                    s.model, static_cast<long long>(g.n),
                    static_cast<long long>(g.c), static_cast<long long>(g.h),
                    static_cast<long long>(g.f), bf16 ? "bf16" : "f32",
                    passNames[pass], ms[0], ms[1], ms[0] / ms[1]);
        std::fflush(stdout);
      }
    }
  }
  setConvPathOverride(std::nullopt);
  return 0;
}
