"""Reductions and softmax (f32 under autocast, as PyTorch's)."""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from ._core import (_Emitter, _Unsupported, _axis, _operand, _shape, tensor_type)


def _reduce(op: str) -> Callable:
    """aten.mean.dim / sum.dim_IntList (and over all dimensions)."""
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        x = _operand(em, node.args[0])
        rank = len(x[1])
        dims = node.args[1] if len(node.args) > 1 else None
        keep = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim", False))
        if node.kwargs.get("dtype") not in (None, torch.float32):
            raise _Unsupported(f"dtype={node.kwargs['dtype']}")
        axes = sorted({_axis(d, rank) for d in dims}) if dims else list(range(rank))
        attrs = " keep_dims" if keep else ""
        return em.op(f"train.{op} {x[0]} axes {axes}{attrs} : {tensor_type(x[1], x[2])} -> "
                     f"{tensor_type(_shape(node), x[2])}")
    return handler


def _softmax(op: str) -> Callable:
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        x = _operand(em, node.args[0])
        if len(node.args) > 2 and node.args[2] not in (None, False, torch.float32):
            raise _Unsupported(f"dtype={node.args[2]}")
        axis = _axis(node.args[1], len(x[1]))
        return em.op(f"train.{op} {x[0]} axis {axis} : {tensor_type(x[1], x[2])}")
    return handler


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.softmax.int: _softmax("softmax"),
    torch.ops.aten._softmax.default: _softmax("softmax"),
    torch.ops.aten.log_softmax.int: _softmax("log_softmax"),
    torch.ops.aten._log_softmax.default: _softmax("log_softmax"),
    torch.ops.aten.mean.dim: _reduce("reduce_mean"),
    torch.ops.aten.mean.default: _reduce("reduce_mean"),
    torch.ops.aten.sum.dim_IntList: _reduce("reduce_sum"),
    torch.ops.aten.sum.default: _reduce("reduce_sum"),
}
