//===- TrainingModule.cpp - A model compiled to a training step -----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/TrainingModule.h"
#include "amp/Dialect/Train/IR/Locations.h"
#include "amp/Dialect/Train/IR/TrainAttributes.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Training/Evaluation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace amp;

llvm::Expected<TrainingModule>
amp::buildTrainingModule(OwningOpRef<ModuleOp> model,
                         const AmpPipelineOptions &options) {
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  SmallVector<func::FuncOp> forwards(model->getOps<func::FuncOp>());
  if (forwards.size() != 1)
    return err("the model must hold one function (the forward), it holds " +
               llvm::Twine(forwards.size()));
  // The module is verified once, after the whole pipeline, not after each
  // pass (amp-opt's default, kept for testing the passes): on large models
  // the verifier costs more than the passes themselves.
  PassManager pm(model->getContext());
  pm.enableVerifier(shouldVerifyEachPass());
  buildAmpPipeline(pm, options);
  if (failed(pm.run(*model)))
    return err("amp-pipeline failed");
  if (failed(verify(*model)))
    return err("amp-pipeline produced invalid IR");
  // Evaluation runs the forward as autocast left it, up to the logits.
  if (failed(addLogitsFunction(*model, forwards.front())))
    return err("no logits function for evaluation");
  TrainingModule result;
  result.logitsName = (forwards.front().getName() + "_logits").str();
  auto step = model->lookupSymbol<func::FuncOp>(result.stepName);
  if (!step)
    return err("amp-pipeline made no @" + result.stepName);
  auto abi = readStepAbi(step);
  if (!abi)
    return abi.takeError();
  result.abi = std::move(*abi);
  result.abi.evalLoss = describeEvalLoss(forwards.front());
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    auto initAttr = step.getArgAttrOfType<train::InitAttr>(
        i, train::TrainDialect::kInitAttrName);
    if (!initAttr)
      continue;
    auto type = dyn_cast<ShapedType>(step.getArgumentTypes()[i]);
    if (!type || !type.hasStaticShape())
      return err("argument #" + llvm::Twine(i) +
                 " has an initializer but no static shape");
    auto init = resolveInit(initAttr, type.getShape());
    if (!init)
      return err("argument #" + llvm::Twine(i) + ": " +
                 llvm::toString(init.takeError()));
    result.inits.emplace_back(i, std::move(*init));
  }
  result.module = std::move(model);
  return result;
}

ArtifactManifest
TrainingModule::getManifest(llvm::StringRef modelPath,
                            const AmpPipelineOptions &options) const {
  ArtifactManifest manifest;
  manifest.model = modelPath.str();
  manifest.optLevel = train::stringifyOptLevel(options.optLevel).str();
  manifest.dtype = train::stringifyLowType(options.dtype).str();
  manifest.optimizer = train::stringifyOptimizerKind(options.optimizer).str();
  for (auto &[name, value] : getReadableOptions(options))
    manifest.pipeline +=
        (manifest.pipeline.empty() ? "" : " ") + name + "=" + value;
  manifest.step.name = stepName;
  manifest.logits.name = logitsName;
  manifest.abi = abi;
  manifest.inits = inits;
  return manifest;
}

llvm::Error amp::checkModelArguments(ModuleOp model) {
  // The forward: a model of several functions is buildTrainingModule's error.
  SmallVector<func::FuncOp> functions(model.getOps<func::FuncOp>());
  if (functions.size() != 1)
    return llvm::Error::success();
  for (auto forward : functions) {
    if (forward.isExternal())
      continue;
    // The leading arguments without a role are data: inputs, then labels.
    unsigned data = 0;
    for (BlockArgument arg : forward.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto has = [&](StringRef name) {
        return bool(forward.getArgAttr(i, name));
      };
      std::string what;
      llvm::raw_string_ostream os(what);
      os << fileLineCol(arg.getLoc()) << ": argument " << i + 1 << " of @"
         << forward.getName() << " (" << arg.getType() << ")";
      bool role = has(train::TrainDialect::kParamAttrName) ||
                  has(train::TrainDialect::kStateAttrName);
      if (!role && i == data) {
        ++data;
        continue;
      }
      if (!role)
        return llvm::createStringError(
            what + " is neither data (the leading arguments: the inputs, "
                   "then the labels; at least one of each) nor a parameter "
                   "or state: mark it {train.param, train.init = "
                   "#train.init<...>} if it is learned, or {train.state, "
                   "train.init = ...} for running statistics");
      if (has(train::TrainDialect::kParamAttrName) &&
          !has(train::TrainDialect::kInitAttrName)) {
        std::string kinds;
        for (uint32_t k = 0; auto kind = train::symbolizeInitKind(k); ++k)
          if (*kind != train::InitKind::seed) // a counter's, not a parameter's
            kinds += (kinds.empty() ? "" : ", ") +
                     train::stringifyInitKind(*kind).str();
        return llvm::createStringError(
            what +
            " is a parameter without an initializer (it would "
            "start as zeros and a network of them never learns): "
            "add train.init = #train.init<KIND>, KIND one of " +
            kinds + " (docs/UserGuide.md, \"Initializers\")");
      }
    }
  }
  return llvm::Error::success();
}

llvm::Expected<OwningOpRef<ModuleOp>>
amp::parseModelFile(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                    llvm::StringRef path) {
  std::string message;
  auto file = openInputFile(path, &message);
  if (!file)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> model = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!model)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot parse " + path);
  return model;
}

llvm::Expected<TrainingModule>
amp::buildCheckedTrainingModule(OwningOpRef<ModuleOp> model,
                                llvm::StringRef path,
                                const AmpPipelineOptions &options) {
  if (llvm::Error e = checkModelArguments(*model))
    return std::move(e);
  auto training = buildTrainingModule(std::move(model), options);
  if (!training)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " +
                                       llvm::toString(training.takeError()));
  return training;
}

llvm::Expected<TrainingModule>
amp::loadTrainingModule(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                        llvm::StringRef path,
                        const AmpPipelineOptions &options) {
  auto model = parseModelFile(context, sourceMgr, path);
  if (!model)
    return model.takeError();
  return buildCheckedTrainingModule(std::move(*model), path, options);
}
