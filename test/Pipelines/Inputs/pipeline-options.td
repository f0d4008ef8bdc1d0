// Passes and a pipeline record for pipeline-options-gen.test; the -D
// variants break one rule each.
include "mlir/Pass/PassBase.td"

class PipelineOptions<list<string> passesArg, list<string> declaredArg,
                      list<string> resolvedArg> {
  list<string> passes = passesArg;
  list<string> declared = declaredArg;
  list<string> resolved = resolvedArg;
}

def FirstPass : Pass<"first", "::mlir::ModuleOp"> {
  let options = [
    Option<"scale", "scale", "double", /*default=*/"2.0", "How much \"more\"">,
    Option<"mode", "mode", "int64_t", /*default=*/"0", "The mode">,
    // The option a developer adds: it must reach the pipeline and the pass.
    Option<"newKnob", "new-knob", "bool", /*default=*/"false", "Added later">,
  ];
}

def SecondPass : Pass<"second", "::mlir::ModuleOp"> {
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"0", "Required">,
#ifdef SHARED_NAME
    Option<"scale2", "scale", "double", /*default=*/"1.0", "Clashes">,
#endif
#ifdef LIST_OPTION
    ListOption<"sizes", "sizes", "int64_t", "Sizes">,
#endif
  ];
}

def Plain {}

def AmpPipeline : PipelineOptions<
#ifdef NOT_A_PASS
    ["FirstPass", "Plain"],
#else
    ["FirstPass", "SecondPass"],
#endif
    ["SecondPass.ranks"],
#ifdef UNKNOWN_RESOLVED
    ["FirstPass.mood"]>;
#else
    ["FirstPass.mode"]>;
#endif
