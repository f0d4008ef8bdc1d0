"""Element-wise ATen ops: arithmetic, activations, clamps, fills."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional

import torch

from ._core import (Value, _Emitter, _Unsupported, _absolute, _arguments, _clamp_value, _constant, _element,
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
    """x.masked_fill(mask, value) with a bool model input as the mask (0 / 1
    in the step) and a number: x*(1-m) + v*m, exact for m in {0, 1} and
    finite x and v; for v = -inf (the additive attention mask PyTorch
    builds from a bool one) x + log(1 - m), which is x or -inf exactly
    (+inf: x - log(1 - m)). No gradient reaches the mask."""
    x, mask = _operand(em, node.args[0]), _operand(em, node.args[1])
    value = node.args[2]
    if mask[0] not in em.masks:
        raise _Unsupported("a mask that is not a bool model input (a mask computed in the "
                           "model is not mapped)")
    if isinstance(value, torch.fx.Node) or value != value:
        raise _Unsupported("a tensor or NaN fill value")
    shape, element = _shape(node), _element(node)
    one = _constant(em, 1.0, (), mask[2])
    kept = _emit(em, "sub", one, mask)  # 1 - m
    # A fill beyond f16's range (-1e9, finfo(float32).min: the attention
    # masks of many models) would round to -inf in a 16-bit type, and
    # -inf * 0 is NaN where the mask is 0: the fill's arithmetic stays f32
    # (train.precision), whatever the opt level.
    pinned = ' {train.precision = "fp32"}' if abs(value) > 65504 else ""

    def binary(op: str, a: Value, b: Value, out_shape=shape) -> Value:
        return Value(em.op(f"train.{op} {a[0]}, {b[0]}{pinned} : {tensor_type(a[1], a[2])}, "
                           f"{tensor_type(b[1], b[2])} -> {tensor_type(out_shape, element)}"),
                     tuple(out_shape), element)
    if math.isinf(value):
        pinned = ""
        return binary("add" if value < 0 else "sub", x, _emit(em, "log", kept))[0]
    filled = binary("mul", mask, _constant(em, float(value), (), mask[2]), mask.shape)
    return binary("add", binary("mul", x, kept), filled)[0]


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


def _filled(value: Optional[float]) -> Callable:
    """torch.zeros / ones / full (and their _like forms) of float32: a splat
    constant (``value`` None: full's own fill value)."""
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        if _element(node) != "f32":
            raise _Unsupported(f"a {node.meta['val'].dtype} constant (float32 is mapped)")
        fill = value
        if fill is None:
            fill = node.args[1] if len(node.args) > 1 else node.kwargs["fill_value"]
            if isinstance(fill, torch.fx.Node):
                raise _Unsupported("a tensor fill value")
        return _constant(em, float(fill), _shape(node), "f32")[0]
    return handler


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
    """x.to(dtype) / .float() / .half() / type_as / _to_copy between float
    types: the value itself where the type does not change (the imported
    model is f32), else ``train.cast``."""
    x = _operand(em, node.args[0])
    target = node.meta["val"].dtype
    if x.name in em.masks and target in (torch.bool, torch.float32):
        return x.name  # a mask (f32 0 / 1) as bool, or as f32
    if target not in _FLOATS or x.element not in ("f32", "f16", "bf16"):
        raise _Unsupported(f"a conversion of a {x.element} tensor to {target} computed from the "
                           "batch (conversions between float types are mapped)")
    if _FLOATS[target] == x.element:
        return x.name
    return em.op(f"train.cast {x.name} : {x.type} to "
                 f"{tensor_type(x.shape, _FLOATS[target])}")


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
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
    torch.ops.aten.zeros.default: _filled(0.0),
    torch.ops.aten.ones.default: _filled(1.0),
    torch.ops.aten.full.default: _filled(None),
    torch.ops.aten.zeros_like.default: _filled(0.0),
    torch.ops.aten.ones_like.default: _filled(1.0),
    torch.ops.aten.full_like.default: _filled(None),
    torch.ops.aten.minimum.default: _binary("minimum"),
}
