"""PyTorch model + loss -> a `train`-dialect forward function (MLIR text).

The model is captured with ``torch.export`` (docs/Python.md says why): its
ATen graph of high-level ops (``aten.linear``, ``aten.conv2d``,
``aten.batch_norm``, ...) with FakeTensor shapes, parameters and buffers
lifted to inputs, and for every node the module path and the Python stack.
Nothing of the model runs and no buffer changes. Each node is mapped by the
handler its ATen op has in ``_HANDLERS``; every emitted op carries the
user's module path and source line as its MLIR location, so amp-opt's
diagnostics and the precision report point at the user's code.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import torch

from ._errors import UnsupportedModelError, UnsupportedNode

_TORCH_DIR = os.path.dirname(torch.__file__)
_AMP_DIR = os.path.dirname(__file__)

_DTYPES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i32",  # labels and ids: passed to the step as i32
    torch.int32: "i32",
}


def float_literal(value: float) -> str:
    """``value`` as an MLIR float literal (always with a '.': 1e-05 -> 1.0e-05;
    infinities as their f64 bit patterns)."""
    if value in (float("inf"), float("-inf")):
        return "0x7FF0000000000000" if value > 0 else "0xFFF0000000000000"
    text = repr(float(value))
    if "." not in text and "e" in text:
        mantissa, exponent = text.split("e")
        return f"{mantissa}.0e{exponent}"
    return text


def tensor_type(shape: Sequence[int], element: str) -> str:
    """``tensor<2x3xf32>`` (``tensor<f32>`` for a scalar)."""
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{element}>"


@dataclasses.dataclass
class Argument:
    """One argument of the imported forward function."""

    name: str  # the model's name ("fc.weight"), or the input's
    # "input", "labels", "param", "frozen" (a parameter not trained),
    # "state" (a buffer), "counter" (dropout's step counter, amp's own)
    kind: str
    shape: Tuple[int, ...]
    element: str
    group: int = 0  # the optimizer's param group (parameters)
    weight_decay: Optional[float] = None  # the group's, where groups differ
    boolean: bool = False  # a bool model input (a mask), passed as f32 0 / 1


@dataclasses.dataclass
class ImportedNode:
    """One node of the captured graph and the train ops it became."""

    name: str  # the graph's node name ("conv2d_1")
    op: str  # the ATen op ("aten.conv2d.default")
    module: str  # module path ("layer1.0.conv1"; "" at the top level)
    module_type: str  # "Conv2d", or "" for functions
    file: str
    line: int
    train_ops: List[str]  # in emission order; empty for an identity


@dataclasses.dataclass
class ImportedModel:
    """The forward function as text and what the Python side needs of it."""

    text: str
    arguments: List[Argument]
    # num_batches_tracked buffers the step does not carry (counted in
    # Python): their names.
    counters: List[str]
    # Every call node, in graph order (for amp.explain).
    nodes: List[ImportedNode] = dataclasses.field(default_factory=list)
    # What blocks compilation (import_model(strict=False) only).
    problems: List[UnsupportedNode] = dataclasses.field(default_factory=list)


class _LossModule(torch.nn.Module):
    """``loss_fn(model(*inputs), target)`` as one module for torch.export."""

    def __init__(self, model: torch.nn.Module, loss_fn: Callable):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, *args):
        return self.loss_fn(self.model(*args[:-1]), args[-1])


def _user_frame(node: torch.fx.Node) -> Tuple[str, int]:
    """The innermost frame of the node's stack outside torch and amp."""
    trace = node.meta.get("stack_trace") or ""
    best = ("<unknown>", 0)
    for line in trace.splitlines():
        line = line.strip()
        if not line.startswith('File "'):
            continue
        try:
            path = line[len('File "'):line.index('", line ')]
            number = int(line.split('", line ')[1].split(",")[0])
        except (ValueError, IndexError):
            continue
        if path.startswith(_TORCH_DIR) or path.startswith(_AMP_DIR):
            continue
        best = (path, number)
    return best


def _caller() -> Tuple[str, int]:
    """The innermost frame outside torch and amp of the current call: where
    the user called amp.compile / to_mlir / explain (the location of nodes
    that lie wholly in torch's code, such as a loss module's)."""
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<"):
            path = os.path.abspath(path)
            if not (path.startswith(_TORCH_DIR) or path.startswith(_AMP_DIR)):
                return path, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


def _user_frame_of_error(error: BaseException) -> Tuple[str, int]:
    """The innermost frame outside torch and amp that a capture error's
    message (or traceback) names: the user's line that export rejected."""
    import re
    import traceback
    text = str(error) + "".join(traceback.format_exception(error))
    best = ("<unknown>", 0)
    for match in re.finditer(r'File "([^"]+)", line (\d+)', text):
        path = match.group(1)
        if not (path.startswith(_TORCH_DIR) or path.startswith(_AMP_DIR)):
            best = (path, int(match.group(2)))
    return best


def _innermost_module(node: torch.fx.Node) -> Tuple[str, Any]:
    """(path, type) of the innermost module a node was traced in."""
    stack = node.meta.get("nn_module_stack") or {}
    return list(stack.values())[-1] if stack else ("", "")


def _unwrapped(name: str) -> str:
    """A name in _LossModule ("model.fc.weight") as the user's model names it."""
    for prefix in ("model.", "loss_fn."):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _module_path(node: torch.fx.Node) -> str:
    """The user's module path of a node ("layer3.0.conv1"; "" at the top)."""
    path = _innermost_module(node)[0]
    return "" if path == "model" else _unwrapped(path)


def _module_type(node: torch.fx.Node) -> str:
    kind = _innermost_module(node)[1]
    return kind if isinstance(kind, str) else getattr(kind, "__name__", str(kind))


class _Emitter:
    """Builds the function body: SSA names, types and located ops."""

    def __init__(self):
        self.lines: List[str] = []
        self.values: Dict[torch.fx.Node, Tuple[str, Tuple[int, ...], str]] = {}
        self.counter = 0
        self.location = 'loc(unknown)'
        self.dropouts = 0  # dropout ops so far (each one's seed)
        self.argument_count = 0  # the model's arguments, once known
        self.counter_argument: Optional[str] = None  # the step counter's SSA name
        # The SSA names of bool model inputs (0 / 1 in f32).
        self.masks: Set[str] = set()
        # num_batches_tracked of each momentum=None batch norm: its current value.
        self.counts: Dict[str, Tuple[str, Tuple[int, ...], str]] = {}

    def step_counter(self) -> str:
        """The step-counter argument dropout masks are keyed by: made on
        first use as the argument after the model's (import_model adds it
        to the signature and returns it incremented)."""
        if self.counter_argument is None:
            self.counter_argument = f"%a{self.argument_count}"
        return self.counter_argument

    def fresh(self) -> str:
        self.counter += 1
        return f"%v{self.counter}"

    def op(self, text: str) -> str:
        """Emits ``%vN = <text>`` at the current location; returns %vN."""
        name = self.fresh()
        self.lines.append(f"  {name} = {text} {self.location}")
        return name


def _shape(node: torch.fx.Node) -> Tuple[int, ...]:
    val = node.meta.get("val")
    return tuple(int(d) for d in val.shape)


def _element(node: torch.fx.Node) -> str:
    val = node.meta.get("val")
    return _DTYPES.get(val.dtype, str(val.dtype))


class _Unsupported(Exception):
    """A node the importer cannot map; the message says why."""


# --------------------------------------------------------------------------
# Handlers: one per ATen op, grouped by family. Each gets the emitter, the
# node and its operands (SSA name, shape, element) and returns the SSA name
# of the node's value.
# --------------------------------------------------------------------------

Value = Tuple[str, Tuple[int, ...], str]


def _operand(em: _Emitter, arg: Any) -> Value:
    if isinstance(arg, torch.fx.Node):
        if arg not in em.values:
            raise _Unsupported(f"uses {arg.name}, which was not imported")
        return em.values[arg]
    raise _Unsupported(f"a constant operand {arg!r} where a tensor is expected")


def _reshape(em: _Emitter, value: Value, shape: Sequence[int]) -> Value:
    name, old, element = value
    if tuple(old) == tuple(shape):
        return value
    out = em.op(
        f"train.reshape {name} : {tensor_type(old, element)} -> "
        f"{tensor_type(shape, element)}")
    return (out, tuple(shape), element)


def _linear(em: _Emitter, node: torch.fx.Node) -> str:
    x = _operand(em, node.args[0])
    w = _operand(em, node.args[1])
    b = _operand(em, node.args[2]) if len(node.args) > 2 and node.args[2] is not None else None
    out_shape = _shape(node)
    element = _element(node)
    features = w[1][0]
    rows = 1
    for d in x[1][:-1]:
        rows *= d
    x2 = _reshape(em, x, (rows, x[1][-1]))
    operands = f"{x2[0]}, {w[0]}" + (f", {b[0]}" if b else "")
    types = f"{tensor_type(x2[1], x2[2])}, {tensor_type(w[1], w[2])}" + (
        f", {tensor_type(b[1], b[2])}" if b else "")
    y = em.op(f"train.matmul {operands} transpose_rhs : {types} -> "
              f"{tensor_type((rows, features), element)}")
    return _reshape(em, (y, (rows, features), element), out_shape)[0]


def _unary(op: str) -> Callable:
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        x = _operand(em, node.args[0])
        return em.op(f"train.{op} {x[0]} : {tensor_type(x[1], x[2])}")
    return handler


def _constant(em: _Emitter, value: float, shape: Sequence[int], element: str) -> Value:
    """A splat ``train.constant`` of ``value``."""
    return (em.op(f"train.constant dense<{float_literal(value)}> : "
                  f"{tensor_type(shape, element)}"), tuple(shape), element)


def _tensor_or_scalar(em: _Emitter, arg: Any, element: str) -> Value:
    """A tensor operand, or a Python number as a rank-0 constant of ``element``."""
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return _constant(em, arg, (), element)
    return _operand(em, arg)


def _axis(dim: int, rank: int) -> int:
    """A PyTorch dimension (maybe negative) as the dialect's 0 <= axis < rank."""
    return dim + rank if dim < 0 else dim


def _binary(op: str) -> Callable:
    def handler(em: _Emitter, node: torch.fx.Node) -> str:
        if len(node.args) > 2 or node.kwargs.get("alpha", 1) != 1:
            raise _Unsupported("an alpha other than 1")
        lhs, rhs = (_tensor_or_scalar(em, a, _element(node)) for a in node.args[:2])
        shape, element = _shape(node), _element(node)
        return em.op(f"train.{op} {lhs[0]}, {rhs[0]} : {tensor_type(lhs[1], lhs[2])}, "
                     f"{tensor_type(rhs[1], rhs[2])} -> {tensor_type(shape, element)}")
    return handler


def _view(em: _Emitter, node: torch.fx.Node) -> str:
    x = _operand(em, node.args[0])
    return _reshape(em, x, _shape(node))[0]


def _transpose(em: _Emitter, node: torch.fx.Node) -> str:
    """aten.transpose.int / permute / t / numpy_T as ``train.transpose``."""
    x = _operand(em, node.args[0])
    rank = len(x[1])
    if node.target is torch.ops.aten.permute.default:
        permutation = [_axis(d, rank) for d in node.args[1]]
    else:
        if node.target is torch.ops.aten.t.default:
            a, b = 0, rank - 1
        else:
            a, b = (_axis(d, rank) for d in node.args[1:3])
        permutation = list(range(rank))
        permutation[a], permutation[b] = permutation[b], permutation[a]
    if permutation == list(range(rank)):
        return x[0]
    return em.op(f"train.transpose {x[0]} permutation {permutation} : "
                 f"{tensor_type(x[1], x[2])} -> {tensor_type(_shape(node), x[2])}")


def _slice(em: _Emitter, x: Value, offsets: Sequence[int], sizes: Sequence[int]) -> Value:
    if tuple(sizes) == tuple(x[1]):
        return x
    return (em.op(f"train.slice {x[0]} offsets {list(offsets)} : {tensor_type(x[1], x[2])} "
                  f"-> {tensor_type(sizes, x[2])}"), tuple(sizes), x[2])


def _select(em: _Emitter, node: torch.fx.Node) -> str:
    """x.select(dim, i) (``x[:, i]``): a slice of size 1, then a reshape."""
    x = _operand(em, node.args[0])
    dim = _axis(node.args[1], len(x[1]))
    index = node.args[2] + x[1][dim] if node.args[2] < 0 else node.args[2]
    offsets = [0] * len(x[1])
    offsets[dim] = index
    sizes = list(x[1])
    sizes[dim] = 1
    return _reshape(em, _slice(em, x, offsets, sizes), _shape(node))[0]


def _slice_tensor(em: _Emitter, node: torch.fx.Node) -> str:
    """``x[a:b]`` along one dimension (step 1)."""
    args = list(node.args) + [None] * (5 - len(node.args))
    x = _operand(em, args[0])
    dim = _axis(args[1] or 0, len(x[1]))
    if (args[4] or 1) != 1:
        raise _Unsupported("slicing with a step other than 1")
    size = x[1][dim]
    start = args[2] or 0
    start = max(0, min(size, start + size if start < 0 else start))
    offsets = [0] * len(x[1])
    offsets[dim] = start
    return _slice(em, x, offsets, _shape(node))[0]


def _concat(em: _Emitter, node: torch.fx.Node) -> str:
    values = [_operand(em, a) for a in node.args[0]]
    shape = _shape(node)
    axis = _axis(node.args[1] if len(node.args) > 1 else 0, len(shape))
    names = ", ".join(v[0] for v in values)
    types = ", ".join(tensor_type(v[1], v[2]) for v in values)
    return em.op(f"train.concat {names} axis {axis} : {types} -> "
                 f"{tensor_type(shape, _element(node))}")


def _matmul(em: _Emitter, node: torch.fx.Node) -> str:
    """``a @ b``, torch.matmul, bmm: train.matmul for two matrices,
    train.batch_matmul when either has batch dimensions."""
    a, b = _operand(em, node.args[0]), _operand(em, node.args[1])
    shape, element = _shape(node), _element(node)
    if len(a[1]) < 2 or len(b[1]) < 2:
        raise _Unsupported("a matrix product with a vector operand (rank 1)")
    if len(a[1]) == 2 and len(b[1]) == 2:
        op = "train.matmul"
    else:
        op = "train.batch_matmul"
        # the dialect's batch_matmul takes rank >= 3 operands: a matrix
        # operand gets a leading 1 (broadcast over the other's batch)
        if len(a[1]) == 2:
            a = _reshape(em, a, (1,) + a[1])
        if len(b[1]) == 2:
            b = _reshape(em, b, (1,) + b[1])
    return em.op(f"{op} {a[0]}, {b[0]} : {tensor_type(a[1], a[2])}, "
                 f"{tensor_type(b[1], b[2])} -> {tensor_type(shape, element)}")


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


def _clamp_value(em: _Emitter, x: Value, lo: float, hi: float) -> Value:
    return (em.op(f"train.clamp {x[0]} min {float_literal(lo)} max {float_literal(hi)} : "
                  f"{tensor_type(x[1], x[2])}"), x[1], x[2])


def _hardtanh(em: _Emitter, node: torch.fx.Node) -> str:
    """hardtanh(x, min_val=-1, max_val=1); nn.ReLU6 is hardtanh(x, 0, 6)."""
    x = _operand(em, node.args[0])
    lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min_val", -1.0)
    hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max_val", 1.0)
    if not lo < hi:
        raise _Unsupported(f"min_val {lo} not below max_val {hi}")
    return _clamp_value(em, x, lo, hi)[0]


# Activations written with the dialect's ops, in PyTorch's CPU kernels' own
# order of operations (so the forward values are PyTorch's); autodiff gives
# their gradients (equal to PyTorch's except exactly at a kink).

def _emit(em: _Emitter, op: str, *values: Value) -> Value:
    """``train.<op>`` of one or two same-shaped values (rank-0 broadcast)."""
    shape = max((v[1] for v in values), key=len)
    element = values[0][2]
    if len(values) == 1:
        return (em.op(f"train.{op} {values[0][0]} : {tensor_type(shape, element)}"), shape, element)
    a, b = values
    return (em.op(f"train.{op} {a[0]}, {b[0]} : {tensor_type(a[1], a[2])}, "
                  f"{tensor_type(b[1], b[2])} -> {tensor_type(shape, element)}"), shape, element)


def _negated(em: _Emitter, x: Value) -> Value:
    """-x, as x * -1 (exact)."""
    return _emit(em, "mul", x, _constant(em, -1.0, (), x[2]))


def _reciprocal(em: _Emitter, x: Value) -> Value:
    """1 / x (a division by a tensor: f32 under autocast, as PyTorch's
    fp32-listed reciprocal and rsqrt)."""
    return _emit(em, "div", _constant(em, 1.0, (), x[2]), x)


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

    def binary(op: str, a: Value, b: Value) -> Value:
        return (em.op(f"train.{op} {a[0]}, {b[0]} : {tensor_type(a[1], a[2])}, "
                      f"{tensor_type(b[1], b[2])} -> {tensor_type(shape, element)}"),
                tuple(shape), element)
    if math.isinf(value):
        return binary("add" if value < 0 else "sub", x, _emit(em, "log", kept))[0]
    filled = _emit(em, "mul", mask, _constant(em, float(value), (), mask[2]))
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


def _layer_norm(em: _Emitter, node: torch.fx.Node) -> str:
    # aten.layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)
    args = list(node.args) + [None] * (6 - len(node.args))
    x = _operand(em, args[0])
    normalized = tuple(args[1])
    eps = 1e-5 if args[4] is None else args[4]
    if tuple(x[1][len(x[1]) - len(normalized):]) != normalized:
        raise _Unsupported(f"normalized_shape {list(normalized)} is not the input's trailing "
                           f"shape {list(x[1])}")
    scale = _operand(em, args[2]) if args[2] is not None else \
        _constant(em, 1.0, normalized, "f32")
    bias = _operand(em, args[3]) if args[3] is not None else \
        _constant(em, 0.0, normalized, scale[2])
    attrs = f" epsilon {float_literal(eps)}" if eps != 1e-5 else ""
    return em.op(f"train.layer_norm {x[0]}, {scale[0]}, {bias[0]}{attrs} : "
                 f"{tensor_type(x[1], x[2])}, {tensor_type(scale[1], scale[2])}")


def _group_norm(em: _Emitter, node: torch.fx.Node) -> str:
    """aten.group_norm(x, groups, weight, bias, eps=1e-5): the layer norm of
    each [C / groups, H, W] group (biased variance, as PyTorch's), then the
    per-channel affine. f32 under autocast (fp32-listed, as group_norm)."""
    x_arg, groups, weight, bias, eps = _node_args(
        node, ["input", "num_groups", "weight", "bias", "eps"], [None, None, None, None, 1e-5])
    x = _operand(em, x_arg)
    n, c = x[1][0], x[1][1]
    if c % groups:
        raise _Unsupported(f"{c} channels in {groups} groups")
    rest = 1
    for d in x[1][1:]:
        rest *= d
    rest //= groups
    grouped = _reshape(em, x, (n, groups, rest))
    ones, zeros = _constant(em, 1.0, (rest,), "f32"), _constant(em, 0.0, (rest,), "f32")
    attrs = f" epsilon {float_literal(eps)}" if eps != 1e-5 else ""
    normed = (em.op(f"train.layer_norm {grouped[0]}, {ones[0]}, {zeros[0]}{attrs} : "
                    f"{tensor_type(grouped[1], grouped[2])}, {tensor_type(ones[1], 'f32')}"),
              grouped[1], grouped[2])
    y = _reshape(em, normed, x[1])
    per_channel = (c,) + (1,) * (len(x[1]) - 2)
    if weight is not None:
        y = _emit(em, "mul", y, _reshape(em, _operand(em, weight), per_channel))
    if bias is not None:
        y = _emit(em, "add", y, _reshape(em, _operand(em, bias), per_channel))
    return y[0]


def _embedding(em: _Emitter, node: torch.fx.Node) -> str:
    # aten.embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)
    args = list(node.args) + [None] * (5 - len(node.args))
    table, indices = _operand(em, args[0]), _operand(em, args[1])
    if args[3]:
        raise _Unsupported("scale_grad_by_freq=True")
    # nn.Embedding normalises a negative padding_idx; -1 is ATen's "none".
    pad = f" padding_idx {args[2]}" if args[2] not in (None, -1) else ""
    return em.op(f"train.embedding {table[0]}, {indices[0]}{pad} : "
                 f"{tensor_type(table[1], table[2])}, "
                 f"{tensor_type(indices[1], 'i32')} -> {tensor_type(_shape(node), table[2])}")


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


def _attention(em: _Emitter, node: torch.fx.Node) -> str:
    """F.scaled_dot_product_attention as PyTorch's math form:
    softmax(q k^T * scale [+ mask]) v, scale = 1/sqrt(head dim)."""
    args = list(node.args) + [None] * (6 - len(node.args))
    q, k, v = (_operand(em, a) for a in args[:3])
    mask = args[3] if args[3] is not None else node.kwargs.get("attn_mask")
    dropout_p = args[4] if args[4] is not None else node.kwargs.get("dropout_p", 0.0)
    causal = args[5] if args[5] is not None else node.kwargs.get("is_causal", False)
    scale = node.kwargs.get("scale")
    if node.kwargs.get("enable_gqa"):
        raise _Unsupported("enable_gqa=True")
    element = q[2]
    scores_shape = tuple(q[1][:-1]) + (k[1][-2],)
    scores = em.op(f"train.batch_matmul {q[0]}, {k[0]} transpose_rhs : "
                   f"{tensor_type(q[1], element)}, {tensor_type(k[1], k[2])} -> "
                   f"{tensor_type(scores_shape, element)}")
    factor = _constant(em, scale if scale is not None else q[1][-1] ** -0.5, (), element)
    scores = _emit(em, "mul", (scores, scores_shape, element), factor)[0]
    if mask is not None:
        m = _operand(em, mask)
        if m[2] not in ("f32", "f16", "bf16"):
            raise _Unsupported("a boolean attention mask (give a float mask, or is_causal)")
        scores = em.op(f"train.add {scores}, {m[0]} : {tensor_type(scores_shape, element)}, "
                       f"{tensor_type(m[1], m[2])} -> {tensor_type(scores_shape, element)}")
    attr = " causal" if causal else ""
    probs = em.op(f"train.softmax {scores} axis {len(scores_shape) - 1}{attr} : "
                  f"{tensor_type(scores_shape, element)}")
    if dropout_p:
        probs = _dropout_op(em, (probs, scores_shape, element), float(dropout_p))
    return em.op(f"train.batch_matmul {probs}, {v[0]} : {tensor_type(scores_shape, element)}, "
                 f"{tensor_type(v[1], v[2])} -> {tensor_type(_shape(node), element)}")


def _conv2d(em: _Emitter, node: torch.fx.Node) -> str:
    args = list(node.args) + [None] * (7 - len(node.args))
    x, w = _operand(em, args[0]), _operand(em, args[1])
    bias = args[2]
    stride = list(args[3] or [1, 1])
    padding = args[4] if args[4] is not None else [0, 0]
    dilation = list(args[5] or [1, 1])
    groups = args[6] or 1
    stride, dilation = ([v[0]] * 2 if len(v) == 1 else v for v in (stride, dilation))
    if isinstance(padding, str):  # 'valid' or 'same' (stride 1)
        if padding == "valid":
            padding = [0, 0]
        else:
            total = [dl * (k - 1) for dl, k in zip(dilation, w[1][2:])]
            # An even window: PyTorch pads one more row / column at the end
            # (zeros after the input, then the symmetric part).
            x = _extend(em, x, [t % 2 for t in total], zero=True)
            padding = [t // 2 for t in total]
    padding = list(padding)
    padding = [padding[0]] * 2 if len(padding) == 1 else padding
    shape, element = _shape(node), _element(node)
    attrs = ""
    if stride != [1, 1]:
        attrs += f" strides {stride}"
    if padding != [0, 0]:
        attrs += f" padding {padding}"
    if dilation != [1, 1]:
        attrs += f" dilation {dilation}"
    if groups != 1:
        attrs += f" groups {groups}"
    if bias is None:
        return em.op(f"train.conv2d {x[0]}, {w[0]}{attrs} : {tensor_type(x[1], x[2])}, "
                     f"{tensor_type(w[1], w[2])} -> {tensor_type(shape, element)}")
    # The bias belongs to the convolution (added in its accumulator, in its
    # precision), as PyTorch's conv computes it.
    b = _operand(em, bias)
    return em.op(f"train.conv2d {x[0]}, {w[0]}, {b[0]}{attrs} : {tensor_type(x[1], x[2])}, "
                 f"{tensor_type(w[1], w[2])}, {tensor_type(b[1], b[2])} -> "
                 f"{tensor_type(shape, element)}")


def _node_args(node: torch.fx.Node, names: Sequence[str], defaults: Sequence[Any]) -> List[Any]:
    """The node's arguments by position or keyword, with PyTorch's defaults."""
    return [node.args[i] if i < len(node.args) else node.kwargs.get(name, default)
            for i, (name, default) in enumerate(zip(names, defaults))]


def _pairs(*values: Any) -> List[List[int]]:
    return [[int(v)] * 2 if isinstance(v, int) else
            ([int(v[0])] * 2 if len(v) == 1 else [int(u) for u in v]) for v in values]


def _pool_extent(size: int, kernel: int, stride: int, pad: int, ceil: bool,
                 dilation: int = 1) -> Tuple[int, int]:
    """PyTorch's pooling output size along one axis, and the positions to add
    after the input so that windows of `kernel` taps `dilation` apart with
    symmetric `pad` give it (ceil_mode's last, partial window)."""
    kernel = dilation * (kernel - 1) + 1  # the window's span
    span = size + 2 * pad - kernel
    out = (-(-span // stride) if ceil else span // stride) + 1
    if ceil and (out - 1) * stride >= size + pad:
        out -= 1  # the last window must start inside the input or its left padding
    return out, max(0, (out - 1) * stride + kernel - (size + 2 * pad))


_NEGATIVE_INFINITY = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80"}


def _extend(em: _Emitter, x: Value, extra: Sequence[int], zero: bool,
            lowest: bool = False) -> Value:
    """``x`` [N, C, H, W] with ``extra`` rows and columns after it: copies of
    its last row / column (they never change a max: every window reaching
    them also covers the original), zeros (an average's), or with ``lowest``
    -inf (a dilated max's windows may skip the original)."""
    for axis, count in ((2, extra[0]), (3, extra[1])):
        if count == 0:
            continue
        offsets = [0, 0, 0, 0]
        offsets[axis] = x[1][axis] - 1
        sizes = list(x[1])
        sizes[axis] = 1
        edge = _slice(em, x, offsets, sizes)
        if lowest:
            edge = (em.op(f"train.constant dense<{_NEGATIVE_INFINITY[x[2]]}> : "
                          f"{tensor_type(sizes, x[2])}"), tuple(sizes), x[2])
        elif zero:  # x * 0 keeps x's type under autocast (a rank-0 constant)
            edge = _emit(em, "mul", edge, _constant(em, 0.0, (), x[2]))
        pieces = [x] + [edge] * count
        shape = list(x[1])
        shape[axis] += count
        names = ", ".join(v[0] for v in pieces)
        types = ", ".join(tensor_type(v[1], v[2]) for v in pieces)
        x = (em.op(f"train.concat {names} axis {axis} : {types} -> "
                   f"{tensor_type(shape, x[2])}"), tuple(shape), x[2])
    return x


def _pool_geometry(x: Value, kernel, stride, padding, ceil_mode,
                   dilation=(1, 1)) -> Tuple[List[int], List[int]]:
    """(output size, positions added at the end) per spatial axis."""
    sizes, extras = [], []
    for axis in range(2):
        out, extra = _pool_extent(x[1][2 + axis], kernel[axis], stride[axis],
                                  padding[axis], ceil_mode, dilation[axis])
        sizes.append(out)
        extras.append(extra)
    for axis in range(2):
        if 2 * padding[axis] > kernel[axis]:
            raise _Unsupported(f"padding {padding} more than half the kernel {kernel}")
    return sizes, extras


def _max_pool2d(em: _Emitter, node: torch.fx.Node) -> str:
    """aten.max_pool2d(x, kernel, stride=kernel, padding=0, dilation=1,
    ceil_mode=False); ceil_mode's partial windows by repeating the last row
    and column (-inf ones when dilated)."""
    x_arg, kernel, stride, padding, dilation, ceil_mode = _node_args(
        node, ["self", "kernel_size", "stride", "padding", "dilation", "ceil_mode"],
        [None, None, None, 0, 1, False])
    x = _operand(em, x_arg)
    kernel, padding, dilation = _pairs(kernel, padding, dilation)
    stride = _pairs(stride)[0] if stride else kernel
    _, extra = _pool_geometry(x, kernel, stride, padding, bool(ceil_mode), dilation)
    x = _extend(em, x, extra, zero=False, lowest=dilation != [1, 1])
    shape, element = _shape(node), _element(node)
    pad = f" padding {padding}" if padding != [0, 0] else ""
    if dilation != [1, 1]:
        pad += f" dilation {dilation}"
    return em.op(f"train.max_pool2d {x[0]} kernel {kernel} strides {stride}{pad} : "
                 f"{tensor_type(x[1], x[2])} -> {tensor_type(shape, element)}")


def _avg_pool2d(em: _Emitter, node: torch.fx.Node) -> str:
    """aten.avg_pool2d(x, kernel, stride=kernel, padding=0, ceil_mode=False,
    count_include_pad=True, divisor_override=None). train.avg_pool2d divides
    every window by the kernel's size; windows PyTorch divides by another
    count (count_include_pad=False at the border, ceil_mode's partial
    windows) are rescaled by a constant map (a non-scalar f32 constant: under
    autocast that product, and what follows it, is f32)."""
    x_arg, kernel, stride, padding, ceil_mode, include_pad, divisor = _node_args(
        node, ["self", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
               "divisor_override"], [None, None, None, 0, False, True, None])
    if divisor is not None:
        raise _Unsupported("divisor_override")
    x = _operand(em, x_arg)
    kernel, padding = _pairs(kernel, padding)
    stride = _pairs(stride)[0] if stride else kernel
    (oh, ow), extra = _pool_geometry(x, kernel, stride, padding, bool(ceil_mode))
    height, width = x[1][2], x[1][3]
    x = _extend(em, x, extra, zero=True)
    shape, element = _shape(node), _element(node)
    pad = f" padding {padding}" if padding != [0, 0] else ""
    y = (em.op(f"train.avg_pool2d {x[0]} kernel {kernel} strides {stride}{pad} : "
               f"{tensor_type(x[1], x[2])} -> {tensor_type(shape, element)}"), tuple(shape), element)

    def divisors(out: int, size: int, k: int, s: int, p: int) -> List[Tuple[int, int]]:
        # PyTorch's CPU kernel: (with padding, without padding) extent of each window.
        result = []
        for o in range(out):
            start = o * s - p
            end = min(start + k, size + p)
            result.append((end - start, min(end, size) - max(start, 0)))
        return result
    rows = divisors(oh, height, kernel[0], stride[0], padding[0])
    cols = divisors(ow, width, kernel[1], stride[1], padding[1])
    area = kernel[0] * kernel[1]
    factors = [[area / (r[0] * c[0] if include_pad else r[1] * c[1]) for c in cols] for r in rows]
    if all(f == 1.0 for row in factors for f in row):
        return y[0]
    text = "[" + ", ".join("[" + ", ".join(float_literal(f) for f in row) + "]"
                           for row in factors) + "]"
    scale = (em.op(f"train.constant dense<[[{text}]]> : {tensor_type((1, 1, oh, ow), element)}"),
             (1, 1, oh, ow), element)
    return _emit(em, "mul", y, scale)[0]


def _averaging_matrix(inputs: int, outputs: int) -> List[List[float]]:
    """Row i averages PyTorch's adaptive window i of ``inputs`` positions:
    [floor(i * in / out), ceil((i + 1) * in / out))."""
    rows = []
    for i in range(outputs):
        start, end = (i * inputs) // outputs, -((-(i + 1) * inputs) // outputs)
        rows.append([1.0 / (end - start) if start <= j < end else 0.0
                     for j in range(inputs)])
    return rows


def _adaptive_avg_pool2d(em: _Emitter, node: torch.fx.Node) -> str:
    x = _operand(em, node.args[0])
    size = list(node.args[1])
    size = [size[0]] * 2 if len(size) == 1 else size
    n, c, height, width = x[1]
    size = [height if s is None else s for s in size[:1]] + \
        [width if s is None else s for s in size[1:]]
    shape, element = _shape(node), _element(node)
    if height % size[0] == 0 and width % size[1] == 0:
        kernel = [height // size[0], width // size[1]]
        if kernel == [1, 1]:
            return x[0]
        return em.op(f"train.avg_pool2d {x[0]} kernel {kernel} strides {kernel} : "
                     f"{tensor_type(x[1], x[2])} -> {tensor_type(shape, element)}")
    # Windows of different sizes (7x7 from 1x1 or 3x3 maps, say): the pooling
    # is linear and separable, out = P_h x P_w^T per image and channel, with
    # PyTorch's windows as the rows of two constant averaging matrices.
    def matrix(rows: List[List[float]]) -> Value:
        text = "[" + ", ".join("[" + ", ".join(float_literal(v) for v in r) + "]"
                               for r in rows) + "]"
        shape3 = (1, len(rows), len(rows[0]))
        return (em.op(f"train.constant dense<[{text}]> : {tensor_type(shape3, element)}"),
                shape3, element)
    planes = _reshape(em, x, (n * c, height, width))
    ph, pw = matrix(_averaging_matrix(height, size[0])), matrix(_averaging_matrix(width, size[1]))
    rows_shape = (n * c, size[0], width)
    rows = em.op(f"train.batch_matmul {ph[0]}, {planes[0]} : {tensor_type(ph[1], element)}, "
                 f"{tensor_type(planes[1], element)} -> {tensor_type(rows_shape, element)}")
    out_shape = (n * c, size[0], size[1])
    out = em.op(f"train.batch_matmul {rows}, {pw[0]} transpose_rhs : "
                f"{tensor_type(rows_shape, element)}, {tensor_type(pw[1], element)} -> "
                f"{tensor_type(out_shape, element)}")
    return _reshape(em, (out, out_shape, element), shape)[0]


def _broadcast_tensors(em: _Emitter, node: torch.fx.Node) -> List[Value]:
    """torch.broadcast_tensors: each operand broadcast to the common shape
    (F.mse_loss calls it); its elements are taken by getitem nodes."""
    values = [_operand(em, a) for a in node.args[0]]
    shape = tuple(int(d) for d in node.meta["val"][0].shape)
    out = []
    for v in values:
        if tuple(v[1]) == shape:
            out.append(v)
            continue
        out.append((em.op(f"train.broadcast {v[0]} : {tensor_type(v[1], v[2])} -> "
                          f"{tensor_type(shape, v[2])}"), shape, v[2]))
    return out


def _split(em: _Emitter, node: torch.fx.Node) -> List[Value]:
    """chunk / split / split_with_sizes along one dimension: one train.slice
    per piece, at the offsets PyTorch gives them (the meta's shapes)."""
    x = _operand(em, node.args[0])
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    dim = _axis(dim, len(x[1]))
    pieces, offset = [], 0
    for val in node.meta["val"]:
        shape = tuple(int(d) for d in val.shape)
        offsets = [0] * len(x[1])
        offsets[dim] = offset
        pieces.append(_slice(em, x, offsets, shape))
        offset += shape[dim]
    return pieces


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


def _absolute(em: _Emitter, x: Value) -> Value:
    return _emit(em, "add", _emit(em, "relu", x), _emit(em, "relu", _negated(em, x)))


def _expand(em: _Emitter, node: torch.fx.Node) -> str:
    """x.expand(*sizes): train.broadcast to the node's shape (NumPy rules:
    size-1 and missing leading dimensions repeat)."""
    x = _operand(em, node.args[0])
    shape = _shape(node)
    if tuple(x[1]) == tuple(shape):
        return x[0]
    return em.op(f"train.broadcast {x[0]} : {tensor_type(x[1], x[2])} -> "
                 f"{tensor_type(shape, x[2])}")


def _cross_entropy_op(em: _Emitter, logits: Value, labels: Value,
                      ignore_index: Optional[int] = -100, label_smoothing: float = 0.0) -> str:
    """train.cross_entropy; rows labelled ``ignore_index`` (PyTorch's -100 by
    default) count for nothing; ``label_smoothing`` as PyTorch's (inside the
    op, so ignored rows are left out of the smoothing term too)."""
    if ignore_index is not None and not isinstance(ignore_index, int):
        raise _Unsupported(f"ignore_index={ignore_index!r}")
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


_HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    # GEMM-like
    torch.ops.aten.linear.default: _linear,
    torch.ops.aten.conv2d.default: _conv2d,
    torch.ops.aten.conv2d.padding: _conv2d,  # padding="same" / "valid"
    # element-wise
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
    # shape
    torch.ops.aten.view.default: _view,
    torch.ops.aten.reshape.default: _view,
    torch.ops.aten.flatten.using_ints: _view,
    torch.ops.aten.unflatten.int: _view,
    torch.ops.aten.unsqueeze.default: _view,
    torch.ops.aten.squeeze.dim: _view,
    torch.ops.aten.squeeze.dims: _view,
    torch.ops.aten.squeeze.default: _view,
    torch.ops.aten.transpose.int: _transpose,
    torch.ops.aten.permute.default: _transpose,
    torch.ops.aten.t.default: _transpose,
    torch.ops.aten.select.int: _select,
    torch.ops.aten.slice.Tensor: _slice_tensor,
    torch.ops.aten.cat.default: _concat,
    # matrix products and attention
    torch.ops.aten.matmul.default: _matmul,
    torch.ops.aten.bmm.default: _matmul,
    torch.ops.aten.mm.default: _matmul,
    torch.ops.aten.scaled_dot_product_attention.default: _attention,
    # normalization, softmax, reductions
    torch.ops.aten.layer_norm.default: _layer_norm,
    torch.ops.aten.softmax.int: _softmax("softmax"),
    torch.ops.aten._softmax.default: _softmax("softmax"),
    torch.ops.aten.log_softmax.int: _softmax("log_softmax"),
    torch.ops.aten._log_softmax.default: _softmax("log_softmax"),
    torch.ops.aten.mean.dim: _reduce("reduce_mean"),
    torch.ops.aten.mean.default: _reduce("reduce_mean"),
    torch.ops.aten.sum.dim_IntList: _reduce("reduce_sum"),
    torch.ops.aten.sum.default: _reduce("reduce_sum"),
    # lookup, dropout, activations with attributes
    torch.ops.aten.embedding.default: _embedding,
    torch.ops.aten.dropout.default: _dropout,
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
    torch.ops.aten.expand.default: _expand,
    torch.ops.aten.zeros.default: _filled(0.0),
    torch.ops.aten.ones.default: _filled(1.0),
    torch.ops.aten.full.default: _filled(None),
    torch.ops.aten.zeros_like.default: _filled(0.0),
    torch.ops.aten.ones_like.default: _filled(1.0),
    torch.ops.aten.full_like.default: _filled(None),
    torch.ops.aten.minimum.default: _binary("minimum"),
    # pooling
    torch.ops.aten.max_pool2d.default: _max_pool2d,
    torch.ops.aten.avg_pool2d.default: _avg_pool2d,
    torch.ops.aten.adaptive_avg_pool2d.default: _adaptive_avg_pool2d,
    torch.ops.aten.group_norm.default: _group_norm,
    # losses
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

# Ops with several results (a Python tuple): each handler returns the list
# of values the getitem nodes take apart.
_TUPLE_HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], List[Value]]] = {
    torch.ops.aten.broadcast_tensors.default: _broadcast_tensors,
    torch.ops.aten.chunk.default: _split,
    torch.ops.aten.split.Tensor: _split,
    torch.ops.aten.split_with_sizes.default: _split,
}

# In-place forms: computed as their functional op, whose value then stands
# for the updated tensor in every later use (intermediates only; an
# in-place update of an input, parameter or buffer is refused).
_IN_PLACE = {
    torch.ops.aten.add_.Tensor: torch.ops.aten.add.Tensor,
    torch.ops.aten.sub_.Tensor: torch.ops.aten.sub.Tensor,
    torch.ops.aten.mul_.Tensor: torch.ops.aten.mul.Tensor,
    torch.ops.aten.div_.Tensor: torch.ops.aten.div.Tensor,
    torch.ops.aten.relu_.default: torch.ops.aten.relu.default,
    torch.ops.aten.tanh_.default: torch.ops.aten.tanh.default,
    torch.ops.aten.sigmoid_.default: torch.ops.aten.sigmoid.default,
    torch.ops.aten.hardtanh_.default: torch.ops.aten.hardtanh.default,
    torch.ops.aten.leaky_relu_.default: torch.ops.aten.leaky_relu.default,
    torch.ops.aten.silu_.default: torch.ops.aten.silu.default,
    torch.ops.aten.hardswish_.default: torch.ops.aten.hardswish.default,
    torch.ops.aten.hardsigmoid_.default: torch.ops.aten.hardsigmoid.default,
    torch.ops.aten.clamp_.default: torch.ops.aten.clamp.default,
    torch.ops.aten.masked_fill_.Scalar: torch.ops.aten.masked_fill.Scalar,
}

# Ops that change nothing the step computes.
_IDENTITY = {
    torch.ops.aten.contiguous.default,
    torch.ops.aten.alias.default,
    torch.ops.aten.clone.default,
}


def capture(model: torch.nn.Module, loss_fn: Callable,
            example_inputs: Tuple[torch.Tensor, ...]) -> torch.export.ExportedProgram:
    """torch.export of ``loss_fn(model(*inputs), target)`` in training mode.

    The model's ``training`` flags are set for the capture and restored;
    nothing else of it changes (export runs on FakeTensors).
    """
    if not isinstance(example_inputs, tuple) or len(example_inputs) < 2:
        raise ValueError("example_inputs must be a tuple (inputs..., target) "
                         "with at least one input and the target")
    modes = [(m, m.training) for m in model.modules()]
    # momentum=None (a cumulative average) makes batch norm compute its factor
    # 1 / num_batches_tracked from the buffer's value, which export cannot
    # trace: captured with a number instead (the importer emits the average
    # for these modules: _cumulative_batch_norms), then restored.
    cumulative = [m for m in model.modules()
                  if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and
                  m.momentum is None and m.track_running_stats]
    try:
        model.train()
        for m in cumulative:
            m.momentum = 0.0
        return torch.export.export(_LossModule(model, loss_fn), example_inputs,
                                   strict=False)
    finally:
        for m, mode in modes:
            m.training = mode
        for m in cumulative:
            m.momentum = None


def _cumulative_batch_norms(model: torch.nn.Module) -> Set[str]:
    """The names (with a trailing '.') of the batch-norm modules whose running
    statistics are a cumulative average (momentum=None)."""
    return {(name + ".") if name else "" for name, m in model.named_modules()
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and
            m.momentum is None and m.track_running_stats}


@dataclasses.dataclass
class Training:
    """What of the parameters the optimizer trains, by name: each trained
    parameter's group and (where groups differ in it) weight decay. A
    parameter without an entry is frozen: an argument of the step that is
    neither updated nor differentiated."""

    groups: Dict[str, Tuple[int, Optional[float]]]


def import_model(model: torch.nn.Module, loss_fn: Callable,
                 example_inputs: Tuple[torch.Tensor, ...],
                 training: Optional[Training] = None,
                 strict: bool = True) -> ImportedModel:
    """Imports ``loss_fn(model(*inputs), target)`` as a forward function.

    ``training`` says which parameters are trained, in which group; without
    it, those with ``requires_grad`` are, in one group.
    Raises UnsupportedModelError listing every node that cannot be mapped;
    with ``strict=False`` returns them in ``problems`` instead (and no text).
    """
    if training is None:
        training = Training({name: (0, None) for name, p in model.named_parameters()
                             if p.requires_grad})
    try:
        program = capture(model, loss_fn, example_inputs)
    except (torch._dynamo.exc.Unsupported, torch._dynamo.exc.UserError,
            RuntimeError) as error:  # data-dependent control flow and shapes
        path, line = _user_frame_of_error(error)
        problem = UnsupportedNode(
            "", "torch.export", "<capture>", line,
            str(error).splitlines()[0] + " (control flow or a shape that depends on "
            "tensor values cannot be compiled into a static step)", path)
        if not strict:
            return ImportedModel("", [], [], [], [problem])
        raise UnsupportedModelError([problem]) from error
    signature = program.graph_signature
    graph = program.graph
    caller = _caller()
    em = _Emitter()
    cumulative = _cumulative_batch_norms(model)
    arguments: List[Argument] = []
    problems: List[UnsupportedNode] = []

    input_specs = {spec.arg.name: spec for spec in signature.input_specs}
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    user_inputs = [n for n in placeholders
                   if input_specs[n.name].kind == torch.export.graph_signature.InputKind.USER_INPUT]
    if len(user_inputs) < 2:
        problems.append(UnsupportedNode(
            "", "inputs", "<model>", 0,
            "no model input: example_inputs is (inputs..., target)"))
    # Tied weights: export lifts each name of a shared Parameter (or
    # buffer) as its own placeholder; they become one argument, named by
    # the model's first name for the tensor (as named_parameters() does).
    named: Dict[str, torch.Tensor] = {}
    first_name: Dict[int, str] = {}
    for name, tensor in itertools.chain(model.named_parameters(remove_duplicate=False),
                                        model.named_buffers(remove_duplicate=False)):
        named[name] = tensor
        first_name.setdefault(id(tensor), name)
    argument_of: Dict[str, Value] = {}
    counters: List[str] = []
    state_updates: List[Tuple[int, str]] = []
    ordered: List[torch.fx.Node] = list(user_inputs)
    ordered += [n for n in placeholders if n not in user_inputs]
    for n in ordered:
        spec = input_specs[n.name]
        shape, element = _shape(n), _element(n)
        group, decay = 0, None
        if n in user_inputs:
            kind = "labels" if n is user_inputs[-1] else "input"
            name = n.name
            if kind == "input" and n.meta["val"].dtype == torch.bool:
                # A mask (key_padding_mask, attn_mask): f32 0 / 1 in the
                # step; masked_fill reads it exactly (_masked_fill).
                arguments.append(Argument(name, kind, shape, "f32", boolean=True))
                em.values[n] = (f"%a{len(arguments) - 1}", shape, "f32")
                em.masks.add(em.values[n][0])
                continue
        else:
            name = _unwrapped(spec.target)
            if name in named:
                name = first_name[id(named[name])]
                if name in argument_of:
                    em.values[n] = argument_of[name]
                    continue
            if spec.kind == torch.export.graph_signature.InputKind.PARAMETER:
                kind = "param" if name in training.groups else "frozen"
                group, decay = training.groups.get(name, (0, None))
            elif name.endswith("num_batches_tracked") and \
                    name[:-len("num_batches_tracked")] in cumulative:
                # momentum=None: the step counts (in f32, exact to 2^24) and
                # averages with 1 / count.
                arguments.append(Argument(name, "state", (), "f32"))
                em.values[n] = (f"%a{len(arguments) - 1}", (), "f32")
                argument_of[name] = em.values[n]
                em.counts[name] = em.values[n]
                continue
            elif name.endswith("num_batches_tracked"):
                counters.append(name)
                em.values[n] = ("<counter>", shape, element)
                continue
            else:
                kind = "state"
        arguments.append(Argument(name, kind, shape, element, group, decay))
        em.values[n] = (f"%a{len(arguments) - 1}", shape, element)
        argument_of[name] = em.values[n]
        if kind == "frozen":  # state that the step returns unchanged
            state_updates.append((len(arguments) - 1, em.values[n][0]))

    em.argument_count = len(arguments)
    loss_value: Optional[str] = None
    nodes: List[ImportedNode] = []
    for node in graph.nodes:
        if node.op != "call_function":
            if node.op == "output":
                outputs = node.args[0]
                loss_value = em.values.get(outputs[0], (None,))[0] if outputs else None
            continue
        path, line = _user_frame(node)
        if line == 0:  # all of it in torch (a loss module): the user's call
            path, line = caller
        module = _module_path(node)
        where = f'"{path}":{line}:0'
        em.location = f'loc("{module}"({where}))' if module else f"loc({where})"
        target = node.target
        first_line = len(em.lines)
        record = ImportedNode(node.name, str(target), module, _module_type(node) or "",
                              path, line, [])
        nodes.append(record)
        try:
            if target is torch.ops.aten.add_.Tensor and node.args and \
                    node.args[0] in em.values and \
                    (em.values[node.args[0]][0] == "<counter>" or
                     em.values[node.args[0]] in em.counts.values()):
                continue  # num_batches_tracked += 1: counted in Python or by batch norm
            if target in _IDENTITY:
                em.values[node] = _operand(em, node.args[0])
                continue
            if target is torch.ops.aten.batch_norm.default:
                em.values[node] = _emit_batch_norm(em, node, arguments, state_updates)
                continue
            if target in _TUPLE_HANDLERS:  # a tuple of values, taken by getitem
                em.values[node] = _TUPLE_HANDLERS[target](em, node)
                continue
            if target is operator.getitem:  # an element of a tuple-valued node
                parts = em.values.get(node.args[0])
                if not isinstance(parts, list):
                    raise _Unsupported("an element of a result amp does not split")
                em.values[node] = parts[node.args[1]]
                continue
            functional = _IN_PLACE.get(target, target)
            handler = _HANDLERS.get(functional)
            if handler is None:
                raise _Unsupported("no mapping to the train dialect")
            if functional is not target and node.args[0].op == "placeholder":
                raise _Unsupported(f"an in-place update of {node.args[0].name}, an input, "
                                   "parameter or buffer of the model")
            em.values[node] = (handler(em, node), _shape(node), _element(node))
            if functional is not target:
                em.values[node.args[0]] = em.values[node]
        except _Unsupported as reason:
            del em.lines[first_line:]  # a failed node's partial ops (no text is made)
            problems.append(UnsupportedNode(
                module, _module_type(node) or "", str(target), line, str(reason), path))
            # Keep going with a stand-in so every offending node is listed.
            em.values[node] = ("<unsupported>", _shape(node) if "val" in node.meta and
                               hasattr(node.meta["val"], "shape") else (), "f32")
        finally:  # the train ops this node became (whichever branch made them)
            record.train_ops = [line.split(" = ", 1)[1].split(" ", 1)[0]
                                for line in em.lines[first_line:]]
    if problems:
        if not strict:
            return ImportedModel("", arguments, counters, nodes, problems)
        raise UnsupportedModelError(problems)
    for name, value in em.counts.items():  # each cumulative average's count
        index = next(i for i, a in enumerate(arguments) if a.name == name)
        if value[0] != f"%a{index}":
            state_updates.append((index, value[0]))

    if em.counter_argument is not None:  # the dropout masks' step counter
        arguments.append(Argument("amp.dropout_step", "counter", (), "i32"))
        index = len(arguments) - 1
        assert em.counter_argument == f"%a{index}"
        em.lines.append(f"  %step_next = train.increment {em.counter_argument} : tensor<i32>")
        state_updates.append((index, "%step_next"))

    # The step's ABI: the loss, then each state argument's new value in
    # argument order.
    state_updates.sort()
    signature_text = ",\n".join(_argument_text(i, a) for i, a in enumerate(arguments))
    results = ["tensor<f32>"] + [tensor_type(arguments[i].shape, arguments[i].element)
                                 for i, _ in state_updates]
    returns = [loss_value] + [value for _, value in state_updates]
    text = ("func.func @forward(\n" + signature_text + "\n  ) -> (" + ", ".join(results) +
            ") {\n" + "\n".join(em.lines) + "\n  return " + ", ".join(returns) + " : " +
            ", ".join(results) + "\n}\n")
    return ImportedModel(text, arguments, counters, nodes)


def _argument_text(index: int, a: Argument) -> str:
    attrs = ""
    if a.kind == "param":
        extra = f", train.param_group = {a.group} : i64" if a.group else ""
        if a.weight_decay is not None:
            extra += f", train.weight_decay = {float_literal(a.weight_decay)} : f64"
        attrs = f" {{train.param, train.init = #train.init<zeros>{extra}}}"
    elif a.kind in ("state", "frozen", "counter"):
        attrs = " {train.state, train.init = #train.init<zeros>}"
    # The model's name of a parameter or buffer: amp-run --init-from matches
    # a state_dict's tensors by it.
    name = f' loc("{a.name}")' if attrs else ""
    return f"    %a{index}: {tensor_type(a.shape, a.element)}{attrs}{name}"


def _emit_batch_norm(em: _Emitter, node: torch.fx.Node, arguments: List[Argument],
                     state_updates: List[Tuple[int, str]]) -> Value:
    # aten.batch_norm(input, weight, bias, running_mean, running_var,
    #                 training, momentum, eps, cudnn_enabled)
    x = _operand(em, node.args[0])
    weight, bias, mean, var = node.args[1:5]
    training, momentum, eps = node.args[5:8]
    if not training:
        raise _Unsupported("batch norm in eval mode inside a training step")
    channels = (x[1][1],)
    tracked = mean is not None and var is not None
    if tracked:
        m, v = _operand(em, mean), _operand(em, var)
    else:  # track_running_stats=False: placeholders the op returns unchanged
        parameter = weight if weight is not None else bias
        element = _operand(em, parameter)[2] if parameter is not None else "f32"
        m, v = _constant(em, 0.0, channels, element), _constant(em, 1.0, channels, element)
    # momentum=None: the batch statistics (momentum 1), averaged below.
    count_name = (arguments[int(m[0][2:])].name[:-len("running_mean")] +
                  "num_batches_tracked") if tracked else ""
    cumulative = count_name in em.counts
    if cumulative and m[2] != "f32":
        raise _Unsupported(f"momentum=None with {m[2]} running statistics (f32 only)")
    # affine=False: the identity affine (constants, so nothing is trained).
    g = _operand(em, weight) if weight is not None else _constant(em, 1.0, channels, m[2])
    b = _operand(em, bias) if bias is not None else _constant(em, 0.0, channels, m[2])
    em.counter += 1
    base = f"%bn{em.counter}"
    shape, element = x[1], x[2]
    attrs = ""
    if eps != 1e-5:
        attrs += f" epsilon {float_literal(eps)}"
    if not tracked:
        attrs += " track_running_stats false"
    elif cumulative:
        attrs += " momentum 1.0"
    elif momentum != 0.1:
        attrs += f" momentum {float_literal(momentum)}"
    em.lines.append(
        f"  {base}:3 = train.batch_norm {x[0]}, {g[0]}, {b[0]}, {m[0]}, {v[0]}{attrs} : "
        f"{tensor_type(shape, element)}, {tensor_type(g[1], g[2])} {em.location}")
    if not tracked:
        return (f"{base}#0", shape, element)
    new_mean, new_var = (f"{base}#1", m[1], m[2]), (f"{base}#2", v[1], v[2])
    if cumulative:
        # PyTorch: num_batches_tracked += 1, factor = 1 / num_batches_tracked,
        # new = factor * batch + (1 - factor) * running.
        one = _constant(em, 1.0, (), "f32")
        count = _emit(em, "add", em.counts[count_name], one)
        em.counts[count_name] = count
        factor = _emit(em, "div", one, count)
        keep = _emit(em, "sub", one, factor)
        new_mean, new_var = (
            _emit(em, "add", _emit(em, "mul", batch, factor), _emit(em, "mul", running, keep))
            for batch, running in ((new_mean, m), (new_var, v)))
    for arg_name, result in ((m[0], new_mean[0]), (v[0], new_var[0])):
        index = int(arg_name[2:])
        state_updates.append((index, result))
    return (f"{base}#0", shape, element)
