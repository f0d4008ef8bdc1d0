//===- CudaRuntimeTest.cpp - CUDA runtime host logic without a GPU --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The driver loader's error paths (no library, a library without the entry
// points, cuInit failing, no devices), the caching allocator on a counting
// backend, and the mgpu* entry points on a fake driver backed by host memory
// (test/Unit/FakeCudaDriver.cpp): allocation reuse, copies, memsets, launch
// argument packing, and failures recorded rather than crashing. The
// cuBLASLt descriptors of row-major GEMMs (host-only calls), the plan
// cache, and the aux epilogues' fallback kernels: their element math
// against double, their launches on the fake driver.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CudaRuntime.h"
#include "amp/ABI/EntryPoints.h"
#include "amp/Runtime/CachingAllocator.h"
#include "amp/Runtime/CudaCollectives.h"
#include "amp/Runtime/CudaDriver.h"
#include "amp/Runtime/CudaGemm.h"
#include "amp/Runtime/EpilogueMath.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace amp;
using namespace amp::cuda;

namespace {

/// The fake driver's record of the last launch (FakeCudaDriver.cpp).
struct FakeLaunch {
  unsigned grid[3], block[3], smem;
  void **params;
  const char *function;
  /// The image of the module loaded last.
  const void *module;
};

TEST(CudaDriver, MissingLibraryIsNoDevice) {
  std::string error;
  EXPECT_EQ(loadDriver("/nonexistent/libcuda.so.1", &error), nullptr);
  EXPECT_EQ(error.rfind("no CUDA device: cannot load the CUDA driver "
                        "/nonexistent/libcuda.so.1 (",
                        0),
            0u)
      << error;
}

TEST(CudaDriver, LibraryWithoutEntryPoints) {
  std::string error;
  EXPECT_EQ(loadDriver("libz.so.1", &error), nullptr);
  EXPECT_EQ(error, "no CUDA device: the CUDA driver libz.so.1 has no cuInit "
                   "(a driver older than CUDA 12?)");
}

TEST(CudaDriver, InitFailureIsNamed) {
  setenv("AMP_FAKE_CUDA_MODE", "no-device", 1);
  std::string error;
  EXPECT_EQ(loadDriver(AMP_FAKE_CUDA_DRIVER, &error), nullptr);
  EXPECT_EQ(error, "no CUDA device: cuInit failed with CUDA_ERROR_NO_DEVICE");
  setenv("AMP_FAKE_CUDA_MODE", "zero", 1);
  EXPECT_EQ(loadDriver(AMP_FAKE_CUDA_DRIVER, &error), nullptr);
  EXPECT_EQ(error, "no CUDA device: the CUDA driver reports no devices");
  unsetenv("AMP_FAKE_CUDA_MODE");
  auto api = loadDriver(AMP_FAKE_CUDA_DRIVER, &error);
  ASSERT_NE(api, nullptr) << error;
  EXPECT_NE(api->context, nullptr);
}

/// A backend that counts and can be made to fail.
struct CountingBackend {
  std::set<void *> live;
  int allocations = 0, releases = 0;
  size_t limit = ~size_t(0), held = 0;
  CachingAllocator make() {
    return CachingAllocator(
        [this](size_t bytes) -> void * {
          if (held + bytes > limit)
            return nullptr;
          ++allocations;
          held += bytes;
          void *p = std::malloc(bytes);
          live.insert(p);
          sizes[p] = bytes;
          return p;
        },
        [this](void *p) {
          ++releases;
          held -= sizes[p];
          live.erase(p);
          std::free(p);
        });
  }
  std::map<void *, size_t> sizes;
};

TEST(CachingAllocator, ReusesBlocksBySize) {
  EXPECT_EQ(CachingAllocator::roundSize(0), 512u);
  EXPECT_EQ(CachingAllocator::roundSize(1), 512u);
  EXPECT_EQ(CachingAllocator::roundSize(512), 512u);
  EXPECT_EQ(CachingAllocator::roundSize(513), 1024u);
  CountingBackend backend;
  {
    CachingAllocator allocator = backend.make();
    void *a = allocator.allocate(1000);
    void *b = allocator.allocate(3000);
    EXPECT_EQ(allocator.bytesInUse(), 1024u + 3072u);
    allocator.release(a);
    EXPECT_EQ(allocator.bytesCached(), 1024u);
    // Same rounded size: the cached block, no backing call.
    EXPECT_EQ(allocator.allocate(1020), a);
    EXPECT_EQ(backend.allocations, 2);
    // Another size: a new block.
    void *c = allocator.allocate(5000);
    EXPECT_NE(c, a);
    EXPECT_EQ(backend.allocations, 3);
    allocator.release(b);
    allocator.release(c);
    allocator.release(nullptr);
    allocator.release(&backend); // not ours: ignored
    EXPECT_EQ(allocator.bytesInUse(), 1024u);
    EXPECT_EQ(allocator.peakBytesHeld(), 1024u + 3072u + 5120u);
    allocator.trim();
    EXPECT_EQ(allocator.bytesCached(), 0u);
    EXPECT_EQ(backend.releases, 2);
    allocator.release(a);
  }
  // The destructor frees what is cached.
  EXPECT_TRUE(backend.live.empty());
}

TEST(CachingAllocator, OutOfMemoryTrimsAndRetries) {
  CountingBackend backend;
  backend.limit = 4096;
  CachingAllocator allocator = backend.make();
  void *a = allocator.allocate(3000); // 3072 held
  allocator.release(a);               // cached
  // 2048 more would pass the limit with the cached block held: the cache
  // is given back and the allocation succeeds.
  void *b = allocator.allocate(2000);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(allocator.bytesCached(), 0u);
  // Beyond the limit even with an empty cache: null, nothing leaked.
  EXPECT_EQ(allocator.allocate(8000), nullptr);
  allocator.release(b);
}

/// The mgpu* entry points on the fake driver (the process's driver is
/// chosen once, so this is the only test that calls them).
TEST(CudaRuntime, EntryPointsOnFakeDriver) {
  setenv("AMP_CUDA_DRIVER", AMP_FAKE_CUDA_DRIVER, 1);
  unsetenv("AMP_FAKE_CUDA_MODE");
  void *fake = dlopen(AMP_FAKE_CUDA_DRIVER, RTLD_NOW);
  ASSERT_NE(fake, nullptr);
  auto allocations =
      reinterpret_cast<int (*)()>(dlsym(fake, "fakeAllocations"));
  auto lastLaunch =
      reinterpret_cast<const void *(*)()>(dlsym(fake, "fakeLastLaunch"));
  ASSERT_TRUE(allocations && lastLaunch);

  void *stream = mgpuStreamCreate();
  ASSERT_NE(stream, nullptr);
  // One stream per process: kernels and GEMMs stay in program order.
  EXPECT_EQ(mgpuStreamCreate(), stream);
  EXPECT_EQ(cuda::getStream(), stream);
  void *a = mgpuMemAlloc(4000, stream, false);
  ASSERT_NE(a, nullptr);
  int before = allocations();
  mgpuMemFree(a, stream);
  EXPECT_EQ(mgpuMemAlloc(3900, stream, false), a) << "cached block reused";
  EXPECT_EQ(allocations(), before);

  // Copies and memsets reach the driver with the right sizes.
  mgpuMemset32(a, 0x3f800000u, 1000, stream);
  float host[1000];
  mgpuMemcpy(host, a, sizeof(host), stream);
  EXPECT_EQ(host[0], 1.0f);
  EXPECT_EQ(host[999], 1.0f);
  mgpuMemset16(a, 0x3c00, 4, stream);
  uint16_t halves[4];
  mgpuMemcpy(halves, a, sizeof(halves), stream);
  EXPECT_EQ(halves[3], 0x3c00);

  // A launch passes grid, block, shared memory and the parameter array.
  char image[] = "ptx";
  void *module = mgpuModuleLoadJIT(image, 2);
  void *kernel = mgpuModuleGetFunction(module, "kernel");
  ASSERT_NE(kernel, nullptr);
  void *params[2] = {&a, &stream};
  mgpuLaunchKernel(kernel, 4, 2, 1, 128, 1, 1, 256, stream, params, nullptr, 2);
  const auto *launch = static_cast<const FakeLaunch *>(lastLaunch());
  EXPECT_EQ(launch->grid[0], 4u);
  EXPECT_EQ(launch->grid[1], 2u);
  EXPECT_EQ(launch->block[0], 128u);
  EXPECT_EQ(launch->smem, 256u);
  EXPECT_EQ(launch->params, params);
  char error[256];
  EXPECT_EQ(amp_cuda_take_error(error, sizeof(error)), 0);

  // A failing launch is recorded, later calls do nothing, and taking the
  // error clears it.
  mgpuLaunchKernel(kernel, 1, 1, 1, 64, 64, 1, 0, stream, params, nullptr, 2);
  EXPECT_EQ(mgpuStreamCreate(), nullptr);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "mgpuLaunchKernel: cuLaunchKernel failed with "
                      "CUDA_ERROR_INVALID_VALUE");
  EXPECT_EQ(amp_cuda_take_error(error, sizeof(error)), 0);

  // An unknown kernel and an impossible allocation are errors too.
  EXPECT_EQ(mgpuModuleGetFunction(module, "missing"), nullptr);
  ASSERT_EQ(amp_cuda_take_error(error, 20), 1);
  EXPECT_EQ(std::strlen(error), 19u) << "truncated to the buffer";
  EXPECT_EQ(mgpuMemAlloc(uint64_t(1) << 40, stream, false), nullptr);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "mgpuMemAlloc: out of device memory allocating "
                      "1099511627776 bytes");
  mgpuMemFree(a, stream);
  mgpuModuleUnload(module);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  EXPECT_EQ(amp_cuda_take_error(error, sizeof(error)), 0);
  EXPECT_GE(getCudaPeakBytesHeld(), 4096u);
}

/// Runs at exit after the destructors of every static constructed during the
/// test below (atexit handlers and static destructors run in reverse order of
/// registration), as a loaded step's module destructor (mgpuModuleUnload)
/// does: the runtime's state must still be alive. ASan reports a use after
/// free; without it, a wrong error text fails the process.
void callRuntimeAfterStaticDestructors() {
  char error[256];
  mgpuModuleUnload(nullptr);
  int fakeModule = 0;
  mgpuModuleUnload(&fakeModule);
  if (amp_cuda_take_error(error, sizeof(error)) != 1 ||
      std::strncmp(error, "mgpuModuleUnload: no CUDA device: cannot load",
                   45) != 0) {
    std::fprintf(stderr, "runtime state lost at exit\n");
    std::_Exit(1);
  }
}

TEST(CudaRuntime, UsableFromModuleDestructorsAtExit) {
  // Registered before the runtime's first use in this process (ctest runs
  // each test in its own), so it runs after the runtime's statics' own
  // destructors would.
  ASSERT_EQ(std::atexit(callRuntimeAfterStaticDestructors), 0);
  setenv("AMP_CUDA_DRIVER", "/nonexistent/libcuda.so", 1);
  EXPECT_EQ(mgpuStreamCreate(), nullptr);
  char error[256];
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_NE(std::strstr(error, "no CUDA device"), nullptr) << error;
}

/// Reads one attribute of a matmul descriptor or layout.
template <typename T>
T operationAttribute(cublasLtMatmulDesc_t desc,
                     cublasLtMatmulDescAttributes_t attr) {
  T value{};
  size_t written = 0;
  EXPECT_EQ(cublasLtMatmulDescGetAttribute(desc, attr, &value, sizeof(value),
                                           &written),
            CUBLAS_STATUS_SUCCESS);
  return value;
}
template <typename T>
T layoutAttribute(cublasLtMatrixLayout_t layout,
                  cublasLtMatrixLayoutAttribute_t attr) {
  T value{};
  size_t written = 0;
  EXPECT_EQ(cublasLtMatrixLayoutGetAttribute(layout, attr, &value,
                                             sizeof(value), &written),
            CUBLAS_STATUS_SUCCESS);
  return value;
}

TEST(CudaGemm, RowMajorAsSwappedColumnMajor) {
  // Row-major D (m x n) = A^T (A stored k x m) x B (k x n), batched, bias +
  // GELU, bf16 in, f16 out.
  GemmKey key;
  key.m = 128, key.n = 256, key.k = 784, key.batch = 3;
  key.transposeA = true, key.transposeB = false;
  key.dtypeAB = 2, key.dtypeD = 1;
  key.epilogue = Epilogue::GeluBias;
  std::string error;
  auto g = GemmDescriptors::create(key, &error);
  ASSERT_NE(g, nullptr) << error;
  EXPECT_EQ(operationAttribute<cublasComputeType_t>(
                g->operation, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
            CUBLAS_COMPUTE_32F);
  EXPECT_EQ(operationAttribute<cudaDataType_t>(g->operation,
                                               CUBLASLT_MATMUL_DESC_SCALE_TYPE),
            CUDA_R_32F);
  // cuBLASLt's A is our B (not transposed), its B our A (transposed).
  EXPECT_EQ(operationAttribute<cublasOperation_t>(g->operation,
                                                  CUBLASLT_MATMUL_DESC_TRANSA),
            CUBLAS_OP_N);
  EXPECT_EQ(operationAttribute<cublasOperation_t>(g->operation,
                                                  CUBLASLT_MATMUL_DESC_TRANSB),
            CUBLAS_OP_T);
  EXPECT_EQ(operationAttribute<cublasLtEpilogue_t>(
                g->operation, CUBLASLT_MATMUL_DESC_EPILOGUE),
            CUBLASLT_EPILOGUE_GELU_BIAS);
  // B (k x n row-major) is column-major n x k, ld n.
  EXPECT_EQ(layoutAttribute<uint64_t>(g->a, CUBLASLT_MATRIX_LAYOUT_ROWS), 256u);
  EXPECT_EQ(layoutAttribute<uint64_t>(g->a, CUBLASLT_MATRIX_LAYOUT_COLS), 784u);
  EXPECT_EQ(layoutAttribute<int64_t>(g->a, CUBLASLT_MATRIX_LAYOUT_LD), 256);
  EXPECT_EQ(layoutAttribute<cudaDataType_t>(g->a, CUBLASLT_MATRIX_LAYOUT_TYPE),
            CUDA_R_16BF);
  // A stored k x m row-major is column-major m x k, ld m.
  EXPECT_EQ(layoutAttribute<uint64_t>(g->b, CUBLASLT_MATRIX_LAYOUT_ROWS), 128u);
  EXPECT_EQ(layoutAttribute<uint64_t>(g->b, CUBLASLT_MATRIX_LAYOUT_COLS), 784u);
  // D (m x n row-major) is column-major n x m, ld n, f16.
  EXPECT_EQ(layoutAttribute<uint64_t>(g->d, CUBLASLT_MATRIX_LAYOUT_ROWS), 256u);
  EXPECT_EQ(layoutAttribute<uint64_t>(g->d, CUBLASLT_MATRIX_LAYOUT_COLS), 128u);
  EXPECT_EQ(layoutAttribute<int64_t>(g->d, CUBLASLT_MATRIX_LAYOUT_LD), 256);
  EXPECT_EQ(layoutAttribute<cudaDataType_t>(g->d, CUBLASLT_MATRIX_LAYOUT_TYPE),
            CUDA_R_16F);
  // Batches: the count and the stride of one matrix.
  EXPECT_EQ(layoutAttribute<int32_t>(g->d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT),
            3);
  EXPECT_EQ(layoutAttribute<int64_t>(
                g->a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET),
            784 * 256);

  key.dtypeAB = 7;
  EXPECT_EQ(GemmDescriptors::create(key, &error), nullptr);
  EXPECT_EQ(error, "unknown element type code in m=128 n=256 k=784 batch=3 "
                   "ta=1 tb=0 ab=? d=f16 epilogue=gelu_bias");
}

TEST(CudaGemm, AuxEpilogues) {
  // The forward GELU keeping its input and the backward DGELU, the forward
  // ReLU keeping its bit mask and the backward DRELU: the aux matrix is laid
  // out like D (column-major n x m), so its leading dimension is n (elements
  // of D's type, or bits of the mask).
  GemmKey key;
  key.m = 512, key.n = 4096, key.k = 1024;
  key.dtypeAB = 1, key.dtypeD = 1;
  std::string error;
  for (auto [epilogue, expected, name, mask] :
       {std::tuple{Epilogue::GeluAuxBias, CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
                   "gelu_aux_bias", false},
        std::tuple{Epilogue::Dgelu, CUBLASLT_EPILOGUE_DGELU, "dgelu", false},
        std::tuple{Epilogue::ReluAuxBias, CUBLASLT_EPILOGUE_RELU_AUX_BIAS,
                   "relu_aux_bias", true},
        std::tuple{Epilogue::Drelu, CUBLASLT_EPILOGUE_DRELU, "drelu", true}}) {
    key.epilogue = epilogue;
    auto g = GemmDescriptors::create(key, &error);
    ASSERT_NE(g, nullptr) << error;
    EXPECT_EQ(operationAttribute<cublasLtEpilogue_t>(
                  g->operation, CUBLASLT_MATMUL_DESC_EPILOGUE),
              expected);
    EXPECT_EQ(operationAttribute<int64_t>(g->operation,
                                          CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD),
              4096);
    EXPECT_NE(key.str().find(std::string("epilogue=") + name),
              std::string::npos);
    EXPECT_TRUE(usesAux(epilogue));
    EXPECT_EQ(usesReluMask(epilogue), mask) << name;
    // The forward ones add the bias, the backward ones have none.
    EXPECT_EQ(usesBias(epilogue), epilogue == Epilogue::GeluAuxBias ||
                                      epilogue == Epilogue::ReluAuxBias)
        << name;
  }
  EXPECT_FALSE(usesAux(Epilogue::ReluBias));
  EXPECT_FALSE(usesReluMask(Epilogue::ReluBias));
  // Without aux, no aux leading dimension is set.
  key.epilogue = Epilogue::Bias;
  auto plain = GemmDescriptors::create(key, &error);
  ASSERT_NE(plain, nullptr) << error;
  EXPECT_EQ(operationAttribute<int64_t>(plain->operation,
                                        CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD),
            0);
}

TEST(CudaGemm, AuxEntryPointsCheckShapes) {
  // cuBLASLt's aux leading dimension must be a multiple of 8 elements (GELU's
  // input) or 128 bits (the ReLU mask), and amp's epilogues take one matrix:
  // a clear error before any device work. n = 200 passes the GELU rule but
  // not the ReLU one.
  char error[256];
  amp_cuda_take_error(error, sizeof(error));
  amp_cuda_gemm_gelu_aux(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                         128, 250, 64, 0, 0);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "amp_cuda_gemm: amp_cuda_gemm_gelu_aux: the GELU "
                      "epilogues need batch 1 and n a multiple of 8, got "
                      "batch 1 n 250");
  amp_cuda_gemm_dgelu(nullptr, nullptr, nullptr, nullptr, 1, 1, 2, 128, 256, 64,
                      0, 0);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "amp_cuda_gemm: amp_cuda_gemm_dgelu: the GELU "
                      "epilogues need batch 1 and n a multiple of 8, got "
                      "batch 2 n 256");
  amp_cuda_gemm_relu_aux(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                         128, 200, 64, 0, 0);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "amp_cuda_gemm: amp_cuda_gemm_relu_aux: the ReLU "
                      "epilogues need batch 1 and n a multiple of 128, got "
                      "batch 1 n 200");
  amp_cuda_gemm_drelu(nullptr, nullptr, nullptr, nullptr, 1, 1, 4, 128, 256, 64,
                      0, 0);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "amp_cuda_gemm: amp_cuda_gemm_drelu: the ReLU "
                      "epilogues need batch 1 and n a multiple of 128, got "
                      "batch 4 n 256");
}

TEST(EpilogueMath, GeluMatchesDouble) {
  // The fallback kernels' f32 GELU and derivative against double, over the
  // range where they differ from x and 0 or 1.
  const double c = std::sqrt(2.0 / M_PI);
  for (double x = -10; x <= 10; x += 1.0 / 64) {
    double t = std::tanh(c * (x + 0.044715 * x * x * x));
    double gelu = 0.5 * x * (1 + t);
    double grad =
        0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    EXPECT_NEAR(geluTanh(float(x)), gelu, 2e-6 * std::abs(gelu) + 1e-6) << x;
    EXPECT_NEAR(geluTanhGrad(float(x)), grad, 2e-6 * std::abs(grad) + 2e-6)
        << x;
  }
}

/// Points the runtime at the fake driver (no failure mode); its record of
/// the last launch, or null when the fake cannot be opened.
const FakeLaunch *useFakeDriver() {
  setenv("AMP_CUDA_DRIVER", AMP_FAKE_CUDA_DRIVER, 1);
  unsetenv("AMP_FAKE_CUDA_MODE");
  void *fake = dlopen(AMP_FAKE_CUDA_DRIVER, RTLD_NOW);
  if (!fake)
    return nullptr;
  auto lastLaunch =
      reinterpret_cast<const void *(*)()>(dlsym(fake, "fakeLastLaunch"));
  return lastLaunch ? static_cast<const FakeLaunch *>(lastLaunch()) : nullptr;
}

TEST(CudaRuntime, EpilogueFallbacksOnFakeDriver) {
  const FakeLaunch *launch = useFakeDriver();
  ASSERT_NE(launch, nullptr);
  char error[256];
  amp_cuda_take_error(error, sizeof(error));

  // The embedded image is a fatbin (its magic number), loaded once.
  size_t size = 0;
  const auto *image =
      static_cast<const unsigned char *>(epilogueFallbackImage(&size));
  ASSERT_GT(size, 1000u);
  EXPECT_EQ(image[0] | image[1] << 8 | image[2] << 16 |
                uint32_t(image[3]) << 24,
            0xBA55ED50u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(image) % 16, 0u);

  // One thread per element, 256 a block: 4 x 128 elements, 2 blocks.
  int d, mask;
  ASSERT_TRUE(launchEpilogueFallback(Epilogue::Drelu, 1, &d, &mask, 4, 128));
  EXPECT_STREQ(launch->function, "amp_drelu_f16");
  EXPECT_EQ(launch->module, image);
  EXPECT_EQ(launch->grid[0], 2u);
  EXPECT_EQ(launch->block[0], 256u);
  // The mask from D: one thread per 32-bit word, 3 x 256 / 32 = 24.
  ASSERT_TRUE(
      launchEpilogueFallback(Epilogue::ReluAuxBias, 2, &d, &mask, 3, 256));
  EXPECT_STREQ(launch->function, "amp_relu_mask_bf16");
  EXPECT_EQ(launch->grid[0], 1u);
  ASSERT_TRUE(
      launchEpilogueFallback(Epilogue::GeluAuxBias, 0, &d, &mask, 300, 256));
  EXPECT_STREQ(launch->function, "amp_gelu_from_aux_f32");
  EXPECT_EQ(launch->grid[0], 300u);
  ASSERT_TRUE(launchEpilogueFallback(Epilogue::Dgelu, 1, &d, &mask, 1, 8));
  EXPECT_STREQ(launch->function, "amp_dgelu_f16");
  EXPECT_EQ(launch->grid[0], 1u);
  EXPECT_EQ(amp_cuda_take_error(error, sizeof(error)), 0) << error;

  // An epilogue without a fallback is an error, not a launch.
  EXPECT_FALSE(launchEpilogueFallback(Epilogue::Bias, 1, &d, &mask, 4, 128));
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "amp_cuda_gemm: no fallback kernel for epilogue bias "
                      "and D type f16");
}

TEST(CudaRuntime, EmbeddingGradOnFakeDriver) {
  const FakeLaunch *launch = useFakeDriver();
  ASSERT_NE(launch, nullptr);
  char error[256];
  amp_cuda_take_error(error, sizeof(error));

  // The table (host memory on the fake driver) is zeroed, then one thread
  // per element of dy: 8 x 1024 positions x 768 = 24576 blocks of 256, the
  // kernel of dy's type. (Its arguments live on the entry point's stack;
  // test/Integration/CUDA checks the sums on a GPU.)
  std::vector<float> table(50 * 768, 1.0f);
  int dy, ids;
  amp_cuda_embedding_grad(&dy, &ids, table.data(), 2, 8 * 1024, 768, 50);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 0) << error;
  EXPECT_TRUE(std::all_of(table.begin(), table.end(),
                          [](float v) { return v == 0.0f; }));
  EXPECT_STREQ(launch->function, "amp_embedding_grad_bf16");
  EXPECT_EQ(launch->grid[0], 24576u);
  EXPECT_EQ(launch->block[0], 256u);

  // A bad element type is a recorded error, not a launch.
  amp_cuda_embedding_grad(&dy, &ids, table.data(), 7, 4, 4, 4);
  ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
  EXPECT_STREQ(error, "amp_cuda_embedding_grad: bad arguments: dy type 7, "
                      "positions 4, dim 4, vocab 4");
}

TEST(CudaGemm, PlanCacheKeysAndCounts) {
  GemmKey a, b;
  a.m = b.m = 64, a.n = b.n = 32, a.k = b.k = 16;
  EXPECT_TRUE(a == b);
  EXPECT_EQ(GemmKeyHash()(a), GemmKeyHash()(b));
  b.transposeB = true;
  EXPECT_FALSE(a == b);
  EXPECT_NE(GemmKeyHash()(a), GemmKeyHash()(b));
  GemmPlanCache<int> cache;
  int builds = 0;
  auto build = [&]() {
    ++builds;
    return std::make_unique<int>(builds);
  };
  EXPECT_EQ(*cache.getOrBuild(a, build), 1);
  EXPECT_EQ(*cache.getOrBuild(a, build), 1);
  EXPECT_EQ(*cache.getOrBuild(b, build), 2);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 2u);
  // A failed build is not cached: the next call tries again.
  GemmKey c = a;
  c.epilogue = Epilogue::Bias;
  EXPECT_EQ(cache.getOrBuild(c, [] { return std::unique_ptr<int>(); }),
            nullptr);
  EXPECT_EQ(*cache.getOrBuild(c, build), 3);
}

// Every CUDA entry point amp/ABI/EntryPoints.h names is a function of this
// runtime spelled as the name says (the compiler emits calls by name).
TEST(CudaRuntime, EveryAbiEntryPointIsDefined) {
  struct Entry {
    const char *abiName, *definedName;
    void *address;
  };
#define AMP_ENTRY(constant, fn)                                                \
  Entry{entry::constant, #fn, reinterpret_cast<void *>(&fn)}
  Entry entries[] = {AMP_ENTRY(kCudaGemm, amp_cuda_gemm),
                     AMP_ENTRY(kCudaGemmBias, amp_cuda_gemm_bias),
                     AMP_ENTRY(kCudaGemmBgrad, amp_cuda_gemm_bgrad),
                     AMP_ENTRY(kCudaGemmGeluAux, amp_cuda_gemm_gelu_aux),
                     AMP_ENTRY(kCudaGemmDgelu, amp_cuda_gemm_dgelu),
                     AMP_ENTRY(kCudaGemmReluAux, amp_cuda_gemm_relu_aux),
                     AMP_ENTRY(kCudaGemmDrelu, amp_cuda_gemm_drelu),
                     AMP_ENTRY(kCudaEmbeddingGrad, amp_cuda_embedding_grad),
                     AMP_ENTRY(kCudaAllReduce, amp_cuda_all_reduce)};
#undef AMP_ENTRY
  std::set<std::string> checked;
  for (const Entry &e : entries) {
    EXPECT_STREQ(e.abiName, e.definedName);
    EXPECT_NE(e.address, nullptr) << e.definedName;
    checked.insert(e.abiName);
  }
  for (const char *name : entry::kCudaEntryPoints)
    EXPECT_TRUE(checked.count(name)) << name << " is not checked here";
  EXPECT_EQ(checked.size(), std::size(entry::kCudaEntryPoints));
}

} // namespace
