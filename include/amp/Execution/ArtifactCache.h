//===- ArtifactCache.h - Compiled steps kept between processes --*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// An on-disk cache of compiled artifacts (amp-compile's shared objects),
// keyed by everything that decides their code: the model module without
// source locations, the pipeline options (a policy file by its content),
// the target (backend, CPU and features or GPU chip, kernel format) and the
// build of amp itself (the running executable, the runtime archives linked
// into artifacts, LLVM's version). Entries are written atomically, checked
// against their recorded size and SHA-256 when read (a truncated or altered
// entry is removed and rebuilt, never loaded), and evicted least recently
// used first beyond a size limit. docs/UserGuide.md, "The compile cache".
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_ARTIFACTCACHE_H
#define AMP_EXECUTION_ARTIFACTCACHE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace amp {

/// Where and whether the cache is used: from the environment.
struct ArtifactCacheSettings {
  /// False with AMP_CACHE=0 (or "off", "false", "no").
  bool enabled = true;
  /// $AMP_CACHE_DIR, else $XDG_CACHE_HOME/amp/steps, else
  /// ~/.cache/amp/steps (beside, not inside, the Python environment).
  std::string directory;
  /// $AMP_CACHE_SIZE_MB MiB (default 2048): entries beyond it are evicted,
  /// least recently used first.
  uint64_t maxBytes = uint64_t(2048) << 20;

  /// The settings the environment gives; an unreadable AMP_CACHE_SIZE_MB
  /// is an error naming it.
  static llvm::Expected<ArtifactCacheSettings> fromEnvironment();
};

/// One cached artifact.
struct ArtifactCacheEntry {
  std::string key;
  uint64_t bytes = 0;
  /// Nanoseconds since the epoch of its last use (a hit or its creation).
  int64_t lastUsed = 0;
  /// What it was compiled from: the model's path and the options.
  std::string model, options;
};

/// The on-disk cache of compiled artifacts.
class ArtifactCache {
public:
  /// The cache at `settings.directory`, created if missing. A directory
  /// that cannot be created or written leaves the cache disabled, with one
  /// warning on `warnings` saying why ("compiling without it").
  static ArtifactCache open(const ArtifactCacheSettings &settings,
                            llvm::raw_ostream &warnings);

  bool isEnabled() const { return enabled; }
  llvm::StringRef getDirectory() const { return directory; }

  /// The key (64 hex digits) of `model` compiled with `parts` (every
  /// option and target fact that decides the code, as text), for this
  /// build of amp. Source locations do not enter it, unless
  /// `withLocations` (a step that reports them: check-numerics).
  static std::string computeKey(mlir::ModuleOp model,
                                llvm::ArrayRef<std::string> parts,
                                bool withLocations = false);

  /// The path of the entry for `key` when present and intact (its last use
  /// is then now). An entry whose size or SHA-256 differs from its record
  /// is removed, with a warning, and is a miss.
  std::optional<std::string> lookup(llvm::StringRef key);

  /// Copies the artifact at `artifactPath` in as `key`'s entry (atomically:
  /// a reader sees the whole entry or none), recording `model` and
  /// `options`, then evicts least recently used entries beyond the size
  /// limit (never the new one). Failure to write is a warning, not an
  /// error: the compiled artifact is still the caller's.
  void store(llvm::StringRef key, llvm::StringRef artifactPath,
             llvm::StringRef model, llvm::StringRef options);

  /// The entries, most recently used first.
  std::vector<ArtifactCacheEntry> list() const;
  /// Removes every entry (and leftover temporaries); only the cache's own
  /// files in its directory are touched. Returns how many entries went.
  llvm::Expected<unsigned> clear();

private:
  ArtifactCache(std::string directory, uint64_t maxBytes, bool enabled,
                llvm::raw_ostream &warnings)
      : directory(std::move(directory)), maxBytes(maxBytes), enabled(enabled),
        warnings(&warnings) {}
  void evict(llvm::StringRef keep);

  std::string directory;
  uint64_t maxBytes;
  bool enabled;
  llvm::raw_ostream *warnings;
};

} // namespace amp

#endif // AMP_EXECUTION_ARTIFACTCACHE_H
