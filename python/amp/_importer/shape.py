"""Shape ATen ops: views, transposes, slices, concatenation, splits,
broadcasts."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import torch

from ._core import (Value, _Emitter, _Unsupported, _arguments, _axis, _constant, _element, _emit,
                    _operand, _reshape, _same_origin, _shape, _slice, tensor_type)


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
    out = em.op(f"train.transpose {x[0]} permutation {permutation} : "
                f"{tensor_type(x[1], x[2])} -> {tensor_type(_shape(node), x[2])}")
    _same_origin(em, x[0], out)
    return out


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
    """``x[a:b]`` and ``x[a:b:s]`` along one dimension. With a step s > 1
    (Swin's patch merging, ``x[:, 1::2]``): the m elements taken lie in m
    groups of s consecutive ones, at the same place in each; the groups are
    sliced out whole, reshaped to [m, s], and that place is sliced (all
    train.slice / train.reshape: their gradients scatter back)."""
    args = list(node.args) + [None] * (5 - len(node.args))
    x = _operand(em, args[0])
    dim = _axis(args[1] or 0, len(x[1]))
    step = args[4] or 1
    size = x[1][dim]
    start = args[2] or 0
    start = max(0, min(size, start + size if start < 0 else start))
    out_shape = _shape(node)
    offsets = [0] * len(x[1])
    if step == 1:
        offsets[dim] = start
        return _slice(em, x, offsets, out_shape)[0]
    taken = out_shape[dim]
    if taken == 0:
        raise _Unsupported("an empty strided slice")
    for place in range(step):  # the group origin: start - place
        origin = start - place
        if origin >= 0 and origin + taken * step <= size:
            break
    else:
        raise _Unsupported(f"a strided slice [{start}::{step}] of {size} elements whose last "
                           "group is cut short")
    groups = list(x.shape)
    groups[dim] = taken * step
    offsets[dim] = origin
    whole = _slice(em, x, offsets, groups)
    split = tuple(x.shape[:dim]) + (taken, step) + tuple(x.shape[dim + 1:])
    grouped = _reshape(em, whole, split)
    picked = list(split)
    picked[dim + 1] = 1
    inner = [0] * len(split)
    inner[dim + 1] = place
    return _reshape(em, _slice(em, grouped, inner, picked), out_shape)[0]


def _pieces(em: _Emitter, pieces: List[Value], dim: int, shape) -> Value:
    """``train.concat`` of ``pieces`` along ``dim`` (one piece: itself)."""
    if len(pieces) == 1:
        return pieces[0]
    names = ", ".join(p.name for p in pieces)
    types = ", ".join(p.type for p in pieces)
    return Value(em.op(f"train.concat {names} axis {dim} : {types} -> "
                       f"{tensor_type(shape, pieces[0].element)}"), tuple(shape),
                 pieces[0].element)


def _roll(em: _Emitter, node: torch.fx.Node) -> str:
    """torch.roll(x, shifts, dims) (Swin's shifted windows): per dimension,
    the last ``shift`` elements moved to the front (two slices, one concat)."""
    args = _arguments(node)
    x = _operand(em, args["self"])
    shifts, dims = list(args["shifts"]), list(args["dims"] or [])
    if not dims:
        raise _Unsupported("roll over the flattened tensor (give dims)")
    for shift, d in zip(shifts, dims):
        d = _axis(d, len(x.shape))
        size = x.shape[d]
        shift %= size
        if shift == 0:
            continue
        head, tail = list(x.shape), list(x.shape)
        head[d], tail[d] = shift, size - shift
        start = [0] * len(x.shape)
        start[d] = size - shift
        last = _slice(em, x, start, head)
        first = _slice(em, x, [0] * len(x.shape), tail)
        x = _pieces(em, [last, first], d, x.shape)
    return x.name


def _pad(em: _Emitter, node: torch.fx.Node) -> str:
    """F.pad / constant_pad_nd with a constant (``(left, right, top,
    bottom, ...)``, last dimension first; 0 pads are nothing, negative ones
    crop): the fill as rows made from the input's edge times 0 (plus the
    value), which keeps the input's type under autocast (as _extend); on
    integers, a constant."""
    args = list(node.args) + [None] * (4 - len(node.args))
    x = _operand(em, args[0])
    pads = list(args[1])
    mode = args[2] if node.target is torch.ops.aten.pad.default else "constant"
    value = args[3] if node.target is torch.ops.aten.pad.default else args[2]
    mode = node.kwargs.get("mode", mode or "constant")
    value = node.kwargs.get("value", value) or 0.0
    if mode != "constant":
        raise _Unsupported(f"mode={mode!r} (constant is mapped)")
    for k in range(len(pads) // 2):
        d = len(x.shape) - 1 - k
        before, after = pads[2 * k], pads[2 * k + 1]
        if before < 0 or after < 0:
            start = [0] * len(x.shape)
            start[d] = max(0, -before)
            sizes = list(x.shape)
            sizes[d] += min(0, before) + min(0, after)
            x = _slice(em, x, start, sizes)
            before, after = max(0, before), max(0, after)
        if before == 0 and after == 0:
            continue
        edge_shape = list(x.shape)
        edge_shape[d] = 1
        if x.element == "i32":  # integers (labels padded with ignore_index): autocast
            fill = _constant(em, value, edge_shape, "i32")  # leaves them alone
        else:
            edge = _slice(em, x, [0] * len(x.shape), edge_shape)
            fill = _emit(em, "mul", edge, _constant(em, 0.0, (), x.element))
            if value:
                fill = _emit(em, "add", fill, _constant(em, float(value), (), x.element))
        shape = list(x.shape)
        shape[d] += before + after
        padded = _pieces(em, [fill] * before + [x] + [fill] * after, d, shape)
        if x.element == "i32":
            _same_origin(em, x.name, padded.name, fills=[int(value)])
        x = padded
    return x.name


def _concat(em: _Emitter, node: torch.fx.Node) -> str:
    shape = _shape(node)
    axis = _axis(node.args[1] if len(node.args) > 1 else 0, len(shape))
    # torch.cat skips 1-D empty tensors whatever the others' rank (the
    # legacy rule HuggingFace's DynamicCache relies on: its first keys are
    # torch.tensor([])), and an operand empty along the axis adds nothing.
    def empty(a) -> bool:
        val = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
        if val is None:
            return False
        dims = tuple(int(d) for d in val.shape)
        return dims == (0,) or (len(dims) == len(shape) and dims[axis] == 0)
    element = _element(node)
    kept = [a for a in node.args[0] if not empty(a)]
    args = list(node.args[0])
    # Only where the rest still makes the result: every one of the result's
    # type (torch.cat promotes over the operands it skips too).
    if kept and all(isinstance(a, torch.fx.Node) and _element(a) == element for a in kept):
        args = kept
    values = [_operand(em, a) for a in args]
    if len(values) == 1 and tuple(values[0][1]) == tuple(shape):
        return values[0][0]
    names = ", ".join(v[0] for v in values)
    types = ", ".join(tensor_type(v[1], v[2]) for v in values)
    return em.op(f"train.concat {names} axis {axis} : {types} -> "
                 f"{tensor_type(shape, element)}")


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


def _unbind(em: _Emitter, node: torch.fx.Node) -> List[Value]:
    """x.unbind(dim) (timm's ``q, k, v = qkv.unbind(0)``): one slice of size 1
    per index, reshaped without the dimension."""
    args = _arguments(node)
    x = _operand(em, args["self"])
    dim = _axis(args["dim"], len(x.shape))
    sizes = list(x.shape)
    sizes[dim] = 1
    pieces = []
    for index in range(x.shape[dim]):
        offsets = [0] * len(x.shape)
        offsets[dim] = index
        piece = _slice(em, x, offsets, sizes)
        pieces.append(_reshape(em, piece, tuple(x.shape[:dim]) + tuple(x.shape[dim + 1:])))
    return pieces


def _expand(em: _Emitter, node: torch.fx.Node) -> str:
    """x.expand(*sizes): train.broadcast to the node's shape (NumPy rules:
    size-1 and missing leading dimensions repeat)."""
    x = _operand(em, node.args[0])
    shape = _shape(node)
    if tuple(x[1]) == tuple(shape):
        return x[0]
    out = em.op(f"train.broadcast {x[0]} : {tensor_type(x[1], x[2])} -> "
                f"{tensor_type(shape, x[2])}")
    _same_origin(em, x.name, out)
    return out


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.roll.default: _roll,
    torch.ops.aten.pad.default: _pad,
    torch.ops.aten.constant_pad_nd.default: _pad,
    torch.ops.aten.reshape_as.default: _view,
    torch.ops.aten.view_as.default: _view,
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
    torch.ops.aten.expand.default: _expand,
}


TUPLE_HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], List[Value]]] = {
    torch.ops.aten.unbind.int: _unbind,
    torch.ops.aten.broadcast_tensors.default: _broadcast_tensors,
    torch.ops.aten.chunk.default: _split,
    torch.ops.aten.split.Tensor: _split,
    torch.ops.aten.split_with_sizes.default: _split,
}
