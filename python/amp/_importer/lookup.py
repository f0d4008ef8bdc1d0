"""Table lookups: embedding, and indexing by indices computed at import."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import torch

from ._core import (Value, _Emitter, _Unsupported, _check_indices, _operand, _reshape,
                    _same_origin, _shape, _tensor_constant, tensor_type)


def _embedding(em: _Emitter, node: torch.fx.Node) -> str:
    # aten.embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)
    args = list(node.args) + [None] * (5 - len(node.args))
    table, indices = _operand(em, args[0]), _operand(em, args[1])
    if args[3]:
        raise _Unsupported("scale_grad_by_freq=True")
    _check_indices(em, indices, args[1], table.shape[0],
                   None, f"embedding ({table.shape[0]} rows)")
    # nn.Embedding normalises a negative padding_idx; -1 is ATen's "none".
    pad = f" padding_idx {args[2]}" if args[2] not in (None, -1) else ""
    return em.op(f"train.embedding {table[0]}, {indices[0]}{pad} : "
                 f"{tensor_type(table[1], table[2])}, "
                 f"{tensor_type(indices[1], 'i32')} -> {tensor_type(_shape(node), table[2])}")


def _arange_axis(index: torch.Tensor, size: int) -> Optional[int]:
    """The axis along which ``index`` counts 0, 1, ..., size - 1 (constant
    along every other axis), or None."""
    for axis in range(index.dim()):
        if index.shape[axis] != size:
            continue
        shape = [1] * index.dim()
        shape[axis] = size
        if bool((index == torch.arange(size).reshape(shape)).all()):
            return axis
    return None


def _index(em: _Emitter, node: torch.fx.Node) -> str:
    """``x[i0, i1, ...]`` (aten.index.Tensor) with indices computed at
    import. Each index an ``arange`` over all of its dimension, along its
    own axis of the indices' broadcast shape, in order (HuggingFace's
    ``padding_mask[batch_idx, kv_idx]`` of sdpa_mask): a reshape and a
    broadcast. One index of any values into a float table's first dimension
    (a relative-position bias table, Swin's): the rows gathered as an
    embedding lookup (its gradient a scatter-add)."""
    x = _operand(em, node.args[0])
    indices = list(node.args[1])
    folded = [em.folded.get(i) if isinstance(i, torch.fx.Node) else None for i in indices]
    if not indices or any(not isinstance(f, torch.Tensor) for f in folded):
        raise _Unsupported("indices computed in the step (indices computed from shapes "
                           "and constants are mapped)")
    out_shape = _shape(node)
    common = torch.broadcast_shapes(*(f.shape for f in folded))
    axes = [_arange_axis(f.expand(common), x.shape[k]) for k, f in enumerate(folded)]
    if all(a is not None for a in axes) and axes == sorted(set(axes)):
        spread = [1] * len(common)
        for k, axis in enumerate(axes):
            spread[axis] = x.shape[k]
        rest = tuple(x.shape[len(indices):])
        y = _reshape(em, x, tuple(spread) + rest)
        if tuple(y.shape) == tuple(out_shape):
            return y.name
        out = em.op(f"train.broadcast {y.name} : {y.type} -> "
                    f"{tensor_type(out_shape, y.element)}")
        _same_origin(em, y.name, out)
        return out
    if len(indices) == 1 and x.element in ("f32", "f16", "bf16") and x.name not in em.masks \
            and not folded[0].dtype.is_floating_point and folded[0].dtype != torch.bool:
        rows = x.shape[0]
        index = folded[0].long()
        index = torch.where(index < 0, index + rows, index)  # PyTorch's negative indices
        if index.numel() and (int(index.min()) < 0 or int(index.max()) >= rows):
            raise _Unsupported(f"an index out of range for {rows} rows")
        width = 1
        for d in x.shape[1:]:
            width *= d
        table = _reshape(em, x, (rows, width))
        ids = _tensor_constant(em, index.to(torch.int32), "the indices")
        gathered = Value(em.op(f"train.embedding {table.name}, {ids.name} : {table.type}, "
                               f"{ids.type} -> {tensor_type(ids.shape + (width,), x.element)}"),
                         ids.shape + (width,), x.element)
        return _reshape(em, gathered, out_shape).name
    raise _Unsupported("indices other than aranges over whole dimensions")


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.index.Tensor: _index,
    torch.ops.aten.embedding.default: _embedding,
}
