//===- PrecisionPolicy.h - Which precision each op runs in ------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The autocast policy: an op's default category (PrecisionPolicyOpInterface),
// changed by the opt level, then a JSON policy file, then a `train.precision`
// attribute on the op (strongest).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PRECISIONPOLICY_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_PRECISIONPOLICY_H

#include "amp/Dialect/Train/IR/TrainAttrNames.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/PassEnums.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>

namespace amp {
namespace train {

/// "lower", "fp32" (or "f32"), "promote", "follow", or nullopt.
std::optional<PrecisionCategory> parsePrecisionCategory(llvm::StringRef text);

/// Where an op's category came from, strongest last.
enum class PrecisionReason {
  Default,
  OptLevel,
  PolicyFile,
  Calibrated,
  Attribute,
  UserCast
};

/// "default", "opt-level", "policy file", "calibrated", "attribute", "user
/// cast".
llvm::StringRef stringifyPrecisionReason(PrecisionReason reason);

/// The category autocast applies to one op.
struct PrecisionDecision {
  PrecisionCategory category;
  PrecisionReason reason;
  /// The category governs every float operand; otherwise only the op's
  /// getPrecisionOperands() (batch_norm's activation at O1).
  bool allOperands;
};

/// The `train.decision` value of a decision.
std::string formatDecision(const PrecisionDecision &decision);

/// The category and reason of a `train.decision` value, or nullopt.
std::optional<std::pair<PrecisionCategory, PrecisionReason>>
parseDecision(llvm::StringRef text);

/// The operands `decision` governs: every float tensor operand, or the op's
/// getPrecisionOperands() when the decision is the op's own default.
llvm::SmallVector<unsigned>
getGovernedOperands(PrecisionPolicyOpInterface op,
                    const PrecisionDecision &decision);

/// The ops of `root` that compute a loss (Train_Loss, or the op defining a
/// function's returned rank-0 loss) or compute from one: what follows the
/// model's output. Apex's O2 casts the model's outputs to
/// fp32, so these run in fp32 and the backward seed, the loss scale, is never
/// rounded to the low type.
llvm::DenseSet<mlir::Operation *> findLossTail(mlir::Operation *root);

/// Prints the markdown table of docs/Passes.md: every train op with its
/// category at O1 and the PyTorch autocast and Apex list entries it
/// corresponds to. Fails, naming the op, when an op has no list entry.
llvm::LogicalResult printPrecisionTable(mlir::MLIRContext *context,
                                        llvm::raw_ostream &os);

/// Decides categories for one opt level plus overrides.
class PrecisionPolicy {
public:
  explicit PrecisionPolicy(OptLevel level) : level(level) {}

  /// The policy for pass options `opt-level` and `policy` (a JSON file path,
  /// or empty). On error returns nullopt and sets `error`.
  static std::optional<PrecisionPolicy> fromOptions(OptLevel optLevel,
                                                    llvm::StringRef policyFile,
                                                    mlir::MLIRContext *context,
                                                    std::string &error);

  /// Reads a JSON policy, an object from category names to arrays of op
  /// names: {"fp32": ["train.matmul"], "lower": ["train.softmax"]}. On error
  /// returns false and sets `error` to a message naming the entry.
  bool loadJson(llvm::StringRef text, mlir::MLIRContext *context,
                std::string &error);

  /// The category of `op`; `afterModelOutput` says that the op is a loss or
  /// computes from one (see findLossTail), which Apex's O2 runs in fp32.
  PrecisionDecision decide(PrecisionPolicyOpInterface op,
                           bool afterModelOutput = false) const;

  OptLevel getOptLevel() const { return level; }

private:
  OptLevel level;
  llvm::StringMap<PrecisionCategory> overrides;
};

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PRECISIONPOLICY_H
