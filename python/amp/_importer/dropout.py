"""Dropout with amp's own seeded masks (a new mask every step)."""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from ._core import (Value, _Emitter, _constant, _emit, _operand, float_literal, tensor_type)


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


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.dropout.default: _dropout,
}
