//===- MpiCommunicator.cpp - Collectives over MPI -------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/MpiCommunicator.h"
#include "amp/Runtime/Float16.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

using namespace amp;

namespace {

/// MPI's text for an error code.
std::string mpiError(const char *call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return std::string(call) + " failed (MPI error " + std::to_string(code) +
           ")";
  return std::string(call) + " failed: " + std::string(text, length);
}

/// Element-wise `inout[i] = combine(in[i], inout[i])` over 2-byte floats,
/// through f32.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), bool Max>
void combine16(void *in, void *inout, int *count, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *count; ++i) {
    float x = Widen(a[i]), y = Widen(b[i]);
    b[i] = Narrow(Max ? (x > y ? x : y) : x + y);
  }
}

/// amp's MPI operations for f16 and bf16, made once after MPI_Init.
struct HalfOps {
  MPI_Op sum[2] = {MPI_OP_NULL, MPI_OP_NULL}; // f16, bf16
  MPI_Op max[2] = {MPI_OP_NULL, MPI_OP_NULL};
};
HalfOps &halfOps() {
  static HalfOps ops = [] {
    HalfOps o;
    MPI_Op_create(&combine16<halfToFloat, floatToHalf, false>, 1, &o.sum[0]);
    MPI_Op_create(&combine16<bfloatToFloat, floatToBFloat, false>, 1,
                  &o.sum[1]);
    MPI_Op_create(&combine16<halfToFloat, floatToHalf, true>, 1, &o.max[0]);
    MPI_Op_create(&combine16<bfloatToFloat, floatToBFloat, true>, 1, &o.max[1]);
    return o;
  }();
  return ops;
}

} // namespace

bool MpiCommunicator::launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::create(std::string &error) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (int code =
            MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        code != MPI_SUCCESS) {
      error = mpiError("MPI_Init_thread", code);
      return nullptr;
    }
    // Finalize at exit, after every communicator is gone.
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized)
        MPI_Finalize();
    });
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(rank, size));
}

MpiCommunicator::~MpiCommunicator() = default;

std::string MpiCommunicator::allReduce(const void *in, void *out, int64_t count,
                                       RuntimeDType type, CollectiveOp op) {
  if (count > std::numeric_limits<int>::max())
    return "all-reduce of " + std::to_string(count) +
           " values: more than MPI's int count (split the bucket: "
           "amp-data-parallel's bucket-mb)";
  bool max = op == CollectiveOp::Max;
  MPI_Datatype datatype = MPI_FLOAT;
  MPI_Op mpiOp = max ? MPI_MAX : MPI_SUM;
  if (type == RuntimeDType::F64) {
    datatype = MPI_DOUBLE;
  } else if (type != RuntimeDType::F32) {
    int which = type == RuntimeDType::F16 ? 0 : 1;
    datatype = MPI_UINT16_T;
    mpiOp = max ? halfOps().max[which] : halfOps().sum[which];
  }
  if (int code =
          MPI_Allreduce(in, out, int(count), datatype, mpiOp, MPI_COMM_WORLD);
      code != MPI_SUCCESS)
    return mpiError("MPI_Allreduce", code);
  return "";
}

std::string MpiCommunicator::broadcast(void *data, int64_t bytes, int root) {
  if (bytes > std::numeric_limits<int>::max())
    return "broadcast of " + std::to_string(bytes) +
           " bytes: more than MPI's int count";
  if (int code = MPI_Bcast(data, int(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
      code != MPI_SUCCESS)
    return mpiError("MPI_Bcast", code);
  return "";
}

void MpiCommunicator::abort(int code) {
  std::fflush(nullptr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code); // MPI_Abort does not return; in case it does
}
