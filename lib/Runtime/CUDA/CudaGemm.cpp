//===- CudaGemm.cpp - cuBLASLt GEMMs of compiled CUDA steps ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CudaGemm.h"
#include "amp/Runtime/CudaDriver.h"
#include "amp/Runtime/CudaRuntime.h"

#include "EpilogueKernels.inc" // kEpilogueKernels, built from EpilogueKernels.cu

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_set>
#include <vector>

using namespace amp::cuda;

namespace {
const char *dtypeName(int64_t dtype) {
  return dtype == 0 ? "f32" : dtype == 1 ? "f16" : dtype == 2 ? "bf16" : "?";
}
const char *epilogueName(Epilogue e) {
  switch (e) {
  case Epilogue::None:
    return "none";
  case Epilogue::Bias:
    return "bias";
  case Epilogue::ReluBias:
    return "relu_bias";
  case Epilogue::GeluBias:
    return "gelu_bias";
  case Epilogue::BgradA:
    return "bgrad";
  case Epilogue::GeluAuxBias:
    return "gelu_aux_bias";
  case Epilogue::Dgelu:
    return "dgelu";
  case Epilogue::ReluAuxBias:
    return "relu_aux_bias";
  case Epilogue::Drelu:
    return "drelu";
  }
  return "?";
}
} // namespace

std::string GemmKey::str() const {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) +
         " k=" + std::to_string(k) + " batch=" + std::to_string(batch) +
         " ta=" + std::to_string(transposeA) +
         " tb=" + std::to_string(transposeB) + " ab=" + dtypeName(dtypeAB) +
         " d=" + dtypeName(dtypeD) + " epilogue=" + epilogueName(epilogue);
}

size_t GemmKeyHash::operator()(const GemmKey &key) const {
  size_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  mix(key.m), mix(key.n), mix(key.k), mix(key.batch);
  mix(key.transposeA | (key.transposeB << 1));
  mix(key.dtypeAB), mix(key.dtypeD), mix(int64_t(key.epilogue));
  return h;
}

bool amp::cuda::toCudaDataType(int64_t dtype, cudaDataType_t &type) {
  switch (dtype) {
  case 0:
    type = CUDA_R_32F;
    return true;
  case 1:
    type = CUDA_R_16F;
    return true;
  case 2:
    type = CUDA_R_16BF;
    return true;
  default:
    return false;
  }
}

GemmDescriptors::~GemmDescriptors() {
  if (d)
    cublasLtMatrixLayoutDestroy(d);
  if (b)
    cublasLtMatrixLayoutDestroy(b);
  if (a)
    cublasLtMatrixLayoutDestroy(a);
  if (operation)
    cublasLtMatmulDescDestroy(operation);
}

std::unique_ptr<GemmDescriptors> GemmDescriptors::create(const GemmKey &key,
                                                         std::string *error) {
  auto fail = [&](const char *call,
                  cublasStatus_t status) -> std::unique_ptr<GemmDescriptors> {
    if (error)
      *error = std::string(call) + " failed with " +
               cublasLtGetStatusName(status) + " for " + key.str();
    return nullptr;
  };
  cudaDataType_t ab, dType;
  if (!toCudaDataType(key.dtypeAB, ab) || !toCudaDataType(key.dtypeD, dType)) {
    if (error)
      *error = "unknown element type code in " + key.str();
    return nullptr;
  }
  auto desc = std::make_unique<GemmDescriptors>();
  if (cublasStatus_t s = cublasLtMatmulDescCreate(
          &desc->operation, CUBLAS_COMPUTE_32F, CUDA_R_32F))
    return fail("cublasLtMatmulDescCreate", s);
  // Column-major view: cuBLASLt's A is our B, its B is our A.
  cublasOperation_t opA = key.transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = key.transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  switch (key.epilogue) {
  case Epilogue::None:
    break;
  case Epilogue::Bias:
    epilogue = CUBLASLT_EPILOGUE_BIAS;
    break;
  case Epilogue::ReluBias:
    epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
    break;
  case Epilogue::GeluBias:
    epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
    break;
  case Epilogue::BgradA:
    // Column-major, cuBLASLt's A is our B: the sums over k of its rows are
    // our B's column sums, one per column of D.
    epilogue = CUBLASLT_EPILOGUE_BGRADA;
    break;
  case Epilogue::GeluAuxBias:
    epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    break;
  case Epilogue::Dgelu:
    epilogue = CUBLASLT_EPILOGUE_DGELU;
    break;
  case Epilogue::ReluAuxBias:
    epilogue = CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    break;
  case Epilogue::Drelu:
    epilogue = CUBLASLT_EPILOGUE_DRELU;
    break;
  }
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const void *value,
                 size_t size) {
    return cublasLtMatmulDescSetAttribute(desc->operation, attr, value, size);
  };
  if (cublasStatus_t s = set(CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)))
    return fail("cublasLtMatmulDescSetAttribute(TRANSA)", s);
  if (cublasStatus_t s = set(CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)))
    return fail("cublasLtMatmulDescSetAttribute(TRANSB)", s);
  if (cublasStatus_t s =
          set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)))
    return fail("cublasLtMatmulDescSetAttribute(EPILOGUE)", s);
  if (key.epilogue == Epilogue::BgradA)
    if (cublasStatus_t s =
            set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &dType, sizeof(dType)))
      return fail("cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)", s);
  if (usesAux(key.epilogue)) {
    // The aux matrix is laid out like D: column-major n x m, ld n - in
    // elements of D's type for GELU's input (a multiple of 8), in bits for
    // the ReLU mask (a multiple of 128); the callers check.
    int64_t ld = key.n;
    if (cublasStatus_t s =
            set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld)))
      return fail("cublasLtMatmulDescSetAttribute(EPILOGUE_AUX_LD)", s);
  }

  // Row-major X (r x c) is column-major X^T (c x r, ld c).
  auto layout = [&](cublasLtMatrixLayout_t &l, cudaDataType_t type,
                    int64_t rows, int64_t cols) -> cublasStatus_t {
    if (cublasStatus_t s =
            cublasLtMatrixLayoutCreate(&l, type, rows, cols, rows))
      return s;
    if (key.batch > 1) {
      int32_t count = int32_t(key.batch);
      int64_t stride = rows * cols;
      if (cublasStatus_t s = cublasLtMatrixLayoutSetAttribute(
              l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)))
        return s;
      if (cublasStatus_t s = cublasLtMatrixLayoutSetAttribute(
              l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
              sizeof(stride)))
        return s;
    }
    return CUBLAS_STATUS_SUCCESS;
  };
  // Our B is k x n (or n x k transposed): column-major n x k (or k x n).
  if (cublasStatus_t s = layout(desc->a, ab, key.transposeB ? key.k : key.n,
                                key.transposeB ? key.n : key.k))
    return fail("cublasLtMatrixLayoutCreate(A)", s);
  if (cublasStatus_t s = layout(desc->b, ab, key.transposeA ? key.m : key.k,
                                key.transposeA ? key.k : key.m))
    return fail("cublasLtMatrixLayoutCreate(B)", s);
  if (cublasStatus_t s = layout(desc->d, dType, key.n, key.m))
    return fail("cublasLtMatrixLayoutCreate(D)", s);
  return desc;
}

namespace {

/// Descriptors plus the heuristic's first algorithm.
struct GemmPlan {
  std::unique_ptr<GemmDescriptors> descriptors;
  cublasLtMatmulAlgo_t algo;
};

struct Context {
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  std::string error;
  GemmPlanCache<GemmPlan> plans;
  /// Guards `ones` and `unsupported`.
  std::mutex fallbackMutex;
  /// A row of ones per (element type, length): the bias-gradient fallback.
  std::map<std::pair<int64_t, int64_t>, void *> ones;
  /// Epilogue GEMMs cuBLASLt has no algorithm for (asked once).
  std::unordered_set<GemmKey, GemmKeyHash> unsupported;
};

/// The handle and workspace, created once; null (error recorded by the
/// caller) when there is no device.
Context *getContext(std::string &error) {
  static Context context;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string driverError;
    if (!getDriver(&driverError)) {
      context.error = driverError;
      return;
    }
    if (cublasStatus_t s = cublasLtCreate(&context.handle)) {
      context.error =
          std::string("cublasLtCreate failed with ") + cublasLtGetStatusName(s);
      return;
    }
    context.workspace = mgpuMemAlloc(kGemmWorkspaceBytes, nullptr, false);
    if (!context.workspace)
      context.error = "cannot allocate the cuBLASLt workspace";
  });
  if (!context.error.empty()) {
    error = context.error;
    return nullptr;
  }
  return &context;
}

void recordGemmError(const std::string &message) {
  recordRuntimeError("amp_cuda_gemm: " + message);
}

/// AMP_CUDA_GEMM_PROFILE=FILE: every GEMM is timed between two events on
/// the stream, and at exit FILE receives one JSON object per distinct GEMM
/// (its key, the number of calls and the median and total milliseconds):
/// bench/gpu/roofline.py compares them with cuBLASLt called directly on the
/// same shapes. Off (no events, no cost) without the variable.
class GemmProfiler {
public:
  static GemmProfiler *get() {
    static GemmProfiler *profiler = [] {
      const char *path = std::getenv("AMP_CUDA_GEMM_PROFILE");
      static GemmProfiler instance(path ? path : "");
      return path && *path ? &instance : nullptr;
    }();
    return profiler;
  }

  /// Records an event on `stream`; null when events are unavailable.
  CUevent record(CUstream stream) {
    const DriverApi *api = getDriver();
    CUevent event = nullptr;
    if (!api || api->eventCreate(&event, 0) != CUDA_SUCCESS)
      return nullptr;
    api->eventRecord(event, stream);
    return event;
  }

  void add(const GemmKey &key, CUevent start, CUevent end) {
    if (!start || !end)
      return;
    std::lock_guard<std::mutex> lock(mutex);
    calls.push_back({key, start, end});
  }

  ~GemmProfiler() {
    const DriverApi *api = getDriver();
    if (path.empty() || !api)
      return;
    std::map<std::string, std::pair<GemmKey, std::vector<float>>> byKey;
    for (Call &call : calls) {
      float ms = 0;
      api->eventSynchronize(call.end);
      api->eventElapsedTime(&ms, call.start, call.end);
      api->eventDestroy(call.start);
      api->eventDestroy(call.end);
      auto &entry = byKey[call.key.str()];
      entry.first = call.key;
      entry.second.push_back(ms);
    }
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f)
      return;
    for (auto &[name, entry] : byKey) {
      const GemmKey &k = entry.first;
      std::vector<float> &t = entry.second;
      std::sort(t.begin(), t.end());
      double total = 0;
      for (float v : t)
        total += v;
      std::fprintf(
          f,
          "{\"m\": %lld, \"n\": %lld, \"k\": %lld, \"batch\": %lld, "
          "\"transpose_a\": %d, \"transpose_b\": %d, \"dtype_ab\": \"%s\", "
          "\"dtype_d\": \"%s\", \"epilogue\": \"%s\", \"calls\": %zu, "
          "\"median_ms\": %.6f, \"total_ms\": %.6f}\n",
          (long long)k.m, (long long)k.n, (long long)k.k, (long long)k.batch,
          int(k.transposeA), int(k.transposeB), dtypeName(k.dtypeAB),
          dtypeName(k.dtypeD), epilogueName(k.epilogue), t.size(),
          t[t.size() / 2], total);
    }
    std::fclose(f);
  }

private:
  explicit GemmProfiler(std::string path) : path(std::move(path)) {}

  struct Call {
    GemmKey key;
    CUevent start, end;
  };
  std::string path;
  std::mutex mutex;
  std::vector<Call> calls;
};

} // namespace

namespace {
/// The descriptors and algorithm of `key`, built and cached on first use;
/// null with `error` set when cuBLASLt has none.
GemmPlan *planFor(Context *context, const GemmKey &key, std::string &error) {
  return context->plans.getOrBuild(key, [&]() -> std::unique_ptr<GemmPlan> {
    auto plan = std::make_unique<GemmPlan>();
    plan->descriptors = GemmDescriptors::create(key, &error);
    if (!plan->descriptors)
      return nullptr;
    cublasLtMatmulPreference_t preference = nullptr;
    cublasLtMatmulPreferenceCreate(&preference);
    size_t workspace = kGemmWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
        sizeof(workspace));
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    GemmDescriptors &g = *plan->descriptors;
    cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
        context->handle, g.operation, g.a, g.b, g.d, g.d, preference, 1,
        &result, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    if (s != CUBLAS_STATUS_SUCCESS || found == 0) {
      error = "no cuBLASLt algorithm for " + key.str();
      return nullptr;
    }
    plan->algo = result.algo;
    return plan;
  });
}

void gemm(void *a, void *b, void *bias, void *d, const GemmKey &key,
          void *aux = nullptr) {
  std::string error;
  Context *context = getContext(error);
  if (!context) {
    recordGemmError(error);
    return;
  }
  GemmPlan *plan = planFor(context, key, error);
  if (!plan) {
    recordGemmError(error);
    return;
  }
  GemmDescriptors &g = *plan->descriptors;
  if (usesBias(key.epilogue))
    cublasLtMatmulDescSetAttribute(
        g.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  if (usesAux(key.epilogue))
    cublasLtMatmulDescSetAttribute(g.operation,
                                   CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                   &aux, sizeof(aux));
  float alpha = 1.0f, beta = 0.0f;
  auto stream = static_cast<CUstream>(getStream());
  GemmProfiler *profiler = GemmProfiler::get();
  CUevent start = profiler ? profiler->record(stream) : nullptr;
  // Column-major: cuBLASLt's A is our B and its B our A.
  if (cublasStatus_t s = cublasLtMatmul(
          context->handle, g.operation, &alpha, b, g.a, a, g.b, &beta, d, g.d,
          d, g.d, &plan->algo, context->workspace, kGemmWorkspaceBytes,
          reinterpret_cast<cudaStream_t>(stream)))
    recordGemmError(std::string("cublasLtMatmul failed with ") +
                    cublasLtGetStatusName(s) + " for " + key.str());
  if (profiler)
    profiler->add(key, start, profiler->record(stream));
}

/// AMP_CUDA_EPILOGUE_FALLBACK=1: every aux epilogue runs as its fallback
/// (to test the fallback kernels on a GPU that has the algorithms).
bool fallbackForced() {
  static bool forced = [] {
    const char *v = std::getenv("AMP_CUDA_EPILOGUE_FALLBACK");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return forced;
}

/// Whether cuBLASLt has an algorithm for `key`: asked once per key (the plan
/// is then cached, a refusal remembered); never for an aux epilogue when the
/// fallback is forced.
bool hasAlgorithm(Context *context, const GemmKey &key) {
  if (usesAux(key.epilogue) && fallbackForced())
    return false;
  {
    std::lock_guard<std::mutex> lock(context->fallbackMutex);
    if (context->unsupported.count(key))
      return false;
  }
  std::string error;
  if (planFor(context, key, error))
    return true;
  std::lock_guard<std::mutex> lock(context->fallbackMutex);
  context->unsupported.insert(key);
  return false;
}

/// The embedded kernels' module and functions (EpilogueKernels.cu: the
/// epilogue fallbacks and the embedding gradient), loaded on first use
/// and never destroyed (like the runtime's other state, usable at exit).
struct EmbeddedKernels {
  std::mutex mutex;
  void *module = nullptr;
  std::map<std::string, void *> functions;
};

/// Embedded kernel `name`; null with the runtime error recorded when the
/// module or the kernel cannot be loaded.
void *embeddedKernel(const std::string &name) {
  static auto *kernels = new EmbeddedKernels;
  std::lock_guard<std::mutex> lock(kernels->mutex);
  void *&function = kernels->functions[name];
  if (function)
    return function;
  if (!kernels->module)
    kernels->module =
        mgpuModuleLoad(const_cast<unsigned char *>(kEpilogueKernels),
                       sizeof(kEpilogueKernels));
  if (kernels->module)
    function = mgpuModuleGetFunction(kernels->module, name.c_str());
  return function;
}
} // namespace

const void *amp::cuda::epilogueFallbackImage(size_t *size) {
  *size = sizeof(kEpilogueKernels);
  return kEpilogueKernels;
}

bool amp::cuda::launchEpilogueFallback(Epilogue epilogue, int64_t dtypeD,
                                       void *d, void *aux, int64_t m,
                                       int64_t n) {
  const char *base = nullptr;
  // Every kernel takes (input, output, items): one thread per item.
  void *in = aux, *out = d;
  int64_t count = m * n;
  switch (epilogue) {
  case Epilogue::GeluAuxBias:
    base = "amp_gelu_from_aux";
    break;
  case Epilogue::Dgelu:
    base = "amp_dgelu";
    break;
  case Epilogue::ReluAuxBias:
    base = "amp_relu_mask"; // one thread per 32-bit word of the mask
    in = d, out = aux, count = m * n / 32;
    break;
  case Epilogue::Drelu:
    base = "amp_drelu";
    break;
  default:
    break;
  }
  if (!base || dtypeD < 0 || dtypeD > 2) {
    recordGemmError(std::string("no fallback kernel for epilogue ") +
                    epilogueName(epilogue) + " and D type " +
                    dtypeName(dtypeD));
    return false;
  }
  void *kernel = embeddedKernel(std::string(base) + "_" + dtypeName(dtypeD));
  if (!kernel)
    return false;
  constexpr int64_t threads = 256;
  void *params[] = {&in, &out, &count};
  mgpuLaunchKernel(kernel, (count + threads - 1) / threads, 1, 1, threads, 1, 1,
                   0, getStream(), params, nullptr, 3);
  return true;
}

extern "C" void amp_cuda_embedding_grad(void *dy, void *ids, void *table,
                                        int64_t dtypeDy, int64_t positions,
                                        int64_t dim, int64_t vocab) {
  if (dtypeDy < 0 || dtypeDy > 2 || positions < 0 || dim <= 0 || vocab <= 0) {
    recordRuntimeError("amp_cuda_embedding_grad: bad arguments: dy type " +
                       std::to_string(dtypeDy) + ", positions " +
                       std::to_string(positions) + ", dim " +
                       std::to_string(dim) + ", vocab " +
                       std::to_string(vocab));
    return;
  }
  void *stream = getStream();
  mgpuMemset32(table, 0u, size_t(vocab * dim), stream);
  int64_t count = positions * dim;
  if (count == 0)
    return;
  void *kernel =
      embeddedKernel(std::string("amp_embedding_grad_") + dtypeName(dtypeDy));
  if (!kernel)
    return;
  constexpr int64_t threads = 256;
  void *params[] = {&dy, &ids, &table, &positions, &dim, &vocab};
  mgpuLaunchKernel(kernel, (count + threads - 1) / threads, 1, 1, threads, 1, 1,
                   0, stream, params, nullptr, 6);
}

extern "C" void amp_cuda_gemm(void *a, void *b, void *d, int64_t dtypeAB,
                              int64_t dtypeD, int64_t batch, int64_t m,
                              int64_t n, int64_t k, int64_t transposeA,
                              int64_t transposeB) {
  gemm(a, b, nullptr, d,
       GemmKey{m, n, k, batch, transposeA != 0, transposeB != 0, dtypeAB,
               dtypeD, Epilogue::None});
}

extern "C" void amp_cuda_gemm_bias(void *a, void *b, void *bias, void *d,
                                   int64_t dtypeAB, int64_t dtypeD,
                                   int64_t batch, int64_t m, int64_t n,
                                   int64_t k, int64_t transposeA,
                                   int64_t transposeB, int64_t epilogue) {
  if (epilogue < int64_t(Epilogue::Bias) ||
      epilogue > int64_t(Epilogue::GeluBias)) {
    recordGemmError("unknown epilogue code " + std::to_string(epilogue));
    return;
  }
  gemm(a, b, bias, d,
       GemmKey{m, n, k, batch, transposeA != 0, transposeB != 0, dtypeAB,
               dtypeD, Epilogue(epilogue)});
}

namespace {
/// A device row of `length` ones of element type `dtype`, kept for reuse.
void *onesRow(Context *context, int64_t dtype, int64_t length) {
  std::lock_guard<std::mutex> lock(context->fallbackMutex);
  void *&row = context->ones[{dtype, length}];
  if (row)
    return row;
  row = mgpuMemAlloc(uint64_t(length) * (dtype == 0 ? 4 : 2), nullptr, false);
  if (!row)
    return nullptr;
  void *stream = getStream();
  if (dtype == 0)
    mgpuMemset32(row, 0x3f800000u, size_t(length), stream);
  else // 1.0 in f16 and bf16
    mgpuMemset16(row, dtype == 1 ? 0x3c00 : 0x3f80, size_t(length), stream);
  return row;
}
} // namespace

extern "C" void amp_cuda_gemm_bgrad(void *a, void *b, void *d, void *dbias,
                                    int64_t dtypeAB, int64_t dtypeD,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int64_t transposeA,
                                    int64_t transposeB) {
  if (batch != 1 || transposeB) {
    recordGemmError("the bias-gradient epilogue needs batch 1 and B not "
                    "transposed");
    return;
  }
  GemmKey key{
      m, n, k, 1, transposeA != 0, false, dtypeAB, dtypeD, Epilogue::BgradA};
  std::string error;
  Context *context = getContext(error);
  if (!context) {
    recordGemmError(error);
    return;
  }
  if (hasAlgorithm(context, key)) {
    gemm(a, b, dbias, d, key);
    return;
  }
  // No algorithm with the epilogue: the GEMM, then dbias (1 x n) = ones
  // (1 x k) B (k x n), f32-accumulated like the epilogue.
  key.epilogue = Epilogue::None;
  gemm(a, b, nullptr, d, key);
  void *ones = onesRow(context, dtypeAB, k);
  if (!ones) {
    recordGemmError("cannot allocate the bias-gradient row of ones");
    return;
  }
  gemm(ones, b, nullptr, dbias,
       GemmKey{1, n, k, 1, false, false, dtypeAB, dtypeD, Epilogue::None});
}

namespace {
/// The aux epilogues' shape rules (cuBLASLt's: the aux leading dimension,
/// n, a multiple of 8 elements for GELU's input and of 128 bits for the ReLU
/// mask; amp's: one matrix); false with the error recorded.
bool checkAuxGemm(const char *entry, Epilogue epilogue, int64_t batch,
                  int64_t n) {
  bool relu = usesReluMask(epilogue);
  int64_t multiple = relu ? 128 : 8;
  if (batch == 1 && n % multiple == 0)
    return true;
  recordGemmError(std::string(entry) + ": the " + (relu ? "ReLU" : "GELU") +
                  " epilogues need batch 1 and n a multiple of " +
                  std::to_string(multiple) + ", got batch " +
                  std::to_string(batch) + " n " + std::to_string(n));
  return false;
}

/// An aux epilogue's GEMM (batch 1) after checkAuxGemm; where cuBLASLt has
/// no algorithm for it, the GEMM with a plain epilogue (bias, ReLU + bias,
/// none) and the epilogue's fallback kernel.
void auxGemm(const char *entry, void *a, void *b, void *bias, void *d,
             void *aux, int64_t dtypeAB, int64_t dtypeD, int64_t batch,
             int64_t m, int64_t n, int64_t k, int64_t transposeA,
             int64_t transposeB, Epilogue epilogue) {
  if (!checkAuxGemm(entry, epilogue, batch, n))
    return;
  GemmKey key{m,       n,      k,       1, transposeA != 0, transposeB != 0,
              dtypeAB, dtypeD, epilogue};
  std::string error;
  Context *context = getContext(error);
  if (!context) {
    recordGemmError(error);
    return;
  }
  if (hasAlgorithm(context, key)) {
    gemm(a, b, bias, d, key, aux);
    return;
  }
  void *out = d;
  switch (epilogue) {
  case Epilogue::GeluAuxBias: // aux = the GEMM + bias, then d = gelu(aux)
    key.epilogue = Epilogue::Bias;
    out = aux;
    break;
  case Epilogue::ReluAuxBias: // d = relu(GEMM + bias), then the mask of d > 0
    key.epilogue = Epilogue::ReluBias;
    break;
  default: // d = the GEMM, then times the derivative
    key.epilogue = Epilogue::None;
    break;
  }
  gemm(a, b, usesBias(key.epilogue) ? bias : nullptr, out, key);
  launchEpilogueFallback(epilogue, dtypeD, d, aux, m, n);
}
} // namespace

extern "C" void amp_cuda_gemm_gelu_aux(void *a, void *b, void *bias, void *d,
                                       void *aux, int64_t dtypeAB,
                                       int64_t dtypeD, int64_t batch, int64_t m,
                                       int64_t n, int64_t k, int64_t transposeA,
                                       int64_t transposeB) {
  auxGemm("amp_cuda_gemm_gelu_aux", a, b, bias, d, aux, dtypeAB, dtypeD, batch,
          m, n, k, transposeA, transposeB, Epilogue::GeluAuxBias);
}

extern "C" void amp_cuda_gemm_dgelu(void *a, void *b, void *aux, void *d,
                                    int64_t dtypeAB, int64_t dtypeD,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int64_t transposeA,
                                    int64_t transposeB) {
  auxGemm("amp_cuda_gemm_dgelu", a, b, nullptr, d, aux, dtypeAB, dtypeD, batch,
          m, n, k, transposeA, transposeB, Epilogue::Dgelu);
}

extern "C" void amp_cuda_gemm_relu_aux(void *a, void *b, void *bias, void *d,
                                       void *mask, int64_t dtypeAB,
                                       int64_t dtypeD, int64_t batch, int64_t m,
                                       int64_t n, int64_t k, int64_t transposeA,
                                       int64_t transposeB) {
  auxGemm("amp_cuda_gemm_relu_aux", a, b, bias, d, mask, dtypeAB, dtypeD, batch,
          m, n, k, transposeA, transposeB, Epilogue::ReluAuxBias);
}

extern "C" void amp_cuda_gemm_drelu(void *a, void *b, void *mask, void *d,
                                    int64_t dtypeAB, int64_t dtypeD,
                                    int64_t batch, int64_t m, int64_t n,
                                    int64_t k, int64_t transposeA,
                                    int64_t transposeB) {
  auxGemm("amp_cuda_gemm_drelu", a, b, nullptr, d, mask, dtypeAB, dtypeD, batch,
          m, n, k, transposeA, transposeB, Epilogue::Drelu);
}
