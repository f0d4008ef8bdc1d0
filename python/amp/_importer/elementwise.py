"""Element-wise ATen ops: arithmetic, activations, clamps, fills."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Sequence

import torch

from ._core import (Value, _Emitter, _Unsupported, _absolute, _arguments, _as_bool, _clamp_value, _constant, _element,
                    _emit, _negated, _operand, _reciprocal, _shape, _tensor_or_scalar,
                    float_literal, tensor_type)


def _unary(op: str) -> Callable:
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        x = _operand(em, node.args[0])
        return em.op(f"train.{op} {x[0]} : {tensor_type(x[1], x[2])}")
    return handler


def _binary(op: str) -> Callable:
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        if len(node.args) > 2 or node.kwargs.get("alpha", 1) != 1:
            raise _Unsupported("an alpha other than 1")
        lhs, rhs = (_tensor_or_scalar(em, a, _element(node)) for a in node.args[:2])
        shape, element = _shape(node), _element(node)
        return em.op(f"train.{op} {lhs[0]}, {rhs[0]} : {tensor_type(lhs[1], lhs[2])}, "
                     f"{tensor_type(rhs[1], rhs[2])} -> {tensor_type(shape, element)}")
    return handler


def _hardtanh(em: _Emitter, node: torch.fx.Node) -> str:
    """hardtanh(x, min_val=-1, max_val=1); nn.ReLU6 is hardtanh(x, 0, 6)."""
    x = _operand(em, node.args[0])
    lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
    hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
    if not lo < hi:
        raise _Unsupported(f"min_val {lo} not below max_val {hi}")
    return _clamp_value(em, x, lo, hi)[0]


def _leaky_relu(em: _Emitter, node: torch.fx.Node) -> str:
    """x > 0 ? x : x * slope, as relu(x) - slope * relu(-x) (exact)."""
    x = _operand(em, node.args[0])
    slope = node.args[1] if len(node.args) > 1 else node.kwargs.get("negative_slope", 0.01)
    negative = _emit(em, "relu", _negated(em, x))
    return _emit(em, "sub", _emit(em, "relu", x),
                 _emit(em, "mul", negative, _constant(em, slope, (), x[2])))[0]


def _silu(em: _Emitter, node: torch.fx.Node) -> str:
    x = _operand(em, node.args[0])
    return _emit(em, "mul", x, _emit(em, "sigmoid", x))[0]


def _hardsigmoid(em: _Emitter, node: torch.fx.Node) -> str:
    """min(max(x + 3, 0), 6) / 6."""
    x = _operand(em, node.args[0])
    shifted = _emit(em, "add", x, _constant(em, 3.0, (), x[2]))
    return _emit(em, "div", _clamp_value(em, shifted, 0.0, 6.0), _constant(em, 6.0, (), x[2]))[0]


def _hardswish(em: _Emitter, node: torch.fx.Node) -> str:
    """x * min(max(x + 3, 0), 6) / 6."""
    x = _operand(em, node.args[0])
    shifted = _emit(em, "add", x, _constant(em, 3.0, (), x[2]))
    gated = _emit(em, "mul", x, _clamp_value(em, shifted, 0.0, 6.0))
    return _emit(em, "div", gated, _constant(em, 6.0, (), x[2]))[0]


def _abs(em: _Emitter, node: torch.fx.Node) -> str:
    """relu(x) + relu(-x) (exact: one of them is 0)."""
    return _absolute(em, _operand(em, node.args[0]))[0]


def _neg(em: _Emitter, node: torch.fx.Node) -> str:
    return _negated(em, _operand(em, node.args[0]))[0]


def _detach(em: _Emitter, node: torch.fx.Node) -> str:
    """x.detach(): a float value as train.stop_gradient (no gradient flows
    back through this use); integers and masks carry none anyway."""
    x = _operand(em, node.args[0])
    if x.element not in ("f32", "f16", "bf16") or x.name in em.masks:
        return x.name
    return _emit(em, "stop_gradient", x).name


def _rsqrt(em: _Emitter, node: torch.fx.Node) -> str:
    """1 / sqrt(x)."""
    x = _operand(em, node.args[0])
    return _reciprocal(em, _emit(em, "sqrt", x))[0]


def _pow(em: _Emitter, node: torch.fx.Node) -> str:
    """x ** c for a number c: train.pow (f32 under autocast, as PyTorch's
    fp32-listed pow; lowered with PyTorch's CPU special cases)."""
    x = _operand(em, node.args[0])
    exponent = node.args[1]
    if isinstance(exponent, torch.fx.Node):
        raise _Unsupported("a tensor exponent (numbers are mapped)")
    if exponent == 1:
        return x[0]
    if exponent == 0:  # ones, with no gradient (PyTorch's x ** 0)
        return _constant(em, 1.0, x[1], x[2])[0]
    if not math.isfinite(exponent):
        raise _Unsupported(f"exponent {exponent!r} (finite numbers are mapped)")
    return em.op(f"train.pow {x[0]} exponent {float_literal(exponent)} : "
                 f"{tensor_type(x[1], x[2])}")


def _masked_fill(em: _Emitter, node: torch.fx.Node) -> str:
    """x.masked_fill(mask, value) with a number: ``train.select(mask, value,
    x)``, exact for any fill (-inf, -1e9, finfo.min: in a 16-bit type the
    fill rounds as PyTorch's f16 masked_fill rounds it, and nothing is
    multiplied by it, so no NaN). The mask is a boolean of the step, a mask
    input, or one computed at import. No gradient reaches the mask or the
    filled elements."""
    x, mask = _operand(em, node.args[0]), _operand(em, node.args[1])
    value = node.args[2]
    if isinstance(value, torch.fx.Node):
        raise _Unsupported("a tensor fill value (numbers are mapped)")
    if x.element not in ("f32", "f16", "bf16"):
        raise _Unsupported(f"masked_fill of a {x.element} tensor (floats are mapped)")
    fill = _constant(em, float(value), (), x.element)
    return _select_value(em, _as_bool(em, mask), fill, x, _shape(node))


def _clamp(em: _Emitter, node: torch.fx.Node) -> str:
    """torch.clamp(x, min, max) with Python numbers (either may be None)."""
    x = _operand(em, node.args[0])
    lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
    hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    lo = float("-inf") if lo is None else lo
    hi = float("inf") if hi is None else hi
    if isinstance(lo, torch.fx.Node) or isinstance(hi, torch.fx.Node):
        raise _Unsupported("tensor bounds (numbers are mapped)")
    if not lo < hi:
        raise _Unsupported(f"min {lo} not below max {hi}")
    return _clamp_value(em, x, lo, hi)[0]


def _gelu(em: _Emitter, node: torch.fx.Node) -> str:
    x = _operand(em, node.args[0])
    approximate = node.kwargs.get("approximate", node.args[1] if len(node.args) > 1 else "none")
    if approximate not in ("none", "tanh"):
        raise _Unsupported(f"approximate={approximate!r}")
    attr = " approximate tanh" if approximate == "tanh" else ""
    return em.op(f"train.gelu {x[0]}{attr} : {tensor_type(x[1], x[2])}")


def _rsub(em: _Emitter, node: torch.fx.Node) -> str:
    """torch.rsub(x, other, alpha=1) = other - alpha * x (``1 - x``)."""
    args = _arguments(node)
    if args["alpha"] != 1:
        raise _Unsupported("an alpha other than 1")
    element = _element(node)
    x, other = (_tensor_or_scalar(em, args[k], element) for k in ("self", "other"))
    return em.op(f"train.sub {other.name}, {x.name} : {other.type}, {x.type} -> "
                 f"{tensor_type(_shape(node), element)}")


_FLOATS = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def _convert(em: _Emitter, node: torch.fx.Node) -> str:
    """x.to(dtype) / .float() / .half() / .bool() / .long() / type_as /
    _to_copy: the value itself where the step's type does not change (the
    imported model is f32; int64 is i32 in the step; a mask is f32 0 / 1),
    a user ``train.cast`` between float types (also of a float to its own
    type: the model fixed it), ``train.convert`` between integer, boolean
    and float ones."""
    x = _operand(em, node.args[0])
    target = node.meta["val"].dtype
    if x.name in em.masks and target in (torch.bool, torch.float32):
        return x.name  # a mask (f32 0 / 1) as bool, or as f32
    if target == torch.bool:
        return _as_bool(em, x).name if x.element == "i1" else em.op(
            f"train.convert {x.name} : {x.type} to {tensor_type(x.shape, 'i1')}")
    if target in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        if target not in (torch.int64, torch.int32):
            raise _Unsupported(f"a conversion to {target} (int32 and int64 are mapped)")
        if x.element == "i32":
            return x.name
        return em.op(f"train.convert {x.name} : {x.type} to {tensor_type(x.shape, 'i32')}")
    if target not in _FLOATS:
        raise _Unsupported(f"a conversion to {target}")
    if x.element in ("i1", "i32"):
        out = em.op(f"train.convert {x.name} : {x.type} to "
                    f"{tensor_type(x.shape, _FLOATS[target])}")
        if x.element == "i1" and target == torch.float32:
            em.masks.add(out)  # 0 / 1
        return out
    # The model's own cast between float types (Llama's RMSNorm and rotary
    # `.to(torch.float32)`, `x.float()`): a user cast, which keeps its type
    # under autocast as PyTorch's does (of an f32 value in the f32 imported
    # model, nothing once autocast has run).
    return em.op(f"train.cast {x.name} user : {x.type} to "
                 f"{tensor_type(x.shape, _FLOATS[target])}")


def _compare(predicate: str) -> Callable:
    """x == y, x != 0, a < b ... (aten.eq/ne/lt/le/gt/ge, Tensor or Scalar):
    ``train.compare``, an i1 result. An integer against a float compares as
    floats (PyTorch's promotion); a number takes the tensor's type."""
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        a = node.args[0]
        b = node.args[1]
        lhs = _operand(em, a)
        if lhs.name in em.masks or lhs.element == "i1":
            raise _Unsupported("a comparison of booleans")
        if isinstance(b, (int, float)) and not isinstance(b, bool):
            if lhs.element == "i32" and (isinstance(b, float) and not b.is_integer()):
                lhs = Value(em.op(f"train.convert {lhs.name} : {lhs.type} to "
                                  f"{tensor_type(lhs.shape, 'f32')}"), lhs.shape, "f32")
            if lhs.element == "i32":
                rhs = Value(em.op(f"train.constant dense<{int(b)}> : tensor<i32>"), (), "i32")
            else:
                rhs = _constant(em, float(b), (), lhs.element)
        else:
            rhs = _operand(em, b)
            if rhs.name in em.masks or rhs.element == "i1":
                raise _Unsupported("a comparison of booleans")
            if lhs.element != rhs.element:  # an integer against a float: floats
                lhs, rhs = (v if v.element != "i32" else Value(
                    em.op(f"train.convert {v.name} : {v.type} to "
                          f"{tensor_type(v.shape, 'f32')}"), v.shape, "f32")
                    for v in (lhs, rhs))
                if lhs.element != rhs.element:
                    raise _Unsupported(f"a comparison of {lhs.element} and {rhs.element}")
        return em.op(f"train.compare {lhs.name}, {rhs.name} {predicate} : {lhs.type}, "
                     f"{rhs.type} -> {tensor_type(_shape(node), 'i1')}")
    return handler


def _select_value(em: _Emitter, condition: Value, a: Value, b: Value,
                  shape: Sequence[int]) -> str:
    return em.op(f"train.select {condition.name}, {a.name}, {b.name} : {condition.type}, "
                 f"{a.type}, {b.type} -> {tensor_type(shape, a.element)}")


def _where(em: _Emitter, node: torch.fx.Node) -> str:
    """torch.where(condition, a, b) with float values (tensors or numbers):
    ``train.select``."""
    element = _element(node)
    if element not in ("f32", "f16", "bf16"):
        raise _Unsupported(f"where of {node.meta['val'].dtype} values (floats are mapped)")
    condition = _as_bool(em, _operand(em, node.args[0]))
    a, b = (_tensor_or_scalar(em, v, element) for v in node.args[1:3])
    if a.element != b.element or a.element not in ("f32", "f16", "bf16"):
        raise _Unsupported("where of values of other types")
    return _select_value(em, condition, a, b, _shape(node))


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.where.self: _where,
    torch.ops.aten.where.ScalarSelf: _where,
    torch.ops.aten.where.ScalarOther: _where,
    torch.ops.aten.where.Scalar: _where,
    **{getattr(torch.ops.aten, p).Tensor: _compare(p) for p in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{getattr(torch.ops.aten, p).Scalar: _compare(p) for p in ("eq", "ne", "lt", "le", "gt", "ge")},
    torch.ops.aten.detach.default: _detach,
    torch.ops.aten.rsub.Scalar: _rsub,
    torch.ops.aten.rsub.Tensor: _rsub,
    torch.ops.aten.to.dtype: _convert,
    torch.ops.aten.to.dtype_layout: _convert,
    torch.ops.aten.to.device: _convert,
    torch.ops.aten.to.other: _convert,
    torch.ops.aten._to_copy.default: _convert,
    torch.ops.aten.type_as.default: _convert,
    torch.ops.aten.relu.default: _unary("relu"),
    torch.ops.aten.tanh.default: _unary("tanh"),
    torch.ops.aten.sigmoid.default: _unary("sigmoid"),
    torch.ops.aten.exp.default: _unary("exp"),
    torch.ops.aten.log.default: _unary("log"),
    torch.ops.aten.sqrt.default: _unary("sqrt"),
    torch.ops.aten.add.Tensor: _binary("add"),
    torch.ops.aten.sub.Tensor: _binary("sub"),
    torch.ops.aten.mul.Tensor: _binary("mul"),
    torch.ops.aten.div.Tensor: _binary("div"),
    torch.ops.aten.gelu.default: _gelu,
    torch.ops.aten.hardtanh.default: _hardtanh,
    torch.ops.aten.leaky_relu.default: _leaky_relu,
    torch.ops.aten.silu.default: _silu,
    torch.ops.aten.hardswish.default: _hardswish,
    torch.ops.aten.hardsigmoid.default: _hardsigmoid,
    torch.ops.aten.abs.default: _abs,
    torch.ops.aten.neg.default: _neg,
    torch.ops.aten.rsqrt.default: _rsqrt,
    torch.ops.aten.pow.Tensor_Scalar: _pow,
    torch.ops.aten.clamp.default: _clamp,
    torch.ops.aten.masked_fill.Scalar: _masked_fill,
    torch.ops.aten.maximum.default: _binary("maximum"),
    torch.ops.aten.minimum.default: _binary("minimum"),
}
