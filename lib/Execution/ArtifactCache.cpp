//===- ArtifactCache.cpp - Compiled steps kept between processes ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/ArtifactCache.h"
#include "amp/Execution/ArtifactCompiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>

#include <unistd.h>

using namespace mlir;
using namespace amp;

#ifndef AMP_RUNTIME_CPU_ARCHIVES
#error "AMP_RUNTIME_CPU_ARCHIVES must list the CPU runtime's link inputs"
#endif
#ifndef AMP_COMPILER_ARCHIVES
#error "AMP_COMPILER_ARCHIVES must list the compiler's libraries"
#endif
#ifndef AMP_RUNTIME_CUDA_ARCHIVES
#error "AMP_RUNTIME_CUDA_ARCHIVES must list the CUDA runtime's link inputs"
#endif

namespace {

constexpr llvm::StringLiteral kFormat = "amp-artifact-cache 1";

std::string hexDigest(llvm::SHA256 &hash) {
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

/// Adds the content of the file at `path` (or that it is missing).
void hashFile(llvm::SHA256 &hash, llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  hash.update(path);
  hash.update(buffer ? (*buffer)->getBuffer() : llvm::StringRef("<missing>"));
}

/// Adds `path` and, where it names a file, its size and modification time
/// (make's test: libdnnl.so alone is too large to read at every compile).
/// Returns whether the file exists.
bool hashIdentity(llvm::SHA256 &hash, llvm::StringRef path) {
  hash.update(path);
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status))
    return false;
  hash.update((llvm::Twine(status.getSize()) + ":" +
               llvm::Twine(
                   status.getLastModificationTime().time_since_epoch().count()))
                  .str());
  return true;
}

/// This build of amp: the compiler's libraries, the runtime archives
/// artifacts link, LLVM's version. Computed once.
const std::string &buildId() {
  static const std::string id = [] {
    llvm::SHA256 hash;
    hash.update(kFormat);
    hash.update(LLVM_VERSION_STRING);
    auto inputs = [](llvm::StringRef list) {
      llvm::SmallVector<llvm::StringRef> split;
      list.split(split, '|', -1, /*KeepEmpty=*/false);
      return split;
    };
    // The compiler's libraries (every tool links the same ones: amp-run
    // and amp-compile share entries); an installed tool without them: its
    // own executable's content.
    // An installed tool is its own executable: a build tree rebuilt since
    // must not share its entries.
    llvm::SmallVector<llvm::StringRef> libraries;
    if (!isInstalledTool())
      libraries = inputs(AMP_COMPILER_ARCHIVES);
    bool found = !libraries.empty();
    for (llvm::StringRef library : libraries)
      found &= hashIdentity(hash, library);
    if (!found)
      hashFile(hash, "/proc/self/exe");
    // The runtime's link inputs (files, and flags such as -fopenmp).
    for (bool cuda : {false, true})
      for (const std::string &input : getRuntimeLinkInputs(cuda))
        hashIdentity(hash, input);
    return hexDigest(hash);
  }();
  return id;
}

bool isKey(llvm::StringRef name) {
  return name.size() == 64 && llvm::all_of(name, [](char c) {
           return llvm::isDigit(c) || (c >= 'a' && c <= 'f');
         });
}

/// Whether `name` is one of the cache's own files: <key>.so, <key>.json,
/// or a temporary of either.
bool isCacheFile(llvm::StringRef name) {
  if (name.size() < 64 || !isKey(name.take_front(64)))
    return false;
  llvm::StringRef rest = name.drop_front(64);
  for (llvm::StringRef suffix : {".so", ".json"})
    if (rest == suffix || rest.starts_with((suffix + ".tmp-").str()))
      return true;
  return false;
}

std::string pathJoin(llvm::StringRef directory, llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// Writes `bytes` to `path` atomically: a temporary beside it, renamed over
/// it.
llvm::Error writeAtomically(llvm::StringRef path, llvm::StringRef bytes) {
  static std::mt19937_64 random(std::random_device{}());
  std::string temporary = (path + ".tmp-" + llvm::Twine(::getpid()) + "-" +
                           llvm::Twine(random() % 1000000000))
                              .str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(temporary, ec);
    if (ec)
      return llvm::createStringError(ec, "cannot write " + temporary + ": " +
                                             ec.message());
    out << bytes;
    out.close();
    if (out.has_error()) {
      std::error_code error = out.error();
      out.clear_error();
      llvm::sys::fs::remove(temporary);
      return llvm::createStringError(error, "cannot write " + temporary +
                                                ": " + error.message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return llvm::createStringError(ec, "cannot rename " + temporary + ": " +
                                           ec.message());
  }
  return llvm::Error::success();
}

std::string defaultDirectory() {
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return pathJoin(pathJoin(xdg, "amp"), "steps");
  llvm::SmallString<256> home;
  if (!llvm::sys::path::home_directory(home))
    home = "/tmp";
  return pathJoin(pathJoin(pathJoin(home, ".cache"), "amp"), "steps");
}

/// The record of an entry: <key>.json.
struct Record {
  uint64_t bytes = 0;
  std::string sha256, model, options;
};

std::optional<Record> readRecord(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  auto value = llvm::json::parse((*buffer)->getBuffer());
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *object = value->getAsObject();
  if (!object || object->getString("format") != kFormat)
    return std::nullopt;
  Record record;
  auto bytes = object->getInteger("bytes");
  auto sha = object->getString("sha256");
  if (!bytes || *bytes < 0 || !sha)
    return std::nullopt;
  record.bytes = uint64_t(*bytes);
  record.sha256 = sha->str();
  record.model = object->getString("model").value_or("").str();
  record.options = object->getString("options").value_or("").str();
  return record;
}

} // namespace

llvm::Expected<ArtifactCacheSettings> ArtifactCacheSettings::fromEnvironment() {
  ArtifactCacheSettings settings;
  if (const char *flag = std::getenv("AMP_CACHE")) {
    std::string value = llvm::StringRef(flag).trim().lower();
    settings.enabled =
        !(value == "0" || value == "off" || value == "false" || value == "no");
  }
  const char *dir = std::getenv("AMP_CACHE_DIR");
  settings.directory = dir && *dir ? std::string(dir) : defaultDirectory();
  if (const char *size = std::getenv("AMP_CACHE_SIZE_MB"); size && *size) {
    double megabytes = 0;
    if (llvm::StringRef(size).trim().getAsDouble(megabytes) ||
        !(megabytes >= 0) || megabytes > 1e12)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "AMP_CACHE_SIZE_MB must be a number of MiB (0 or more), got '" +
              llvm::Twine(size) + "'");
    settings.maxBytes = uint64_t(megabytes * 1048576.0);
  }
  return settings;
}

ArtifactCache ArtifactCache::open(const ArtifactCacheSettings &settings,
                                  llvm::raw_ostream &warnings) {
  ArtifactCache cache(settings.directory, settings.maxBytes, settings.enabled,
                      warnings);
  if (!settings.enabled)
    return cache;
  auto disable = [&](const llvm::Twine &why) {
    warnings << "warning: the compile cache at " << settings.directory << " "
             << why << ": compiling without it (AMP_CACHE_DIR chooses another "
             << "directory, AMP_CACHE=0 turns it off)\n";
    cache.enabled = false;
    return cache;
  };
  if (std::error_code ec =
          llvm::sys::fs::create_directories(settings.directory))
    return disable("cannot be created (" + ec.message() + ")");
  if (!llvm::sys::fs::is_directory(settings.directory))
    return disable("is not a directory");
  if (llvm::sys::fs::access(settings.directory,
                            llvm::sys::fs::AccessMode::Write))
    return disable("is not writable");
  return cache;
}

std::string ArtifactCache::computeKey(ModuleOp model,
                                      llvm::ArrayRef<std::string> parts,
                                      bool withLocations) {
  llvm::SHA256 hash;
  hash.update(buildId());
  for (const std::string &part : parts) {
    hash.update(part);
    hash.update(llvm::StringRef("\0", 1));
  }
  // The module without its locations: editing a comment above the model
  // (every line below moves) does not change the code. A step that names
  // them in its reports (check-numerics' site table) keeps them.
  std::string text;
  llvm::raw_string_ostream os(text);
  model->print(os, OpPrintingFlags().enableDebugInfo(withLocations));
  hash.update(text);
  // The names argument locations give do not enter the code, but the
  // manifest holds them: the inputs' (input_names, by which
  // --dataset=safetensors reads a data file) and the parameters' and
  // state's (a state_dict's keys, by which --init-from loads one). A hit
  // must carry this module's.
  if (!withLocations)
    model.walk([&](mlir::FunctionOpInterface func) {
      if (func.isExternal())
        return;
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (auto named =
                mlir::dyn_cast<mlir::NameLoc>(func.getArgument(i).getLoc())) {
          hash.update("argument-name " + std::to_string(i) + " " +
                      named.getName().str());
          hash.update(llvm::StringRef("\0", 1));
        }
    });
  return hexDigest(hash);
}

std::optional<std::string> ArtifactCache::lookup(llvm::StringRef key) {
  if (!enabled || !isKey(key))
    return std::nullopt;
  std::string artifact = pathJoin(directory, (key + ".so").str());
  std::string recordPath = pathJoin(directory, (key + ".json").str());
  std::optional<Record> record = readRecord(recordPath);
  if (!record)
    return std::nullopt; // absent, or being written by another process
  auto buffer = llvm::MemoryBuffer::getFile(artifact, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  std::string problem;
  if (!buffer) {
    problem = "its shared object is missing";
  } else if ((*buffer)->getBufferSize() != record->bytes) {
    problem = ("it holds " + llvm::Twine((*buffer)->getBufferSize()) +
               " bytes, not the " + llvm::Twine(record->bytes) + " recorded")
                  .str();
  } else {
    llvm::SHA256 hash;
    hash.update((*buffer)->getBuffer());
    if (hexDigest(hash) != record->sha256)
      problem = "its SHA-256 is not the one recorded";
  }
  if (!problem.empty()) {
    *warnings << "warning: the cached step " << key << " is damaged ("
              << problem << "): removed, compiling it again\n";
    llvm::sys::fs::remove(artifact);
    llvm::sys::fs::remove(recordPath);
    return std::nullopt;
  }
  // Used now (least-recently-used eviction reads this).
  if (auto file = llvm::sys::fs::openNativeFileForWrite(
          artifact, llvm::sys::fs::CD_OpenExisting, llvm::sys::fs::OF_Append)) {
    llvm::sys::fs::setLastAccessAndModificationTime(
        *file, std::chrono::system_clock::now());
    llvm::sys::fs::closeFile(*file);
  } else {
    llvm::consumeError(file.takeError());
  }
  return artifact;
}

void ArtifactCache::store(llvm::StringRef key, llvm::StringRef artifactPath,
                          llvm::StringRef model, llvm::StringRef options) {
  if (!enabled || !isKey(key))
    return;
  auto buffer = llvm::MemoryBuffer::getFile(artifactPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    *warnings << "warning: cannot read " << artifactPath
              << " into the compile cache: " << buffer.getError().message()
              << "\n";
    return;
  }
  llvm::SHA256 hash;
  hash.update((*buffer)->getBuffer());
  llvm::json::Object record{
      {"format", kFormat},
      {"bytes", int64_t((*buffer)->getBufferSize())},
      {"sha256", hexDigest(hash)},
      {"model", model},
      {"options", options}};
  std::string recordText;
  llvm::raw_string_ostream os(recordText);
  os << llvm::json::Value(std::move(record));
  // The shared object first, then its record: a reader finds a record only
  // beside a whole shared object.
  if (llvm::Error e = writeAtomically(pathJoin(directory, (key + ".so").str()),
                                      (*buffer)->getBuffer())) {
    *warnings << "warning: the compile cache at " << directory
              << " cannot keep this step: " << llvm::toString(std::move(e))
              << "\n";
    return;
  }
  if (llvm::Error e =
          writeAtomically(pathJoin(directory, (key + ".json").str()), recordText)) {
    *warnings << "warning: the compile cache at " << directory
              << " cannot keep this step: " << llvm::toString(std::move(e))
              << "\n";
    llvm::sys::fs::remove(pathJoin(directory, (key + ".so").str()));
    return;
  }
  evict(key);
}

std::vector<ArtifactCacheEntry> ArtifactCache::list() const {
  std::vector<ArtifactCacheEntry> entries;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (!name.ends_with(".so") || !isKey(name.drop_back(3)))
      continue;
    ArtifactCacheEntry entry;
    entry.key = name.drop_back(3).str();
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status))
      continue;
    entry.bytes = status.getSize();
    entry.lastUsed = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         status.getLastModificationTime().time_since_epoch())
                         .count();
    std::string recordPath = pathJoin(directory, entry.key + ".json");
    if (std::optional<Record> record = readRecord(recordPath)) {
      entry.model = record->model;
      entry.options = record->options;
      uint64_t recordBytes = 0;
      llvm::sys::fs::file_size(recordPath, recordBytes);
      entry.bytes += recordBytes;
    }
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const ArtifactCacheEntry &a, const ArtifactCacheEntry &b) {
              return a.lastUsed != b.lastUsed ? a.lastUsed > b.lastUsed
                                              : a.key < b.key;
            });
  return entries;
}

llvm::Expected<unsigned> ArtifactCache::clear() {
  unsigned removed = 0;
  std::error_code ec;
  std::vector<std::string> files;
  for (llvm::sys::fs::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec))
    if (isCacheFile(llvm::sys::path::filename(it->path())))
      files.push_back(it->path());
  if (ec && ec != std::errc::no_such_file_or_directory)
    return llvm::createStringError(ec, "cannot read " + directory + ": " +
                                           ec.message());
  for (const std::string &file : files) {
    if (std::error_code rm = llvm::sys::fs::remove(file))
      return llvm::createStringError(rm, "cannot remove " + file + ": " +
                                             rm.message());
    removed += llvm::StringRef(file).ends_with(".so");
  }
  return removed;
}

void ArtifactCache::evict(llvm::StringRef keep) {
  std::vector<ArtifactCacheEntry> entries = list();
  uint64_t total = 0;
  for (const ArtifactCacheEntry &entry : entries)
    total += entry.bytes;
  // Least recently used first: the list's end.
  for (auto it = entries.rbegin(); it != entries.rend() && total > maxBytes;
       ++it) {
    if (it->key == keep)
      continue;
    llvm::sys::fs::remove(pathJoin(directory, it->key + ".so"));
    llvm::sys::fs::remove(pathJoin(directory, it->key + ".json"));
    total -= it->bytes;
  }
}
