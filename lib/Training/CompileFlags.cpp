//===- CompileFlags.cpp - Command-line flags of step compilation ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/CompileFlags.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <string>
#include <vector>

using namespace amp;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &amp::getCompileFlagsCategory() {
  static cl::OptionCategory category("compile options");
  return category;
}

namespace {

cl::OptionCategory &compileCategory = getCompileFlagsCategory();

cl::opt<train::OptLevel> optLevel("opt-level",
                                  cl::desc("Apex opt level (default: O1)"),
                                  cl::init(train::OptLevel::O1),
                                  AMP_OPT_LEVEL_VALUES,
                                  cl::cat(compileCategory));
cl::opt<train::LowType> dtype("dtype",
                              cl::desc("Low-precision type (default: f16)"),
                              cl::init(train::LowType::f16),
                              AMP_LOW_TYPE_VALUES, cl::cat(compileCategory));
cl::opt<train::OptimizerKind> optimizer("optimizer",
                                        cl::desc("Update rule (default: adam)"),
                                        cl::init(train::OptimizerKind::adam),
                                        cl::values(AMP_OPTIMIZER_VALUES),
                                        cl::cat(compileCategory));
cl::opt<double> initScale(
    "init-scale",
    cl::desc("Initial loss scale (f16 at O1/O2; 0: 65536, GradScaler's)"),
    cl::init(0.0), cl::cat(compileCategory));

cl::opt<int64_t>
    growthInterval("growth-interval",
                   cl::desc("Clean steps before the dynamic loss scale grows "
                            "(GradScaler's growth_interval) (default: 2000)"),
                   cl::init(2000), cl::cat(compileCategory));

cl::opt<int64_t> accumulate(
    "accumulate",
    cl::desc("Micro-batches whose gradients are accumulated into one update "
             "(one step call per micro-batch) (default: 1)"),
    cl::init(1), cl::cat(compileCategory));

cl::opt<double> memoryBudget(
    "memory-budget",
    cl::desc("Recompute forward values (element-wise work, norms) in "
             "backward instead of keeping them, until the estimated peak of "
             "live tensors and workspace is this fraction of the peak "
             "without (0 < f <= 1; 1: none; the CPU backends; "
             "amp-recompute)"),
    cl::init(1.0), cl::cat(compileCategory));

cl::opt<bool> recomputeGemms(
    "recompute-gemms",
    cl::desc("Under --memory-budget, also recompute GEMMs where a kept "
             "value needs them (a layer's output projection, an MLP's first "
             "GEMM), after every value that needs none; the same bits, more "
             "time (amp-recompute's recompute-gemms)"),
    cl::init(false), cl::cat(compileCategory));

cl::opt<std::string> autocastMode(
    "autocast",
    cl::desc("default (PyTorch's autocast lists) or calibrated (also keep in "
             "f32 the ops whose measured range, --calibration=FILE from "
             "amp.calibrate, does not fit the low type) (default: default)"),
    cl::init("default"), cl::cat(compileCategory));

cl::opt<bool> printOpOnError(
    "print-op-on-error",
    cl::desc("After a compile error, print the op it is about (a function: "
             "all of it, in generic form) (default: false)"),
    cl::init(false), cl::cat(compileCategory));

cl::opt<std::string> diagnosticsFile(
    "diagnostics-file",
    cl::desc("Also write each compile diagnostic to this file as a line of "
             "JSON (severity, message, op, module, file, line, column, "
             "backward, notes; amp.CompileError.diagnostics)"),
    cl::value_desc("path"), cl::init(""), cl::cat(compileCategory));

} // namespace

bool amp::getPrintOpOnError() { return printOpOnError; }

llvm::StringRef amp::getDiagnosticsFile() { return diagnosticsFile; }

llvm::Error amp::readCompileFlags(AmpPipelineOptions &options) {
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  if (!(initScale >= 0) || !std::isfinite(initScale))
    return err("--init-scale must be positive and finite (0: the default)");
  if (growthInterval < 1)
    return err("--growth-interval must be at least 1, got " +
               llvm::Twine(growthInterval.getValue()));
  if (accumulate < 1)
    return err("--accumulate must be at least 1, got " +
               llvm::Twine(accumulate.getValue()));
  options.optLevel = optLevel;
  options.dtype = dtype;
  options.optimizer = optimizer;
  options.initScale = initScale;
  options.growthInterval = growthInterval;
  options.accumulate = accumulate;
  return llvm::Error::success();
}

llvm::Expected<MemoryBudgetFlags>
amp::readMemoryBudgetFlags(bool cpu, llvm::StringRef budgetIsFor) {
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  if (!(memoryBudget > 0.0 && memoryBudget <= 1.0))
    return err("--memory-budget must be in (0, 1], got " +
               llvm::Twine(std::to_string(double(memoryBudget))));
  if (memoryBudget < 1.0 && !cpu)
    return err("--memory-budget is " + budgetIsFor);
  if (recomputeGemms && memoryBudget == 1.0)
    return err("--recompute-gemms needs --memory-budget below 1");
  return MemoryBudgetFlags{memoryBudget, recomputeGemms};
}

/// The amp-pipeline options with their defaults.
static std::vector<std::pair<std::string, std::string>> pipelineDefaults() {
  return getReadableOptions(AmpPipelineOptions());
}

/// Where the settings a model decides live, for flags users reach for.
static std::optional<std::string> modelDecides(llvm::StringRef name) {
  if (name == "batch-size" || name == "batch" || name == "bs")
    return std::string("the batch size is the leading dimension of the "
                       "model's data arguments (e.g. tensor<128x784xf32>): "
                       "change it in the model");
  if (name == "num-classes" || name == "classes")
    return std::string("the number of classes is the last dimension of the "
                       "model's logits (the loss's input): change it in the "
                       "model");
  if (name == "lr-decay" || name == "learning-rate")
    return std::string("the learning rate is --lr (with --lr-schedule and "
                       "--warmup-steps)");
  return std::nullopt;
}

bool amp::parseToolCommandLine(int argc, char **argv, llvm::StringRef tool,
                               llvm::StringRef overview,
                               AmpPipelineOptions *pipeline) {
  auto fail = [&](const llvm::Twine &message) {
    llvm::errs() << tool << ": error: " << message << "\n";
    return false;
  };
  std::string fullOverview = overview.str();
  std::vector<std::pair<std::string, std::string>> defaults;
  if (pipeline) {
    defaults = pipelineDefaults();
    fullOverview +=
        "\nEvery amp-pipeline option is a flag as well (docs/Passes.md); "
        "with their defaults:\n ";
    unsigned column = 1;
    for (auto &[name, value] : defaults) {
      std::string item = " --" + name + "=" + value;
      if (column + item.size() > 78) {
        fullOverview += "\n ";
        column = 1;
      }
      fullOverview += item;
      column += item.size();
    }
    fullOverview +=
        "\nEach applies where it has a meaning: --momentum and --nesterov "
        "with\n--optimizer=momentum (plain --optimizer=sgd has no momentum), "
        "--beta1, --beta2\nand --eps with adam and adamw, --wire-type, "
        "--bucket-mb and --sync-batchnorm\nwith --ranks above 1, "
        "--smallest-magnitudes with --check-numerics,\n"
        "--calibration-margin with --calibration; --init-scale=0 is 65536 "
        "(1.0 for a\nstatic scale at O3).";
    fullOverview +=
        "\nPyTorch's names work too: --betas=0.9,0.999 (Adam's), "
        "--clip-grad-norm=C\n(clip_grad_norm_'s max_norm), --enabled=false "
        "(GradScaler's: no loss scaling),\nand snake_case for any flag "
        "(--weight_decay, --growth_interval). As torch.optim:\n"
        "--optimizer=sgd --momentum=M (M > 0) is SGD with momentum, and "
        "--optimizer=adamw\nwithout --weight-decay decays by 0.01.\n";
  }

  // Flags that are not the tool's: amp-pipeline options go to the pipeline;
  // the rest are left for LLVM's parser to reject (with its "Did you mean").
  auto registered = llvm::cl::getRegisteredOptions();
  std::vector<char *> kept = {argv[0]};
  std::string forwarded;
  // Pipeline options given on the command line, by their amp names.
  llvm::StringMap<std::string> given;
  // argv entries rewritten from PyTorch's spelling (snake_case) live here.
  std::vector<std::string> rewritten;
  rewritten.reserve(argc);
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--") {
      kept.insert(kept.end(), argv + i, argv + argc);
      break;
    }
    llvm::StringRef flag = arg;
    if (!flag.consume_front("-") || flag.empty()) {
      kept.push_back(argv[i]);
      continue;
    }
    flag.consume_front("-");
    auto [rawName, value] = flag.split('=');
    // PyTorch's snake_case names (weight_decay, init_scale) are the flags'.
    std::string canonical = rawName.str();
    std::replace(canonical.begin(), canonical.end(), '_', '-');
    // PyTorch's names of amp-pipeline options.
    if (canonical == "clip-grad-norm" || canonical == "max-norm")
      canonical = "clip-norm";
    llvm::StringRef name = canonical;
    if (auto it = registered.find(name); it != registered.end()) {
      if (name != rawName) {
        rewritten.push_back("--" + canonical +
                            (flag.contains('=') ? "=" + value.str() : ""));
        kept.push_back(rewritten.back().data());
      } else {
        kept.push_back(argv[i]);
      }
      // `--steps -1`: the next argument is this flag's value, not a flag.
      if (!flag.contains('=') && i + 1 < argc &&
          it->second->getValueExpectedFlag() == llvm::cl::ValueRequired)
        kept.push_back(argv[++i]);
      continue;
    }
    if (std::optional<std::string> where = modelDecides(name))
      return fail("--" + name + " is not a flag of " + tool + ": " + *where);
    bool isAlias = pipeline && (name == "betas" || name == "enabled");
    bool isPipelineOption =
        isAlias || llvm::any_of(defaults, [&, name = name](auto &entry) {
          return entry.first == name;
        });
    if (!isPipelineOption) {
      // LLVM would suggest only the tool's own flags; the nearest of those
      // and the amp-pipeline options is the better guess.
      std::string best;
      unsigned bestDistance = std::max<unsigned>(2, name.size() / 3) + 1;
      auto consider = [&, name = name](llvm::StringRef candidate) {
        unsigned d = name.edit_distance(candidate, true, bestDistance);
        if (d < bestDistance) {
          bestDistance = d;
          best = candidate.str();
        }
      };
      for (auto &[candidate, option] : registered)
        if (option->getOptionHiddenFlag() == llvm::cl::NotHidden &&
            !candidate.empty())
          consider(candidate);
      for (auto &entry : defaults)
        consider(entry.first);
      return fail("unknown flag '" + arg + "'" +
                  (best.empty() ? std::string()
                                : "; did you mean '--" + best +
                                      (flag.contains('=') ? "=" + value.str()
                                                          : std::string()) +
                                      "'?") +
                  " (" + tool + " --help lists every flag)");
    }
    // `--beta2=0.95` or `--beta2 0.95`; a boolean alone (`--nesterov`) is
    // true. Braces keep a value's spaces ("--policy=my runs/p.json").
    std::string text = value.str();
    if (!flag.contains('=')) {
      bool boolean = name == "enabled" ||
                     llvm::any_of(defaults, [&, name = name](auto &entry) {
                       return entry.first == name &&
                              (entry.second == "true" ||
                               entry.second == "false");
                     });
      if (boolean)
        text = "true";
      else if (i + 1 < argc)
        text = argv[++i];
      else
        return fail("--" + name + " needs a value");
    }
    if (name == "betas") {
      // torch.optim.Adam's betas=(0.9, 0.999).
      auto [first, second] = llvm::StringRef(text).split(',');
      double b1, b2;
      if (first.trim().getAsDouble(b1) || second.trim().getAsDouble(b2) ||
          second.contains(','))
        return fail("--betas takes two numbers, beta1,beta2 (as "
                    "torch.optim.Adam's betas=(0.9, 0.999)), got '" +
                    text + "'");
      forwarded += ("beta1={" + first.trim() + "} beta2={" + second.trim() +
                    "} ")
                       .str();
      given["beta1"] = first.trim().str();
      given["beta2"] = second.trim().str();
      continue;
    }
    if (name == "enabled") {
      // GradScaler(enabled=False): no loss scaling.
      if (text != "true" && text != "false")
        return fail("--enabled takes true or false (GradScaler's enabled), "
                    "got '" + text + "'");
      if (text == "false") {
        forwarded += "loss-scale={none} ";
        given["loss-scale"] = "none";
      }
      continue;
    }
    forwarded += (name + "={" + text + "} ").str();
    given[name] = text;
  }

  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (!llvm::cl::ParseCommandLineOptions(int(kept.size()), kept.data(),
                                         fullOverview, &errorStream)) {
    // A flag's bad value LLVM has reported itself, on one line
    // ("<tool>: for the --lr option: 'x' value invalid ..."), to stderr.
    if (llvm::StringRef(errors).trim().empty())
      return false;
    // LLVM prints "<tool>: <message>" lines; one error line of them.
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(errors).trim().split(lines, '\n', -1, false);
    std::string message;
    for (llvm::StringRef line : lines) {
      line = line.trim();
      line.consume_front(tool);
      line.consume_front(":");
      message += (message.empty() ? "" : " ") + line.trim().str();
    }
    return fail(message);
  }
  if (pipeline) {
    if (llvm::Error e = readCompileFlags(*pipeline))
      return fail(llvm::toString(std::move(e)));
    // The driver flags' own: given to amp-pipeline, they would be overridden.
    for (llvm::StringRef own : {"opt-level", "dtype", "optimizer",
                                "init-scale", "growth-interval", "accumulate"})
      given.erase(own);
    std::string message;
    llvm::raw_string_ostream messageStream(message);
    if (!forwarded.empty() &&
        failed(pipeline->parseFromString(forwarded, messageStream))) {
      // A bad value LLVM's option parser has already reported on its own.
      if (llvm::StringRef(message).trim().empty())
        return false;
      return fail(llvm::StringRef(message).trim().str());
    }
    // torch.optim's meanings: SGD(momentum=M) is momentum SGD when M > 0;
    // AdamW's weight_decay defaults to 0.01.
    using Kind = train::OptimizerKind;
    if (given.count("momentum") &&
        (pipeline->optimizer == Kind::sgd ||
         pipeline->optimizer == Kind::momentum))
      pipeline->optimizer =
          pipeline->momentum > 0 ? Kind::momentum : Kind::sgd;
    if (pipeline->nesterov && pipeline->optimizer != Kind::momentum)
      return fail("--nesterov needs SGD with a momentum (--optimizer=sgd "
                  "--momentum=M, M > 0), as torch.optim.SGD");
    if (pipeline->optimizer == Kind::adamw && !given.count("weight-decay"))
      pipeline->weightDecay = 0.01;
    if (autocastMode != "default" && autocastMode != "calibrated")
      return fail("--autocast must be default or calibrated, got '" +
                  autocastMode + "'");
    if (autocastMode == "calibrated" && pipeline->calibration.empty())
      return fail("--autocast=calibrated needs --calibration=FILE (the "
                  "ranges amp.calibrate measured; docs/Numerics.md)");
    if (autocastMode == "default" && !pipeline->calibration.empty())
      return fail("--calibration=FILE is used with --autocast=calibrated");
  }
  return true;
}
