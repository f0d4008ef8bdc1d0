//===- MpiPlugin.cpp - The MPI communicator as a loadable plugin ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// libamp-mpi.so: what a driver loads (joinMpiJob) when it joins an mpirun
// job, so that amp-train and amp-run need no MPI library to start.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/MpiCommunicator.h"

#include <cstdio>

extern "C" amp::Communicator *amp_mpi_join(int64_t abi, char *error,
                                           size_t capacity) {
  if (abi != amp::kCommunicatorAbi) {
    std::snprintf(error, capacity,
                  "the plugin is of another amp build (communicator layout "
                  "%lld, the caller's %lld)",
                  static_cast<long long>(amp::kCommunicatorAbi),
                  static_cast<long long>(abi));
    return nullptr;
  }
  std::string why;
  std::unique_ptr<amp::MpiCommunicator> communicator =
      amp::MpiCommunicator::create(why);
  if (!communicator) {
    std::snprintf(error, capacity, "%s", why.c_str());
    return nullptr;
  }
  return communicator.release();
}
