//===- ShapeInferenceTest.cpp - Tests of the train shape rules ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/ShapeInference.h"

#include "gtest/gtest.h"

#include <vector>

using namespace amp::train;

namespace {

/// The shape of a successful result, as a vector for EXPECT_EQ.
std::vector<int64_t> shapeOf(const ShapeOrError &r) {
  EXPECT_TRUE(r.ok()) << r.getError();
  return {r.getShape().begin(), r.getShape().end()};
}

/// Expects failure with a message containing `needle`.
void expectError(const ShapeOrError &r, const std::string &needle) {
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.getError().find(needle), std::string::npos)
      << "message was: " << r.getError();
}

TEST(Broadcast, EqualShapes) {
  EXPECT_EQ(shapeOf(inferBroadcastShape({2, 3}, {2, 3})),
            (std::vector<int64_t>{2, 3}));
}

TEST(Broadcast, TrailingAlignmentAndOnes) {
  EXPECT_EQ(shapeOf(inferBroadcastShape({128, 256}, {256})),
            (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(shapeOf(inferBroadcastShape({8, 1, 5}, {4, 1})),
            (std::vector<int64_t>{8, 4, 5}));
  EXPECT_EQ(shapeOf(inferBroadcastShape({}, {3, 4})),
            (std::vector<int64_t>{3, 4}));
}

TEST(Broadcast, Incompatible) {
  expectError(inferBroadcastShape({2, 3}, {4}),
              "[2, 3] and [4] are not broadcast-compatible (dimension 3 vs 4");
}

TEST(Broadcast, IsBroadcastableTo) {
  EXPECT_TRUE(isBroadcastableTo({256}, {128, 256}));
  EXPECT_TRUE(isBroadcastableTo({1, 256}, {128, 256}));
  EXPECT_FALSE(isBroadcastableTo({128, 256}, {256}));
  // Both grow: the broadcast shape is not the target.
  EXPECT_FALSE(isBroadcastableTo({3, 1}, {1, 4}));
}

TEST(Matmul, PlainAndTransposed) {
  EXPECT_EQ(shapeOf(inferMatmulShape({128, 784}, {784, 256}, false, false)),
            (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(shapeOf(inferMatmulShape({784, 128}, {784, 256}, true, false)),
            (std::vector<int64_t>{128, 256}));
  EXPECT_EQ(shapeOf(inferMatmulShape({128, 784}, {256, 784}, false, true)),
            (std::vector<int64_t>{128, 256}));
}

TEST(Matmul, ContractingMismatch) {
  expectError(inferMatmulShape({128, 784}, {512, 10}, false, false),
              "contracting dims 784 and 512 differ");
}

TEST(Matmul, WrongRank) {
  expectError(inferMatmulShape({2, 3, 4}, {4, 5}, false, false),
              "must be rank 2");
}

TEST(BatchMatmul, Shapes) {
  EXPECT_EQ(
      shapeOf(inferBatchMatmulShape({32, 128, 64}, {32, 128, 64}, false, true)),
      (std::vector<int64_t>{32, 128, 128}));
  expectError(inferBatchMatmulShape({4, 2, 3}, {5, 3, 2}, false, false),
              "batch dims [4] and [5] are not broadcast-compatible");
  // Any number of batch dims, broadcast between the operands (attention's
  // [B, H, S, D] against a [B, 1, D, S] key shared by the heads).
  EXPECT_EQ(shapeOf(inferBatchMatmulShape({2, 8, 16, 64}, {2, 1, 64, 16},
                                          false, false)),
            (std::vector<int64_t>{2, 8, 16, 16}));
  EXPECT_EQ(
      shapeOf(inferBatchMatmulShape({3, 1, 4, 5}, {6, 5, 2}, false, false)),
      (std::vector<int64_t>{3, 6, 4, 2}));
  expectError(inferBatchMatmulShape({4, 5}, {5, 3, 2}, false, false),
              "at least rank 3");
}

TEST(Conv2d, SamePaddingAndStride) {
  // 3x3, padding 1, stride 1 keeps 28x28.
  EXPECT_EQ(shapeOf(inferConv2dShape({128, 1, 28, 28}, {32, 1, 3, 3}, {1, 1},
                                     {1, 1}, {1, 1})),
            (std::vector<int64_t>{128, 32, 28, 28}));
  // 3x3, no padding, stride 2: (28 - 3) / 2 + 1 = 13.
  EXPECT_EQ(shapeOf(inferConv2dShape({1, 1, 28, 28}, {4, 1, 3, 3}, {2, 2},
                                     {0, 0}, {1, 1})),
            (std::vector<int64_t>{1, 4, 13, 13}));
  // Dilation 2 makes a 3x3 kernel span 5: 28 - 5 + 1 = 24.
  EXPECT_EQ(shapeOf(inferConv2dShape({1, 1, 28, 28}, {4, 1, 3, 3}, {1, 1},
                                     {0, 0}, {2, 2})),
            (std::vector<int64_t>{1, 4, 24, 24}));
}

TEST(Conv2d, Errors) {
  expectError(
      inferConv2dShape({1, 3, 8, 8}, {4, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}),
      "input channels 3 and filter channels 2 differ");
  expectError(
      inferConv2dShape({1, 1, 4, 4}, {1, 1, 7, 7}, {1, 1}, {1, 1}, {1, 1}),
      "window 7 (kernel 7, dilation 1) exceeds padded input 6");
  expectError(
      inferConv2dShape({1, 1, 4, 4}, {1, 1, 3, 3}, {0, 1}, {0, 0}, {1, 1}),
      "strides values must be >= 1");
  expectError(inferConv2dShape({1, 1, 4, 4}, {1, 1, 3, 3}, {1}, {0, 0}, {1, 1}),
              "strides must have 2 values");
  expectError(inferConv2dShape({1, 4, 4}, {1, 1, 3, 3}, {1, 1}, {0, 0}, {1, 1}),
              "input must be rank 4");
}

TEST(Pool2d, Shapes) {
  EXPECT_EQ(shapeOf(inferPool2dShape({128, 32, 28, 28}, {2, 2}, {2, 2},
                                     {0, 0}, {1, 1})),
            (std::vector<int64_t>{128, 32, 14, 14}));
  // Odd size, floor: (7 - 2) / 2 + 1 = 3.
  EXPECT_EQ(
      shapeOf(inferPool2dShape({1, 1, 7, 7}, {2, 2}, {2, 2}, {0, 0}, {1, 1})),
      (std::vector<int64_t>{1, 1, 3, 3}));
  // Dilation 2 spans 2*(3-1)+1 = 5: (9 + 2 - 5) / 1 + 1 = 7 rows; 3 columns
  // of dilation 1 span 3: (9 + 2 - 3) / 2 + 1 = 5.
  EXPECT_EQ(
      shapeOf(inferPool2dShape({1, 1, 9, 9}, {3, 3}, {1, 2}, {1, 1}, {2, 1})),
      (std::vector<int64_t>{1, 1, 7, 5}));
  expectError(
      inferPool2dShape({1, 1, 7, 7}, {2, 2}, {2, 2}, {2, 0}, {1, 1}),
      "padding 2 is more than half the kernel 2");
  expectError(
      inferPool2dShape({1, 1, 1, 7}, {2, 2}, {2, 2}, {0, 0}, {1, 1}),
      "kernel 2 exceeds padded input 1 in dimension H");
  expectError(
      inferPool2dShape({1, 1, 4, 7}, {3, 3}, {1, 1}, {0, 0}, {2, 1}),
      "window 5 (kernel 3, dilation 2) exceeds padded input 4 in dimension H");
  expectError(
      inferPool2dShape({1, 1, 4, 7}, {3, 3}, {1, 1}, {0, 0}, {0, 1}),
      "dilation values must be >= 1, got [0, 1]");
}

TEST(Transpose, Shapes) {
  EXPECT_EQ(shapeOf(inferTransposeShape({8, 128, 4, 64}, {0, 2, 1, 3})),
            (std::vector<int64_t>{8, 4, 128, 64}));
  expectError(inferTransposeShape({2, 3}, {0, 0}), "is not a permutation");
  expectError(inferTransposeShape({2, 3}, {0, 1, 2}), "has 3 entries");
}

TEST(Reduce, Shapes) {
  EXPECT_EQ(shapeOf(inferReduceShape({128, 10}, {1}, false)),
            (std::vector<int64_t>{128}));
  EXPECT_EQ(shapeOf(inferReduceShape({128, 10}, {1}, true)),
            (std::vector<int64_t>{128, 1}));
  EXPECT_EQ(shapeOf(inferReduceShape({2, 3, 4}, {0, 2}, false)),
            (std::vector<int64_t>{3}));
  EXPECT_EQ(shapeOf(inferReduceShape({2, 3}, {0, 1}, false)),
            (std::vector<int64_t>{}));
  expectError(inferReduceShape({2, 3}, {2}, false),
              "axis 2 is out of range for a rank-2 input");
  expectError(inferReduceShape({2, 3}, {1, 1}, false), "listed twice");
  expectError(inferReduceShape({2, 3}, {}, false), "must not be empty");
}

TEST(Concat, Shapes) {
  EXPECT_EQ(shapeOf(inferConcatShape({{8, 16}, {8, 32}}, 1)),
            (std::vector<int64_t>{8, 48}));
  expectError(inferConcatShape({{8, 16}, {4, 32}}, 1),
              "differs from operand 0 shape [8, 16] in dimension 0");
  expectError(inferConcatShape({{8, 16}, {8}}, 0), "operand 1 has rank 1");
  expectError(inferConcatShape({{8, 16}}, -1), "axis -1 is out of range");
}

TEST(Embedding, Shapes) {
  EXPECT_EQ(shapeOf(inferEmbeddingShape({1024, 256}, {8, 128})),
            (std::vector<int64_t>{8, 128, 256}));
  expectError(inferEmbeddingShape({1024}, {8}), "table must be rank 2");
}

TEST(Format, Shape) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({2, 3}), "[2, 3]");
}

} // namespace
