//===- TrainAttributes.td - Attributes of the train dialect -*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINATTRIBUTES_TD
#define AMP_DIALECT_TRAIN_IR_TRAINATTRIBUTES_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Train_InitKind : I32EnumAttr<"InitKind", "parameter initializer", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"constant", 2>,
    I32EnumAttrCase<"normal", 3>,
    I32EnumAttrCase<"uniform", 4>,
    I32EnumAttrCase<"kaiming_uniform", 5>,
    I32EnumAttrCase<"kaiming_normal", 6>,
    I32EnumAttrCase<"xavier_uniform", 7>,
    I32EnumAttrCase<"xavier_normal", 8>,
    I32EnumAttrCase<"fan_in_uniform", 9>,
    I32EnumAttrCase<"seed", 10>,
  ]> {
  let cppNamespace = "::amp::train";
  let genSpecializedAttr = 0;
}

def Train_PrecisionCategory : I32EnumAttr<"PrecisionCategory",
    "how autocast chooses an op's precision", [
    I32EnumAttrCase<"lower", 0>,
    I32EnumAttrCase<"fp32", 1>,
    I32EnumAttrCase<"promote", 2>,
    I32EnumAttrCase<"follow", 3>,
  ]> {
  let cppNamespace = "::amp::train";
  let genSpecializedAttr = 0;
}

/// How a collective combines the ranks' values; printed as a bare keyword
/// (`train.all_reduce sum`).
def Train_ReduceKindAttr : I32EnumAttr<"ReduceKind",
    "how a collective combines the ranks' values", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"mean", 1>,
    I32EnumAttrCase<"max", 2>,
  ]> {
  let cppNamespace = "::amp::train";
}

/// Printed as a bare keyword (`approximate tanh`) in the op's format.
def Train_GeluApproximationAttr : I32EnumAttr<"GeluApproximation",
    "GELU formula", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"tanh", 1>,
  ]> {
  let cppNamespace = "::amp::train";
}

/// Printed as a bare keyword (`train.compare %a, %b ne : ...`).
def Train_ComparePredicateAttr : I32EnumAttr<"ComparePredicate",
    "comparison of two elements", [
    I32EnumAttrCase<"eq", 0>,
    I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>,
    I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>,
    I32EnumAttrCase<"ge", 5>,
  ]> {
  let cppNamespace = "::amp::train";
}

//===----------------------------------------------------------------------===//
// #train.init
//===----------------------------------------------------------------------===//

def Train_InitAttr : AttrDef<Train_Dialect, "Init"> {
  let mnemonic = "init";
  let summary = "How a parameter is initialized";
  let description = [{
    Names the distribution `amp-run` draws a parameter's initial value from.

    ```mlir
    #train.init<zeros>                      // 0
    #train.init<ones>                       // 1
    #train.init<constant(0.1)>              // the given value
    #train.init<normal(0.02)>               // N(0, std^2)
    #train.init<uniform(0.05)>              // U(-bound, bound)
    #train.init<fan_in_uniform>             // U(-b, b), b = 1/sqrt(fan_in): PyTorch's nn.Linear / nn.Conv2d default
    #train.init<kaiming_uniform>            // U(-b, b), b = sqrt(6/fan_in): He, nn.init.kaiming_uniform_
    #train.init<kaiming_normal>             // N(0, 2/fan_in): He, nn.init.kaiming_normal_
    #train.init<xavier_uniform>             // U(-b, b), b = sqrt(6/(fan_in+fan_out))
    #train.init<xavier_normal>              // N(0, 2/(fan_in+fan_out))
    #train.init<fan_in_uniform(fan_in = 784)>   // explicit fan, e.g. for a bias
    #train.init<seed>                       // an integer counter's start, drawn from the run's seed
    ```

    Fans come from the parameter's shape: a rank-2 matmul weight `[in, out]`
    has fan_in = in, fan_out = out; a rank-4 conv filter `[F, C, KH, KW]` has
    fan_in = C*KH*KW and fan_out = F*KH*KW. Other ranks (biases, norm scales)
    must give `fan_in` (and `fan_out` for xavier) explicitly.

    `seed` is for an integer counter only (the step counter that
    `train.dropout` masks are keyed by, `amp.dropout_step` of an imported
    model): it starts at a number in [0, 2^31) drawn from the run's seed
    (`amp-run --seed`; in Python, PyTorch's default generator, so
    `torch.manual_seed` decides it), so that dropout masks follow the seed.
  }];
  let parameters = (ins
    "InitKind":$kind,
    APFloatParameter<"constant, std or bound">:$value,
    "int64_t":$fanIn,
    "int64_t":$fanOut
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True when the initializer derives its scale from fan_in / fan_out.
    bool usesFans() const;
    /// True when the initializer takes a value (constant, normal, uniform).
    bool takesValue() const;
  }];
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINATTRIBUTES_TD
