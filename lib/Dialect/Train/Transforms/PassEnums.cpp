//===- PassEnums.cpp - The enum-valued options of amp's passes ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/PassEnums.h"

#include "llvm/ADT/StringSwitch.h"

using namespace amp::train;
using llvm::StringRef;

StringRef amp::train::stringifyOptLevel(OptLevel level) {
  switch (level) {
  case OptLevel::O0:
    return "O0";
  case OptLevel::O1:
    return "O1";
  case OptLevel::O2:
    return "O2";
  case OptLevel::O3:
    return "O3";
  }
  return "";
}

StringRef amp::train::stringifyLowType(LowType type) {
  return type == LowType::bf16 ? "bf16" : "f16";
}

StringRef amp::train::stringifyOptimizerKind(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::sgd:
    return "sgd";
  case OptimizerKind::momentum:
    return "momentum";
  case OptimizerKind::adam:
    return "adam";
  case OptimizerKind::adamw:
    return "adamw";
  case OptimizerKind::none:
    return "none";
  }
  return "";
}

StringRef amp::train::stringifyLossScaleMode(LossScaleMode mode) {
  switch (mode) {
  case LossScaleMode::dynamic:
    return "dynamic";
  case LossScaleMode::fixed:
    return "static";
  case LossScaleMode::none:
    return "none";
  case LossScaleMode::automatic:
    return "auto";
  }
  return "";
}

std::optional<OptLevel> amp::train::parseOptLevel(StringRef text) {
  return llvm::StringSwitch<std::optional<OptLevel>>(text)
      .Case("O0", OptLevel::O0)
      .Case("O1", OptLevel::O1)
      .Case("O2", OptLevel::O2)
      .Case("O3", OptLevel::O3)
      .Default(std::nullopt);
}

std::optional<LowType> amp::train::parseLowType(StringRef text) {
  return llvm::StringSwitch<std::optional<LowType>>(text)
      .Case("f16", LowType::f16)
      .Case("bf16", LowType::bf16)
      .Default(std::nullopt);
}

std::optional<OptimizerKind> amp::train::parseOptimizerKind(StringRef text) {
  return llvm::StringSwitch<std::optional<OptimizerKind>>(text)
      .Case("sgd", OptimizerKind::sgd)
      .Case("momentum", OptimizerKind::momentum)
      .Case("adam", OptimizerKind::adam)
      .Case("adamw", OptimizerKind::adamw)
      .Case("none", OptimizerKind::none)
      .Default(std::nullopt);
}
