"""Table lookups: embedding."""

from __future__ import annotations

from typing import Any, Callable, Dict

import torch

from ._core import (_Emitter, _check_indices, _Unsupported, _operand, _shape, tensor_type)


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


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.embedding.default: _embedding,
}
