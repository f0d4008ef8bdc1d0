"""Boolean ops on masks. Booleans enter the step as masks (f32 0 / 1: bool
model inputs, a tokenizer's integer attention_mask the model turns into
bool, folded boolean constants) or as i1 (comparisons computed in the step,
train.compare); the logical ops work on masks, an i1 operand converted:
``and`` is a product, ``or`` a + b - ab, ``not`` 1 - m, each exact on
0 / 1."""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from ._core import Value, _Emitter, _as_mask, _constant, _operand, _shape, tensor_type


def _mask(em: _Emitter, arg: Any) -> Value:
    """A boolean operand as a mask: f32 0 / 1 (an i1 converted)."""
    return _as_mask(em, _operand(em, arg))


def _binary(em: _Emitter, op: str, a: Value, b: Value, shape) -> Value:
    """``train.<op>`` of two masks (NumPy broadcasting to ``shape``): a mask."""
    out = Value(em.op(f"train.{op} {a.name}, {b.name} : {a.type}, {b.type} -> "
                      f"{tensor_type(shape, 'f32')}"), tuple(shape), "f32")
    em.masks.add(out.name)
    return out


def _and(em: _Emitter, node: torch.fx.Node) -> str:
    a, b = (_mask(em, x) for x in node.args[:2])
    return _binary(em, "mul", a, b, _shape(node)).name


def _or(em: _Emitter, node: torch.fx.Node) -> str:
    a, b = (_mask(em, x) for x in node.args[:2])
    shape = _shape(node)
    return _binary(em, "sub", _binary(em, "add", a, b, shape),
                   _binary(em, "mul", a, b, shape), shape).name


def _not(em: _Emitter, node: torch.fx.Node) -> str:
    m = _mask(em, node.args[0])
    return _binary(em, "sub", _constant(em, 1.0, (), "f32"), m, m.shape).name


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.__and__.Tensor: _and,
    torch.ops.aten.bitwise_and.Tensor: _and,
    torch.ops.aten.logical_and.default: _and,
    torch.ops.aten.__or__.Tensor: _or,
    torch.ops.aten.bitwise_or.Tensor: _or,
    torch.ops.aten.logical_or.default: _or,
    torch.ops.aten.bitwise_not.default: _not,
    torch.ops.aten.logical_not.default: _not,
}
