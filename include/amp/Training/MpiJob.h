//===- MpiJob.h - Joining an mpirun job through amp's MPI plugin -*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// MPI is a plugin (lib/Runtime/MPI: libamp-mpi.so), loaded when a process
// joins a data-parallel job, so that amp-run, amp-train and the Python
// extension link no MPI library and start where none is installed.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_MPIJOB_H
#define AMP_TRAINING_MPIJOB_H

#include "amp/Runtime/Collectives.h"

#include <memory>
#include <string>

namespace amp {

/// Joins the mpirun job through amp's MPI plugin (its amp_mpi_join; loaded
/// from the build's lib/ beside the executable or the library holding this
/// code, else by the dynamic loader). Null, with `error` set, when the
/// plugin or MPI cannot be loaded or the job cannot be joined.
std::unique_ptr<Communicator> joinMpiJob(std::string &error);

} // namespace amp

#endif // AMP_TRAINING_MPIJOB_H
