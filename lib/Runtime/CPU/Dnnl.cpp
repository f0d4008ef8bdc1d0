//===- Dnnl.cpp - Convolutions through oneDNN -----------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A plan per (pass, geometry, operand type, thread count): the oneDNN
// primitive, built once (it is JIT-compiled code), the reorders between the
// step's dense buffers and the layouts the primitive chose, and the size of
// its scratchpad. Every buffer a call needs comes from the counted heap
// (amp_cpu_malloc), so the step's peak memory includes them.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/CpuFeatures.h"
#include "amp/Runtime/CpuRuntime.h"
#include "Scratch.h"

#include <dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

using namespace amp;
using namespace amp::runtime;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// One operand of a plan: its argument slot, the dense layout of the
/// step's buffer, the primitive's layout, and the reorder between them
/// (user -> primitive for an input, back for the output) where they differ.
struct Operand {
  int arg = 0;
  dnnl::memory::desc user, inner;
  std::optional<dnnl::reorder> reorder;
};

struct Plan {
  dnnl::primitive primitive;
  std::array<Operand, 3> operands; // two inputs, then the output
  dnnl::memory::desc scratchpad;
};

/// Plans built on first use, one per key; a plan that cannot be built is
/// cached as nullptr. Thread-safe.
template <typename PlanT, size_t KeySize> class PlanCache {
public:
  using Key = std::array<int64_t, KeySize>;
  template <typename Make> const PlanT *get(const Key &key, Make make) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = plans.find(key);
    if (it == plans.end())
      it = plans.emplace(key, make()).first;
    return it->second.get();
  }

private:
  std::mutex mutex;
  std::map<Key, std::unique_ptr<PlanT>> plans;
};

/// Right padding that makes oneDNN's output size the op's: oneDNN wants
/// (in - kernel_extent + l + r) / stride + 1 == out exactly.
int64_t rightPadding(int64_t in, int64_t out, int64_t k, int64_t stride,
                     int64_t dilation, int64_t left) {
  return (out - 1) * stride + (k - 1) * dilation + 1 - in - left;
}

std::unique_ptr<Plan> makePlan(ConvPass pass, const ConvGeometry &g,
                               bool bf16) {
  using namespace dnnl;
  int64_t pr = rightPadding(g.h, g.oh, g.kh, g.sh, g.dh, g.ph);
  int64_t pb = rightPadding(g.w, g.ow, g.kw, g.sw, g.dw, g.pw);
  if (pr < 0 || pb < 0 || g.n <= 0 || g.c <= 0 || g.f <= 0 || g.oh <= 0 ||
      g.ow <= 0)
    return nullptr;
  dt in = bf16 ? dt::bf16 : dt::f32;
  memory::dims src{g.n, g.c, g.h, g.w}, wei{g.f, g.c, g.kh, g.kw},
      dst{g.n, g.f, g.oh, g.ow}, strides{g.sh, g.sw},
      dilates{g.dh - 1, g.dw - 1}, left{g.ph, g.pw}, right{pr, pb};
  // The primitive's operand types: 16-bit inputs, f32 results.
  dt srcType = pass == ConvPass::BackwardData ? dt::f32 : in;
  dt weiType = pass == ConvPass::BackwardWeights ? dt::f32 : in;
  dt dstType = pass == ConvPass::Forward ? dt::f32 : in;
  memory::desc srcAny(src, srcType, tag::any), weiAny(wei, weiType, tag::any),
      dstAny(dst, dstType, tag::any);
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  auto plan = std::make_unique<Plan>();
  auto operand = [&](int arg, const memory::desc &inner, dt type,
                     const memory::dims &dims, tag layout, bool input) {
    Operand o;
    o.arg = arg;
    o.user = memory::desc(dims, type, layout);
    o.inner = inner;
    if (o.user != o.inner)
      o.reorder = input ? reorder(reorder::primitive_desc(cpuEngine(), o.user,
                                                          cpuEngine(), o.inner))
                        : reorder(reorder::primitive_desc(
                              cpuEngine(), o.inner, cpuEngine(), o.user));
    return o;
  };
  auto finish = [&](const auto &pd, primitive built,
                    std::array<Operand, 3> operands) {
    plan->primitive = std::move(built);
    plan->operands = std::move(operands);
    plan->scratchpad = pd.scratchpad_desc();
  };
  try {
    // The forward convolution, as the step runs it: the forward plan, and
    // the hint the passes of training are built with (oneDNN matches their
    // layouts to it).
    convolution_forward::primitive_desc forward(
        convolution_forward::desc(
            prop_kind::forward_training, algorithm::convolution_direct,
            memory::desc(src, in, tag::any), memory::desc(wei, in, tag::any),
            memory::desc(dst, dt::f32, tag::any), strides, dilates, left,
            right),
        attr, cpuEngine());
    switch (pass) {
    case ConvPass::Forward:
      finish(forward, convolution_forward(forward),
             {operand(DNNL_ARG_SRC, forward.src_desc(), in, src, tag::nchw,
                      true),
              operand(DNNL_ARG_WEIGHTS, forward.weights_desc(), in, wei,
                      tag::oihw, true),
              operand(DNNL_ARG_DST, forward.dst_desc(), dt::f32, dst,
                      tag::nchw, false)});
      break;
    case ConvPass::BackwardData: {
      convolution_backward_data::primitive_desc pd(
          convolution_backward_data::desc(algorithm::convolution_direct,
                                          srcAny, weiAny, dstAny, strides,
                                          dilates, left, right),
          attr, cpuEngine(), forward);
      finish(pd, convolution_backward_data(pd),
             {operand(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), in, dst,
                      tag::nchw, true),
              operand(DNNL_ARG_WEIGHTS, pd.weights_desc(), in, wei, tag::oihw,
                      true),
              operand(DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), dt::f32, src,
                      tag::nchw, false)});
      break;
    }
    case ConvPass::BackwardWeights: {
      convolution_backward_weights::primitive_desc pd(
          convolution_backward_weights::desc(algorithm::convolution_direct,
                                             srcAny, weiAny, dstAny, strides,
                                             dilates, left, right),
          attr, cpuEngine(), forward);
      finish(pd, convolution_backward_weights(pd),
             {operand(DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), in, dst,
                      tag::nchw, true),
              operand(DNNL_ARG_SRC, pd.src_desc(), in, src, tag::nchw, true),
              operand(DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc(), dt::f32,
                      wei, tag::oihw, false)});
      break;
    }
    }
  } catch (const dnnl::error &) {
    // No kernel for these types or this shape on this CPU.
    return nullptr;
  }
  return plan;
}

/// The plan of a pass, built on first use; nullptr where oneDNN has none.
const Plan *getPlan(ConvPass pass, const ConvGeometry &g, bool bf16) {
  static PlanCache<Plan, 18> plans;
  return plans.get({int64_t(pass), bf16, omp_get_max_threads(), g.n, g.c, g.h,
                    g.w, g.f, g.kh, g.kw, g.oh, g.ow, g.sh, g.sw, g.ph, g.pw,
                    g.dh, g.dw},
                   [&] { return makePlan(pass, g, bf16); });
}

} // namespace

bool amp::dnnlNativeBf16() {
  const CpuFeatures &cpu = getCpuFeatures();
  return cpu.avx512bf16 || cpu.amxBf16;
}

namespace {
/// The index in `choices` of the environment variable `name`'s value, or -1
/// (unset, "auto", or not a choice: said once on stderr).
int choiceFromEnvironment(const char *name,
                          std::initializer_list<const char *> choices) {
  const char *env = std::getenv(name);
  if (!env || !*env || !std::strcmp(env, "auto"))
    return -1;
  int i = 0;
  for (const char *choice : choices) {
    if (!std::strcmp(env, choice))
      return i;
    ++i;
  }
  std::fprintf(stderr, "amp runtime: %s=%s is not one of auto", name, env);
  for (const char *choice : choices)
    std::fprintf(stderr, ", %s", choice);
  std::fprintf(stderr, "; using auto\n");
  return -1;
}

/// -1: the rule; else a ConvPath (AMP_CPU_CONV, or a test's override).
std::atomic<int> &forcedConvPath() {
  static std::atomic<int> path{
      choiceFromEnvironment("AMP_CPU_CONV", {"im2col", "onednn"})};
  return path;
}

/// -1: oneDNN where it takes the types; else a GemmPath (AMP_CPU_GEMM).
std::atomic<int> &forcedGemmPath() {
  static std::atomic<int> path{
      choiceFromEnvironment("AMP_CPU_GEMM", {"openblas", "onednn"})};
  return path;
}
} // namespace

void amp::setConvPathOverride(std::optional<ConvPath> path) {
  forcedConvPath() = path ? int(*path) : -1;
}

void amp::setGemmPathOverride(std::optional<GemmPath> path) {
  forcedGemmPath() = path ? int(*path) : -1;
}

bool amp::bf16GemmsOnOneDnn() {
  return dnnlNativeBf16() && chooseGemmPath() == GemmPath::OneDnn;
}

GemmPath amp::chooseGemmPath() {
  int forced = forcedGemmPath();
  return forced >= 0 ? GemmPath(forced) : GemmPath::OneDnn;
}

ConvPath amp::chooseConvPath(ConvPass pass, const ConvGeometry &g,
                             bool bf16) {
  int forced = forcedConvPath();
  if (forced >= 0)
    return ConvPath(forced);
  return measuredConvPath(pass, g, bf16);
}

bool amp::runDnnlConvolution(ConvPass pass, const ConvGeometry &g,
                             const void *a, RuntimeDType typeA, const void *b,
                             RuntimeDType typeB, float *out) {
  bool native = typeA == RuntimeDType::BF16 && typeB == RuntimeDType::BF16 &&
                dnnlNativeBf16();
  const Plan *plan = native ? getPlan(pass, g, true) : nullptr;
  if (!plan) {
    native = false;
    plan = getPlan(pass, g, false);
  }
  if (!plan)
    return false;
  std::array<int64_t, 2> counts = convOperandCounts(pass, g);
  std::array<RuntimeDType, 2> types{typeA, typeB};
  dnnl::engine &engine = cpuEngine();
  dnnl::stream stream(engine);
  std::array<const void *, 3> user{a, b, out};
  std::array<dnnl::memory, 3> inner;
  std::array<std::unique_ptr<CountedBuffer>, 3> buffers;
  std::array<std::optional<FloatOperand>, 2> widened;
  std::unordered_map<int, dnnl::memory> args;
  for (size_t i = 0; i < 3; ++i) {
    const Operand &o = plan->operands[i];
    const void *data = user[i];
    if (i < 2 && !native && types[i] != RuntimeDType::F32) {
      widened[i].emplace(reinterpret_cast<intptr_t>(user[i]),
                         int64_t(types[i]), counts[i]);
      data = widened[i]->get();
    }
    dnnl::memory mine(o.user, engine, const_cast<void *>(data));
    if (!o.reorder) {
      inner[i] = mine;
    } else {
      buffers[i] = std::make_unique<CountedBuffer>(o.inner.get_size());
      inner[i] = dnnl::memory(o.inner, engine, buffers[i]->data);
      if (i < 2) {
        o.reorder->execute(stream, mine, inner[i]);
        stream.wait();
        if (widened[i])
          widened[i]->release();
      }
    }
    args.emplace(o.arg, inner[i]);
  }
  CountedBuffer scratch(plan->scratchpad.get_size());
  args.emplace(DNNL_ARG_SCRATCHPAD,
               dnnl::memory(plan->scratchpad, engine, scratch.data));
  plan->primitive.execute(stream, args);
  const Operand &result = plan->operands[2];
  if (result.reorder) {
    dnnl::memory mine(result.user, engine, out);
    result.reorder->execute(stream, inner[2], mine);
  }
  stream.wait();
  return true;
}

namespace {
struct MatmulPlan {
  dnnl::matmul primitive;
  dnnl::memory::desc a, b, c, bias, scratchpad;
};

/// A row-major matrix of `rows` x `cols` per batch entry, stored transposed
/// (cols x rows) when `transposed`.
dnnl::memory::desc matrixDesc(int64_t batch, int64_t rows, int64_t cols,
                              bool transposed, dt type) {
  dnnl::memory::dims strides =
      transposed ? dnnl::memory::dims{rows * cols, 1, rows}
                 : dnnl::memory::dims{rows * cols, cols, 1};
  return dnnl::memory::desc({batch, rows, cols}, type, strides);
}

/// `out`: the result's type (f32, or bf16 with bf16 operands); `bias`: an
/// f32 row of n values added before the result is rounded.
std::unique_ptr<MatmulPlan> makeMatmulPlan(bool bf16, bool accumulate,
                                           int64_t batch, int64_t m, int64_t n,
                                           int64_t k, bool transposeA,
                                           bool transposeB, dt out = dt::f32,
                                           bool bias = false) {
  using namespace dnnl;
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0)
    return nullptr;
  dt in = bf16 ? dt::bf16 : dt::f32;
  auto plan = std::make_unique<MatmulPlan>();
  plan->a = matrixDesc(batch, m, k, transposeA, in);
  plan->b = matrixDesc(batch, k, n, transposeB, in);
  plan->c = matrixDesc(batch, m, n, false, out);
  if (bias)
    plan->bias = memory::desc({1, 1, n}, dt::f32, memory::dims{n, n, 1});
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  if (accumulate) {
    post_ops sum;
    sum.append_sum(1.0f);
    attr.set_post_ops(sum);
  }
  try {
    matmul::primitive_desc pd(
        bias ? matmul::desc(plan->a, plan->b, plan->bias, plan->c)
             : matmul::desc(plan->a, plan->b, plan->c),
        attr, cpuEngine());
    plan->primitive = matmul(pd);
    plan->scratchpad = pd.scratchpad_desc();
  } catch (const dnnl::error &) {
    return nullptr;
  }
  return plan;
}
} // namespace

namespace {
/// Runs a matmul plan on the calling thread's stream, its scratchpad from
/// the counted scratch (`bias`: where the plan has one).
void executeMatmul(const MatmulPlan &plan, const void *a, const void *b,
                   const float *bias, void *c) {
  dnnl::engine &engine = cpuEngine();
  dnnl::stream stream(engine);
  CountedBuffer scratch(plan.scratchpad.get_size());
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, dnnl::memory(plan.a, engine, const_cast<void *>(a))},
      {DNNL_ARG_WEIGHTS, dnnl::memory(plan.b, engine, const_cast<void *>(b))},
      {DNNL_ARG_DST, dnnl::memory(plan.c, engine, c)},
      {DNNL_ARG_SCRATCHPAD,
       dnnl::memory(plan.scratchpad, engine, scratch.data)}};
  if (bias)
    args.emplace(DNNL_ARG_BIAS,
                 dnnl::memory(plan.bias, engine, const_cast<float *>(bias)));
  plan.primitive.execute(stream, args);
  stream.wait();
}
} // namespace

bool amp::runDnnlMatmul(const void *a, const void *b, float *c, bool bf16,
                        bool accumulate, int64_t batch, int64_t m, int64_t n,
                        int64_t k, bool transposeA, bool transposeB) {
  static PlanCache<MatmulPlan, 9> plans;
  const MatmulPlan *plan = plans.get(
      {bf16, accumulate, omp_get_max_threads(), batch, m, n, k, transposeA,
       transposeB},
      [&] {
        return makeMatmulPlan(bf16, accumulate, batch, m, n, k, transposeA,
                              transposeB);
      });
  if (!plan)
    return false;
  executeMatmul(*plan, a, b, nullptr, c);
  return true;
}

bool amp::runDnnlMatmulBf16Out(const void *a, const void *b, const float *bias,
                               void *c, int64_t batch, int64_t m, int64_t n,
                               int64_t k, bool transposeA, bool transposeB) {
  static PlanCache<MatmulPlan, 8> plans;
  const MatmulPlan *plan =
      plans.get({bias != nullptr, omp_get_max_threads(), batch, m, n, k,
                 transposeA, transposeB},
                [&] {
                  return makeMatmulPlan(true, false, batch, m, n, k, transposeA,
                                        transposeB, dt::bf16, bias != nullptr);
                });
  if (!plan)
    return false;
  executeMatmul(*plan, a, b, bias, c);
  return true;
}

std::string amp::describeDnnl() {
  const dnnl_version_t *v = dnnl_version();
  std::string isa;
  switch (dnnl::get_effective_cpu_isa()) {
  case dnnl::cpu_isa::avx512_core_amx:
    isa = "avx512_core_amx";
    break;
  case dnnl::cpu_isa::avx512_core_bf16:
    isa = "avx512_core_bf16";
    break;
  case dnnl::cpu_isa::avx512_core_vnni:
    isa = "avx512_core_vnni";
    break;
  case dnnl::cpu_isa::avx512_core:
    isa = "avx512_core";
    break;
  case dnnl::cpu_isa::avx2:
    isa = "avx2";
    break;
  default:
    isa = "other ISA";
    break;
  }
  return "oneDNN " + std::to_string(v->major) + "." +
         std::to_string(v->minor) + "." + std::to_string(v->patch) + " (" +
         isa + ")";
}
