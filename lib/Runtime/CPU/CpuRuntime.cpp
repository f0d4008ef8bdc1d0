//===- CpuRuntime.cpp - CBLAS GEMM and convolution glue -------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Attention.h"
#include "amp/Runtime/Collectives.h"
#include "amp/Runtime/Blas.h"
#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/Float16.h"
#include "Scratch.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace amp;
using namespace amp::runtime;

namespace {

/// c (m x n, leading dimension n) = alpha * op(a) op(b) + beta * c.
void sgemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
           const float *a, const float *b, float beta, float *c) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    if (beta == 0.0f)
      std::fill(c, c + m * n, 0.0f);
    return;
  }
  syncBlasThreads();
  getBlas().sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, blasint(m), blasint(n),
              blasint(k), 1.0f, a, blasint(transposeA ? m : k), b,
              blasint(transposeB ? k : n), beta, c, blasint(n));
}

/// Where one row of an image's column matrix (one (channel, kernel offset))
/// reads the input: output rows [oy0, oy1) and, in each, output columns
/// [lo, hi) are inside the input; pixel (oy, lo) reads input element
/// `from + (oy - oy0) * rowStep`, and the next pixels every `step` elements
/// on. Every other pixel of the row reads the padding (zero).
struct PatchRow {
  int64_t oy0, oy1, lo, hi, from, rowStep, step;
  bool empty() const { return oy0 >= oy1 || lo >= hi; }
  /// Pixels from (oy0, lo) to (oy1 - 1, hi - 1) when output rows are `ow`
  /// long: the span readsOneSpan's geometries read in one piece.
  int64_t spanLength(int64_t ow) const {
    return (oy1 - oy0 - 1) * ow + hi - lo;
  }
};

/// The outputs o in [first, last) of one dimension whose input
/// o * stride + shift lies inside [0, size), for `outputs` outputs.
std::pair<int64_t, int64_t> insideOutputs(int64_t shift, int64_t stride,
                                          int64_t size, int64_t outputs) {
  int64_t first = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  int64_t last = size - 1 - shift < 0
                     ? 0
                     : std::min(outputs, (size - 1 - shift) / stride + 1);
  return {first, last};
}

/// Calls fn(row, PatchRow) for every row of one image's column matrix. The
/// bounds are computed once per row, not per element.
template <typename Fn> void forEachPatchRow(const ConvGeometry &g, Fn fn) {
  for (int64_t ci = 0; ci < g.c; ++ci)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        int64_t row = (ci * g.kh + ki) * g.kw + kj;
        // ix = ox * sw + shift, iy = oy * sh + rowShift.
        int64_t shift = kj * g.dw - g.pw, rowShift = ki * g.dh - g.ph;
        PatchRow r;
        std::tie(r.lo, r.hi) = insideOutputs(shift, g.sw, g.w, g.ow);
        std::tie(r.oy0, r.oy1) = insideOutputs(rowShift, g.sh, g.h, g.oh);
        r.rowStep = g.sh * g.w;
        r.step = g.sw;
        r.from =
            (ci * g.h + r.oy0 * g.sh + rowShift) * g.w + r.lo * g.sw + shift;
        fn(row, r);
      }
}

/// Whether the pixels [lo, hi) of consecutive output rows read consecutive
/// input elements, one output row after the other (stride 1 and as many
/// output as input columns: a "same" convolution): a row's reads are then
/// one span, with the padding columns of the span to be written apart.
bool readsOneSpan(const ConvGeometry &g) {
  return g.sw == 1 && g.sh * g.w == g.ow;
}

/// Zeroes the padding columns [0, lo) and [hi, ow) of output rows [oy0, oy1)
/// of one column-matrix row: column by column, strided (a few entries per
/// output row, where a fill per row would be a library call each).
void zeroPaddingColumns(const ConvGeometry &g, const PatchRow &r, float *out) {
  auto zeroColumn = [&](int64_t ox) {
    for (int64_t oy = r.oy0; oy < r.oy1; ++oy)
      out[oy * g.ow + ox] = 0.0f;
  };
  for (int64_t ox = 0; ox < r.lo; ++ox)
    zeroColumn(ox);
  for (int64_t ox = r.hi; ox < g.ow; ++ox)
    zeroColumn(ox);
}

/// Writes one image's column matrix into `col` (leading dimension `ld`).
void im2col(const ConvGeometry &g, const float *image, float *col, int64_t ld) {
  bool span = readsOneSpan(g);
  forEachPatchRow(g, [&](int64_t row, const PatchRow &r) {
    float *out = col + row * ld;
    if (r.empty()) {
      std::fill_n(out, g.pixels(), 0.0f);
      return;
    }
    std::fill(out, out + r.oy0 * g.ow, 0.0f);
    std::fill(out + r.oy1 * g.ow, out + g.pixels(), 0.0f);
    if (span) {
      // The span also writes the padding columns between output rows;
      // they are zeroed after it.
      std::copy_n(image + r.from, r.spanLength(g.ow),
                  out + r.oy0 * g.ow + r.lo);
    } else {
      for (int64_t oy = r.oy0; oy < r.oy1; ++oy) {
        const float *in = image + r.from + (oy - r.oy0) * r.rowStep;
        float *line = out + oy * g.ow;
        for (int64_t ox = r.lo; ox < r.hi; ++ox)
          line[ox] = in[(ox - r.lo) * r.step];
      }
    }
    zeroPaddingColumns(g, r, out);
  });
}

/// Sums one image's column matrix (leading dimension `ld`) back into the
/// input pixels each entry was read from. `col` is scratch: its padding
/// entries are zeroed on the way.
void col2im(const ConvGeometry &g, float *col, int64_t ld, float *image) {
  std::fill(image, image + g.inputSize(), 0.0f);
  bool span = readsOneSpan(g);
  forEachPatchRow(g, [&](int64_t row, const PatchRow &r) {
    if (r.empty())
      return;
    float *in = col + row * ld;
    if (span) {
      // The span also covers the padding columns between output rows: zero
      // them, then add the whole span in one loop.
      zeroPaddingColumns(g, r, in);
      const float *from = in + r.oy0 * g.ow + r.lo;
      float *to = image + r.from;
      for (int64_t i = 0, n = r.spanLength(g.ow); i < n; ++i)
        to[i] += from[i];
      return;
    }
    for (int64_t oy = r.oy0; oy < r.oy1; ++oy) {
      float *to = image + r.from + (oy - r.oy0) * r.rowStep;
      const float *from = in + oy * g.ow + r.lo;
      for (int64_t i = 0; i < r.hi - r.lo; ++i)
        to[i * r.step] += from[i];
    }
  });
}

/// Copies images [first, first + count) of an [n, rows, pixels] tensor into
/// a [rows, count * pixels] matrix (image-major columns), or back.
void packImages(const float *tensor, float *matrix, int64_t first,
                int64_t count, int64_t rows, int64_t pixels) {
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < count; ++j)
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(tensor + ((first + j) * rows + r) * pixels, pixels,
                  matrix + r * count * pixels + j * pixels);
}
void unpackImages(const float *matrix, float *tensor, int64_t first,
                  int64_t count, int64_t rows, int64_t pixels) {
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < count; ++j)
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(matrix + r * count * pixels + j * pixels, pixels,
                  tensor + ((first + j) * rows + r) * pixels);
}

/// A convolution done a chunk of images at a time: the chunk's column matrix
/// `col` [patch, images * pixels] and an output-shaped matrix `rows`
/// [f, images * pixels], both with leading dimension images * pixels, so
/// each chunk is one large GEMM.
struct ImageChunks {
  explicit ImageChunks(const ConvGeometry &g)
      : g(g), chunk(imagesPerChunk(g)),
        col(scratch(g.patch() * chunk * g.pixels() + 1)),
        rows(scratch(g.f * chunk * g.pixels() + 1)) {}

  /// Calls fn(first, count, ld) for each chunk of `count` images from
  /// `first`; ld = count * pixels.
  template <typename Fn> void forEach(Fn fn) const {
    for (int64_t first = 0; first < g.n; first += chunk) {
      int64_t count = std::min(chunk, g.n - first);
      fn(first, count, count * g.pixels());
    }
  }

  /// Fills `col` with the column matrices of images [first, first + count).
  void im2colChunk(const float *input, int64_t first, int64_t count,
                   int64_t ld) {
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < count; ++j)
      im2col(g, input + (first + j) * g.inputSize(), col.get() + j * g.pixels(),
             ld);
  }

  const ConvGeometry &g;
  int64_t chunk;
  Scratch col, rows;
};

} // namespace

namespace {
/// Whether both operands are bf16 and the CPU multiplies bf16 natively:
/// they then go to oneDNN as they are (Dnnl.h).
bool nativeBf16(int64_t dtypeA, int64_t dtypeB) {
  int64_t bf16 = int64_t(RuntimeDType::BF16);
  return dtypeA == bf16 && dtypeB == bf16 && dnnlNativeBf16();
}

/// The GEMMs of amp_cpu_gemm(_bias) into an f32 `out` that holds the bias
/// rows (beta = 1) or nothing (beta = 0).
void batchedGemm(intptr_t a, intptr_t b, float *out, float beta, int64_t dtypeA,
                 int64_t dtypeB, int64_t batch, int64_t m, int64_t n, int64_t k,
                 int64_t transposeA, int64_t transposeB) {
  // bf16 operands on a CPU that multiplies them: oneDNN's bf16 matmul
  // (AVX-512 BF16 / AMX), exact products summed in f32, as the widened
  // OpenBLAS path computes them.
  int64_t bf16 = int64_t(RuntimeDType::BF16);
  if (dtypeA == bf16 && dtypeB == bf16 && bf16GemmsOnOneDnn() &&
      runDnnlMatmul(reinterpret_cast<const void *>(a),
                    reinterpret_cast<const void *>(b), out, true, beta != 0.0f,
                    batch, m, n, k, transposeA, transposeB))
    return;
  FloatOperand lhs(a, dtypeA, batch * m * k), rhs(b, dtypeB, batch * k * n);
  for (int64_t i = 0; i < batch; ++i)
    sgemm(transposeA, transposeB, m, n, k, lhs.get() + i * m * k,
          rhs.get() + i * k * n, beta, out + i * m * n);
}
} // namespace

void amp::runtime::gemmF32(const void *a, int64_t dtypeA, const void *b,
                           int64_t dtypeB, float *c, bool accumulate,
                           int64_t m, int64_t n, int64_t k, bool transposeA,
                           bool transposeB) {
  batchedGemm(reinterpret_cast<intptr_t>(a), reinterpret_cast<intptr_t>(b), c,
              accumulate ? 1.0f : 0.0f, dtypeA, dtypeB, 1, m, n, k, transposeA,
              transposeB);
}

extern "C" void amp_cpu_gemm(intptr_t a, intptr_t b, intptr_t c, int64_t dtypeA,
                             int64_t dtypeB, int64_t batch, int64_t m,
                             int64_t n, int64_t k, int64_t transposeA,
                             int64_t transposeB) {
  batchedGemm(a, b, reinterpret_cast<float *>(c), 0.0f, dtypeA, dtypeB, batch,
              m, n, k, transposeA, transposeB);
}

extern "C" void amp_cpu_gemm_bias(intptr_t a, intptr_t b, intptr_t bias,
                                  intptr_t c, int64_t dtypeA, int64_t dtypeB,
                                  int64_t dtypeBias, int64_t batch, int64_t m,
                                  int64_t n, int64_t k, int64_t transposeA,
                                  int64_t transposeB) {
  auto *out = reinterpret_cast<float *>(c);
  FloatOperand row(bias, dtypeBias, n);
  for (int64_t r = 0; r < batch * m; ++r)
    std::copy(row.get(), row.get() + n, out + r * n);
  batchedGemm(a, b, out, 1.0f, dtypeA, dtypeB, batch, m, n, k, transposeA,
              transposeB);
}

namespace {
/// amp_cpu_gemm(_bias) into `c` of type `dtypeC`, rounded once (bias: 0
/// for none).
void roundedGemm(intptr_t a, intptr_t b, intptr_t bias, intptr_t c,
                 int64_t dtypeA, int64_t dtypeB, int64_t dtypeBias,
                 int64_t dtypeC, int64_t batch, int64_t m, int64_t n, int64_t k,
                 int64_t transposeA, int64_t transposeB) {
  auto gemm = [&](intptr_t out) {
    if (bias)
      amp_cpu_gemm_bias(a, b, bias, out, dtypeA, dtypeB, dtypeBias, batch, m, n,
                        k, transposeA, transposeB);
    else
      amp_cpu_gemm(a, b, out, dtypeA, dtypeB, batch, m, n, k, transposeA,
                   transposeB);
  };
  if (dtypeC == int64_t(RuntimeDType::F32))
    return gemm(c);
  int64_t bf16 = int64_t(RuntimeDType::BF16);
  if (dtypeA == bf16 && dtypeB == bf16 && dtypeC == bf16 &&
      bf16GemmsOnOneDnn()) {
    std::optional<FloatOperand> row;
    if (bias)
      row.emplace(bias, dtypeBias, n);
    if (runDnnlMatmulBf16Out(reinterpret_cast<const void *>(a),
                             reinterpret_cast<const void *>(b),
                             row ? row->get() : nullptr,
                             reinterpret_cast<void *>(c), batch, m, n, k,
                             transposeA, transposeB))
      return;
  }
  int64_t count = batch * m * n;
  Scratch acc = scratch(count);
  gemm(reinterpret_cast<intptr_t>(acc.get()));
  auto *out = reinterpret_cast<uint16_t *>(c);
  const float *from = acc.get();
  bool half = dtypeC == int64_t(RuntimeDType::F16);
#pragma omp parallel for schedule(static) if (count >= (1 << 16))
  for (int64_t i = 0; i < count; ++i)
    out[i] = half ? floatToHalf(from[i]) : floatToBFloat(from[i]);
}
} // namespace

extern "C" void amp_cpu_gemm_round(intptr_t a, intptr_t b, intptr_t c,
                                   int64_t dtypeA, int64_t dtypeB,
                                   int64_t dtypeC, int64_t batch, int64_t m,
                                   int64_t n, int64_t k, int64_t transposeA,
                                   int64_t transposeB) {
  roundedGemm(a, b, 0, c, dtypeA, dtypeB, 0, dtypeC, batch, m, n, k, transposeA,
              transposeB);
}

extern "C" void
amp_cpu_gemm_bias_round(intptr_t a, intptr_t b, intptr_t bias, intptr_t c,
                        int64_t dtypeA, int64_t dtypeB, int64_t dtypeBias,
                        int64_t dtypeC, int64_t batch, int64_t m, int64_t n,
                        int64_t k, int64_t transposeA, int64_t transposeB) {
  roundedGemm(a, b, bias, c, dtypeA, dtypeB, dtypeBias, dtypeC, batch, m, n, k,
              transposeA, transposeB);
}

extern "C" void amp_cpu_embedding_grad(intptr_t dy, intptr_t ids,
                                       intptr_t table, int64_t dtypeDy,
                                       int64_t positions, int64_t dim,
                                       int64_t vocab) {
  FloatOperand grads(dy, dtypeDy, positions * dim);
  const auto *index = reinterpret_cast<const int32_t *>(ids);
  auto *out = reinterpret_cast<float *>(table);
  std::fill(out, out + vocab * dim, 0.0f);
  for (int64_t p = 0; p < positions; ++p) {
    int64_t v = std::clamp<int64_t>(index[p], 0, vocab - 1);
    const float *g = grads.get() + p * dim;
    float *row = out + v * dim;
    for (int64_t d = 0; d < dim; ++d)
      row[d] += g[d];
  }
}

namespace {
/// Runs a convolution pass through oneDNN where chooseConvPath says so and
/// oneDNN has a kernel (runDnnlConvolution: bf16 operands as they are on
/// CPUs that multiply them natively, other 16-bit types widened). False:
/// the caller takes the im2col path.
bool tryDnnl(ConvPass pass, const ConvGeometry &g, intptr_t a, int64_t dtypeA,
             intptr_t b, int64_t dtypeB, float *out) {
  if (chooseConvPath(pass, g, nativeBf16(dtypeA, dtypeB)) != ConvPath::OneDnn)
    return false;
  return runDnnlConvolution(pass, g, reinterpret_cast<const void *>(a),
                            RuntimeDType(dtypeA),
                            reinterpret_cast<const void *>(b),
                            RuntimeDType(dtypeB), out);
}
} // namespace

#define AMP_CONV_GEOMETRY                                                      \
  ConvGeometry { n, c, h, w, f, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw }

extern "C" void amp_cpu_conv2d(intptr_t x, intptr_t filter, intptr_t y,
                               int64_t dtypeX, int64_t dtypeFilter,
                               AMP_CONV_GEOMETRY_PARAMS) {
  ConvGeometry g = AMP_CONV_GEOMETRY;
  auto *out = reinterpret_cast<float *>(y);
  if (tryDnnl(ConvPass::Forward, g, x, dtypeX, filter, dtypeFilter, out))
    return;
  FloatOperand input(x, dtypeX, g.n * g.inputSize());
  FloatOperand weights(filter, dtypeFilter, g.f * g.patch());
  ImageChunks chunks(g);
  chunks.forEach([&](int64_t first, int64_t count, int64_t ld) {
    chunks.im2colChunk(input.get(), first, count, ld);
    // rows (f x images*pixels) = filter (f x patch) * col.
    sgemm(false, false, g.f, ld, g.patch(), weights.get(), chunks.col.get(),
          0.0f, chunks.rows.get());
    unpackImages(chunks.rows.get(), out, first, count, g.f, g.pixels());
  });
}

extern "C" void amp_cpu_conv2d_grad_input(intptr_t dy, intptr_t filter,
                                          intptr_t dx, int64_t dtypeDy,
                                          int64_t dtypeFilter,
                                          AMP_CONV_GEOMETRY_PARAMS) {
  ConvGeometry g = AMP_CONV_GEOMETRY;
  auto *out = reinterpret_cast<float *>(dx);
  if (tryDnnl(ConvPass::BackwardData, g, dy, dtypeDy, filter, dtypeFilter,
              out))
    return;
  FloatOperand grad(dy, dtypeDy, g.n * g.outputSize());
  FloatOperand weights(filter, dtypeFilter, g.f * g.patch());
  ImageChunks chunks(g);
  chunks.forEach([&](int64_t first, int64_t count, int64_t ld) {
    packImages(grad.get(), chunks.rows.get(), first, count, g.f, g.pixels());
    // dcol (patch x images*pixels) = filter^T (patch x f) * dy, then each
    // entry goes back to the input pixel it was read from.
    sgemm(true, false, g.patch(), ld, g.f, weights.get(), chunks.rows.get(),
          0.0f, chunks.col.get());
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < count; ++j)
      col2im(g, chunks.col.get() + j * g.pixels(), ld,
             out + (first + j) * g.inputSize());
  });
}

extern "C" void amp_cpu_conv2d_grad_filter(intptr_t dy, intptr_t x,
                                           intptr_t dfilter, int64_t dtypeDy,
                                           int64_t dtypeX,
                                           AMP_CONV_GEOMETRY_PARAMS) {
  ConvGeometry g = AMP_CONV_GEOMETRY;
  auto *out = reinterpret_cast<float *>(dfilter);
  if (tryDnnl(ConvPass::BackwardWeights, g, dy, dtypeDy, x, dtypeX, out))
    return;
  FloatOperand grad(dy, dtypeDy, g.n * g.outputSize());
  FloatOperand input(x, dtypeX, g.n * g.inputSize());
  std::fill(out, out + g.f * g.patch(), 0.0f);
  ImageChunks chunks(g);
  chunks.forEach([&](int64_t first, int64_t count, int64_t ld) {
    chunks.im2colChunk(input.get(), first, count, ld);
    packImages(grad.get(), chunks.rows.get(), first, count, g.f, g.pixels());
    // dfilter (f x patch) += dy (f x images*pixels) * col^T.
    sgemm(false, true, g.f, g.patch(), ld, chunks.rows.get(), chunks.col.get(),
          1.0f, out);
  });
}

extern "C" void amp_cpu_runtime_init(void) {
  amp::retainFreedMemory();
  // Reads the default thread count before anyone changes it (and links the
  // thread pool into every artifact, whose loader sets the count).
  (void)amp_cpu_get_num_threads();
}

void amp::retainFreedMemory() {
#if defined(__GLIBC__)
  static const bool done = [] {
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    return true;
  }();
  (void)done;
#endif
}

std::vector<std::pair<const char *, void *>> amp::getCpuRuntimeSymbols() {
  return {
      {"amp_cpu_gemm", reinterpret_cast<void *>(&amp_cpu_gemm)},
      {"amp_cpu_gemm_bias", reinterpret_cast<void *>(&amp_cpu_gemm_bias)},
      {"amp_cpu_gemm_round", reinterpret_cast<void *>(&amp_cpu_gemm_round)},
      {"amp_cpu_gemm_bias_round",
       reinterpret_cast<void *>(&amp_cpu_gemm_bias_round)},
      {"amp_cpu_embedding_grad",
       reinterpret_cast<void *>(&amp_cpu_embedding_grad)},
      {"amp_cpu_conv2d", reinterpret_cast<void *>(&amp_cpu_conv2d)},
      {"amp_cpu_conv2d_grad_input",
       reinterpret_cast<void *>(&amp_cpu_conv2d_grad_input)},
      {"amp_cpu_conv2d_grad_filter",
       reinterpret_cast<void *>(&amp_cpu_conv2d_grad_filter)},
      {"amp_cpu_parallel_for", reinterpret_cast<void *>(&amp_cpu_parallel_for)},
      {"amp_cpu_malloc", reinterpret_cast<void *>(&amp_cpu_malloc)},
      {"amp_cpu_aligned_alloc",
       reinterpret_cast<void *>(&amp_cpu_aligned_alloc)},
      {"amp_cpu_free", reinterpret_cast<void *>(&amp_cpu_free)},
      {"amp_cpu_set_workspace",
       reinterpret_cast<void *>(&amp_cpu_set_workspace)},
      {"amp_cpu_all_reduce", reinterpret_cast<void *>(&amp_cpu_all_reduce)},
      {"amp_cpu_attention", reinterpret_cast<void *>(&amp_cpu_attention)},
      {"amp_cpu_linear_cross_entropy",
       reinterpret_cast<void *>(&amp_cpu_linear_cross_entropy)},
      {"amp_cpu_linear_cross_entropy_grad",
       reinterpret_cast<void *>(&amp_cpu_linear_cross_entropy_grad)},
      {"amp_cpu_attention_mask",
       reinterpret_cast<void *>(&amp_cpu_attention_mask)},
      {"amp_cpu_attention_grad",
       reinterpret_cast<void *>(&amp_cpu_attention_grad)},
      {"amp_cpu_attention_grad_mask",
       reinterpret_cast<void *>(&amp_cpu_attention_grad_mask)},
  };
}
