//===- Initializers.cpp - Values for #train.init attributes ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Initializers.h"

#include "mlir/IR/Location.h"

#include <cmath>

using namespace amp;
using namespace amp::train;

llvm::Expected<std::vector<float>>
amp::initialValues(InitAttr init, llvm::ArrayRef<int64_t> shape,
                   std::mt19937_64 &rng) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::vector<float> values(count, 0.0f);
  double value = init.getValue().convertToDouble();
  std::pair<int64_t, int64_t> fans = {0, 0};
  if (init.usesFans()) {
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
      return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
    fans = *computed;
  }
  auto uniform = [&](double bound) {
    std::uniform_real_distribution<double> u(-bound, bound);
    for (float &v : values)
      v = float(u(rng));
  };
  auto normal = [&](double stddev) {
    std::normal_distribution<double> n(0.0, stddev);
    for (float &v : values)
      v = float(n(rng));
  };
  double fanIn = double(fans.first), fanOut = double(fans.second);
  switch (init.getKind()) {
  case InitKind::zeros:
    break;
  case InitKind::ones:
    std::fill(values.begin(), values.end(), 1.0f);
    break;
  case InitKind::constant:
    std::fill(values.begin(), values.end(), float(value));
    break;
  case InitKind::normal:
    normal(value);
    break;
  case InitKind::uniform:
    uniform(value);
    break;
  case InitKind::fan_in_uniform:
    uniform(1.0 / std::sqrt(fanIn));
    break;
  case InitKind::kaiming_uniform:
    uniform(std::sqrt(6.0 / fanIn));
    break;
  case InitKind::kaiming_normal:
    normal(std::sqrt(2.0 / fanIn));
    break;
  case InitKind::xavier_uniform:
    uniform(std::sqrt(6.0 / (fanIn + fanOut)));
    break;
  case InitKind::xavier_normal:
    normal(std::sqrt(2.0 / (fanIn + fanOut)));
    break;
  }
  return values;
}
