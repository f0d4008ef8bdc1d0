//===- InitAttrs.cpp - #train.init attributes resolved for a tensor -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainAttributes.h"
#include "amp/Training/Initializers.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"

using namespace amp;
using namespace amp::train;

llvm::Expected<InitSpec> amp::resolveInit(InitAttr init,
                                          llvm::ArrayRef<int64_t> shape) {
  InitSpec spec;
  spec.kind = stringifyInitKind(init.getKind()).str();
  spec.value = init.getValue().convertToDouble();
  if (!init.usesFans())
    return spec;
  std::string message;
  mlir::ScopedDiagnosticHandler capture(init.getContext(),
                                        [&](mlir::Diagnostic &d) {
                                          message = d.str();
                                          return mlir::success();
                                        });
  auto computed = computeFans(init, shape, [&] {
    return mlir::emitError(mlir::UnknownLoc::get(init.getContext()));
  });
  if (mlir::failed(computed))
    return llvm::createStringError(message);
  spec.fanIn = computed->first;
  spec.fanOut = computed->second;
  return spec;
}

llvm::Expected<std::vector<float>>
amp::initialValues(InitAttr init, llvm::ArrayRef<int64_t> shape,
                   std::mt19937_64 &rng) {
  auto spec = resolveInit(init, shape);
  if (!spec)
    return spec.takeError();
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  return initialValues(*spec, count, rng);
}
