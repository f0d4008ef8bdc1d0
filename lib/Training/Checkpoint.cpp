//===- Checkpoint.cpp - safetensors checkpoints ---------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Checkpoint.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <tuple>

using namespace amp;

const HostTensor *Checkpoint::find(llvm::StringRef name) const {
  for (const auto &[n, t] : tensors)
    if (n == name)
      return &t;
  return nullptr;
}

static const char *dtypeName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "F32";
  case ElementKind::F16:
    return "F16";
  case ElementKind::BF16:
    return "BF16";
  case ElementKind::I32:
    return "I32";
  case ElementKind::I1:
    return "BOOL";
  }
  return "?";
}

static std::optional<ElementKind> dtypeKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ElementKind>>(name)
      .Case("F32", ElementKind::F32)
      .Case("F16", ElementKind::F16)
      .Case("BF16", ElementKind::BF16)
      .Case("I32", ElementKind::I32)
      .Case("BOOL", ElementKind::I1)
      .Default(std::nullopt);
}

llvm::Error amp::writeFileAtomically(llvm::StringRef path,
                                     llvm::StringRef text) {
  std::string temp = (path + ".tmp").str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temp, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write " + temp + ": " +
                                             ec.message());
    // Fault-injection hook for the kill-during-save test: write in 64 KiB
    // pieces with a pause between them, so that a kill lands mid-write.
    static const long pauseMs = [] {
      const char *v = std::getenv("AMP_TEST_SLOW_WRITE_MS");
      return v ? std::strtol(v, nullptr, 10) : 0L;
    }();
    if (pauseMs > 0) {
      for (size_t at = 0; at < text.size(); at += 65536) {
        os << text.substr(at, 65536);
        os.flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(pauseMs));
      }
    } else {
      os << text;
    }
    os.close();
    if (os.has_error()) {
      std::error_code writeError = os.error();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return llvm::createStringError(writeError, "cannot write " + temp + ": " +
                                                     writeError.message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return llvm::createStringError(ec, "cannot rename " + temp + " to " + path +
                                           ": " + ec.message());
  }
  return llvm::Error::success();
}

llvm::Error amp::saveSafetensors(llvm::StringRef path,
                                 const Checkpoint &checkpoint) {
  llvm::json::Object header;
  if (!checkpoint.metadata.empty()) {
    llvm::json::Object meta;
    for (const auto &[k, v] : checkpoint.metadata)
      meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  size_t offset = 0;
  for (const auto &[name, tensor] : checkpoint.tensors) {
    llvm::json::Array shape;
    for (int64_t d : tensor.getShape())
      shape.push_back(d);
    size_t bytes = tensor.getSizeInBytes();
    header[name] = llvm::json::Object{
        {"dtype", dtypeName(tensor.getKind())},
        {"shape", std::move(shape)},
        {"data_offsets",
         llvm::json::Array{int64_t(offset), int64_t(offset + bytes)}}};
    offset += bytes;
  }
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(header));
  while (json.size() % 8)
    json.push_back(' ');
  std::string file(8, '\0');
  uint64_t length = json.size();
  for (int i = 0; i < 8; ++i)
    file[i] = char((length >> (8 * i)) & 0xff);
  file += json;
  for (const auto &[name, tensor] : checkpoint.tensors)
    file.append(static_cast<const char *>(tensor.data()),
                tensor.getSizeInBytes());
  return writeFileAtomically(path, file);
}

llvm::Expected<Checkpoint> amp::loadSafetensors(llvm::StringRef path,
                                                bool skipUnsupported) {
  auto fail = [&](const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return fail("cannot read (" + buffer.getError().message() + ")");
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 8)
    return fail("truncated: no header length");
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i)
    length |= uint64_t(uint8_t(bytes[i])) << (8 * i);
  if (length > bytes.size() - 8)
    return fail("truncated: the header claims " + llvm::Twine(length) +
                " bytes, the file has " + llvm::Twine(bytes.size() - 8));
  auto header = llvm::json::parse(bytes.substr(8, length));
  if (!header)
    return fail("bad header: " + llvm::toString(header.takeError()));
  auto *object = header->getAsObject();
  if (!object)
    return fail("bad header: not a JSON object");
  llvm::StringRef data = bytes.substr(8 + length);
  Checkpoint checkpoint;
  std::vector<std::tuple<int64_t, std::string, HostTensor>> found;
  for (const auto &[key, value] : *object) {
    if (key == "__metadata__") {
      if (auto *meta = value.getAsObject())
        for (const auto &[k, v] : *meta)
          if (auto s = v.getAsString())
            checkpoint.metadata[k.str()] = s->str();
      continue;
    }
    auto *entry = value.getAsObject();
    auto dtype = entry ? entry->getString("dtype") : std::nullopt;
    auto *shape = entry ? entry->getArray("shape") : nullptr;
    auto *offsets = entry ? entry->getArray("data_offsets") : nullptr;
    if (!dtype || !shape || !offsets || offsets->size() != 2)
      return fail("bad header entry for '" + key.str() + "'");
    auto kind = dtypeKind(*dtype);
    // A PyTorch state_dict's I64 scalar (num_batches_tracked) is read as an
    // f32 count where exact: the step keeps a momentum=None batch norm's
    // count in f32.
    if (!kind && skipUnsupported && *dtype == "I64" && shape->empty()) {
      auto begin = (*offsets)[0].getAsInteger();
      auto end = (*offsets)[1].getAsInteger();
      int64_t count = 0;
      if (begin && end && *begin >= 0 && *end - *begin == 8 &&
          uint64_t(*end) <= data.size()) {
        std::memcpy(&count, data.data() + *begin, 8);
        if (count >= 0 && count <= (int64_t(1) << 24)) {
          found.emplace_back(*begin, key.str(),
                             HostTensor::fromFloats(ElementKind::F32, {},
                                                    {float(count)}));
          continue;
        }
      }
    }
    if (!kind && skipUnsupported) {
      checkpoint.skipped.push_back(key.str());
      continue;
    }
    if (!kind)
      return fail("tensor '" + key.str() + "' has unsupported dtype " + *dtype);
    llvm::SmallVector<int64_t> dims;
    for (const llvm::json::Value &d : *shape) {
      auto extent = d.getAsInteger();
      if (!extent || *extent < 0)
        return fail("tensor '" + key.str() + "' has a bad shape");
      dims.push_back(*extent);
    }
    auto begin = (*offsets)[0].getAsInteger();
    auto end = (*offsets)[1].getAsInteger();
    HostTensor tensor(*kind, dims);
    if (!begin || !end || *begin < 0 || *end < *begin ||
        uint64_t(*end) > data.size())
      return fail("truncated or corrupt: tensor '" + key.str() +
                  "' lies outside the file");
    if (uint64_t(*end - *begin) != tensor.getSizeInBytes())
      return fail("tensor '" + key.str() + "' holds " +
                  llvm::Twine(*end - *begin) + " bytes, its shape needs " +
                  llvm::Twine(tensor.getSizeInBytes()));
    std::memcpy(tensor.data(), data.data() + *begin, tensor.getSizeInBytes());
    found.emplace_back(*begin, key.str(), std::move(tensor));
  }
  std::sort(found.begin(), found.end(), [](const auto &a, const auto &b) {
    return std::get<0>(a) < std::get<0>(b);
  });
  for (auto &[offset, name, tensor] : found)
    checkpoint.tensors.emplace_back(std::move(name), std::move(tensor));
  return checkpoint;
}
