//===- TestOps.td - Ops that exist only for tests ----------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TEST_DIALECT_TESTOPS_TD
#define AMP_TEST_DIALECT_TESTOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "amp/Dialect/Train/IR/TrainInterfaces.td"

def AmpTest_Dialect : Dialect {
  let name = "amp_test";
  let summary = "ops for amp's tests only";
  let cppNamespace = "::amp::test";
}

def AmpTest_IdentityGradsOp : Op<AmpTest_Dialect, "identity_grads", [Pure,
    AllTypesMatch<["grads", "results"]>,
    DeclareOpInterfaceMethods<Train_GradientTransformOpInterface>]> {
  let summary = "a stand-in gradient transform: returns its gradients";
  let description = [{
    A gradient transform no pass knows by name (as an all-reduce will be):
    linear, so it works on scaled or unscaled gradients alike. Tests put it
    between the transforms amp's passes make and check that they still find
    their places.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$grads);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "`(` $grads `)` attr-dict `:` type($grads)";
}

#endif // AMP_TEST_DIALECT_TESTOPS_TD
