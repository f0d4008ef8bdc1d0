//===- Initializers.h - Initial values of parameters ------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_INITIALIZERS_H
#define AMP_TRAINING_INITIALIZERS_H

#include "amp/Execution/CompiledStep.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace amp {
namespace train {
class InitAttr;
} // namespace train


/// Resolves `init` for a tensor of `shape`. Fans: `[in, out]` matrices have
/// fan_in = in, fan_out = out; `[F, C, KH, KW]` filters fan_in = C*KH*KW,
/// fan_out = F*KH*KW; explicit fans in the attribute win. Errors when a fan
/// is needed but unknown.
llvm::Expected<InitSpec> resolveInit(train::InitAttr init,
                                     llvm::ArrayRef<int64_t> shape);

/// `count` f32 values drawn as `init` says from `rng`; errors on an unknown
/// kind or a fan of 0 where one is needed.
llvm::Expected<std::vector<float>>
initialValues(const InitSpec &init, int64_t count, std::mt19937_64 &rng);

/// `count` i32 values (a counter's start): `seed` draws each uniformly from
/// [0, 2^31) with `rng`, the other kinds are `initialValues` truncated.
llvm::Expected<std::vector<int32_t>>
initialInts(const InitSpec &init, int64_t count, std::mt19937_64 &rng);

/// `resolveInit`, then `initialValues` for every element of `shape`.
llvm::Expected<std::vector<float>> initialValues(train::InitAttr init,
                                                 llvm::ArrayRef<int64_t> shape,
                                                 std::mt19937_64 &rng);

} // namespace amp

#endif // AMP_TRAINING_INITIALIZERS_H
