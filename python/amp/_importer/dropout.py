"""Dropout and stochastic depth with amp's own seeded masks (a new mask
every step)."""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from ._core import (Value, _Emitter, _Unsupported, _arguments, _constant, _emit, _operand,
                    _shape, float_literal, tensor_type)


def _dropout_op(em: _Emitter, x: Value, p: float) -> str:
    """``train.dropout`` keyed by this dropout's own seed (its place in the
    model) and the step counter, so each step draws a new mask."""
    if p == 1:  # every element dropped: zeros, and no gradient through
        return _emit(em, "mul", x, _constant(em, 0.0, (), x[2]))[0]
    em.dropouts += 1
    return em.op(f"train.dropout {x[0]} rate {float_literal(p)} seed {em.dropouts} "
                 f"step {em.step_counter()} : {tensor_type(x[1], x[2])}")


def _dropout(em: _Emitter, node: torch.fx.Node) -> str:
    x = _operand(em, node.args[0])
    p = node.args[1] if len(node.args) > 1 else 0.5
    train = node.args[2] if len(node.args) > 2 else True
    if not train or p == 0:
        return x[0]  # F.dropout(p=0) and eval-mode dropout keep every element
    return _dropout_op(em, x, float(p))


def _bernoulli(em: _Emitter, node: torch.fx.Node) -> str:
    """``noise.bernoulli_(p)`` on a tensor the model made for it (torchvision's
    stochastic_depth, timm's DropPath: one draw per example of ``empty([N,
    1, 1, 1])``): 1 with probability p, else 0, from amp's dropout masks:
    ``dropout(ones, rate 1 - p) * p`` (the dropout's 1 / p and this p cancel
    up to one rounding). The tensor's old values are not read."""
    args = _arguments(node)
    p = args["p"]
    if isinstance(p, torch.fx.Node):
        raise _Unsupported("a tensor of probabilities (a number p is mapped)")
    shape = _shape(node)
    if not 0 <= p <= 1:
        raise _Unsupported(f"p={p!r} outside [0, 1]")
    if p in (0, 1):
        return _constant(em, float(p), shape, "f32").name
    ones = _constant(em, 1.0, shape, "f32")
    kept = Value(_dropout_op(em, ones, 1.0 - float(p)), tuple(shape), "f32")
    return _emit(em, "mul", kept, _constant(em, float(p), (), "f32")).name


def _empty(em: _Emitter, node: torch.fx.Node) -> str:
    """torch.empty / new_empty / empty_like: values nobody may read (an
    in-place op such as bernoulli_ fills them): zeros."""
    return _constant(em, 0.0, _shape(node), "f32").name


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.dropout.default: _dropout,
    torch.ops.aten.bernoulli.p: _bernoulli,
    torch.ops.aten.empty.memory_format: _empty,
    torch.ops.aten.new_empty.default: _empty,
    torch.ops.aten.empty_like.default: _empty,
}
