//===- PassEnums.h - The enum-valued options of amp's passes ----*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The choices the options of amp-autocast, amp-optimizer, amp-loss-scaling,
// amp-precision-report and amp-pipeline take. Options of these types parse
// with llvm::cl::values, so a bad value is rejected, with the choices listed,
// when the pipeline is parsed; the code switches on enums, not strings.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PASSENUMS_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_PASSENUMS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <optional>

namespace amp {
namespace train {

/// Apex's optimization levels (shared/AMP-REFERENCE.md).
enum class OptLevel { O0, O1, O2, O3 };

/// The low-precision type of autocast.
enum class LowType { f16, bf16 };

/// The update rule amp-optimizer compiles; `none` (amp-pipeline only) stops
/// the pipeline after autocast.
enum class OptimizerKind { sgd, momentum, adam, adamw, none };

/// How the loss is scaled; `automatic` (amp-pipeline's `auto`) picks
/// PyTorch's and Apex's default for the opt level and type.
enum class LossScaleMode { dynamic, fixed, none, automatic };

/// The format of amp-precision-report.
enum class ReportFormat { text, json, dot };

/// The element type gradients travel in between data-parallel ranks.
enum class WireType { f32, f16, bf16 };

/// The option spellings: "O1", "bf16", "adamw", "static", "json".
llvm::StringRef stringifyOptLevel(OptLevel level);
llvm::StringRef stringifyLowType(LowType type);
llvm::StringRef stringifyOptimizerKind(OptimizerKind kind);
llvm::StringRef stringifyLossScaleMode(LossScaleMode mode);

/// The inverses; nullopt for anything else.
std::optional<OptLevel> parseOptLevel(llvm::StringRef text);
std::optional<LowType> parseLowType(llvm::StringRef text);
std::optional<OptimizerKind> parseOptimizerKind(llvm::StringRef text);

/// llvm::cl's parser of enum choices, with an error that lists them
/// ("'lamb' is not one of: sgd, momentum, adam, adamw") where llvm's says
/// "Cannot find option named 'lamb'!". llvm::cl::parser<E> of each option
/// enum below is this.
template <typename E>
class ChoiceParser : public llvm::cl::generic_parser_base {
protected:
  struct OptionInfo : public GenericOptionInfo {
    OptionInfo(llvm::StringRef name, E v, llvm::StringRef help)
        : GenericOptionInfo(name, help), V(v) {}
    llvm::cl::OptionValue<E> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

public:
  using parser_data_type = E;
  explicit ChoiceParser(llvm::cl::Option &o) : generic_parser_base(o) {}

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// True on error.
  bool parse(llvm::cl::Option &o, llvm::StringRef argName, llvm::StringRef arg,
             E &value) {
    llvm::StringRef text = Owner.hasArgStr() ? arg : argName;
    std::string choices;
    for (const OptionInfo &info : Values) {
      if (info.Name == text) {
        value = info.V.getValue();
        return false;
      }
      choices += (choices.empty() ? "" : ", ") + info.Name.str();
    }
    return o.error("'" + text + "' is not one of: " + choices);
  }

  template <typename DT>
  void addLiteralOption(llvm::StringRef name, const DT &v,
                        llvm::StringRef help) {
    Values.push_back(OptionInfo(name, static_cast<E>(v), help));
    AddLiteralOption(Owner, name);
  }
  void removeLiteralOption(llvm::StringRef name) {
    unsigned n = findOption(name);
    if (n < Values.size())
      Values.erase(Values.begin() + n);
  }
};

} // namespace train
} // namespace amp

#define AMP_CHOICE_PARSER(E)                                                   \
  template <>                                                                  \
  class llvm::cl::parser<E> : public ::amp::train::ChoiceParser<E> {           \
  public:                                                                      \
    using ChoiceParser::ChoiceParser;                                          \
  };
AMP_CHOICE_PARSER(amp::train::OptLevel)
AMP_CHOICE_PARSER(amp::train::LowType)
AMP_CHOICE_PARSER(amp::train::OptimizerKind)
AMP_CHOICE_PARSER(amp::train::LossScaleMode)
AMP_CHOICE_PARSER(amp::train::ReportFormat)
AMP_CHOICE_PARSER(amp::train::WireType)
#undef AMP_CHOICE_PARSER

/// The `llvm::cl::values` of each option type (the spellings above), for
/// Passes.td's options and amp-pipeline's.
#define AMP_OPT_LEVEL_VALUES                                                   \
  ::llvm::cl::values(                                                          \
      clEnumValN(::amp::train::OptLevel::O0, "O0", "fp32 (no autocast)"),      \
      clEnumValN(::amp::train::OptLevel::O1, "O1", "autocast lists"),          \
      clEnumValN(::amp::train::OptLevel::O2, "O2",                             \
                 "low-precision model, fp32 masters and batch norm"),          \
      clEnumValN(::amp::train::OptLevel::O3, "O3", "everything low"))
#define AMP_LOW_TYPE_VALUES                                                    \
  ::llvm::cl::values(                                                          \
      clEnumValN(::amp::train::LowType::f16, "f16", "IEEE half"),              \
      clEnumValN(::amp::train::LowType::bf16, "bf16", "bfloat16"))
#define AMP_WIRE_TYPE_VALUES                                                   \
  ::llvm::cl::values(                                                          \
      clEnumValN(::amp::train::WireType::f32, "f32", "single precision"),      \
      clEnumValN(::amp::train::WireType::f16, "f16", "IEEE half"),             \
      clEnumValN(::amp::train::WireType::bf16, "bf16", "bfloat16"))
#define AMP_OPTIMIZER_VALUES                                                   \
  clEnumValN(::amp::train::OptimizerKind::sgd, "sgd", "plain SGD"),            \
      clEnumValN(::amp::train::OptimizerKind::momentum, "momentum",            \
                 "SGD with momentum"),                                         \
      clEnumValN(::amp::train::OptimizerKind::adam, "adam", "Adam"),           \
      clEnumValN(::amp::train::OptimizerKind::adamw, "adamw",                  \
                 "Adam with decoupled weight decay")
#define AMP_LOSS_SCALE_VALUES                                                  \
  clEnumValN(::amp::train::LossScaleMode::dynamic, "dynamic",                  \
             "GradScaler's adaptive scale"),                                   \
      clEnumValN(::amp::train::LossScaleMode::fixed, "static",                 \
                 "a constant scale, non-finite steps skipped"),                \
      clEnumValN(::amp::train::LossScaleMode::none, "none", "no scaling")

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PASSENUMS_H
