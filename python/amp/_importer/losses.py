"""Losses: cross entropy (and nll of log_softmax), MSE, L1, smooth L1,
BCE with logits."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import torch

from ._core import (Value, _Emitter, _Unsupported, _axis, _check_indices, _node_args, _operand,
                    float_literal, tensor_type)


def _mse_loss(em: _Emitter, node: torch.fx.Node) -> str:
    # aten.mse_loss(input, target, reduction=1 (mean))
    x, t = _operand(em, node.args[0]), _operand(em, node.args[1])
    reduction = node.args[2] if len(node.args) > 2 else node.kwargs.get("reduction", 1)
    if reduction != 1:
        raise _Unsupported("a reduction other than 'mean'")
    if tuple(x[1]) != tuple(t[1]):
        raise _Unsupported(f"input {list(x[1])} and target {list(t[1])} of different shapes "
                           "(broadcasting)")
    return em.op(f"train.mse_loss {x[0]}, {t[0]} : {tensor_type(x[1], x[2])} -> tensor<f32>")


def _pointwise_loss(op: str, names: Sequence[str], defaults: Sequence[Any]) -> Callable:
    """aten.l1_loss / smooth_l1_loss / binary_cross_entropy_with_logits as
    the train op of the same mean loss (fp32 under autocast, as PyTorch's)."""
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        values = _node_args(node, ["input", "target"] + list(names),
                            [None, None] + list(defaults))
        options = dict(zip(names, values[2:]))
        if options.pop("reduction") != 1:
            raise _Unsupported("a reduction other than 'mean'")
        for name in ("weight", "pos_weight"):
            if options.pop(name, None) is not None:
                raise _Unsupported(name)
        x, t = _operand(em, values[0]), _operand(em, values[1])
        if tuple(x[1]) != tuple(t[1]):
            raise _Unsupported(f"input {list(x[1])} and target {list(t[1])} of different "
                               "shapes (broadcasting)")
        name, attrs = op, ""
        if "beta" in options:
            beta = float(options["beta"])
            if beta == 0:  # PyTorch: the L1 loss
                name = "l1_loss"
            elif beta != 1.0:
                attrs = f" beta {float_literal(beta)}"
        return em.op(f"train.{name} {x[0]}, {t[0]}{attrs} : {tensor_type(x[1], x[2])} -> "
                     f"{tensor_type((), x[2])}")
    return handler


def _cross_entropy_op(em: _Emitter, logits: Value, labels: Value,
                      ignore_index: Optional[int] = -100, label_smoothing: float = 0.0) -> str:
    """train.cross_entropy; rows labelled ``ignore_index`` (PyTorch's -100 by
    default) count for nothing; ``label_smoothing`` as PyTorch's (inside the
    op, so ignored rows are left out of the smoothing term too)."""
    if ignore_index is not None and not isinstance(ignore_index, int):
        raise _Unsupported(f"ignore_index={ignore_index!r}")
    _check_indices(em, labels, None, logits.shape[-1], ignore_index,
                   f"cross_entropy's target ({logits.shape[-1]} classes)")
    attrs = f" ignore_index {ignore_index}" if ignore_index is not None else ""
    if label_smoothing:
        if not 0.0 <= float(label_smoothing) <= 1.0:
            raise _Unsupported(f"label_smoothing={label_smoothing!r} (PyTorch takes [0, 1])")
        attrs += f" label_smoothing {float_literal(float(label_smoothing))}"
    return em.op(f"train.cross_entropy {logits[0]}, {labels[0]}{attrs} : "
                 f"{tensor_type(logits[1], logits[2])}, {tensor_type(labels[1], 'i32')} "
                 f"-> tensor<f32>")


def _cross_entropy(em: _Emitter, node: torch.fx.Node) -> str:
    # aten.cross_entropy_loss(self, target, weight, reduction, ignore_index,
    #                         label_smoothing)
    args = _node_args(node, ["self", "target", "weight", "reduction", "ignore_index",
                             "label_smoothing"], [None, None, None, 1, -100, 0.0])
    logits, labels = _operand(em, args[0]), _operand(em, args[1])
    if args[2] is not None:
        raise _Unsupported("class weights")
    if args[3] not in (None, 1):
        raise _Unsupported("a reduction other than 'mean'")
    if len(logits[1]) != 2:
        raise _Unsupported("logits of rank other than 2")
    return _cross_entropy_op(em, logits, labels, args[4], args[5] or 0.0)


def _nll_loss(em: _Emitter, node: torch.fx.Node) -> str:
    """nll_loss(log_softmax(x, 1), y) (mean, no weights) is cross_entropy(x, y)."""
    args = _node_args(node, ["self", "target", "weight", "reduction", "ignore_index"],
                      [None, None, None, 1, -100])
    source = args[0]
    if not (isinstance(source, torch.fx.Node) and source.target in (
            torch.ops.aten.log_softmax.int, torch.ops.aten._log_softmax.default)):
        raise _Unsupported("nll_loss of something other than log_softmax(x, dim=1)")
    logits = _operand(em, source.args[0])
    if _axis(source.args[1], len(logits[1])) != 1 or len(logits[1]) != 2:
        raise _Unsupported("nll_loss of a log_softmax over another dimension than 1")
    if args[2] is not None:
        raise _Unsupported("class weights")
    if args[3] not in (None, 1):
        raise _Unsupported("a reduction other than 'mean'")
    return _cross_entropy_op(em, logits, _operand(em, args[1]), args[4])


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.cross_entropy_loss.default: _cross_entropy,
    torch.ops.aten.mse_loss.default: _mse_loss,
    torch.ops.aten.l1_loss.default: _pointwise_loss("l1_loss", ["reduction"], [1]),
    torch.ops.aten.smooth_l1_loss.default: _pointwise_loss(
        "smooth_l1_loss", ["reduction", "beta"], [1, 1.0]),
    torch.ops.aten.binary_cross_entropy_with_logits.default: _pointwise_loss(
        "bce_with_logits_loss", ["weight", "pos_weight", "reduction"], [None, None, 1]),
    torch.ops.aten.nll_loss_nd.default: _nll_loss,
    torch.ops.aten.nll_loss.default: _nll_loss,
}
