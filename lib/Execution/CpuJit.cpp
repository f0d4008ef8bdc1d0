//===- CpuJit.cpp - JIT-compiled train functions on the CPU ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/CpuJit.h"
#include "amp/Pipelines/Pipelines.h"
#include "amp/Runtime/CpuRuntime.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

using namespace mlir;
using namespace amp;

#ifndef AMP_MLIR_C_RUNNER_UTILS
#error "AMP_MLIR_C_RUNNER_UTILS must name libmlir_c_runner_utils.so"
#endif

CpuFunction::~CpuFunction() = default;

/// "tensor<2x3xf16>" for a spec.
static std::string specString(const TensorSpec &spec) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "tensor<";
  for (int64_t d : spec.shape)
    os << d << 'x';
  os << elementName(spec.kind) << '>';
  return s;
}

/// The spec of a function argument or result type, or an error naming it.
static llvm::Expected<TensorSpec> specOf(Type type, StringRef what,
                                         unsigned index, StringRef function) {
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
  FunctionType type = func.getFunctionType();
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    auto spec = specOf(t, "argument", i, name);
    if (!spec)
      return spec.takeError();
    fn->arguments.push_back(*spec);
  }
  for (auto [i, t] : llvm::enumerate(type.getResults())) {
    auto spec = specOf(t, "result", i, name);
    if (!spec)
      return spec.takeError();
    fn->results.push_back(*spec);
  }

  // Lower a copy: callers keep their module. Inputs are read-only (no
  // in-place writes into caller memory) and the entry gets a C interface.
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  auto copyFunc = copy->lookupSymbol<func::FuncOp>(name);
  // The train.* argument roles mean nothing to LLVM (its translation would
  // warn about each one).
  for (auto f : copy->getOps<func::FuncOp>()) {
    for (unsigned i = 0, e = f.getNumArguments(); i < e; ++i) {
      for (NamedAttribute attr :
           llvm::to_vector(mlir::function_interface_impl::getArgAttrs(f, i)))
        if (attr.getName().strref().starts_with("train."))
          f.removeArgAttr(i, attr.getName());
    }
  }
  copyFunc->setAttr("llvm.emit_c_interface",
                    UnitAttr::get(module.getContext()));
  for (unsigned i = 0, e = copyFunc.getNumArguments(); i < e; ++i)
    copyFunc.setArgAttr(i,
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(module.getContext(), false));

  std::string diagnostics;
  {
    ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &d) {
      llvm::raw_string_ostream os(diagnostics);
      os << d.getLocation() << ": " << d << "\n";
      return success();
    });
    PassManager pm(module.getContext());
    buildCpuLoweringPipeline(pm, options.blas);
    if (failed(pm.run(*copy)))
      return llvm::createStringError("lowering @" + name.str() +
                                     " for the CPU failed:\n" + diagnostics);
  }

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
  auto transformer =
      makeOptimizingTransformer(options.optLevel, 0, targetMachine->get());
  engineOptions.transformer = transformer;
  static constexpr llvm::StringRef runnerUtils = AMP_MLIR_C_RUNNER_UTILS;
  engineOptions.sharedLibPaths = runnerUtils;
  auto engine =
      ExecutionEngine::create(*copy, engineOptions, std::move(*targetMachine));
  if (!engine)
    return engine.takeError();
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
  return fn;
}

llvm::Expected<std::vector<HostTensor>>
CpuFunction::call(llvm::ArrayRef<const HostTensor *> inputs) {
  if (inputs.size() != arguments.size())
    return llvm::createStringError(
        "@" + entry + " takes " + std::to_string(arguments.size()) +
        " arguments, got " + std::to_string(inputs.size()));
  for (auto [i, input] : llvm::enumerate(inputs)) {
    const TensorSpec &spec = arguments[i];
    if (input->getKind() != spec.kind ||
        input->getShape() != llvm::ArrayRef<int64_t>(spec.shape))
      return llvm::createStringError(
          "argument #" + std::to_string(i) + " of @" + entry + " is " +
          input->typeString() + ", expected " + specString(spec));
  }
  std::vector<HostTensor> outputs;
  for (const TensorSpec &spec : results)
    outputs.emplace_back(spec.kind, spec.shape);

  // One strided-memref descriptor per argument, then per result (the
  // lowering turned results into trailing out-parameters):
  // {allocated, aligned, offset, sizes[rank], strides[rank]}.
  std::vector<std::vector<int64_t>> descriptors;
  auto describe = [&](const void *data, llvm::ArrayRef<int64_t> shape) {
    std::vector<int64_t> d;
    d.push_back(reinterpret_cast<int64_t>(data));
    d.push_back(reinterpret_cast<int64_t>(data));
    d.push_back(0);
    llvm::append_range(d, shape);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * shape[i + 1];
    llvm::append_range(d, strides);
    descriptors.push_back(std::move(d));
  };
  for (const HostTensor *input : inputs)
    describe(input->data(), input->getShape());
  for (HostTensor &output : outputs)
    describe(output.data(), output.getShape());

  std::vector<void *> pointers;
  for (std::vector<int64_t> &d : descriptors)
    pointers.push_back(d.data());
  std::vector<void *> args;
  for (void *&p : pointers)
    args.push_back(&p);
  if (llvm::Error error = engine->invokePacked("_mlir_ciface_" + entry, args))
    return std::move(error);
  return outputs;
}
