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

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

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

/// The first option of a pass or pipeline flag (`--amp-pipeline="opt_level=O2
/// ..."`) spelled in snake_case, as a message with its kebab-case name (pass
/// options are kebab-case; PyTorch's names are snake_case); none if all are
/// kebab-case. Only keys are looked at, not values (`policy=my_file.json`).
static std::optional<std::string> findSnakeCaseOption(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (!arg.consume_front("-"))
      continue;
    arg.consume_front("-");
    auto [name, options] = arg.split('=');
    if (options.empty() ||
        (!PassInfo::lookup(name) && !PassPipelineInfo::lookup(name)))
      continue;
    llvm::SmallVector<llvm::StringRef> words;
    options.trim("\"' {}").split(words, ' ', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef word : words) {
      llvm::StringRef key = word.split('=').first.trim("{");
      if (!word.contains('=') || !key.contains('_'))
        continue;
      return ("--" + name + ": no option '" + key + "'; did you mean '" +
              llvm::join(llvm::split(key, '_'), "-") +
              "'? (pass options are kebab-case)")
          .str();
    }
  }
  return std::nullopt;
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

  if (std::optional<std::string> error = findSnakeCaseOption(argc, argv)) {
    llvm::WithColor::error(llvm::errs(), "amp-opt") << *error << "\n";
    return EXIT_FAILURE;
  }
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "amp optimizer: mixed-precision training graphs\n", registry);
  if (printPrecisionTable) {
    MLIRContext context(registry);
    return failed(amp::train::printPrecisionTable(&context, llvm::outs()))
               ? EXIT_FAILURE
               : EXIT_SUCCESS;
  }
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // Pass options that do not parse: LLVM's option parser has printed why;
  // the empty error the stock driver adds after it at `<unknown>:0` is
  // dropped, and the parser's own messages say they are amp-opt's.
  config.setPassPipelineSetupFn(
      [setup = config](PassManager &pm) -> LogicalResult {
        ScopedDiagnosticHandler handler(
            pm.getContext(), [](Diagnostic &d) -> LogicalResult {
              if (!isa<UnknownLoc>(d.getLocation()))
                return failure();
              std::string message = d.str();
              llvm::StringRef text = llvm::StringRef(message).trim();
              if (text.empty())
                return success();
              if (!text.consume_front("<Pass-Options-Parser>: "))
                return failure();
              llvm::WithColor::error(llvm::errs(), "amp-opt") << text << "\n";
              return success();
            });
        return setup.setupPassPipeline(pm);
      });

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
