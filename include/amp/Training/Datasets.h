//===- Datasets.h - Image-classification data for amp-run -------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Fashion-MNIST (gzip'ed IDX files, read with zlib) and a synthetic dataset
// for tests. Images are stored normalised, as the model sees them.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_DATASETS_H
#define AMP_TRAINING_DATASETS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace amp {

/// `count` examples of `features` floats each, with `targets` labels each in
/// [0, classes): one class per image; one next byte per position of a text
/// window.
struct Dataset {
  int64_t count = 0;
  int64_t features = 0;
  int64_t targets = 1;
  int32_t classes = 0;
  std::vector<float> images;   // count * features, row-major
  std::vector<int32_t> labels; // count * targets
  /// A model of several inputs: inputs 1.. (the first is `images`), each
  /// count * moreFeatures[k] values, row-major.
  std::vector<std::vector<float>> moreInputs;
  std::vector<int64_t> moreFeatures;
};

/// A safetensors data file split for training and evaluation.
struct SplitDataset {
  Dataset train, validation;
};

/// Reads `path`, a safetensors file holding one tensor per model input,
/// named `names[k]`, of first dimension the examples and `features[k]`
/// values per example (f32, f16, bf16, or i32 token ids), and `labels`
/// (i32, `targets` per example). The last `heldOut` fraction of the
/// examples (at least one, and at least one left) is the validation split.
/// Errors name the file and the tensor.
llvm::Expected<SplitDataset>
loadSafetensorsDataset(llvm::StringRef path, llvm::ArrayRef<std::string> names,
                       llvm::ArrayRef<int64_t> features, int64_t targets,
                       double heldOut);

/// A byte-level language-modelling data set: windows of `window` bytes
/// (the inputs, as token ids 0-255) with the `window` bytes after each
/// position (the targets). The text's last `heldOut` fraction is the
/// validation split; `unigramLoss` is the cross-entropy (nats per byte) of
/// the validation targets under the training bytes' frequencies (add-one
/// smoothed): the loss of a model that knows only which bytes are common.
struct TextDataset {
  Dataset train, validation;
  int64_t bytes = 0;
  double unigramLoss = 0.0;
};

/// Reads the text of `path`: a file, or a directory whose regular files
/// (not symbolic links or *.dat indexes: the layout of Debian's fortunes
/// in /usr/share/games/fortunes) are concatenated in name order.
llvm::Expected<TextDataset> loadTextDataset(llvm::StringRef path,
                                            int64_t window,
                                            double heldOut = 0.1);

/// Fashion-MNIST's normalisation: pixel / 255, then (x - mean) / std with the
/// training set's mean 0.2860 and std 0.3530 (torchvision's values).
constexpr float kFashionMnistMean = 0.2860f;
constexpr float kFashionMnistStd = 0.3530f;

/// Reads a gzip'ed IDX file: ubyte images (idx3) or labels (idx1). Errors
/// name the file and what is wrong with it.
llvm::Expected<std::vector<uint8_t>>
readIdxGz(llvm::StringRef path, int expectedDims,
          std::vector<int64_t> *dims = nullptr);

/// Loads the training (`train`) or test split from `dir`
/// (train-images-idx3-ubyte.gz, ... as Debian's dataset-fashion-mnist ships
/// them in /usr/share/datasets/fashion-mnist).
llvm::Expected<Dataset> loadFashionMnist(llvm::StringRef dir, bool train);

/// `count` random examples (uniform [0, 1) features) labelled by a random
/// linear teacher: learnable, deterministic in `seed`. The test split uses
/// the same teacher with different inputs.
Dataset makeSyntheticDataset(int64_t count, int64_t features, int32_t classes,
                             uint64_t seed, bool train);

} // namespace amp

#endif // AMP_TRAINING_DATASETS_H
