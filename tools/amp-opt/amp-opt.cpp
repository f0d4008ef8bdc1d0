//===- amp-opt.cpp - The amp optimizer driver -----------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// mlir-opt for training graphs: MlirOptMain with the train dialect, the
// upstream dialects amp's pipelines produce, and amp's passes registered. All
// of mlir-opt's flags work (--pass-pipeline, -split-input-file,
// -verify-diagnostics, --mlir-print-ir-after-all, --mlir-timing, ...).
//
// Two things differ from mlir-opt, both for users feeding it bad input:
// an input with no operations (empty, or only comments) is an error, and the
// `-o` file is written through a temporary file renamed into place on
// success, so a failed run leaves an existing output file untouched.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/PrecisionPolicy.h"
#include "amp/InitAll.h"
#include "TestDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// True when `text` holds nothing but whitespace and `//` comments.
static bool hasNoOperations(llvm::StringRef text) {
  while (true) {
    text = text.ltrim();
    if (text.empty())
      return true;
    if (!text.starts_with("//"))
      return false;
    text = text.drop_until([](char c) { return c == '\n'; });
  }
}

static llvm::cl::opt<bool> printPrecisionTable(
    "print-precision-table",
    llvm::cl::desc("Print every train op's autocast category with its "
                   "PyTorch and Apex list entries (the table of "
                   "docs/Passes.md) and exit"),
    llvm::cl::init(false));

int main(int argc, char **argv) {
  DialectRegistry registry;
  amp::registerAmpDialects(registry);
  amp::test::registerTestDialect(registry);
  amp::registerAmpPasses();

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "amp optimizer: mixed-precision training graphs\n", registry);
  if (printPrecisionTable) {
    MLIRContext context(registry);
    return failed(amp::train::printPrecisionTable(&context, llvm::outs()))
               ? EXIT_FAILURE
               : EXIT_SUCCESS;
  }
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Listing flags write no IR: let the stock driver answer them.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::WithColor::error(llvm::errs(), "amp-opt") << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (hasNoOperations(input->getBuffer())) {
    llvm::errs() << inputFilename << ":1:1: ";
    llvm::WithColor::error()
        << "input has no operations (the file is empty or only comments)\n";
    return EXIT_FAILURE;
  }

  // Write to a temporary file that replaces the output only on success.
  bool failedRun = false;
  llvm::Error written = llvm::writeToOutput(
      outputFilename, [&](llvm::raw_ostream &os) -> llvm::Error {
        if (failed(MlirOptMain(os, std::move(input), registry, config))) {
          failedRun = true;
          return llvm::createStringError("amp-opt failed");
        }
        return llvm::Error::success();
      });
  if (failedRun) {
    llvm::consumeError(std::move(written));
    return EXIT_FAILURE;
  }
  if (written) {
    // The message already names the file.
    llvm::WithColor::error(llvm::errs(), "amp-opt")
        << "cannot write output: " << llvm::toString(std::move(written))
        << "\n";
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
