//===- CudaGemm.h - cuBLASLt GEMMs of compiled CUDA steps -------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Row-major GEMMs D[b] = op(A[b]) op(B[b]) (+ bias, + activation) on
// cuBLASLt: f16/bf16 (or f32) operands, CUBLAS_COMPUTE_32F, f32 alpha/beta,
// one rounding to D's type. A row-major m x n product is computed as the
// column-major n x m product B^T A^T, so no operand is ever transposed in
// memory. One handle and a 32 MiB workspace per process; descriptors and the
// heuristic's algorithm are built once per GemmKey and cached.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_CUDAGEMM_H
#define AMP_RUNTIME_CUDAGEMM_H

#include <cublasLt.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

extern "C" {
/// D = op(A) op(B) for `batch` row-major matrices: op(A) is m x k, op(B)
/// k x n, D m x n, on the runtime's stream (amp::cuda::getStream). dtypeAB /
/// dtypeD: 0 f32, 1 f16, 2 bf16 (amp::RuntimeDType). The argument order is
/// train.runtime_call's: input addresses, the result's, then the params.
/// Errors are recorded (amp_cuda_take_error).
void amp_cuda_gemm(void *a, void *b, void *d, int64_t dtypeAB, int64_t dtypeD,
                   int64_t batch, int64_t m, int64_t n, int64_t k,
                   int64_t transposeA, int64_t transposeB);

/// amp_cuda_gemm with an epilogue (amp::cuda::Epilogue, not None) and its
/// bias: n elements of D's type, added before D is rounded.
void amp_cuda_gemm_bias(void *a, void *b, void *bias, void *d, int64_t dtypeAB,
                        int64_t dtypeD, int64_t batch, int64_t m, int64_t n,
                        int64_t k, int64_t transposeA, int64_t transposeB,
                        int64_t epilogue);

/// The weight gradient of a linear layer and its bias gradient in one call:
/// D (m x n) = op(A) B as amp_cuda_gemm (batch 1, B not transposed), and
/// dbias (n elements of D's type) = the column sums of B, f32-accumulated:
/// cuBLASLt's BGRADA epilogue. Where cuBLASLt has no algorithm for it (it
/// depends on the GPU and layout), the plain GEMM and a second GEMM of a
/// row of ones by B give the same values.
void amp_cuda_gemm_bgrad(void *a, void *b, void *d, void *dbias,
                         int64_t dtypeAB, int64_t dtypeD, int64_t batch,
                         int64_t m, int64_t n, int64_t k, int64_t transposeA,
                         int64_t transposeB);

/// A linear layer and its tanh GELU in one call (cuBLASLt's GELU_AUX_BIAS
/// epilogue, batch 1, n a multiple of 8): aux (m x n, D's type) = op(A)
/// op(B) + bias, the GELU's input the backward pass needs, and D = gelu(aux)
/// computed from the f32 accumulator, each rounded once.
void amp_cuda_gemm_gelu_aux(void *a, void *b, void *bias, void *d, void *aux,
                            int64_t dtypeAB, int64_t dtypeD, int64_t batch,
                            int64_t m, int64_t n, int64_t k, int64_t transposeA,
                            int64_t transposeB);

/// The gradient through a tanh GELU in the GEMM that produces the GELU's
/// output gradient (cuBLASLt's DGELU epilogue, batch 1, n a multiple of 8):
/// D (m x n) = (op(A) op(B)) * gelu'(aux), with aux (m x n, D's type) the
/// GELU's input written by amp_cuda_gemm_gelu_aux.
void amp_cuda_gemm_dgelu(void *a, void *b, void *aux, void *d, int64_t dtypeAB,
                         int64_t dtypeD, int64_t batch, int64_t m, int64_t n,
                         int64_t k, int64_t transposeA, int64_t transposeB);

/// A linear layer and its ReLU in one call (cuBLASLt's RELU_AUX_BIAS
/// epilogue, batch 1, n a multiple of 128): D = relu(op(A) op(B) + bias),
/// rounded once, and `mask` the bit mask of where that sum is positive, which
/// the backward pass needs: m rows of n / 8 bytes (cuBLASLt's aux leading
/// dimension is n bits), only ever read by amp_cuda_gemm_drelu.
void amp_cuda_gemm_relu_aux(void *a, void *b, void *bias, void *d, void *mask,
                            int64_t dtypeAB, int64_t dtypeD, int64_t batch,
                            int64_t m, int64_t n, int64_t k, int64_t transposeA,
                            int64_t transposeB);

/// The gradient through a ReLU in the GEMM that produces the ReLU's output
/// gradient (cuBLASLt's DRELU epilogue, batch 1, n a multiple of 128):
/// D (m x n) = op(A) op(B) where `mask` (written by amp_cuda_gemm_relu_aux
/// for the same m x n) is set, else 0, rounded once.
void amp_cuda_gemm_drelu(void *a, void *b, void *mask, void *d, int64_t dtypeAB,
                         int64_t dtypeD, int64_t batch, int64_t m, int64_t n,
                         int64_t k, int64_t transposeA, int64_t transposeB);

/// The embedding gradient as a scatter-add on the GPU, amp_cpu_embedding_grad's
/// twin: `table` (`vocab` x `dim`, f32, device memory) is zeroed, then
/// table[clamp(ids[p]), :] += dy[p, :] for each of `positions` rows of dy
/// (element type `dtypeDy`) in f32 atomics: positions x dim additions. Ids
/// are i32, clamped to [0, vocab) as the forward lookup clamps them. The sum
/// order of rows that share an id is not fixed (as in PyTorch's CUDA
/// embedding backward with atomics).
void amp_cuda_embedding_grad(void *dy, void *ids, void *table, int64_t dtypeDy,
                             int64_t positions, int64_t dim, int64_t vocab);
}

namespace amp {
namespace cuda {

enum class Epilogue : int64_t {
  None = 0,
  Bias = 1,
  ReluBias = 2,
  GeluBias = 3,
  /// The bias gradient (column sums of B) written to the bias pointer.
  BgradA = 4,
  /// GELU of D + bias, the GELU's input written to the aux pointer.
  GeluAuxBias = 5,
  /// D times the GELU's derivative at the aux matrix.
  Dgelu = 6,
  /// ReLU of D + bias, the bit mask of D + bias > 0 written to the aux pointer.
  ReluAuxBias = 7,
  /// D where the aux bit mask is set, else 0.
  Drelu = 8
};

/// Whether an epilogue's aux matrix is a ReLU bit mask (leading dimension n
/// bits, a multiple of 128) rather than a matrix of D's type (leading
/// dimension n elements, a multiple of 8).
inline bool usesReluMask(Epilogue e) {
  return e == Epilogue::ReluAuxBias || e == Epilogue::Drelu;
}
/// Whether an epilogue reads or writes the aux matrix.
inline bool usesAux(Epilogue e) {
  return e == Epilogue::GeluAuxBias || e == Epilogue::Dgelu || usesReluMask(e);
}
/// Whether an epilogue reads or writes the bias pointer.
inline bool usesBias(Epilogue e) {
  return e != Epilogue::None && e != Epilogue::Dgelu && e != Epilogue::Drelu;
}

/// The second half of an aux epilogue's fallback, where cuBLASLt has no
/// algorithm for the epilogue and the GEMM ran with a plain one (m x n, D's
/// element type `dtypeD`): GeluAuxBias d = gelu(aux) (the GEMM + bias was
/// written to aux), Dgelu d *= gelu'(aux), ReluAuxBias the mask `aux` of
/// d > 0 (d = relu(GEMM + bias)), Drelu d = 0 where the mask `aux` is
/// clear. One element-wise kernel of the embedded fatbin
/// (EpilogueKernels.cu) on the runtime's stream; false with the error
/// recorded when it cannot be launched. AMP_CUDA_EPILOGUE_FALLBACK=1 takes
/// this path for every aux epilogue.
bool launchEpilogueFallback(Epilogue epilogue, int64_t dtypeD, void *d,
                            void *aux, int64_t m, int64_t n);

/// The embedded fatbin of the fallback kernels and its size in bytes.
const void *epilogueFallbackImage(size_t *size);

/// Everything the descriptors and the algorithm choice depend on.
struct GemmKey {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transposeA = false, transposeB = false;
  int64_t dtypeAB = 1, dtypeD = 1;
  Epilogue epilogue = Epilogue::None;
  bool operator==(const GemmKey &o) const {
    return m == o.m && n == o.n && k == o.k && batch == o.batch &&
           transposeA == o.transposeA && transposeB == o.transposeB &&
           dtypeAB == o.dtypeAB && dtypeD == o.dtypeD && epilogue == o.epilogue;
  }
  /// "m=128 n=256 k=784 batch=1 ta=0 tb=0 ab=f16 d=f16 epilogue=bias".
  std::string str() const;
};

struct GemmKeyHash {
  size_t operator()(const GemmKey &key) const;
};

/// The cuBLASLt data type of a runtime dtype code (CUDA_R_32F, _16F, _16BF),
/// or false for an unknown code.
bool toCudaDataType(int64_t dtype, cudaDataType_t &type);

/// The operation and layouts of a GemmKey in cuBLASLt's column-major terms
/// (A and B swapped, see the file comment). Host-only: needs no device.
class GemmDescriptors {
public:
  ~GemmDescriptors();
  /// Builds them; on failure returns the failing call and status.
  static std::unique_ptr<GemmDescriptors> create(const GemmKey &key,
                                                 std::string *error);
  cublasLtMatmulDesc_t operation = nullptr;
  /// cuBLASLt's A (our B), B (our A), and C = D.
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
};

/// A per-key cache of built plans, counting hits and misses.
template <typename Plan> class GemmPlanCache {
public:
  /// The plan of `key`, built by `build` (null: failure, not cached).
  Plan *getOrBuild(const GemmKey &key,
                   const std::function<std::unique_ptr<Plan>()> &build) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = plans.find(key);
    if (it != plans.end()) {
      ++hitCount;
      return it->second.get();
    }
    ++missCount;
    std::unique_ptr<Plan> plan = build();
    if (!plan)
      return nullptr;
    return (plans[key] = std::move(plan)).get();
  }
  size_t size() const { return plans.size(); }
  size_t hits() const { return hitCount; }
  size_t misses() const { return missCount; }

private:
  std::mutex mutex;
  std::unordered_map<GemmKey, std::unique_ptr<Plan>, GemmKeyHash> plans;
  size_t hitCount = 0, missCount = 0;
};

/// The workspace cuBLASLt may use per call: 32 MiB (Hopper's recommendation).
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

} // namespace cuda
} // namespace amp

#endif // AMP_RUNTIME_CUDAGEMM_H
