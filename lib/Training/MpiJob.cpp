//===- MpiJob.cpp - Joining an mpirun job through amp's MPI plugin --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/MpiJob.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <vector>

#include <dlfcn.h>

using namespace amp;

std::unique_ptr<Communicator> amp::joinMpiJob(std::string &error) {
  static const char *const kPlugin = "libamp-mpi.so";
  // Where this code is: the executable (amp-run, amp-train: bin/) or the
  // Python extension (python/amp/); the plugin is in the build's lib/.
  // The library holding this code first (under Python, the executable is
  // the interpreter, whose ../lib may hold another build's plugin).
  std::vector<std::string> dirs;
  Dl_info info;
  if (::dladdr(reinterpret_cast<void *>(&amp::joinMpiJob), &info) &&
      info.dli_fname && llvm::sys::path::is_absolute(info.dli_fname))
    dirs.push_back(llvm::sys::path::parent_path(info.dli_fname).str());
  std::string exe = llvm::sys::fs::getMainExecutable(
      nullptr, reinterpret_cast<void *>(&amp::joinMpiJob));
  dirs.push_back(llvm::sys::path::parent_path(exe).str());
  std::vector<std::string> candidates;
  for (const std::string &dir : dirs)
    // (lib: an installed package, amp/_native*.so beside amp/lib.)
    for (llvm::StringRef sub : {"../lib", "../../lib", "lib", "."}) {
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, sub, kPlugin);
      llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
      candidates.push_back(path.str().str());
    }
  candidates.push_back(kPlugin);
  std::string tried;
  for (const std::string &candidate : candidates) {
    if (candidate != kPlugin && !llvm::sys::fs::exists(candidate))
      continue;
    // Global: OpenMPI's own components resolve libmpi's symbols.
    void *handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      tried += std::string(tried.empty() ? "" : "; ") + ::dlerror();
      continue;
    }
    auto join = reinterpret_cast<Communicator *(*)(int64_t, char *, size_t)>(
        ::dlsym(handle, "amp_mpi_join"));
    if (!join) {
      error = candidate + " has no amp_mpi_join";
      return nullptr;
    }
    char why[512] = "";
    Communicator *communicator = join(kCommunicatorAbi, why, sizeof(why));
    if (!communicator)
      error = why;
    return std::unique_ptr<Communicator>(communicator);
  }
  error = std::string("cannot load amp's MPI plugin ") + kPlugin +
          " (in the lib/ beside " + dirs.front() +
          " or on the library path; it needs OpenMPI's libmpi: "
          "scripts/setup.sh installs it)" +
          (tried.empty() ? "" : ": " + tried);
  return nullptr;
}

