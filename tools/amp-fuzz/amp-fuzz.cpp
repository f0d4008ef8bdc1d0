//===- amp-fuzz.cpp - libFuzzer target: parse, verify, compile ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Feeds arbitrary bytes to what amp-opt does with a file: the parser (text,
// or bytecode when the bytes start with MLIR's magic), the verifier, then on
// a module that verifies, amp-pipeline (O1 f16, Adam, dynamic loss scaling)
// and amp-lower-cpu. Every outcome but a crash, a sanitizer report or a hang
// is acceptable: diagnostics are collected and dropped. Built only with
// clang (-DAMP_ENABLE_FUZZER=ON, scripts/fuzz.sh).
//
//===----------------------------------------------------------------------===//

#include "amp/InitAll.h"
#include "amp/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

using namespace mlir;

namespace {

MLIRContext &context() {
  static MLIRContext *ctx = [] {
    DialectRegistry registry;
    amp::registerAmpDialects(registry);
    amp::registerAmpPasses();
    auto *c = new MLIRContext(registry);
    c->loadAllAvailableDialects();
    // One thread: reproducible runs, no pool to leak.
    c->disableMultithreading();
    return c;
  }();
  return *ctx;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext &ctx = context();
  ScopedDiagnosticHandler quiet(&ctx, [](Diagnostic &) { return success(); });
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz-input"),
      llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &ctx);
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(&ctx);
  amp::AmpPipelineOptions options;
  amp::buildAmpPipeline(pm, options);
  amp::buildCpuLoweringPipeline(pm);
  (void)pm.run(*module);
  return 0;
}
