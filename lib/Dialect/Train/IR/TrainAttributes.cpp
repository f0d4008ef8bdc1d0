//===- TrainAttributes.cpp - Attributes of the train dialect --------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainAttributes.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace amp::train;

#include "amp/Dialect/Train/IR/TrainOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "amp/Dialect/Train/IR/TrainOpsAttributes.cpp.inc"

void TrainDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "amp/Dialect/Train/IR/TrainOpsAttributes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

/// True for the initializers whose scale comes from fan_in / fan_out.
static bool kindUsesFans(InitKind kind) {
  switch (kind) {
  case InitKind::fan_in_uniform:
  case InitKind::kaiming_uniform:
  case InitKind::kaiming_normal:
  case InitKind::xavier_uniform:
  case InitKind::xavier_normal:
    return true;
  default:
    return false;
  }
}

/// True for the initializers written with a value: constant(V), normal(STD),
/// uniform(BOUND).
static bool kindTakesValue(InitKind kind) {
  return kind == InitKind::constant || kind == InitKind::normal ||
         kind == InitKind::uniform;
}

/// True for the initializers that use fan_out as well as fan_in.
static bool usesFanOut(InitKind kind) {
  return kind == InitKind::xavier_uniform || kind == InitKind::xavier_normal;
}

bool InitAttr::usesFans() const { return kindUsesFans(getKind()); }
bool InitAttr::takesValue() const { return kindTakesValue(getKind()); }

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat apValue, int64_t fanIn,
                               int64_t fanOut) {
  if ((kind == InitKind::normal || kind == InitKind::uniform) &&
      !(apValue.convertToDouble() > 0.0)) {
    SmallString<16> text;
    apValue.toString(text);
    return emitError() << "#train.init<" << stringifyInitKind(kind)
                       << "> needs a positive "
                       << (kind == InitKind::normal ? "std" : "bound")
                       << ", got " << text;
  }
  if ((fanIn != 0 || fanOut != 0) && !kindUsesFans(kind))
    return emitError() << "#train.init<" << stringifyInitKind(kind)
                       << "> does not use fans";
  if (fanOut != 0 && !usesFanOut(kind))
    return emitError() << "#train.init<" << stringifyInitKind(kind)
                       << "> does not use fan_out (only xavier_*)";
  if (fanIn < 0 || fanOut < 0)
    return emitError() << "#train.init fans must be positive, got fan_in = "
                       << fanIn << ", fan_out = " << fanOut;
  return success();
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc)
        << "unknown initializer '" << keyword
        << "'; expected one of zeros, ones, constant, normal, uniform, "
           "fan_in_uniform, kaiming_uniform, kaiming_normal, xavier_uniform, "
           "xavier_normal, seed";
    return {};
  }
  double value = 0.0;
  int64_t fanIn = 0, fanOut = 0;
  if (kindTakesValue(*kind)) {
    // constant(V), normal(STD), uniform(BOUND): the value is required.
    if (parser.parseLParen() || parser.parseFloat(value) ||
        parser.parseRParen())
      return {};
  } else if (kindUsesFans(*kind) && succeeded(parser.parseOptionalLParen())) {
    // (fan_in = N[, fan_out = M]) for the fan-based initializers.
    if (parser.parseKeyword("fan_in") || parser.parseEqual() ||
        parser.parseInteger(fanIn))
      return {};
    if (succeeded(parser.parseOptionalComma())) {
      SMLoc fanOutLoc = parser.getCurrentLocation();
      if (parser.parseKeyword("fan_out") || parser.parseEqual() ||
          parser.parseInteger(fanOut))
        return {};
      if (!usesFanOut(*kind)) {
        parser.emitError(fanOutLoc)
            << "fan_out is not used by " << keyword << " (only xavier_*)";
        return {};
      }
    }
    if (parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return InitAttr::getChecked([&] { return parser.emitError(loc); },
                              parser.getContext(), *kind, APFloat(value), fanIn,
                              fanOut);
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  if (takesValue()) {
    printer << '(';
    printer.printFloat(getValue());
    printer << ')';
  } else if (getFanIn() != 0 || getFanOut() != 0) {
    printer << "(fan_in = " << getFanIn();
    if (getFanOut() != 0)
      printer << ", fan_out = " << getFanOut();
    printer << ')';
  }
  printer << '>';
}

FailureOr<std::pair<int64_t, int64_t>>
amp::train::computeFans(InitAttr init, ArrayRef<int64_t> shape,
                        function_ref<InFlightDiagnostic()> emitError) {
  int64_t fanIn = 0, fanOut = 0;
  if (shape.size() == 2) {
    fanIn = shape[0];
    fanOut = shape[1];
  } else if (shape.size() == 4) {
    int64_t window = shape[2] * shape[3];
    fanIn = shape[1] * window;
    fanOut = shape[0] * window;
  }
  if (init.getFanIn() != 0)
    fanIn = init.getFanIn();
  if (init.getFanOut() != 0)
    fanOut = init.getFanOut();
  if (!init.usesFans())
    return std::make_pair(fanIn, fanOut);
  if (fanIn <= 0 || (usesFanOut(init.getKind()) && fanOut <= 0))
    return emitError() << "#train.init<" << stringifyInitKind(init.getKind())
                       << "> cannot derive "
                       << (fanIn <= 0 ? "fan_in" : "fan_out") << " from a rank-"
                       << shape.size()
                       << " parameter; give it explicitly, e.g. #train.init<"
                       << stringifyInitKind(init.getKind()) << "(fan_in = N"
                       << (usesFanOut(init.getKind()) ? ", fan_out = M" : "")
                       << ")>";
  return std::make_pair(fanIn, fanOut);
}
