//===- CpuJit.cpp - JIT-compiled train functions on the CPU ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/CpuJit.h"
#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/StepRoles.h"
#include "amp/Execution/Artifact.h"
#include "amp/Pipelines/Pipelines.h"
#include "amp/Runtime/CpuRuntime.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Analysis/CFG.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/Attributes.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <mutex>

using namespace mlir;
using namespace amp;

#ifndef AMP_MLIR_C_RUNNER_UTILS
#error "AMP_MLIR_C_RUNNER_UTILS must name libmlir_c_runner_utils.so"
#endif

CpuFunction::~CpuFunction() = default;

std::optional<ElementKind> amp::elementKindOf(Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  if (type.isSignlessInteger(1))
    return ElementKind::I1;
  return std::nullopt;
}

llvm::Expected<TensorSpec> amp::tensorSpecOf(Type type, StringRef what,
                                             unsigned index,
                                             StringRef function) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  std::optional<ElementKind> kind =
      tensor ? elementKindOf(tensor.getElementType()) : std::nullopt;
  if (!tensor || !tensor.hasStaticShape() || !kind) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << what << " #" << index << " of @" << function << " has type " << type
       << "; expected a static f32, f16, bf16, i32 or i1 tensor";
    return llvm::createStringError(s);
  }
  return TensorSpec{*kind,
                    {tensor.getShape().begin(), tensor.getShape().end()}};
}

llvm::Error amp::readFunctionSpecs(func::FuncOp func,
                                   llvm::SmallVectorImpl<TensorSpec> &arguments,
                                   llvm::SmallVectorImpl<TensorSpec> &results) {
  FunctionType type = func.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    auto spec = tensorSpecOf(t, "argument", i, func.getName());
    if (!spec)
      return spec.takeError();
    arguments.push_back(*spec);
  }
  for (auto [i, t] : llvm::enumerate(type.getResults())) {
    auto spec = tensorSpecOf(t, "result", i, func.getName());
    if (!spec)
      return spec.takeError();
    results.push_back(*spec);
  }
  return llvm::Error::success();
}

void amp::prepareEntryPoints(ModuleOp module, ArrayRef<StringRef> entries) {
  MLIRContext *context = module.getContext();
  // Only the entries (and what they call) are compiled: amp-pipeline's
  // module also holds the forward and its gradient function, as large as
  // the step, which nothing calls.
  bool erased = true;
  while (erased) {
    erased = false;
    for (auto f : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (!f.isDeclaration() && !llvm::is_contained(entries, f.getName()) &&
          SymbolTable::symbolKnownUseEmpty(f, module)) {
        f.erase();
        erased = true;
      }
  }
  // A step's role record (which result is the next value of which
  // argument): the lowering updates those arguments in place.
  if (isStateInPlace())
    for (StringRef name : entries)
      if (auto f = module.lookupSymbol<func::FuncOp>(name)) {
        SmallVector<int64_t> record = train::getStepResultArguments(f);
        if (llvm::any_of(record, [](int64_t a) { return a >= 0; }))
          f->setAttr(train::kResultArgumentsAttrName,
                     DenseI64ArrayAttr::get(context, record));
      }
  // The train.* argument roles mean nothing to LLVM (its translation would
  // warn about each one).
  for (auto f : module.getOps<func::FuncOp>())
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
      for (NamedAttribute attr :
           llvm::to_vector(function_interface_impl::getArgAttrs(f, i)))
        if (attr.getName().strref().starts_with("train."))
          f.removeArgAttr(i, attr.getName());
  // Entries get a C interface; their inputs are read-only (no in-place
  // writes into caller memory) but for the state amp-update-state-in-place
  // marks writable.
  for (StringRef name : entries) {
    auto f = module.lookupSymbol<func::FuncOp>(name);
    if (!f)
      continue;
    f->setAttr("llvm.emit_c_interface", UnitAttr::get(context));
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i)
      f.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                   BoolAttr::get(context, false));
  }
}

/// libgcc's f16 conversions, for code compiled for CPUs without F16C (LLVM
/// calls them with the half value in an XMM register, libgcc's ABI).
static llvm::orc::SymbolMap
halfConversionSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  std::string error;
  auto lib =
      llvm::sys::DynamicLibrary::getPermanentLibrary("libgcc_s.so.1", &error);
  if (!lib.isValid())
    return symbols;
  for (const char *name : {"__extendhfsf2", "__truncsfhf2", "__truncdfhf2"})
    if (void *address = lib.getAddressOfSymbol(name))
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                 llvm::JITSymbolFlags::Exported};
  return symbols;
}

llvm::Expected<std::unique_ptr<CpuFunction>>
CpuFunction::compile(ModuleOp module, StringRef name,
                     const CpuCompileOptions &options) {
  static std::once_flag initTarget;
  std::call_once(initTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });

  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func)
    return llvm::createStringError("no function @" + name.str() +
                                   " in the module");
  std::unique_ptr<CpuFunction> fn(new CpuFunction());
  fn->entry = name.str();
  if (llvm::Error error = readFunctionSpecs(func, fn->arguments, fn->results))
    return std::move(error);

  // Lower a copy: callers keep their module.
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  prepareEntryPoints(*copy, {name});

  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &d) {
      llvm::raw_string_ostream os(diagnostics);
      os << d.getLocation() << ": " << d << "\n";
      return success();
    });
    PassManager pm(module.getContext());
    CpuLoweringOptions lowering;
    lowering.blas = options.blas;
    lowering.convAsGemm = options.convAsGemm;
    lowering.splitReductions = options.splitReductions;
    lowering.fusedAttention = options.fusedAttention;
    lowering.fusedLmHead = options.fusedLmHead;
    setTargetLoweringOptions(lowering, options.cpu, options.memoryBudget,
                             options.recomputeGemms);
    buildCpuLoweringPipeline(pm, lowering);
    pm.enableVerifier(shouldVerifyEachPass(options.verifyEach));
    if (failed(pm.run(*copy)) || failed(verify(*copy)))
      return llvm::createStringError("lowering @" + name.str() +
                                     " for the CPU failed:\n" + diagnostics);
  }
  fn->resultArguments = readResultArguments(*copy, name, fn->results.size());
  fn->memoryPlan = readMemoryPlan(*copy, name);
  if (llvm::Error error = checkResultArguments(name, fn->arguments, fn->results,
                                               fn->resultArguments))
    return std::move(error);

  auto builder = options.cpu.empty()
                     ? llvm::orc::JITTargetMachineBuilder::detectHost()
                     : llvm::Expected<llvm::orc::JITTargetMachineBuilder>(
                           llvm::orc::JITTargetMachineBuilder(
                               llvm::Triple(llvm::sys::getProcessTriple())));
  if (!builder)
    return builder.takeError();
  if (!options.cpu.empty())
    builder->setCPU(options.cpu);
  auto targetMachine = builder->createTargetMachine();
  if (!targetMachine)
    return targetMachine.takeError();

  ExecutionEngineOptions engineOptions;
  engineOptions.enablePerfNotificationListener = getenv("AMP_PERF") != nullptr;
  // The engine takes the target machine; the transformer runs inside
  // ExecutionEngine::create, while it is alive.
  const llvm::TargetMachine *machine = targetMachine->get();
  auto optimize =
      makeOptimizingTransformer(options.optLevel, 0, targetMachine->get());
  std::string entryName = name.str();
  // ExecutionEngineOptions' llvmModuleBuilder and transformer are
  // function_refs: the callables must outlive ExecutionEngine::create.
  // The LLVM module: the entry and its C interface inlined into a packed
  // entry of one argument (amp-compile's), which the engine's own packed
  // wrappers (one per external function) then wrap cheaply.
  std::string packedName = kArtifactEntryPrefix + entryName;
  std::string buildError;
  auto build =
      [&](Operation *op,
          llvm::LLVMContext &context) -> std::unique_ptr<llvm::Module> {
    std::unique_ptr<llvm::Module> m = translateModuleToLLVMIR(op, context);
    if (!m)
      return nullptr;
    markEntryArgumentsNoAlias(*m, {entryName});
    llvm::Error e = addPackedEntry(*m, entryName, packedName);
    if (!e)
      e = inlineIntoPackedEntry(*m, entryName, packedName);
    if (e) {
      buildError = llvm::toString(std::move(e));
      return nullptr;
    }
    return m;
  };
  engineOptions.llvmModuleBuilder = build;
  auto transform = [&](llvm::Module *m) {
    routeStepAllocations(*m);
    preferFullWidthVectors(*m, *machine);
    return optimize(m);
  };
  engineOptions.transformer = transform;
  static constexpr llvm::StringRef runnerUtils = AMP_MLIR_C_RUNNER_UTILS;
  engineOptions.sharedLibPaths = runnerUtils;
  auto engine =
      ExecutionEngine::create(*copy, engineOptions, std::move(*targetMachine));
  if (!engine) {
    if (!buildError.empty()) {
      llvm::consumeError(engine.takeError());
      return llvm::createStringError(buildError);
    }
    return engine.takeError();
  }
  fn->engine = std::move(*engine);
  retainFreedMemory();
  fn->engine->registerSymbols(halfConversionSymbols);
  fn->engine->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    for (auto [name, address] : getCpuRuntimeSymbols())
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                 llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  auto address = fn->engine->lookup(packedName);
  if (!address)
    return address.takeError();
  fn->packedEntry = reinterpret_cast<void (*)(void **)>(*address);
  return fn;
}

void amp::markEntryArgumentsNoAlias(llvm::Module &module,
                                    llvm::ArrayRef<std::string> entries) {
  for (const std::string &name : entries) {
    llvm::Function *f = module.getFunction(name);
    if (!f || f->isDeclaration())
      continue;
    // Only an entry with loops of its own gains from the attribute. One
    // whose loops were all outlined (amp-outline-parallel-loops'
    // outline-serial: every large step) is glue, and LLVM's bitcode reader
    // builds one attribute list of i + 1 sets for parameter i: quadratic in
    // the tens of thousands of parameters of a deep model's step, in time
    // and memory (a 300-layer MLP: LLVM 40 -> 20 s, 2.2 -> 1.0 GB).
    llvm::SmallVector<std::pair<const llvm::BasicBlock *,
                                const llvm::BasicBlock *>>
        backEdges;
    llvm::FindFunctionBackedges(*f, backEdges);
    if (backEdges.empty())
      continue;
    // One new attribute list: adding to the list argument by argument
    // copies it each time (quadratic in a large step's tens of thousands
    // of parameters).
    llvm::AttributeList attributes = f->getAttributes();
    llvm::SmallVector<llvm::AttributeSet> params;
    for (llvm::Argument &arg : f->args()) {
      llvm::AttributeSet set = attributes.getParamAttrs(arg.getArgNo());
      if (arg.getType()->isPointerTy())
        set = set.addAttribute(f->getContext(), llvm::Attribute::NoAlias);
      params.push_back(set);
    }
    f->setAttributes(llvm::AttributeList::get(
        f->getContext(), attributes.getFnAttrs(), attributes.getRetAttrs(),
        params));
  }
}

llvm::Error amp::inlineIntoPackedEntry(llvm::Module &module,
                                       llvm::StringRef name,
                                       llvm::StringRef packedName) {
  llvm::Function *packed = module.getFunction(packedName);
  if (!packed)
    return llvm::createStringError("no packed entry @" + packedName + " for @" + name);
  // The calls of `callee` in the packed entry, inlined.
  auto inlineCallsOf = [&](llvm::Function *callee) -> llvm::Error {
    if (!callee)
      return llvm::Error::success();
    llvm::SmallVector<llvm::CallBase *> calls;
    for (llvm::User *user : callee->users())
      if (auto *call = llvm::dyn_cast<llvm::CallBase>(user);
          call && call->getFunction() == packed &&
          call->getCalledFunction() == callee)
        calls.push_back(call);
    for (llvm::CallBase *call : calls) {
      llvm::InlineFunctionInfo info;
      if (llvm::InlineResult result = llvm::InlineFunction(*call, info);
          !result.isSuccess())
        return llvm::createStringError("inlining @" + callee->getName() +
                     " into its packed entry: " + result.getFailureReason());
    }
    return llvm::Error::success();
  };
  llvm::Function *ciface = module.getFunction(("_mlir_ciface_" + name).str());
  llvm::Function *entry = module.getFunction(name);
  if (llvm::Error e = inlineCallsOf(ciface))
    return e;
  if (llvm::Error e = inlineCallsOf(entry))
    return e;
  for (llvm::Function *f : {ciface, entry})
    if (f && f->use_empty())
      f->eraseFromParent();
  return llvm::Error::success();
}

llvm::Error amp::addPackedEntry(llvm::Module &module, llvm::StringRef name,
                                llvm::StringRef packedName) {
  llvm::Function *ciface = module.getFunction(("_mlir_ciface_" + name).str());
  if (!ciface)
    return llvm::createStringError("the lowered module has no _mlir_ciface_" + name);
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr},
                                       /*isVarArg=*/false);
  auto *entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                                       packedName, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  llvm::SmallVector<llvm::Value *> args;
  for (auto [i, param] : llvm::enumerate(ciface->args())) {
    llvm::Value *slot = b.CreateConstGEP1_64(ptr, entry->getArg(0), i);
    llvm::Value *argPtr = b.CreateLoad(ptr, slot);
    args.push_back(b.CreateLoad(param.getType(), argPtr));
  }
  b.CreateCall(ciface, args);
  b.CreateRetVoid();
  return llvm::Error::success();
}

void amp::preferFullWidthVectors(llvm::Module &module,
                                 const llvm::TargetMachine &machine) {
  const llvm::MCSubtargetInfo *subtarget = machine.getMCSubtargetInfo();
  if (!subtarget || !subtarget->checkFeatures("+avx512f"))
    return;
  for (llvm::Function &f : module)
    if (!f.isDeclaration())
      f.addFnAttr("prefer-vector-width", "512");
}

void amp::routeStepAllocations(llvm::Module &module) {
  llvm::LLVMContext &ctx = module.getContext();
  // All or none: a block from one heap must go back to the same one.
  for (llvm::StringRef name : {"aligned_alloc", "malloc", "free"})
    if (llvm::Function *f = module.getFunction(name);
        f && !f->isDeclaration())
      return;
  for (llvm::StringRef name :
       {"amp_cpu_aligned_alloc", "amp_cpu_malloc", "amp_cpu_free"})
    if (module.getFunction(name))
      return;
  auto route = [&](llvm::StringRef from, llvm::StringRef to,
                   llvm::AllocFnKind kind, std::optional<unsigned> size) {
    llvm::Function *f = module.getFunction(from);
    if (!f)
      return;
    f->setName(to);
    // What LLVM knows of the C functions by their names, said explicitly:
    // a new allocation aliases nothing (the loops' alias analysis rests on
    // it); a free releases one.
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("alloc-family", "amp_cpu");
    f->addFnAttr(llvm::Attribute::get(ctx, llvm::Attribute::AllocKind,
                                      uint64_t(kind)));
    if (size) {
      f->addRetAttr(llvm::Attribute::NoAlias);
      if ((kind & llvm::AllocFnKind::Aligned) != llvm::AllocFnKind::Unknown)
        f->addParamAttr(0, llvm::Attribute::AllocAlign);
      f->addFnAttr(llvm::Attribute::getWithAllocSizeArgs(ctx, *size,
                                                         std::nullopt));
    } else {
      f->addParamAttr(0, llvm::Attribute::AllocatedPointer);
    }
  };
  route("aligned_alloc", "amp_cpu_aligned_alloc",
        llvm::AllocFnKind::Alloc | llvm::AllocFnKind::Aligned |
            llvm::AllocFnKind::Uninitialized,
        1);
  route("malloc", "amp_cpu_malloc",
        llvm::AllocFnKind::Alloc | llvm::AllocFnKind::Uninitialized, 0);
  route("free", "amp_cpu_free", llvm::AllocFnKind::Free, std::nullopt);
}

llvm::Expected<std::vector<HostTensor>>
CpuFunction::run(llvm::ArrayRef<const HostTensor *> inputs,
                 std::vector<HostTensor> &reuse, bool update) {
  return callOnHost(
      entry, arguments, results, inputs,
      [&](llvm::MutableArrayRef<void *> packed) {
        packedEntry(packed.data());
        return llvm::Error::success();
      },
      &reuse, resultArguments, update);
}

llvm::Expected<std::vector<HostTensor>>
CpuFunction::callReusing(llvm::ArrayRef<const HostTensor *> inputs,
                         std::vector<HostTensor> &reuse) {
  return run(inputs, reuse, /*update=*/false);
}

llvm::Expected<std::vector<HostTensor>>
CpuFunction::callUpdating(llvm::ArrayRef<HostTensor *> inputs,
                          std::vector<HostTensor> &reuse) {
  std::vector<const HostTensor *> read(inputs.begin(), inputs.end());
  return run(read, reuse, /*update=*/true);
}

bool amp::isStateInPlace() {
  const char *value = getenv("AMP_STATE_IN_PLACE");
  return !value || StringRef(value) != "0";
}

bool amp::isMemoryPlanned() {
  const char *value = getenv("AMP_MEMORY_PLAN");
  return !value || StringRef(value) != "0";
}

bool amp::targetMultipliesBf16(StringRef cpu) {
  if (!cpu.empty())
    return false;
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return features.lookup("avx512bf16") || features.lookup("amx-bf16");
}

void amp::setTargetLoweringOptions(CpuLoweringOptions &lowering, StringRef cpu,
                                   double memoryBudget, bool recomputeGemms) {
  lowering.memoryPlan = isMemoryPlanned();
  lowering.nativeBf16 = targetMultipliesBf16(cpu);
  lowering.memoryBudget = memoryBudget;
  lowering.recomputeGemms = recomputeGemms;
}

MemoryPlan amp::readMemoryPlan(ModuleOp module, StringRef name) {
  MemoryPlan plan;
  Operation *f = SymbolTable::lookupSymbolIn(module, name);
  auto record = f ? f->getAttrOfType<DictionaryAttr>(kMemoryPlanAttrName)
                  : nullptr;
  if (!record)
    return plan;
  // A count of a record (0 where absent).
  auto get = [](DictionaryAttr dict, StringRef key) -> uint64_t {
    auto value = dict.getAs<IntegerAttr>(key);
    return value && value.getInt() > 0 ? uint64_t(value.getInt()) : 0;
  };
  plan.arenaBytes = get(record, "arena_bytes");
  plan.livePeakBytes = get(record, "live_peak_bytes");
  plan.buffers = get(record, "buffers");
  plan.unplannedBuffers = get(record, "unplanned_buffers");
  plan.unplannedBytes = get(record, "unplanned_bytes");
  if (auto parts = record.getAs<DictionaryAttr>("at_peak"))
    for (NamedAttribute part : parts)
      if (auto bytes = dyn_cast<IntegerAttr>(part.getValue()))
        plan.atPeak.push_back({part.getName().str(), uint64_t(bytes.getInt())});
  llvm::stable_sort(plan.atPeak,
                    [](auto &a, auto &b) { return a.second > b.second; });
  if (auto recomputed = f->getAttrOfType<DictionaryAttr>(kRecomputeAttrName)) {
    plan.recomputedValues = get(recomputed, "values");
    plan.recomputedBytes = get(recomputed, "bytes");
    plan.recomputedGemms = get(recomputed, "gemms");
  }
  return plan;
}

SmallVector<int64_t> amp::readResultArguments(ModuleOp module, StringRef name,
                                              size_t numResults) {
  Operation *f = SymbolTable::lookupSymbolIn(module, name);
  auto record =
      f ? f->getAttrOfType<DenseI64ArrayAttr>(train::kResultArgumentsAttrName)
        : nullptr;
  if (!record || record.size() != int64_t(numResults) ||
      llvm::none_of(record.asArrayRef(), [](int64_t a) { return a >= 0; }))
    return {};
  return SmallVector<int64_t>(record.asArrayRef());
}
