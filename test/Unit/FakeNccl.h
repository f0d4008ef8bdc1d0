//===- FakeNccl.h - What the stand-in libnccl saw ---------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TEST_UNIT_FAKENCCL_H
#define AMP_TEST_UNIT_FAKENCCL_H

#include <nccl.h>

#include <cstddef>

/// The arguments of FakeNccl.cpp's last calls (`fakeNcclRecord()`).
struct FakeNcclRecord {
  char id[NCCL_UNIQUE_ID_BYTES] = {};
  int ranks = 0, rank = -1, blocking = -1;
  const void *in = nullptr;
  void *out = nullptr;
  const void *stream = nullptr;
  size_t count = 0;
  int type = -1, op = -1, allReduces = 0, aborts = 0, destroys = 0;
};

#endif // AMP_TEST_UNIT_FAKENCCL_H
