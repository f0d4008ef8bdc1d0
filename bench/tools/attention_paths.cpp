//===- attention_paths.cpp - Time the CPU attention kernels' two paths ----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-bench-attention BATCH HEADS SEQ HEADDIM REPEATS [causal]: calls
// amp_cpu_attention and amp_cpu_attention_grad on bf16 operands of
// [BATCH * HEADS, SEQ, HEADDIM] and prints the median time of each over
// REPEATS calls, for the block products in bf16 through oneDNN's matmul
// (the default on a CPU that multiplies bf16 natively) and widened to f32
// for OpenBLAS (AMP_CPU_GEMM=openblas), the two interleaved call by call so
// that both see the same machine; then the ratio of the medians.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Attention.h"
#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/Float16.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F> double seconds(F f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: amp-bench-attention BATCH HEADS SEQ HEADDIM "
                         "REPEATS [causal]\n");
    return 2;
  }
  int64_t batch = std::atoll(argv[1]), heads = std::atoll(argv[2]),
          seq = std::atoll(argv[3]), dim = std::atoll(argv[4]),
          repeats = std::atoll(argv[5]);
  bool causal = argc > 6 && std::string(argv[6]) == "causal";
  if (batch <= 0 || heads <= 0 || seq <= 0 || dim <= 0 || repeats <= 0) {
    std::fprintf(stderr, "amp-bench-attention: sizes must be positive\n");
    return 2;
  }
  int64_t n = batch * heads * seq * dim;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto values = [&] {
    std::vector<uint16_t> v(n);
    for (uint16_t &x : v)
      x = amp::floatToBFloat(normal(rng));
    return v;
  };
  std::vector<uint16_t> q = values(), k = values(), v = values(),
                        dout = values(), outBits(n);
  std::vector<float> out(n), lse(batch * heads * seq), dq(n), dk(n), dv(n);
  double scale = 1.0 / std::sqrt(double(dim));
  int64_t scaleBits;
  std::memcpy(&scaleBits, &scale, sizeof(scale));
  auto addr = [](auto &x) { return intptr_t(x.data()); };
  int64_t bf16 = int64_t(amp::RuntimeDType::BF16);
  auto forward = [&] {
    amp_cpu_attention(addr(q), addr(k), addr(v), addr(out), addr(lse), bf16, 1,
                      1, batch, heads, seq, seq, dim, dim, causal, scaleBits);
  };
  auto backward = [&] {
    amp_cpu_attention_grad(addr(dout), addr(q), addr(k), addr(v), addr(outBits),
                           addr(lse), addr(dq), addr(dk), addr(dv), bf16, 1, 1,
                           batch, heads, seq, seq, dim, dim, causal, scaleBits);
  };
  forward();
  for (int64_t i = 0; i < n; ++i)
    outBits[i] = amp::floatToBFloat(out[i]);

  const char *names[2] = {"bf16 (oneDNN)", "widened (OpenBLAS)"};
  amp::GemmPath paths[2] = {amp::GemmPath::OneDnn, amp::GemmPath::OpenBlas};
  std::vector<double> fwd[2], bwd[2];
  for (int p = 0; p < 2; ++p) { // warm-up: plans, pages
    amp::setGemmPathOverride(paths[p]);
    forward();
    backward();
  }
  for (int64_t r = 0; r < repeats; ++r)
    for (int p = 0; p < 2; ++p) {
      amp::setGemmPathOverride(paths[p]);
      fwd[p].push_back(seconds(forward));
      bwd[p].push_back(seconds(backward));
    }
  std::printf("attention [%lld x %lld heads, %lld tokens, head dim %lld]%s, "
              "bf16 operands, native bf16 CPU: %s; median of %lld\n",
              (long long)batch, (long long)heads, (long long)seq,
              (long long)dim, causal ? " causal" : "",
              amp::dnnlNativeBf16() ? "yes" : "no", (long long)repeats);
  for (int p = 0; p < 2; ++p)
    std::printf("  %-20s forward %8.2f ms  backward %8.2f ms\n", names[p],
                1e3 * median(fwd[p]), 1e3 * median(bwd[p]));
  std::printf("  widened / bf16:      forward %8.2fx  backward %8.2fx\n",
              median(fwd[1]) / median(fwd[0]), median(bwd[1]) / median(bwd[0]));
  return 0;
}
