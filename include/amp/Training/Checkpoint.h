//===- Checkpoint.h - safetensors checkpoints -------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Training state as a safetensors file (8-byte little-endian header length,
// a JSON header naming each tensor's dtype, shape and byte range, then the
// raw little-endian data), readable by the `safetensors` Python package.
// Files are written to a temporary beside the target and renamed, so a failed
// write never damages an existing checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_CHECKPOINT_H
#define AMP_TRAINING_CHECKPOINT_H

#include "amp/Execution/HostTensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace amp {

struct Checkpoint {
  /// Tensors in file order.
  std::vector<std::pair<std::string, HostTensor>> tensors;
  /// The `__metadata__` string map.
  std::map<std::string, std::string> metadata;
  /// Tensors of a dtype amp does not hold (I64, F64, ...), left out when
  /// loadSafetensors was asked to skip them.
  std::vector<std::string> skipped;

  const HostTensor *find(llvm::StringRef name) const;
};

/// Writes `text` to `path` through a temporary file and a rename.
llvm::Error writeFileAtomically(llvm::StringRef path, llvm::StringRef text);

/// Serialises `checkpoint` as safetensors to `path`, atomically.
llvm::Error saveSafetensors(llvm::StringRef path, const Checkpoint &checkpoint);

/// Reads a safetensors file; errors name the file and what is wrong
/// (truncation, a bad header, an unsupported dtype, overlapping data).
/// `skipUnsupported`: a tensor of another dtype than F32, F16, BF16, I32
/// and BOOL is left out and named in `skipped` instead of failing the load,
/// except an I64 scalar of at most 2^24 (a PyTorch state_dict's
/// num_batches_tracked), read as an F32 count.
llvm::Expected<Checkpoint> loadSafetensors(llvm::StringRef path,
                                           bool skipUnsupported = false);

} // namespace amp

#endif // AMP_TRAINING_CHECKPOINT_H
