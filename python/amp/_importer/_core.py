"""What every op family's handlers share: the typed values, the emitter of
located train ops, argument reading and the small op builders."""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Set, Tuple

import torch

from .._errors import UnsupportedNode


_TORCH_DIR = os.path.dirname(torch.__file__)


_AMP_DIR = os.path.dirname(os.path.dirname(__file__))  # the amp package


_DTYPES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i32",  # labels and ids: passed to the step as i32
    torch.int32: "i32",
    torch.bool: "i1",  # booleans computed in the step (comparisons)
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
    # A mask given as integers (a tokenizer's attention_mask) that the model
    # only converts to bool: passed as f32 (value != 0).
    from_integers: bool = False


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
    folded: bool = False  # computed at import (shapes, constants, frozen buffers)
    blocking: str = ""  # why amp cannot import it ("" for a node it imports)


@dataclasses.dataclass
class IndexCheck:
    """A batch argument whose integers index something: each call checks
    them before the step runs (nothing changes on an error), as PyTorch's
    embedding and cross entropy raise IndexError."""

    argument: int  # the batch argument's index
    limit: int  # valid values are 0 <= v < limit
    ignore: Optional[int]  # a value also allowed (cross entropy's ignore_index)
    what: str  # "embedding 'm.transformer.wte' (512 rows)"
    file: str = ""
    line: int = 0
    # The part of the argument that reaches the index op, as (start, stop)
    # per dimension (x[:, 1] of an [N, 2] input: ((0, N), (1, 2))); None:
    # all of it.
    region: Optional[Tuple[Tuple[int, int], ...]] = None


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
    # The range checks of integer batch arguments (token ids, class labels).
    index_checks: List[IndexCheck] = dataclasses.field(default_factory=list)
    # The model's output as the model returns it (a tensor, tuple, dict,
    # ModelOutput): its pytree structure, and per leaf the index of the
    # evaluation function's result that holds it (a float tensor), or
    # ("tensor", dtype) for a tensor it does not return (integer, boolean),
    # or ("value", v) for a leaf that is not a tensor.
    output_spec: Any = None
    output_leaves: List[Any] = dataclasses.field(default_factory=list)
    # loss_fn=None: the model computes its own loss from (inputs..., target).
    own_loss: bool = False


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


class Value(NamedTuple):
    """A tensor of the step: its SSA name, static shape and element type
    ("f32", "f16", "bf16", "i32")."""

    name: str
    shape: Tuple[int, ...]
    element: str

    @property
    def type(self) -> str:
        """Its MLIR type (``tensor<4x8xf32>``)."""
        return tensor_type(self.shape, self.element)


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
        # The placeholders of the parameters the step trains.
        self.params: Set[torch.fx.Node] = set()
        # num_batches_tracked of each momentum=None batch norm: its current value.
        self.counts: Dict[str, Value] = {}
        # Nodes that depend only on constants, shapes and frozen buffers:
        # their values, computed by PyTorch at import (_program._fold).
        self.folded: Dict[torch.fx.Node, Any] = {}
        # A folded node's train.constant, once a step op has used it.
        self.constants: Dict[torch.fx.Node, Value] = {}
        # The batch argument each value holds elements of (through
        # reshapes, slices and broadcasts), by SSA name.
        self.origin: Dict[str, int] = {}
        # Constants mixed into such a value (a pad's value): checked at import.
        self.origin_fills: Dict[str, FrozenSet[int]] = {}
        # The part of the argument such a value holds ((start, stop) per
        # argument dimension; None: all of it), and whether the value's
        # coordinates are still the argument's (slices of it compose).
        self.origin_region: Dict[str, Tuple[Optional[Tuple[Tuple[int, int], ...]], bool]] = {}
        # The node being imported: its module path, file and line.
        self.where: Tuple[str, str, int] = ("", "", 0)
        self.index_checks: List[IndexCheck] = []

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




def _operand(em: _Emitter, arg: Any) -> Value:
    if isinstance(arg, torch.fx.Node):
        if arg in em.values:
            value = em.values[arg]
            if not isinstance(value, tuple):
                raise _Unsupported(f"uses {arg.name}, a tuple where a tensor is expected")
            return Value(*value)
        if arg in em.folded:  # computed at import: a constant of the step
            if arg not in em.constants:
                em.constants[arg] = _tensor_constant(em, em.folded[arg], arg.name)
            return em.constants[arg]
        raise _Unsupported(f"uses {arg.name}, which was not imported")
    raise _Unsupported(f"a constant operand {arg!r} where a tensor is expected")


# Infinities and NaN in a dense literal: the element type's bit patterns
# (MLIR reads a hexadecimal float literal as the type's own bits).
_SPECIAL_BITS = {"f32": ("0x7F800000", "0xFF800000", "0x7FC00000"),
                 "f16": ("0x7C00", "0xFC00", "0x7E00"),
                 "bf16": ("0x7F80", "0xFF80", "0x7FC0")}


def _element_literal(v: Any, element: str) -> str:
    if element == "i32":
        return str(int(v))
    v = float(v)
    if math.isinf(v) or math.isnan(v):
        inf, negative, nan = _SPECIAL_BITS[element]
        return nan if math.isnan(v) else inf if v > 0 else negative
    return float_literal(v)


def _dense_literal(values: List[Any], shape: Sequence[int], element: str) -> str:
    """The nested ``[...]`` literal of a flat list of elements."""
    if not shape:
        return _element_literal(values[0], element)
    step = len(values) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_dense_literal(values[i * step:(i + 1) * step], shape[1:], element)
                           for i in range(shape[0])) + "]"


# Folded tensors with more elements than this enter the text as their raw
# bytes (``dense<"0x...">``: exact, and a quarter the size of decimals).
_HEX_ELEMENTS = 256
_STORAGE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
            "i32": torch.int32}


# Folded tensors: how each dtype enters the step.
_FOLDED_ELEMENTS = {torch.float32: "f32", torch.float64: "f32", torch.float16: "f16",
                    torch.bfloat16: "bf16", torch.bool: "f32", torch.int64: "i32",
                    torch.int32: "i32", torch.int16: "i32", torch.int8: "i32",
                    torch.uint8: "i32"}


def _tensor_constant(em: _Emitter, tensor: Any, what: str) -> Value:
    """A tensor computed at import as a ``train.constant`` (a splat when
    every element is equal). Bool tensors enter as f32 0 / 1 (and count as
    masks), integers as i32 (an error if a value does not fit)."""
    if isinstance(tensor, (int, float)) and not isinstance(tensor, bool):
        tensor = torch.tensor(tensor, dtype=torch.float32)
    if not isinstance(tensor, torch.Tensor):
        raise _Unsupported(f"{what} is a {type(tensor).__name__} where a tensor is expected")
    element = _FOLDED_ELEMENTS.get(tensor.dtype)
    if element is None:
        raise _Unsupported(f"{what} is a {tensor.dtype} tensor (no such type in the step)")
    flat = tensor.detach().reshape(-1)
    if element == "i32" and flat.numel() and \
            (flat.min().item() < -2**31 or flat.max().item() >= 2**31):
        raise _Unsupported(f"{what} has integers beyond int32, the step's integer type")
    flat = flat.to(_STORAGE[element])  # f64 rounds to f32, bool is 0 / 1
    shape = tuple(int(d) for d in tensor.shape)
    same = flat.numel() and bool((flat == flat[0]).all() or flat.isnan().all())
    if same:
        literal = _dense_literal([flat[0].item()], (), element)
    elif flat.numel() > _HEX_ELEMENTS:  # little-endian raw data
        raw = flat.contiguous().view(torch.int16 if element in ("f16", "bf16") else
                                     torch.int32).numpy().astype("<i" + (
                                         "2" if element in ("f16", "bf16") else "4"))
        literal = '"0x' + raw.tobytes().hex().upper() + '"'
    else:
        literal = _dense_literal(flat.float().tolist() if element != "i32" else flat.tolist(),
                                 shape, element)
    value = Value(em.op(f"train.constant dense<{literal}> : {tensor_type(shape, element)}"),
                  shape, element)
    if tensor.dtype == torch.bool:
        em.masks.add(value.name)
    return value


def _same_origin(em: _Emitter, source: str, result: str, fills: Sequence[int] = (),
                 window: Optional[Tuple[Sequence[int], Sequence[int]]] = None) -> None:
    """``result`` holds elements of ``source``: all of them (a reshape,
    transpose, broadcast), or the ``window`` (offsets, sizes) of a slice, or
    with ``fills`` all of them and these constants (a pad's). A mask if
    ``source`` is one; of the same batch argument, and of the same part of
    it: a slice of a value whose coordinates are the argument's narrows the
    part (x[:, 0] and x[:, 1] are checked apart); a slice after a reshape or
    pad keeps the part it slices from (checked whole: stricter than
    PyTorch, which checks only the elements used)."""
    if source in em.origin:
        em.origin[result] = em.origin[source]
        em.origin_fills[result] = em.origin_fills.get(source, frozenset()) | set(fills)
        region, aligned = em.origin_region.get(source, (None, True))
        if window is not None and aligned:
            offsets, sizes = window
            starts = [0] * len(offsets) if region is None else [r[0] for r in region]
            region = tuple((start + offset, start + offset + size)
                           for start, offset, size in zip(starts, offsets, sizes))
        else:  # coordinates of its own from here (or a slice of such)
            aligned = False
        em.origin_region[result] = (region, aligned)
    if source in em.masks:
        em.masks.add(result)


def _check_indices(em: _Emitter, indices: Value, node: Any, limit: int,
                   ignore: Optional[int], what: str) -> None:
    """Integer ``indices`` must lie in [0, limit) (or equal ``ignore``): a
    check of each call where they come from the batch, now where they were
    computed at import; else (computed in the step) nothing."""
    module, path, line = em.where
    what = f"{what} of {module!r}" if module else what
    if indices.name in em.origin:
        region = em.origin_region.get(indices.name, (None, True))[0]
        em.index_checks.append(IndexCheck(em.origin[indices.name], limit, ignore, what,
                                          path, line, region))
        for fill in sorted(em.origin_fills.get(indices.name, ())):  # a pad's constant
            if not 0 <= fill < limit and fill != ignore:
                raise _Unsupported(f"index {fill} (a pad's value) out of range for {what}")
    folded = em.folded.get(node) if isinstance(node, torch.fx.Node) else None
    if isinstance(folded, torch.Tensor) and folded.numel():
        bad = (folded < 0) | (folded >= limit)
        if ignore is not None:
            bad &= folded != ignore
        if bool(bad.any()):
            raise _Unsupported(f"index {int(folded[bad].reshape(-1)[0])} out of range for "
                               f"{what}")


def _as_bool(em: _Emitter, value: Value) -> Value:
    """A boolean value as i1: itself, or a mask (f32 0 / 1) converted."""
    if value.element == "i1":
        return value
    if value.name not in em.masks:
        raise _Unsupported("a float value where a boolean is expected")
    return Value(em.op(f"train.convert {value.name} : {value.type} to "
                       f"{tensor_type(value.shape, 'i1')}"), value.shape, "i1")


def _as_mask(em: _Emitter, value: Value) -> Value:
    """A boolean value as a mask (f32 0 / 1): itself, or an i1 converted."""
    if value.name in em.masks:
        return value
    if value.element != "i1":
        raise _Unsupported("a non-boolean value where a mask is expected")
    out = Value(em.op(f"train.convert {value.name} : {value.type} to "
                      f"{tensor_type(value.shape, 'f32')}"), value.shape, "f32")
    em.masks.add(out.name)
    return out


def _reshape(em: _Emitter, value: Value, shape: Sequence[int]) -> Value:
    name, old, element = value
    if tuple(old) == tuple(shape):
        return Value(*value)
    out = em.op(
        f"train.reshape {name} : {tensor_type(old, element)} -> "
        f"{tensor_type(shape, element)}")
    _same_origin(em, name, out)
    return Value(out, tuple(shape), element)


def _constant(em: _Emitter, value: float, shape: Sequence[int], element: str) -> Value:
    """A splat ``train.constant`` of ``value`` (infinities as the element
    type's bits)."""
    return Value(em.op(f"train.constant dense<{_element_literal(value, element)}> : "
                  f"{tensor_type(shape, element)}"), tuple(shape), element)


def _tensor_or_scalar(em: _Emitter, arg: Any, element: str) -> Value:
    """A tensor operand, or a Python number as a rank-0 constant of ``element``."""
    if isinstance(arg, (int, float)) and not isinstance(arg, bool):
        return _constant(em, arg, (), element)
    return _operand(em, arg)


def _axis(dim: int, rank: int) -> int:
    """A PyTorch dimension (maybe negative) as the dialect's 0 <= axis < rank."""
    return dim + rank if dim < 0 else dim


def _emit(em: _Emitter, op: str, *values: Value) -> Value:
    """``train.<op>`` of one or two same-shaped values (rank-0 broadcast)."""
    shape = max((v[1] for v in values), key=len)
    element = values[0][2]
    if len(values) == 1:
        return Value(em.op(f"train.{op} {values[0][0]} : {tensor_type(shape, element)}"), shape, element)
    a, b = values
    return Value(em.op(f"train.{op} {a[0]}, {b[0]} : {tensor_type(a[1], a[2])}, "
                  f"{tensor_type(b[1], b[2])} -> {tensor_type(shape, element)}"), shape, element)


def _arguments(node: torch.fx.Node) -> Dict[str, Any]:
    """Every argument of an ATen op's node by its schema's name ("self",
    "mat1", "attn_mask"...), the schema's defaults filled in: positional and
    keyword arguments alike."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        raise _Unsupported("an op without a schema")
    values: Dict[str, Any] = {}
    for index, argument in enumerate(schema.arguments):
        if index < len(node.args) and not argument.kwarg_only:
            values[argument.name] = node.args[index]
        elif argument.name in node.kwargs:
            values[argument.name] = node.kwargs[argument.name]
        elif argument.has_default_value():
            values[argument.name] = argument.default_value
        else:
            values[argument.name] = None
    return values


def _node_args(node: torch.fx.Node, names: Sequence[str], defaults: Sequence[Any]) -> List[Any]:
    """The node's arguments by position or keyword, with PyTorch's defaults."""
    return [node.args[i] if i < len(node.args) else node.kwargs.get(name, default)
            for i, (name, default) in enumerate(zip(names, defaults))]


def _pairs(*values: Any) -> List[List[int]]:
    return [[int(v)] * 2 if isinstance(v, int) else
            ([int(v[0])] * 2 if len(v) == 1 else [int(u) for u in v]) for v in values]


def _slice(em: _Emitter, x: Value, offsets: Sequence[int], sizes: Sequence[int]) -> Value:
    if tuple(sizes) == tuple(x[1]):
        return Value(*x)
    out = em.op(f"train.slice {x[0]} offsets {list(offsets)} : {tensor_type(x[1], x[2])} "
                f"-> {tensor_type(sizes, x[2])}")
    _same_origin(em, x[0], out, window=(offsets, sizes))
    return Value(out, tuple(sizes), x[2])


def _negated(em: _Emitter, x: Value) -> Value:
    """-x, as x * -1 (exact)."""
    return _emit(em, "mul", x, _constant(em, -1.0, (), x[2]))


def _reciprocal(em: _Emitter, x: Value) -> Value:
    """1 / x (a division by a tensor: f32 under autocast, as PyTorch's
    fp32-listed reciprocal and rsqrt)."""
    return _emit(em, "div", _constant(em, 1.0, (), x[2]), x)


def _clamp_value(em: _Emitter, x: Value, lo: float, hi: float) -> Value:
    return Value(em.op(f"train.clamp {x[0]} min {float_literal(lo)} max {float_literal(hi)} : "
                  f"{tensor_type(x[1], x[2])}"), x[1], x[2])


def _absolute(em: _Emitter, x: Value) -> Value:
    return _emit(em, "add", _emit(em, "relu", x), _emit(em, "relu", _negated(em, x)))
