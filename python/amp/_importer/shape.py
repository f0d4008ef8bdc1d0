"""Shape ATen ops: views, transposes, slices, concatenation, splits,
broadcasts."""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import torch

from ._core import (Value, _Emitter, _Unsupported, _arguments, _axis, _same_origin, _element, _operand, _reshape, _shape,
                    _slice, tensor_type)


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
