//===- Initializers.h - Values for #train.init attributes -------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_INITIALIZERS_H
#define AMP_TRAINING_INITIALIZERS_H

#include "amp/Dialect/Train/IR/TrainAttributes.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <random>
#include <vector>

namespace amp {

/// The f32 values of a tensor of `shape` initialised by `init`, drawing from
/// `rng`. Fans: `[in, out]` matrices have fan_in = in, fan_out = out;
/// `[F, C, KH, KW]` filters fan_in = C*KH*KW, fan_out = F*KH*KW; explicit
/// fans in the attribute win. Errors when a fan is needed but unknown.
llvm::Expected<std::vector<float>> initialValues(train::InitAttr init,
                                                 llvm::ArrayRef<int64_t> shape,
                                                 std::mt19937_64 &rng);

} // namespace amp

#endif // AMP_TRAINING_INITIALIZERS_H
