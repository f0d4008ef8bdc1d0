//===- PrecisionTable.cpp - Every train op against the autocast lists -----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The table docs/Passes.md shows (`amp-opt --print-precision-table`): each
// train op's category at O1, read from PrecisionPolicyOpInterface, next to
// the PyTorch CUDA autocast list entry (aten/src/ATen/autocast_mode.h) and
// the Apex O1 list entry (apex/amp/lists/*.py) it corresponds to, and why amp
// departs where it does. The lists are written here once; the categories
// come from the ops. A test compares the printed table with the checked-in
// copy, so a category that changes, or an op added without its entry here,
// fails until the table is regenerated and reviewed.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/PrecisionPolicy.h"

#include "amp/Dialect/Train/IR/TrainDialect.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace amp::train;

namespace {

/// What the reference systems do with the computation an op stands for.
struct ListEntry {
  llvm::StringLiteral op;
  /// PyTorch's CUDA autocast list entry (or why there is none).
  llvm::StringLiteral pytorch;
  /// Apex O1's list entry (FP16_FUNCS, FP32_FUNCS, CASTS, SEQUENCE_CASTS).
  llvm::StringLiteral apex;
  /// Where amp departs from PyTorch, and why; or a note.
  llvm::StringLiteral note;
};

constexpr llvm::StringLiteral kNone = "none: follows its input";
constexpr llvm::StringLiteral kPromotion =
    "none: type promotion (widest input)";
constexpr llvm::StringLiteral kBackward =
    "autograd: backward runs in its forward op's type";

// Sorted by op name; the printer checks that every train op has an entry.
const ListEntry kEntries[] = {
    {"train.accumulate_grads", "", "", "gradient transform: f32 gradients"},
    {"train.adam_update", "torch.optim.Adam/AdamW on f32 parameters",
     "FusedAdam on f32 masters", "optimizer: f32 master weights"},
    {"train.add", kPromotion, "CASTS: add", ""},
    {"train.all_reduce", "DistributedDataParallel: gradient buckets", "",
     "gradient transform: the gradients' type, or the wire type"},
    {"train.any", "", "", "loss scaling: flags"},
    {"train.attention", "lower_precision_fp: scaled_dot_product_attention",
     "none (apex predates it: its bmm/softmax/bmm pieces are FP16, FP32, "
     "FP16)",
     "fused: the softmax statistics and the log-sum-exp in f32, "
     "probabilities rounded to the low type for the second product"},
    {"train.attention_grad", kBackward, "", ""},
    {"train.avg_pool2d", kNone, "none", ""},
    {"train.batch_matmul", "lower_precision_fp: bmm, baddbmm, matmul",
     "FP16_FUNCS: bmm, baddbmm", ""},
    {"train.batch_norm",
     "none: f16 activation, f32 weight and statistics (cuDNN computes f32 "
     "statistics inside)",
     "none (O2: keep_batchnorm_fp32)",
     "only the activation follows; parameters and running statistics keep "
     "their type (f32)"},
    {"train.batch_norm_grad", kBackward, "", ""},
    {"train.broadcast", kNone, "none", ""},
    {"train.cast", "", "", "the only op that changes a float type"},
    {"train.clip_grad_norm", "torch.nn.utils.clip_grad_norm_ (after unscale_)",
     "", "gradient transform: f32 norm"},
    {"train.compare", kPromotion, "none",
     "i1 result: integer operands are left alone, float ones promoted"},
    {"train.concat", "none on CUDA: cat promotes (CPU list: promote: cat)",
     "SEQUENCE_CASTS: cat", ""},
    {"train.constant", "", "", "keeps its type"},
    {"train.conv2d", "lower_precision_fp: conv2d", "FP16_FUNCS: conv2d", ""},
    {"train.convert", "", "",
     "integer and boolean tensors: no precision (autocast leaves them)"},
    {"train.conv2d_grad_filter", kBackward, "", ""},
    {"train.conv2d_grad_input", kBackward, "", ""},
    {"train.cross_entropy",
     "fp32_set_opt_dtype: log_softmax, then fp32: nll_loss",
     "FP32_FUNCS: cross_entropy", ""},
    {"train.cross_entropy_grad", kBackward, "", ""},
    {"train.div", kPromotion, "CASTS: div",
     "fp32 when the numerator is rank 0: PyTorch computes c / x as "
     "reciprocal(x) * c, and reciprocal is fp32"},
    {"train.dropout", kNone, "none", ""},
    {"train.embedding", kNone, "none", ""},
    {"train.embedding_grad", kBackward, "", ""},
    {"train.check_numerics", "", "",
     "amp-check-numerics: each value's largest magnitude, inf and NaN "
     "kept"},
    {"train.clamp", kNone, "none", "hardtanh, relu6"},
    {"train.exp", "fp32: exp", "FP32_FUNCS: exp", ""},
    {"train.increment", "", "",
     "an i32 step counter (dropout's step): no float type to choose"},
    {"train.first_nonfinite", "", "",
     "loss scaling: which value first held an inf or NaN"},
    {"train.gelu", kNone, "none", ""},
    {"train.gelu_grad", kBackward, "", ""},
    {"train.layer_norm", "fp32: layer_norm", "FP32_FUNCS: layer_norm", ""},
    {"train.layer_norm_grad", kBackward, "", ""},
    {"train.linear_cross_entropy",
     "lower_precision_fp: linear; fp32: log_softmax, nll_loss",
     "FP16_FUNCS: linear; FP32_FUNCS: cross_entropy",
     "fused by autodiff after autocast: the head's GEMM in its operands' "
     "type, the loss in f32, the logits a block of rows at a time"},
    {"train.linear_cross_entropy_grad", kBackward, "", ""},
    {"train.log", "fp32: log", "FP32_FUNCS: log", ""},
    {"train.log_softmax", "fp32_set_opt_dtype: log_softmax",
     "FP32_FUNCS: log_softmax", ""},
    {"train.log_softmax_grad", kBackward, "", ""},
    {"train.loss_seed", "", "",
     "the loss's type: the loss scale (f32 at O1 and O2)"},
    {"train.matmul", "lower_precision_fp: mm, addmm, matmul, linear",
     "FP16_FUNCS: mm, addmm, matmul, linear", ""},
    {"train.max_pool2d", kNone, "none", ""},
    {"train.mse_loss", "fp32: mse_loss", "FP32_FUNCS: mse_loss", ""},
    {"train.l1_loss", "fp32: l1_loss", "FP32_FUNCS: l1_loss", ""},
    {"train.smooth_l1_loss", "fp32: smooth_l1_loss",
     "FP32_FUNCS: smooth_l1_loss", ""},
    {"train.bce_with_logits_loss", "fp32: binary_cross_entropy_with_logits",
     "FP32_FUNCS: binary_cross_entropy_with_logits", ""},
    {"train.maximum", kPromotion, "none", "torch.maximum"},
    {"train.minimum", kPromotion, "none", "torch.minimum"},
    {"train.mul", kPromotion, "CASTS: mul", ""},
    {"train.pool2d_grad", kBackward, "", ""},
    {"train.pow", "fp32: pow", "FP32_FUNCS: pow, __pow__", ""},
    {"train.reduce_mean",
     "none: mean follows its input (accumulating in f32 inside)",
     "none (FP32_FUNCS before torch 1.1)",
     "departs: fp32 as TensorFlow's deny list (Mean); the result is f32, "
     "where PyTorch returns the input's type; costs an f32 copy of an f16 "
     "input"},
    {"train.reduce_sum", "fp32_set_opt_dtype: sum", "FP32_FUNCS: sum", ""},
    {"train.relu", kNone, "none", ""},
    {"train.relu_grad", kBackward, "", ""},
    {"train.reshape", kNone, "none", ""},
    {"train.runtime_call", "", "", "lowering: GEMMs as library calls"},
    {"train.select", kPromotion, "none",
     "torch.where; the i1 condition is left alone"},
    {"train.sgd_update", "torch.optim.SGD on f32 parameters", "",
     "optimizer: f32 master weights"},
    {"train.sigmoid", kNone, "none", ""},
    {"train.slice", kNone, "none", ""},
    {"train.softmax", "fp32_set_opt_dtype: softmax", "FP32_FUNCS: softmax", ""},
    {"train.softmax_grad", kBackward, "", ""},
    {"train.sqrt", kNone, "none", ""},
    {"train.stop_gradient", kNone, "none",
     "detach: no gradient flows back through it"},
    {"train.sub", kPromotion, "none", ""},
    {"train.tanh", kNone, "none", ""},
    {"train.transpose", kNone, "none", ""},
    {"train.unscale_grads",
     "GradScaler: _amp_foreach_non_finite_check_and_unscale_", "",
     "loss scaling: f32"},
    {"train.update_scale", "GradScaler: _amp_update_scale_", "",
     "loss scaling: f32"},
};

} // namespace

LogicalResult amp::train::printPrecisionTable(MLIRContext *context,
                                              llvm::raw_ostream &os) {
  context->getOrLoadDialect<TrainDialect>();
  llvm::StringMap<const ListEntry *> entries;
  for (const ListEntry &entry : kEntries)
    entries[entry.op] = &entry;

  bool complete = true;
  std::string rows;
  llvm::raw_string_ostream out(rows);
  llvm::StringSet<> seen;
  SmallVector<RegisteredOperationName> names(
      context->getRegisteredOperationsByDialect(
          TrainDialect::getDialectNamespace()));
  llvm::sort(names, [](RegisteredOperationName a, RegisteredOperationName b) {
    return a.getStringRef() < b.getStringRef();
  });
  for (RegisteredOperationName name : names) {
    StringRef opName = name.getStringRef();
    seen.insert(opName);
    const ListEntry *entry = entries.lookup(opName);
    if (!entry) {
      llvm::errs() << "error: " << opName
                   << " has no entry in the autocast list table "
                      "(lib/Dialect/Train/Transforms/PrecisionTable.cpp): "
                      "give it its PyTorch and Apex list entries\n";
      complete = false;
      continue;
    }
    std::string category = "-";
    if (auto *policy = name.getInterface<PrecisionPolicyOpInterface>())
      category = stringifyPrecisionCategory(policy->getListedPrecision()).str();
    out << "| `" << opName << "` | " << category << " | " << entry->pytorch
        << " | " << entry->apex << " | " << entry->note << " |\n";
  }
  for (const ListEntry &entry : kEntries)
    if (!seen.contains(entry.op)) {
      llvm::errs() << "error: the autocast list table names " << entry.op
                   << ", which is not a registered train op\n";
      complete = false;
    }
  if (!complete)
    return failure();
  os << "| op | category at O1 | PyTorch CUDA autocast | Apex O1 lists | "
        "where amp departs, notes |\n"
     << "|---|---|---|---|---|\n"
     << rows;
  return success();
}
