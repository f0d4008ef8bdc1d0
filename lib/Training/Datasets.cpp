//===- Datasets.cpp - Image-classification data for amp-run ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Datasets.h"
#include "amp/Training/Checkpoint.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>

#include <random>
#include <zlib.h>

using namespace amp;

llvm::Expected<std::vector<uint8_t>>
amp::readIdxGz(llvm::StringRef path, int expectedDims,
               std::vector<int64_t> *dims) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  gzFile file = gzopen(path.str().c_str(), "rb");
  if (!file)
    return fail("cannot open (is dataset-fashion-mnist installed, or "
                "--data-dir right?)");
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0)
    bytes.insert(bytes.end(), buffer, buffer + n);
  int errnum = 0;
  const char *message = gzerror(file, &errnum);
  std::string zmessage = message ? message : "";
  gzclose(file);
  if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END))
    return fail("not a readable gzip file (" + zmessage + ")");
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0 || bytes[2] != 0x08)
    return fail("not an unsigned-byte IDX file (bad magic number)");
  if (bytes[3] != expectedDims)
    return fail("has " + llvm::Twine(int(bytes[3])) + " dimensions, expected " +
                llvm::Twine(expectedDims));
  size_t header = 4 + 4 * size_t(expectedDims);
  if (bytes.size() < header)
    return fail("truncated header");
  size_t total = 1;
  std::vector<int64_t> shape;
  for (int d = 0; d < expectedDims; ++d) {
    const uint8_t *p = bytes.data() + 4 + 4 * d;
    int64_t extent = (int64_t(p[0]) << 24) | (int64_t(p[1]) << 16) |
                     (int64_t(p[2]) << 8) | int64_t(p[3]);
    shape.push_back(extent);
    total *= size_t(extent);
  }
  if (bytes.size() != header + total)
    return fail("holds " + llvm::Twine(bytes.size() - header) +
                " data bytes, its header promises " + llvm::Twine(total) +
                " (truncated or corrupt)");
  if (dims)
    *dims = shape;
  return std::vector<uint8_t>(bytes.begin() + header, bytes.end());
}

llvm::Expected<Dataset> amp::loadFashionMnist(llvm::StringRef dir, bool train) {
  const char *prefix = train ? "train" : "t10k";
  llvm::SmallString<256> imagesPath(dir), labelsPath(dir);
  llvm::sys::path::append(imagesPath,
                          std::string(prefix) + "-images-idx3-ubyte.gz");
  llvm::sys::path::append(labelsPath,
                          std::string(prefix) + "-labels-idx1-ubyte.gz");
  std::vector<int64_t> imageDims, labelDims;
  auto images = readIdxGz(imagesPath, 3, &imageDims);
  if (!images)
    return images.takeError();
  auto labels = readIdxGz(labelsPath, 1, &labelDims);
  if (!labels)
    return labels.takeError();
  if (imageDims[0] != labelDims[0])
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        imagesPath + " has " + llvm::Twine(imageDims[0]) + " images but " +
            labelsPath + " has " + llvm::Twine(labelDims[0]) + " labels");
  Dataset data;
  data.count = imageDims[0];
  data.features = imageDims[1] * imageDims[2];
  data.classes = 10;
  data.images.resize(images->size());
  for (size_t i = 0; i < images->size(); ++i)
    data.images[i] =
        ((*images)[i] / 255.0f - kFashionMnistMean) / kFashionMnistStd;
  data.labels.resize(labels->size());
  for (size_t i = 0; i < labels->size(); ++i) {
    if ((*labels)[i] >= 10)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          labelsPath + ": label " + llvm::Twine(int((*labels)[i])) +
              " at index " + llvm::Twine(i) + " is not a class in [0, 10)");
    data.labels[i] = (*labels)[i];
  }
  return data;
}

Dataset amp::makeSyntheticDataset(int64_t count, int64_t features,
                                  int32_t classes, uint64_t seed, bool train) {
  std::mt19937_64 teacherRng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> teacher(features * classes);
  for (float &v : teacher)
    v = normal(teacherRng);
  std::mt19937_64 rng(seed * 2 + (train ? 1 : 2));
  std::uniform_real_distribution<float> feature(0, 1);
  Dataset data;
  data.count = count;
  data.features = features;
  data.classes = classes;
  data.images.resize(count * features);
  for (float &v : data.images)
    v = feature(rng);
  data.labels.resize(count);
  for (int64_t n = 0; n < count; ++n) {
    int best = 0;
    double bestScore = -1e300;
    for (int c = 0; c < classes; ++c) {
      double score = 0;
      for (int64_t k = 0; k < features; ++k)
        score +=
            (data.images[n * features + k] - 0.5) * teacher[k * classes + c];
      if (score > bestScore) {
        bestScore = score;
        best = c;
      }
    }
    data.labels[n] = best;
  }
  return data;
}

llvm::Expected<TextDataset> amp::loadTextDataset(llvm::StringRef path,
                                                 int64_t window,
                                                 double heldOut) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  if (path.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--dataset=text needs --data-file=FILE (a text file, or a directory "
        "of them such as /usr/share/games/fortunes)");
  std::vector<std::string> files;
  if (llvm::sys::fs::is_directory(path)) {
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(path, ec, false), end;
         it != end && !ec; it.increment(ec)) {
      llvm::StringRef name = it->path();
      // Not from the entry's type: some file systems report it unknown.
      if (!llvm::sys::fs::is_symlink_file(name) &&
          llvm::sys::fs::is_regular_file(name) && !name.ends_with(".dat"))
        files.push_back(name.str());
    }
    if (ec)
      return fail("cannot list the directory (" + ec.message() + ")");
    std::sort(files.begin(), files.end());
    if (files.empty())
      return fail("the directory has no text files");
  } else {
    files.push_back(path.str());
  }
  std::string text;
  for (const std::string &file : files) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          file + ": cannot read (" + buffer.getError().message() +
              "; is the fortunes package installed, or --data-file right?)");
    text += (*buffer)->getBuffer();
  }
  int64_t n = int64_t(text.size());
  int64_t validationBytes = int64_t(std::llround(double(n) * heldOut));
  int64_t trainBytes = n - validationBytes;
  // Each split needs one window of inputs and the byte after it.
  if (trainBytes < window + 1 || validationBytes < window + 1)
    return fail("holds " + llvm::Twine(n) + " bytes: too short for a " +
                llvm::Twine(window) + "-byte window in both the training "
                "and the validation split");
  auto windows = [&](int64_t begin, int64_t bytes) {
    Dataset d;
    d.features = window;
    d.targets = window;
    d.classes = 256;
    d.count = (bytes - 1) / window;
    d.images.resize(d.count * window);
    d.labels.resize(d.count * window);
    for (int64_t i = 0; i < d.count * window; ++i) {
      d.images[i] = float(uint8_t(text[begin + i]));
      d.labels[i] = int32_t(uint8_t(text[begin + i + 1]));
    }
    return d;
  };
  TextDataset result;
  result.bytes = n;
  result.train = windows(0, trainBytes);
  result.validation = windows(trainBytes, validationBytes);
  std::vector<double> counts(256, 1.0);
  for (int64_t i = 0; i < trainBytes; ++i)
    counts[uint8_t(text[i])] += 1.0;
  double total = double(trainBytes) + 256.0, loss = 0.0;
  for (int32_t b : result.validation.labels)
    loss -= std::log(counts[b] / total);
  result.unigramLoss = loss / double(result.validation.labels.size());
  return result;
}

llvm::Expected<SplitDataset> amp::loadSafetensorsDataset(
    llvm::StringRef path, llvm::ArrayRef<std::string> names,
    llvm::ArrayRef<int64_t> features, int64_t targets, double heldOut) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  auto file = loadSafetensors(path);
  if (!file)
    return file.takeError();
  // Every tensor the model needs, the examples as first dimension, with the
  // model's count of values per example.
  int64_t count = -1;
  auto examplesOf = [&](llvm::StringRef name, const HostTensor &t,
                        int64_t perExample) -> llvm::Error {
    llvm::ArrayRef<int64_t> shape = t.getShape();
    int64_t n = shape.empty() ? 0 : shape[0];
    int64_t values = int64_t(t.getNumElements());
    if (n < 1 || values != n * perExample)
      return fail("tensor '" + name + "' is " + t.typeString() +
                  "; the model takes " + llvm::Twine(perExample) +
                  " values per example (the first dimension is the "
                  "examples)");
    if (count >= 0 && n != count)
      return fail("tensor '" + name + "' holds " + llvm::Twine(n) +
                  " examples, the others " + llvm::Twine(count));
    count = n;
    return llvm::Error::success();
  };
  std::vector<const HostTensor *> inputs;
  for (auto [k, name] : llvm::enumerate(names)) {
    const HostTensor *t = file->find(name);
    if (!t) {
      std::string held;
      for (const auto &[have, tensor] : file->tensors)
        held += (held.empty() ? "" : ", ") + have;
      return fail("no tensor '" + name + "' for the model's input #" +
                  llvm::Twine(k) + " (the file holds: " + held + ")");
    }
    if (t->getKind() == ElementKind::I1)
      return fail("tensor '" + name + "' is boolean; save it as float32");
    if (llvm::Error e = examplesOf(name, *t, features[k]))
      return std::move(e);
    inputs.push_back(t);
  }
  const HostTensor *labels = file->find("labels");
  if (!labels)
    return fail("no tensor 'labels' (int32, the examples' classes)");
  if (labels->getKind() != ElementKind::I32)
    return fail("tensor 'labels' is " + labels->typeString() +
                "; the labels are int32 class indices (labels.int())");
  if (llvm::Error e = examplesOf("labels", *labels, targets))
    return std::move(e);
  if (count < 2)
    return fail("holds " + llvm::Twine(count) +
                " example(s); a training and a validation split need 2");
  int64_t validation = std::clamp<int64_t>(
      int64_t(std::llround(double(count) * heldOut)), 1, count - 1);
  const auto *labelData = static_cast<const int32_t *>(labels->data());
  std::vector<int32_t> allLabels(labelData,
                                 labelData + labels->getNumElements());
  SplitDataset result;
  int64_t trainCount = count - validation;
  for (Dataset *d : {&result.train, &result.validation}) {
    bool train = d == &result.train;
    int64_t first = train ? 0 : trainCount;
    d->count = train ? trainCount : validation;
    d->targets = targets;
    d->labels.assign(allLabels.begin() + first * targets,
                     allLabels.begin() + (first + d->count) * targets);
  }
  // Each input widened once, then split at the first held-out example.
  for (auto [k, t] : llvm::enumerate(inputs)) {
    std::vector<float> values = t->toFloats();
    auto tail = values.begin() + trainCount * features[k];
    std::vector<float> held(tail, values.end());
    values.erase(tail, values.end());
    if (k == 0) {
      result.train.features = result.validation.features = features[k];
      result.train.images = std::move(values);
      result.validation.images = std::move(held);
    } else {
      for (Dataset *d : {&result.train, &result.validation})
        d->moreFeatures.push_back(features[k]);
      result.train.moreInputs.push_back(std::move(values));
      result.validation.moreInputs.push_back(std::move(held));
    }
  }
  return result;
}
