//===- ArtifactCompiler.cpp - Compile a training step ahead of time -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Lowers the step and logits functions with amp-lower-cpu or amp-lower-cuda,
// translates to LLVM IR, adds the manifest and a packed entry point per
// function, emits an object file with LLVM's code generator and links it
// with the runtime archive into a shared object (the system C++ driver does
// the linking, with -z defs so an unresolved symbol fails here, not on the
// machine that loads the artifact).
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/ArtifactCompiler.h"
#include "amp/Execution/ArtifactCache.h"
#include "amp/Execution/CpuJit.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <chrono>
#include <mutex>
#include <tuple>

using namespace mlir;
using namespace amp;

#ifndef AMP_RUNTIME_CPU_ARCHIVES
#error "AMP_RUNTIME_CPU_ARCHIVES must list the CPU runtime's link inputs"
#endif
#ifndef AMP_RUNTIME_CUDA_ARCHIVES
#define AMP_RUNTIME_CUDA_ARCHIVES ""
#endif

std::vector<std::string> amp::getRuntimeLinkInputs(bool cuda) {
  llvm::SmallVector<llvm::StringRef> inputs;
  llvm::StringRef(cuda ? AMP_RUNTIME_CUDA_ARCHIVES : AMP_RUNTIME_CPU_ARCHIVES)
      .split(inputs, '|', -1, false);
  // An installed tool: <package>/bin/amp-compile beside <package>/lib.
  static const std::string installed = [] {
    llvm::SmallString<256> dir(llvm::sys::fs::getMainExecutable(
        nullptr, reinterpret_cast<void *>(&getRuntimeLinkInputs)));
    llvm::sys::path::remove_filename(dir);
    llvm::sys::path::append(dir, "..", "lib");
    llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
    return dir.str().str();
  }();
  std::vector<std::string> result;
  for (llvm::StringRef input : inputs) {
    // The package's own copy first: an installed tool links the runtime it
    // was installed with, not a build tree rebuilt since.
    if (llvm::sys::path::is_absolute(input)) {
      llvm::SmallString<256> beside(installed);
      llvm::sys::path::append(beside, llvm::sys::path::filename(input));
      if (llvm::sys::fs::exists(beside)) {
        result.push_back(beside.str().str());
        continue;
      }
    }
    result.push_back(input.str());
  }
  return result;
}

bool amp::isInstalledTool() {
  static const bool installed = [] {
    llvm::SmallString<256> archive(llvm::sys::fs::getMainExecutable(
        nullptr, reinterpret_cast<void *>(&isInstalledTool)));
    llvm::sys::path::remove_filename(archive);
    llvm::sys::path::append(archive, "..", "lib", "libAMPRuntimeCPU.a");
    return llvm::sys::fs::exists(archive);
  }();
  return installed;
}

static llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Runs the C++ driver; its output is returned in the error on failure.
static llvm::Error link(llvm::ArrayRef<std::string> arguments) {
  auto driver = llvm::sys::findProgramByName("c++");
  if (!driver)
    driver = llvm::sys::findProgramByName("g++");
  if (!driver)
    return error("no C++ compiler driver (c++ or g++) on PATH to link the "
                 "artifact");
  llvm::SmallString<128> log;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("amp-link", "log", log))
    return error("cannot create a temporary file: " + ec.message());
  llvm::SmallVector<llvm::StringRef> argv = {*driver};
  for (const std::string &a : arguments)
    argv.push_back(a);
  std::string message;
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(),
                                                log.str()};
  int rc = llvm::sys::ExecuteAndWait(*driver, argv, std::nullopt, redirects, 0,
                                     0, &message);
  auto output = llvm::MemoryBuffer::getFile(log);
  std::string text = output ? (*output)->getBuffer().str() : "";
  llvm::sys::fs::remove(log);
  if (rc != 0)
    return error("linking the artifact failed (" +
                 (message.empty() ? "exit " + std::to_string(rc) : message) +
                 "):\n" + text);
  return llvm::Error::success();
}

/// The host CPU and features the code is generated for: `options.cpu`
/// (no extra features), else this machine's (cpu artifacts) or the x86-64
/// baseline (cuda artifacts, whose host code runs elsewhere).
static std::pair<std::string, std::string>
resolveCpu(const ArtifactOptions &options) {
  if (!options.cpu.empty())
    return {options.cpu, ""};
  if (options.backend == "cuda")
    return {"x86-64", ""};
  llvm::SubtargetFeatures hostFeatures;
  for (auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    hostFeatures.AddFeature(name, enabled);
  return {llvm::sys::getHostCPUName().str(), hostFeatures.getString()};
}

std::string amp::describeArtifactTarget(const ArtifactOptions &options) {
  auto [cpu, features] = resolveCpu(options);
  std::string text =
      "backend=" + options.backend + " cpu=" + cpu + " features=" + features +
      " static-cxx=" + (options.staticCxx ? "1" : "0") +
      " part-instructions=" + std::to_string(options.instructionsPerPart) +
      " glue-instructions=" + std::to_string(options.glueInstructions);
  if (!options.fusedAttention)
    text += " attention=decomposed";
  if (!options.fusedLmHead)
    text += " lm-head=decomposed";
  if (options.memoryBudget < 1.0)
    text += " memory-budget=" + formatPassOptionDouble(options.memoryBudget) +
            (options.recomputeGemms ? " recompute-gemms" : "");
  if (!isStateInPlace())
    text += " state-in-place=0";
  if (options.backend == "cpu" && !isMemoryPlanned())
    text += " memory-plan=0";
  if (options.backend == "cuda")
    text += " chip=" + options.chip + " ptx-features=" + options.features +
            " kernel-format=" + options.kernelFormat;
  return text;
}

/// The cache key's parts besides the module: the target, the manifest's
/// model name, every pipeline option (a policy file by its content).
static std::vector<std::string>
cacheKeyParts(llvm::StringRef name, const AmpPipelineOptions &options,
              const ArtifactOptions &artifact) {
  // The manifest's model name is in the artifact's bytes.
  std::vector<std::string> parts = {describeArtifactTarget(artifact),
                                    "model=" + name.str()};
  // (The calibration by its content alone, below: amp.compile writes it to
  // a new temporary file each time.)
  for (auto &[option, value] : getReadableOptions(options))
    if (option != "calibration")
      parts.push_back(option + "=" + value);
  // The files the options name decide the code by their contents.
  for (auto [option, path] : {std::pair<const char *, const std::string &>{
                                  "policy", options.policyFile},
                              {"calibration", options.calibration}}) {
    if (path.empty())
      continue;
    auto file = llvm::MemoryBuffer::getFile(path);
    llvm::SHA256 hash;
    hash.update(file ? (*file)->getBuffer() : "<unreadable>");
    parts.push_back(std::string(option) + "-content=" +
                    llvm::toHex(hash.final(), /*LowerCase=*/true));
  }
  return parts;
}

std::optional<std::string> amp::lookupCachedArtifact(
    ArtifactCache &cache, ModuleOp model, llvm::StringRef name,
    const AmpPipelineOptions &options, const ArtifactOptions &artifact,
    llvm::StringRef tool, std::string &key) {
  key.clear();
  if (!cache.isEnabled())
    return std::nullopt;
  key = ArtifactCache::computeKey(model, cacheKeyParts(name, options, artifact),
                                  // (a calibration is keyed by module
                                  // paths, which locations carry)
                                  /*withLocations=*/options.checkNumerics ||
                                      !options.calibration.empty());
  std::optional<std::string> hit = cache.lookup(key);
  if (hit)
    llvm::errs() << tool << ": cache hit " << key.substr(0, 16) << " ("
                 << cache.getDirectory() << "): the step compiled before\n";
  return hit;
}

void amp::storeCachedArtifact(ArtifactCache &cache, llvm::StringRef key,
                              llvm::StringRef path, llvm::StringRef name,
                              const AmpPipelineOptions &options,
                              const ArtifactOptions &artifact) {
  if (key.empty())
    return;
  std::string described = "backend=" + artifact.backend;
  for (auto &[option, value] : getReadableOptions(options))
    described += " " + option + "=" + value;
  cache.store(key, path, name, described);
}

/// The most parts a module is split into.
constexpr unsigned kMaxParts = 16;

/// How many parts `module` is compiled in: a function of the module alone
/// (never of the thread count), so the artifact's bytes do not depend on the
/// machine's cores or on --jobs.
static unsigned countParts(const llvm::Module &module,
                           size_t instructionsPerPart) {
  size_t instructions = 0;
  unsigned functions = 0;
  for (const llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    ++functions;
    instructions += f.getInstructionCount();
  }
  size_t parts = instructions / std::max<size_t>(instructionsPerPart, 1);
  if (parts < 2)
    return 1;
  return static_cast<unsigned>(std::min<size_t>({parts, kMaxParts, functions}));
}

/// The most instructions of one basic block of glue at code generation.
constexpr size_t kGlueBlockInstructions = 400;

/// Whether `f` is glue: a function without loops of at least
/// `instructions` instructions (a step whose loops were all outlined:
/// calls, allocations and the pointers they take).
static bool isGlue(const llvm::Function &f, size_t instructions) {
  if (instructions == 0 || f.isDeclaration() ||
      f.getInstructionCount() < instructions)
    return false;
  llvm::SmallVector<
      std::pair<const llvm::BasicBlock *, const llvm::BasicBlock *>>
      backEdges;
  llvm::FindFunctionBackedges(f, backEdges);
  return backEdges.empty();
}

/// Moves the glue functions of `module` into a module of their own,
/// returned as bitcode (empty when there is none): they are optimized as
/// the rest, but their machine code is generated without optimization
/// (CodeGenOptLevel::None, after cutGlueBlocks). LLVM's register allocator and
/// instruction selector take time superlinear in a function's calls and the
/// values live across them: a 1 000-layer MLP's step, 29 000 calls in one
/// function, took 54 s of optimized code generation. Its glue gains nothing
/// from it (the loops it calls are compiled as before). Every local symbol
/// becomes a hidden global one, so the objects link.
static std::string separateGlue(llvm::Module &module, size_t instructions) {
  llvm::SmallVector<llvm::Function *> functions;
  for (llvm::Function &f : module)
    if (isGlue(f, instructions))
      functions.push_back(&f);
  if (functions.empty())
    return {};
  llvm::SmallPtrSet<const llvm::GlobalValue *, 4> glue(functions.begin(),
                                                        functions.end());
  for (llvm::GlobalValue &value : module.global_values()) {
    if (!value.hasLocalLinkage())
      continue;
    if (!value.hasName())
      value.setName("amp.local");
    value.setLinkage(llvm::GlobalValue::ExternalLinkage);
    value.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  llvm::ValueToValueMapTy map;
  std::unique_ptr<llvm::Module> glueModule =
      llvm::CloneModule(module, map, [&](const llvm::GlobalValue *value) {
        return glue.contains(value);
      });
  for (llvm::Function *f : functions)
    f->deleteBody();
  std::string bitcode;
  llvm::raw_string_ostream os(bitcode);
  llvm::WriteBitcodeToFile(*glueModule, os);
  return bitcode;
}

/// Cuts each basic block of the glue functions in `module` into blocks of
/// at most kGlueBlockInstructions: instruction selection works a block at a
/// time, in time superlinear in its size.
static void cutGlueBlocks(llvm::Module &module) {
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    llvm::SmallVector<llvm::BasicBlock *> blocks;
    for (llvm::BasicBlock &block : f)
      blocks.push_back(&block);
    for (llvm::BasicBlock *block : blocks) {
      // The cuts, made last first: a split moves the instructions after
      // it, so each instruction moves once.
      llvm::SmallVector<llvm::Instruction *> cuts;
      size_t count = 0;
      for (auto it = block->getFirstNonPHIOrDbgOrAlloca(); !it->isTerminator();
           ++it)
        if (++count % kGlueBlockInstructions == 0)
          cuts.push_back(&*std::next(it));
      for (llvm::Instruction *cut : llvm::reverse(cuts))
        if (!cut->isTerminator())
          block->splitBasicBlock(cut);
    }
  }
}

namespace {
/// One part of a split module in a context of its own (a context is never
/// used by two threads at once), optimized and compiled by one thread.
struct ModulePart {
  /// The step's glue (separateGlue), compiled without optimized code
  /// generation.
  bool glue = false;
  std::string bitcode;
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> machine;
  llvm::SmallString<128> object;
  std::string error;
};
} // namespace

/// Runs `work` on each part, `jobs` at a time (0: one per core); the first
/// part's error, if any, is returned.
static llvm::Error forEachPart(std::vector<ModulePart> &parts, unsigned jobs,
                               llvm::function_ref<void(ModulePart &)> work) {
  if (parts.size() == 1 || jobs == 1) {
    for (ModulePart &part : parts)
      work(part);
  } else {
    llvm::ThreadPoolStrategy strategy = llvm::hardware_concurrency(jobs);
    llvm::DefaultThreadPool pool(strategy);
    for (ModulePart &part : parts)
      pool.async([&work, &part] { work(part); });
    pool.wait();
  }
  for (ModulePart &part : parts)
    if (!part.error.empty())
      return error(part.error);
  return llvm::Error::success();
}

/// Appends amp-lower-cpu with the options of a cpu artifact of `options`.
static void buildCpuLowering(PassManager &pm, const ArtifactOptions &options) {
  CpuLoweringOptions lowering;
  lowering.fusedAttention = options.fusedAttention;
  lowering.fusedLmHead = options.fusedLmHead;
  setTargetLoweringOptions(lowering, options.cpu, options.memoryBudget,
                           options.recomputeGemms);
  buildCpuLoweringPipeline(pm, lowering);
}

llvm::Expected<MemoryPlan> amp::planCpuMemory(ModuleOp module,
                                              llvm::StringRef name,
                                              const ArtifactOptions &options) {
  if (!module.lookupSymbol<func::FuncOp>(name))
    return error("no function @" + name + " in the module");
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  prepareEntryPoints(*copy, {name});
  PassManager pm(module.getContext());
  pm.enableVerifier(shouldVerifyEachPass(options.verifyEach));
  buildCpuLowering(pm, options);
  if (failed(pm.run(*copy)))
    return error("lowering for cpu failed");
  return readMemoryPlan(*copy, name);
}

llvm::Error amp::compileArtifact(ModuleOp module, ArtifactManifest manifest,
                                 const ArtifactOptions &options,
                                 llvm::StringRef outputPath) {
  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  bool cuda = options.backend == "cuda";
  if (!cuda && options.backend != "cpu")
    return error("unknown backend '" + options.backend +
                 "' (expected cpu or cuda)");
  if (cuda && llvm::StringRef(AMP_RUNTIME_CUDA_ARCHIVES).empty())
    return error("this amp was built without CUDA (the toolkit was not found "
                 "at configure time): no cuda artifacts");
  manifest.backend = options.backend;
  for (ArtifactFunctionInfo *info : {&manifest.step, &manifest.logits}) {
    auto func = module.lookupSymbol<func::FuncOp>(info->name);
    if (!func)
      return error("no function @" + info->name + " in the module");
    info->arguments.clear();
    info->results.clear();
    if (llvm::Error e = readFunctionSpecs(func, info->arguments, info->results))
      return e;
  }

  auto mark = std::chrono::steady_clock::now();
  auto phase = [&](llvm::StringRef name) {
    auto now = std::chrono::steady_clock::now();
    if (options.onPhase)
      options.onPhase(name, std::chrono::duration<double>(now - mark).count());
    mark = now;
  };

  // Lower a copy.
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  prepareEntryPoints(*copy, {manifest.step.name, manifest.logits.name});
  PassManager pm(module.getContext());
  // The lowering's passes are tested one by one: the lowered module is
  // verified once (verifying after each pass was a third of the lowering
  // of a 1 000-layer MLP).
  pm.enableVerifier(shouldVerifyEachPass(options.verifyEach));
  if (cuda) {
    CudaLoweringOptions lowering;
    lowering.chip = options.chip;
    lowering.features = options.features;
    lowering.format = options.kernelFormat;
    if (failed(parsePassPipeline(getCudaLoweringPipeline(lowering), pm)))
      return error("the amp-lower-cuda pipeline does not parse");
  } else {
    buildCpuLowering(pm, options);
  }
  if (failed(pm.run(*copy)))
    return error("lowering for " + options.backend + " failed");
  if (failed(verify(*copy)))
    return error("the module lowered for " + options.backend +
                 " does not verify (amp-compile --verify-each finds the pass)");
  phase("lowering");
  // Which results the lowered code writes into their arguments.
  for (ArtifactFunctionInfo *info : {&manifest.step, &manifest.logits}) {
    info->resultArguments =
        readResultArguments(*copy, info->name, info->results.size());
    info->memoryPlan = readMemoryPlan(*copy, info->name);
  }

  // LLVM IR, with the manifest and the packed entry points.
  auto llvmContext = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*copy, *llvmContext, "amp_artifact");
  if (!llvmModule)
    return error("translating the lowered module to LLVM IR failed");
  copy = nullptr; // the lowered MLIR module is not needed any more
  for (const ArtifactFunctionInfo *info : {&manifest.step, &manifest.logits})
    if (llvm::Error e = addPackedEntry(*llvmModule, info->name,
                                       kArtifactEntryPrefix + info->name))
      return e;
  llvm::Constant *text = llvm::ConstantDataArray::getString(
      *llvmContext, serializeManifest(manifest));
  new llvm::GlobalVariable(*llvmModule, text->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, text,
                           kArtifactManifestSymbol);
  phase("LLVM IR");

  // Code generation for this machine's triple, position independent.
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return error("no LLVM target for " + triple.str() + ": " + lookupError);
  std::string cpu, features;
  std::tie(cpu, features) = resolveCpu(options);
  // A target machine per LLVM context: the whole module's, each part's.
  auto makeMachine = [&](llvm::CodeGenOptLevel level =
                             llvm::CodeGenOptLevel::Aggressive) {
    return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
        triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
        std::nullopt, level));
  };
  const std::string noMachine =
      "cannot create a target machine for " + triple.str() + " cpu " + cpu;
  std::unique_ptr<llvm::TargetMachine> machine = makeMachine();
  if (!machine)
    return error(noMachine);
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  if (llvm::verifyModule(*llvmModule, &llvm::errs()))
    return error("the artifact's LLVM IR does not verify");
  if (!cuda) {
    markEntryArgumentsNoAlias(*llvmModule,
                              {manifest.step.name, manifest.logits.name});
    routeStepAllocations(*llvmModule);
    preferFullWidthVectors(*llvmModule, *machine);
  }
  for (const ArtifactFunctionInfo *info : {&manifest.step, &manifest.logits})
    if (llvm::Error e = inlineIntoPackedEntry(
            *llvmModule, info->name, kArtifactEntryPrefix + info->name))
      return e;
  // Split into parts compiled in parallel, each in its own context: the
  // outlined loops and tasks spread over the parts (their local linkage
  // becomes hidden global linkage, so the parts link), the step's calls
  // between parts stay direct calls.
  // A CUDA artifact's host code (launches and copies, with the kernels as
  // embedded binaries) is compiled whole.
  std::vector<ModulePart> parts;
  std::string glue = cuda ? std::string()
                          : separateGlue(*llvmModule, options.glueInstructions);
  unsigned partCount =
      cuda ? 1 : countParts(*llvmModule, options.instructionsPerPart);
  if (partCount == 1) {
    ModulePart &part = parts.emplace_back();
    part.module = std::move(llvmModule);
    part.machine = std::move(machine);
  } else {
    llvm::SplitModule(
        *llvmModule, partCount,
        [&](std::unique_ptr<llvm::Module> piece) {
          ModulePart &part = parts.emplace_back();
          llvm::raw_string_ostream os(part.bitcode);
          llvm::WriteBitcodeToFile(*piece, os);
        },
        /*PreserveLocals=*/false, /*RoundRobin=*/true);
    // The whole module's context goes before the parts are compiled.
    llvmModule.reset();
    llvmContext.reset();
    machine.reset();
  }
  if (!glue.empty()) {
    ModulePart &part = parts.emplace_back();
    part.glue = true;
    part.bitcode = std::move(glue);
  }
  phase("split");

  auto fail = [](ModulePart &part, const llvm::Twine &message) {
    part.error = message.str();
  };
  // Each part is optimized and compiled, then freed: at most `jobs` parts
  // are held at once.
  auto removeObjects = [&] {
    for (ModulePart &part : parts)
      if (!part.object.empty())
        llvm::sys::fs::remove(part.object);
  };
  if (llvm::Error e = forEachPart(parts, options.jobs, [&](ModulePart &part) {
        if (!part.module) {
          part.context = std::make_unique<llvm::LLVMContext>();
          auto parsed = llvm::parseBitcodeFile(
              llvm::MemoryBufferRef(part.bitcode, "amp-part"), *part.context);
          if (!parsed)
            return fail(part, "reading a part of the split module: " +
                                  llvm::toString(parsed.takeError()));
          part.module = std::move(*parsed);
          std::string().swap(part.bitcode);
          part.machine =
              makeMachine(part.glue ? llvm::CodeGenOptLevel::None
                                    : llvm::CodeGenOptLevel::Aggressive);
          if (!part.machine)
            return fail(part, noMachine);
        }
        auto optimize = makeOptimizingTransformer(3, 0, part.machine.get());
        if (llvm::Error e = optimize(part.module.get()))
          return fail(part, llvm::toString(std::move(e)));
        if (part.glue)
          cutGlueBlocks(*part.module);
        int fd = -1;
        if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
                "amp-artifact", "o", fd, part.object)) {
          part.object.clear();
          return fail(part, "cannot create a temporary file: " + ec.message());
        }
        llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
        llvm::legacy::PassManager codegen;
        if (part.machine->addPassesToEmitFile(
                codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile))
          return fail(part, "the target cannot emit object files");
        codegen.run(*part.module);
        part.module.reset();
        part.machine.reset();
        part.context.reset();
      })) {
    removeObjects();
    return e;
  }
  phase("LLVM optimization and machine code");

  // Link next to the output, then rename over it.
  llvm::SmallString<128> temporary(outputPath);
  temporary += ".tmp-%%%%%%";
  int tmpFd = -1;
  llvm::SmallString<128> linked;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueFile(temporary, tmpFd, linked)) {
    removeObjects();
    return error("cannot write next to " + outputPath + ": " + ec.message());
  }
  llvm::sys::Process::SafelyCloseFileDescriptor(tmpFd);
  std::vector<std::string> arguments = {"-shared", "-o", linked.str().str()};
  for (const ModulePart &part : parts)
    arguments.push_back(part.object.str().str());
  for (std::string &input : getRuntimeLinkInputs(cuda))
    arguments.push_back(std::move(input));
  arguments.push_back("-Wl,-z,defs");
  arguments.push_back("-ldl");
  arguments.push_back("-lpthread");
  if (options.staticCxx) {
    arguments.push_back("-static-libstdc++");
    arguments.push_back("-static-libgcc");
  }
  llvm::Error linkError = link(arguments);
  removeObjects();
  phase("link");
  if (!linkError) {
    if (std::error_code ec = llvm::sys::fs::rename(linked, outputPath))
      linkError = error("cannot rename the artifact to " + outputPath + ": " +
                        ec.message());
  }
  if (linkError)
    llvm::sys::fs::remove(linked);
  return linkError;
}

PhaseClock::PhaseClock(llvm::StringRef tool, bool enabled)
    : tool(tool.str()), enabled(enabled),
      start(std::chrono::steady_clock::now()), mark(start) {}

void PhaseClock::lap(llvm::StringRef phase) {
  auto now = std::chrono::steady_clock::now();
  report(phase, std::chrono::duration<double>(now - mark).count());
}

void PhaseClock::report(llvm::StringRef phase, double seconds) {
  if (enabled)
    llvm::errs() << tool << ": " << phase << ": "
                 << llvm::format("%.2f", seconds) << " s\n";
  mark = std::chrono::steady_clock::now();
}

double PhaseClock::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}
