//===- TrainingFlags.h - Command-line flags of a training run ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The flags amp-run and amp-train share (--lr, --epochs, --dataset, --save,
// --data-parallel, ...), registered by linking AMPTrainingFlags: only tools
// link it (MPI itself is a plugin, loaded when a job is joined: MpiJob.h).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_TRAININGFLAGS_H
#define AMP_TRAINING_TRAININGFLAGS_H

#include "amp/Runtime/Collectives.h"
#include "amp/Training/Trainer.h"

#include "llvm/Support/CommandLine.h"

namespace amp {

/// The category the training flags are in (for cl::HideUnrelatedOptions).
llvm::cl::OptionCategory &getTrainingFlagsCategory();

/// The parsed flags as a configuration of `tool`; the compile-side fields
/// (model, opt level, dtype, optimizer, backend) are left for the tool.
TrainingConfig readTrainingFlags(llvm::StringRef tool);

/// --data-parallel (docs/Distributed.md): joins the mpirun job over MPI and
/// makes `config` one rank of it (joinMpiJob in MpiJob.h; config.communicator; on every rank but 0
/// no output files, and standard output to /dev/null). Returns the
/// communicator, which must outlive the run, or null without
/// --data-parallel. Errors: a data-parallel flag without --data-parallel,
/// --bench-steps, a bad --dp-timeout or --inject-rank, no MPI job to join.
llvm::Expected<std::unique_ptr<Communicator>>
joinDataParallelJob(TrainingConfig &config);

/// A rank's exit status `status`; a failure first ends every rank of a
/// data-parallel job (`communicator` of more than one rank): a rank that
/// returned alone would leave the others waiting in a collective (mpirun
/// reports the abort and exits non-zero).
int finishRank(int status, Communicator *communicator);

} // namespace amp

#endif // AMP_TRAINING_TRAININGFLAGS_H
