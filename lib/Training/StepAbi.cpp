//===- StepAbi.cpp - The argument roles of a compiled training step -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/StepAbi.h"
#include "amp/Dialect/Train/IR/StepRoles.h"
#include "amp/Dialect/Train/IR/TrainAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace amp;

llvm::Expected<StepAbi> amp::readStepAbi(func::FuncOp step) {
  StepAbi abi;
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  // Results after the loss update the states, parameters, masters and
  // optimizer state, in that order (the compiler's record reads the same
  // roles: train::getStepResultArguments).
  train::StepArgumentRoles roles = train::getStepArgumentRoles(step);
  for (unsigned i : llvm::concat<const unsigned>(roles.states, roles.params))
    if (auto named = dyn_cast<NameLoc>(step.getArgument(i).getLoc()))
      abi.names.emplace_back(named.getName().str(), i);
  llvm::sort(abi.names,
             [](const auto &a, const auto &b) { return a.second < b.second; });
  abi.params = roles.params;
  abi.masters = roles.masters;
  abi.scaler = roles.scaler;
  abi.lr = roles.lr;
  // Data: the leading arguments without a role (the model's inputs, then
  // the labels).
  unsigned data = 0;
  for (unsigned i : roles.unmarked) {
    if (i != data)
      return err("argument #" + llvm::Twine(i) +
                 " of the model is neither data (the leading arguments: "
                 "inputs, then labels) nor a parameter or state");
    ++data;
  }
  if (data < 2)
    return err("the model needs its inputs and labels as its leading "
               "arguments, before parameters and state; it has " +
               llvm::Twine(data) + " such argument(s)");
  abi.input = 0;
  abi.labels = data - 1;
  for (unsigned i = abi.input; i < abi.labels; ++i) {
    auto named = dyn_cast<NameLoc>(step.getArgument(i).getLoc());
    abi.inputNames.push_back(named ? named.getName().str() : "");
  }
  auto name = [&](StringRef role, ArrayRef<unsigned> indices) {
    for (auto [k, i] : llvm::enumerate(indices))
      abi.persistent.emplace_back((role + "." + llvm::Twine(k)).str(), i);
  };
  name("state", roles.states);
  name("param", abi.params);
  name("master", abi.masters);
  name("opt_state", roles.optStates);
  if (abi.scaler.size() == 2) {
    abi.persistent.emplace_back("scaler.scale", abi.scaler[0]);
    abi.persistent.emplace_back("scaler.tracker", abi.scaler[1]);
  }
  abi.state = roles.getUpdated();
  if (!abi.lr)
    return err("the compiled step has no learning-rate argument");
  abi.numResults = step.getNumResults();
  // With check-numerics, the site table of the last result.
  unsigned checks = 0;
  if (auto sites =
          step->getAttrOfType<ArrayAttr>(train::kCheckNumericsAttrName)) {
    for (Attribute entry : sites) {
      auto fields = cast<DictionaryAttr>(entry);
      NumericsSite site;
      StringRef kind = fields.getAs<StringAttr>("kind").getValue();
      site.kind = kind == "argument"   ? NumericsSite::Kind::Argument
                  : kind == "constant" ? NumericsSite::Kind::Constant
                                       : NumericsSite::Kind::Op;
      auto integer = [&](StringRef name, int64_t otherwise) {
        auto value = fields.getAs<IntegerAttr>(name);
        return value ? value.getInt() : otherwise;
      };
      auto text = [&](StringRef name) {
        auto value = fields.getAs<StringAttr>(name);
        return value ? value.getValue().str() : std::string();
      };
      site.argument = unsigned(integer("argument", 0));
      if (auto magnitude = fields.getAs<FloatAttr>("magnitude"))
        site.magnitude = magnitude.getValueAsDouble();
      if (auto calibrated = fields.getAs<FloatAttr>("calibrated"))
        site.calibrated = calibrated.getValueAsDouble();
      site.op = text("op");
      site.module = text("module");
      site.file = text("file");
      site.backward = text("stage") == "backward";
      site.line = integer("line", 0);
      site.result = integer("result", -1);
      site.check = integer("check", -1);
      if (auto inputs = fields.getAs<DenseI64ArrayAttr>("inputs"))
        site.inputs.assign(inputs.asArrayRef().begin(),
                           inputs.asArrayRef().end());
      checks += site.check >= 0;
      abi.numerics.push_back(std::move(site));
    }
    if (checks == 0)
      return err("the step's numerics table measures nothing");
  }
  // The loss and the new state; with loss scaling found_inf and the
  // non-finite source, and with dynamic scaling the scale, tracker and
  // collapsed before them; with check-numerics its vector last.
  unsigned base = 1 + abi.state.size() + (checks ? 1 : 0);
  bool expected = abi.scaler.size() == 2
                      ? abi.numResults == base + 5
                      : abi.numResults == base || abi.numResults == base + 2;
  if (!expected)
    return err("unexpected step results: " + llvm::Twine(abi.numResults));
  return abi;
}
