//===- PrecisionReport.cpp - The amp-precision-report pass ----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Explains an autocast graph: per function, each train op's precision and
// why, the casts, op counts per precision, and activation bytes against the
// same graph in f32. Text, JSON or Graphviz DOT; the IR is not changed.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/Locations.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "amp/Dialect/Train/Transforms/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace amp {
namespace train {
#define GEN_PASS_DEF_PRECISIONREPORTPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

/// "file:line:col" of a location, or "?".
std::string locString(Location loc) {
  return amp::fileLineCol(amp::forwardLocation(loc), "?");
}

/// The printed form of a type ("f16", "tensor<4xf32>").
std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// The element type of a tensor-typed value, or null.
Type elementTypeOf(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? type.getElementType() : Type();
}

/// One op of the report.
struct OpEntry {
  Operation *op;
  std::string precision, category, reason;
};

/// One cast of the report.
struct CastEntry {
  Operation *op;
  std::string from, to;
  int64_t elements;
};

/// Everything reported about one function.
struct FunctionReport {
  std::string name;
  std::vector<OpEntry> ops;
  std::vector<CastEntry> casts;
  std::map<std::string, int64_t> opsByPrecision;
  /// Bytes of the float tensors train ops other than casts produce (the
  /// activations), as typed and if every float were f32; and the bytes of
  /// the copies casts make.
  int64_t activationBytes = 0, f32ActivationBytes = 0, castBytes = 0;
};

/// The first float element type among `values`, or null.
Type firstFloatType(ValueRange values) {
  for (Value v : values)
    if (Type t = elementTypeOf(v); t && isa<FloatType>(t))
      return t;
  return Type();
}

/// Reads what amp-autocast recorded (PrecisionPolicy.h's kDecisionAttrName
/// on each op it decided); recomputes nothing, so what the report says is
/// what autocast did, whatever opt level, policy file or attributes it had.
FunctionReport analyze(func::FuncOp func, bool autocastRan, bool o0) {
  FunctionReport report;
  report.name = func.getName().str();
  // Autodiff gives each backward op its forward op's location.
  DenseSet<Location> decidedLocs;
  func.walk([&](Operation *op) {
    if (op->hasAttr(kDecisionAttrName))
      decidedLocs.insert(amp::forwardLocation(op->getLoc()));
  });
  func.walk([&](Operation *op) {
    for (Value result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || !isa<FloatType>(type.getElementType()) ||
          !isa<TrainDialect>(op->getDialect()))
        continue;
      int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
      if (isa<CastOp>(op)) {
        report.castBytes += bytes;
        continue;
      }
      report.activationBytes += bytes;
      report.f32ActivationBytes += type.getNumElements() * 4;
    }
    if (auto cast = dyn_cast<CastOp>(op); cast && cast.getUser()) {
      // The model's own cast: an op of the model, with autocast's decision.
      OpEntry entry{op, typeString(elementTypeOf(cast.getResult())),
                    isa<Float32Type>(cast.getType().getElementType())
                        ? "fp32"
                        : "lower",
                    "user cast"};
      ++report.opsByPrecision[entry.precision];
      report.ops.push_back(std::move(entry));
      return;
    }
    if (auto cast = dyn_cast<CastOp>(op)) {
      report.casts.push_back({cast, typeString(elementTypeOf(cast.getInput())),
                              typeString(elementTypeOf(cast.getResult())),
                              cast.getType().getNumElements()});
      return;
    }
    // The ops autocast decides, and the backward's own gradient ops
    // (conv2d_grad_*, batch_norm_grad, relu_grad, ...), which compute in
    // their forward op's type.
    if (!isa<PrecisionPolicyOpInterface>(op) &&
        !(isa<TrainDialect>(op->getDialect()) &&
          amp::isBackwardLocation(op->getLoc()) &&
          (firstFloatType(op->getResults()) ||
           firstFloatType(op->getOperands()))))
      return;
    // The precision is the type the op computes in, as the IR states it: its
    // first float result's (a contraction's f16 result, f32 accumulator
    // aside), or its first float operand's when no result is a float.
    Type precision = firstFloatType(op->getResults());
    if (!precision)
      precision = firstFloatType(op->getOperands());
    OpEntry entry{op, precision ? typeString(precision) : "-", "-", ""};
    auto recorded = op->getAttrOfType<StringAttr>(kDecisionAttrName);
    std::optional<std::pair<PrecisionCategory, PrecisionReason>> decision =
        recorded ? parseDecision(recorded.getValue()) : std::nullopt;
    if (decision) {
      auto [category, reason] = *decision;
      entry.category = stringifyPrecisionCategory(category).str();
      switch (category) {
      case PrecisionCategory::lower:
      case PrecisionCategory::fp32:
        entry.reason = reason == PrecisionReason::Default
                           ? entry.category + " list"
                           : stringifyPrecisionReason(reason).str();
        break;
      case PrecisionCategory::promote:
        entry.reason = "widest non-scalar operand";
        break;
      case PrecisionCategory::follow:
        entry.reason = "follows its input";
        break;
      }
      if (reason != PrecisionReason::Default &&
          (category == PrecisionCategory::promote ||
           category == PrecisionCategory::follow))
        entry.reason += " (" + stringifyPrecisionReason(reason).str() + ")";
      // The range that decided it: "calibrated (measured 1.2e+05)".
      auto magnitude =
          op->getAttrOfType<FloatAttr>(kCalibratedMagnitudeAttrName);
      if (magnitude && reason == PrecisionReason::Calibrated)
        entry.reason +=
            llvm::formatv(" (measured {0})",
                          llvm::format("%.3g", magnitude.getValueAsDouble()))
                .str();
    } else if (o0) {
      entry.category = "fp32";
      entry.reason = "opt-level";
    } else if (!firstFloatType(op->getOperands())) {
      entry.reason = "no float operands";
    } else {
      entry.reason = !autocastRan ? "autocast not run"
                     : decidedLocs.contains(amp::forwardLocation(op->getLoc()))
                         ? "gradient (forward's type)"
                         : "made after autocast";
    }
    ++report.opsByPrecision[entry.precision];
    report.ops.push_back(std::move(entry));
  });
  return report;
}

double savedFraction(const FunctionReport &r) {
  return r.f32ActivationBytes
             ? 1.0 - double(r.activationBytes) / r.f32ActivationBytes
             : 0.0;
}

void printText(llvm::raw_ostream &os, ArrayRef<FunctionReport> reports,
               StringRef optLevel) {
  for (const FunctionReport &r : reports) {
    os << "amp precision report: @" << r.name << " (opt-level " << optLevel
       << ")\n";
    os << llvm::formatv("  {0,-20} {1,-9} {2,-8} {3,-28} {4}\n", "op",
                        "precision", "category", "reason", "location");
    for (const OpEntry &e : r.ops)
      os << llvm::formatv("  {0,-20} {1,-9} {2,-8} {3,-28} {4}\n",
                          e.op->getName().getStringRef(), e.precision,
                          e.category, e.reason, locString(e.op->getLoc()));
    os << "  casts: " << r.casts.size() << "\n";
    for (const CastEntry &c : r.casts)
      os << llvm::formatv("    {0} -> {1}  {2} elements  {3}\n", c.from, c.to,
                          c.elements, locString(c.op->getLoc()));
    os << "  ops by precision:";
    for (auto &[precision, count] : r.opsByPrecision)
      os << " " << precision << " " << count;
    os << "\n";
    os << llvm::formatv("  activation bytes: {0} in f32, {1} mixed ({2:P1} "
                        "saved); cast copies: {3} bytes\n",
                        r.f32ActivationBytes, r.activationBytes,
                        savedFraction(r), r.castBytes);
  }
}

void printJson(llvm::raw_ostream &os, ArrayRef<FunctionReport> reports,
               StringRef optLevel) {
  llvm::json::OStream j(os, 2);
  j.object([&] {
    j.attribute("opt_level", optLevel);
    j.attributeArray("functions", [&] {
      for (const FunctionReport &r : reports) {
        j.object([&] {
          j.attribute("name", r.name);
          j.attributeArray("ops", [&] {
            for (const OpEntry &e : r.ops)
              j.object([&] {
                j.attribute("op", e.op->getName().getStringRef());
                j.attribute("precision", e.precision);
                j.attribute("category", e.category);
                j.attribute("reason", e.reason);
                j.attribute("loc", locString(e.op->getLoc()));
              });
          });
          j.attributeArray("casts", [&] {
            for (const CastEntry &c : r.casts)
              j.object([&] {
                j.attribute("from", c.from);
                j.attribute("to", c.to);
                j.attribute("elements", c.elements);
                j.attribute("loc", locString(c.op->getLoc()));
              });
          });
          j.attributeObject("ops_by_precision", [&] {
            for (auto &[precision, count] : r.opsByPrecision)
              j.attribute(precision, count);
          });
          j.attributeObject("activation_bytes", [&] {
            j.attribute("f32", r.f32ActivationBytes);
            j.attribute("mixed", r.activationBytes);
            j.attribute("saved_fraction", savedFraction(r));
            j.attribute("cast_copies", r.castBytes);
          });
        });
      }
    });
  });
  os << "\n";
}

/// The fill colour of a node computing in `precision`.
StringRef colorOf(StringRef precision) {
  return llvm::StringSwitch<StringRef>(precision)
      .Case("f16", "palegreen")
      .Case("bf16", "lightskyblue")
      .Case("f32", "orange")
      .Default("white");
}

void printDot(llvm::raw_ostream &os, ArrayRef<FunctionReport> reports) {
  os << "digraph amp {\n  node [shape=box, style=filled];\n";
  for (const FunctionReport &r : reports) {
    os << "  subgraph \"cluster_" << r.name << "\" {\n    label=\"@" << r.name
       << "\";\n";
    DenseMap<Operation *, unsigned> ids;
    auto nodeOf = [&](Operation *op) {
      return ids.try_emplace(op, ids.size()).first->second;
    };
    for (const OpEntry &e : r.ops)
      os << llvm::formatv("    \"{0}_{1}\" [label=\"{2}\\n{3}\", "
                          "fillcolor={4}];\n",
                          r.name, nodeOf(e.op), e.op->getName().stripDialect(),
                          e.precision, colorOf(e.precision));
    for (const CastEntry &c : r.casts)
      os << llvm::formatv("    \"{0}_{1}\" [label=\"cast\\n{2}->{3}\", "
                          "fillcolor=lightgrey, shape=ellipse];\n",
                          r.name, nodeOf(c.op), c.from, c.to);
    for (auto [op, id] : ids)
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && ids.count(def))
          os << llvm::formatv("    \"{0}_{1}\" -> \"{0}_{2}\";\n", r.name,
                              ids[def], id);
    os << "  }\n";
  }
  os << "}\n";
}

struct PrecisionReportPass
    : public amp::train::impl::PrecisionReportPassBase<PrecisionReportPass> {
  using PrecisionReportPassBase::PrecisionReportPassBase;

  void runOnOperation() override {
    auto config =
        getOperation()->getAttrOfType<DictionaryAttr>(kAutocastAttrName);
    auto level = config ? config.getAs<StringAttr>("opt_level") : StringAttr();
    std::string optLevel =
        level ? level.getValue().str() : "none: amp-autocast has not run";
    if (auto dtype = config ? config.getAs<StringAttr>("dtype") : StringAttr())
      if (level && level.getValue() != "O0")
        optLevel += " " + dtype.getValue().str();
    if (auto policy =
            config ? config.getAs<StringAttr>("policy") : StringAttr())
      optLevel += ", policy " + policy.getValue().str();
    bool o0 = level && level.getValue() == "O0";

    std::vector<FunctionReport> reports;
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        reports.push_back(analyze(func, bool(config), o0));
    auto print = [&](llvm::raw_ostream &os) {
      if (format == ReportFormat::json)
        printJson(os, reports, optLevel);
      else if (format == ReportFormat::dot)
        printDot(os, reports);
      else
        printText(os, reports, optLevel);
      return llvm::Error::success();
    };
    // Standard error by default: the IR amp-opt prints on standard output
    // stays parseable by the next tool in a pipe.
    if (output.empty()) {
      (void)print(llvm::errs());
      markAllAnalysesPreserved();
      return;
    }
    llvm::Error error = llvm::writeToOutput(output, print);
    if (error) {
      getOperation().emitError("amp-precision-report: cannot write '")
          << output << "': " << llvm::toString(std::move(error));
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
