"""GEMM-like ATen ops: linear, addmm, matrix products, convolution and
attention (autocast's lower-precision list)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Set

import torch

from ._core import (Value, _Emitter, _Unsupported, _arguments, _as_bool, _constant, _element,
                    _emit, _operand, _reshape, _shape, float_literal, tensor_type)
from .pooling import (_extend)
from .dropout import (_dropout_op)


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


def _addmm(em: _Emitter, node: torch.fx.Node) -> str:
    """addmm(bias, a, b, beta=1, alpha=1) = beta * bias + alpha * (a @ b)
    (HuggingFace's Conv1D: GPT-2's projections): ``train.matmul`` with the
    bias in its accumulator where the bias is a row, as linear's."""
    args = _arguments(node)
    bias, a, b = (_operand(em, args[k]) for k in ("self", "mat1", "mat2"))
    beta, alpha = args["beta"], args["alpha"]
    shape, element = _shape(node), _element(node)
    if isinstance(beta, torch.fx.Node) or isinstance(alpha, torch.fx.Node):
        raise _Unsupported("tensor beta or alpha (numbers are mapped)")
    if beta == 1 and alpha == 1 and tuple(bias.shape) == (shape[1],):
        return em.op(f"train.matmul {a.name}, {b.name}, {bias.name} : {a.type}, {b.type}, "
                     f"{bias.type} -> {tensor_type(shape, element)}")
    product = Value(em.op(f"train.matmul {a.name}, {b.name} : {a.type}, {b.type} -> "
                          f"{tensor_type(shape, element)}"), shape, element)
    if alpha != 1:
        product = _emit(em, "mul", product, _constant(em, alpha, (), element))
    if beta == 0:  # PyTorch ignores the bias then (even NaN or inf in it)
        return product.name
    if beta != 1:
        bias = _emit(em, "mul", bias, _constant(em, beta, (), bias.element))
    return em.op(f"train.add {product.name}, {bias.name} : {product.type}, {bias.type} -> "
                 f"{tensor_type(shape, element)}")


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


def _repeat_heads(em: _Emitter, x: Value, heads: int) -> Value:
    """Key or value heads [.., H_kv, S, D] repeated to ``heads`` query heads
    (grouped-query attention: query head h reads key head h // (H / H_kv),
    as PyTorch's enable_gqa and HuggingFace's repeat_kv)."""
    *batch, groups, length, depth = x.shape
    if heads == groups:
        return x
    if heads % groups:
        raise _Unsupported(f"{heads} query heads over {groups} key/value heads (not a multiple)")
    spread = tuple(batch) + (groups, 1, length, depth)
    wide = tuple(batch) + (groups, heads // groups, length, depth)
    x = _reshape(em, x, spread)
    x = Value(em.op(f"train.broadcast {x.name} : {x.type} -> {tensor_type(wide, x.element)}"),
              wide, x.element)
    return _reshape(em, x, tuple(batch) + (heads, length, depth))


def _causal(mask: torch.Tensor, rows: int, columns: int) -> bool:
    """Whether a mask is the causal one on every batch and head: a boolean
    keep-mask with row i keeping j <= i, or the additive float form (0
    there, -inf or a value at the bottom of f32's range, such as
    finfo.min, above: softmax gives those exactly 0 either way)."""
    if rows != columns or mask.dim() < 2 or tuple(mask.shape[-2:]) != (rows, columns):
        return False
    keep = torch.ones(rows, columns, dtype=torch.bool).tril()
    if mask.dtype == torch.bool:
        return bool((mask == keep).all())
    if not mask.dtype.is_floating_point:
        return False
    mask = mask.float()
    dropped = (mask == float("-inf")) | (mask <= torch.finfo(torch.float32).min / 2)
    return bool(((mask == 0) == keep).all() and (dropped == ~keep).all())


def _depends_on(node: Any, sources: Set[torch.fx.Node]) -> bool:
    """Whether an FX node is computed from any of ``sources``."""
    seen, stack = set(), [node] if isinstance(node, torch.fx.Node) else []
    while stack:
        n = stack.pop()
        if n in sources:
            return True
        if n not in seen:
            seen.add(n)
            stack.extend(n.all_input_nodes)
    return False


def _attention(em: _Emitter, node: torch.fx.Node) -> str:
    """F.scaled_dot_product_attention as ``train.attention`` (fused: the
    CPU lowering's flash-style kernel keeps no [Sq, Sk] tensor), scale =
    1/sqrt(head dim) unless given. With dropout, PyTorch's math form:
    softmax(q k^T * scale [+ mask]) then dropout, then v.

    A boolean mask (True: attend) computed at import from shapes (a causal
    mask built with arange and comparisons, as HuggingFace models build
    theirs) is recognised as ``causal`` when it is one; other boolean masks
    are the op's keep-mask (the math form: the additive 0 / -inf mask PyTorch
    makes of them). Grouped-query key/value heads (enable_gqa, or fewer key
    heads) are repeated."""
    args = _arguments(node)
    q, k, v = (_operand(em, args[name]) for name in ("query", "key", "value"))
    mask, dropout_p, causal = args["attn_mask"], args["dropout_p"], args["is_causal"]
    scale = args["scale"]
    element = q.element
    heads = q.shape[-3] if len(q.shape) >= 3 else 1
    if len(k.shape) >= 3 and k.shape[-3] != heads:
        if not args.get("enable_gqa"):
            raise _Unsupported(f"{heads} query heads and {k.shape[-3]} key heads without "
                               "enable_gqa=True")
        k, v = _repeat_heads(em, k, heads), _repeat_heads(em, v, heads)
    scores_shape = tuple(q.shape[:-1]) + (k.shape[-2],)
    scale_value = scale if scale is not None else q.shape[-1] ** -0.5
    m = None
    if mask is not None:
        folded = em.folded.get(mask) if isinstance(mask, torch.fx.Node) else None
        if isinstance(folded, torch.Tensor) and not causal and \
                _causal(folded, scores_shape[-2], scores_shape[-1]):
            causal = True
        else:
            m = _operand(em, mask)
            if m.name in em.masks or m.element == "i1":
                m = _as_bool(em, m)
    same_batch = q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
    # train.attention gives its mask no gradient: a float mask computed
    # from parameters (a learned bias) takes the math form, where the
    # gradient flows through the add.
    learned_mask = m is not None and m.element != "i1" and \
        _depends_on(mask, em.params)
    if not dropout_p and same_batch and not learned_mask and len(q.shape) >= 2:
        if m is not None and m.element not in ("i1", element):
            m = Value(em.op(f"train.cast {m.name} : {m.type} -> "
                            f"{tensor_type(m.shape, element)}"), m.shape, element)
        attrs = (f" mask {m.name}" if m is not None else "") + (" causal" if causal else "")
        types = f"{q.type}, {k.type}, {v.type}" + (f", {m.type}" if m is not None else "")
        em.counter += 1
        base = f"%att{em.counter}"
        em.lines.append(f"  {base}:2 = train.attention {q.name}, {k.name}, {v.name}{attrs} "
                        f"scale {float_literal(float(scale_value))} : {types} {em.location}")
        return f"{base}#0"
    scores = Value(em.op(f"train.batch_matmul {q.name}, {k.name} transpose_rhs : "
                         f"{q.type}, {k.type} -> {tensor_type(scores_shape, element)}"),
                   scores_shape, element)
    factor = _constant(em, scale_value, (), element)
    scores = _emit(em, "mul", scores, factor)
    if m is not None:
        if m.element == "i1":
            # a boolean keep-mask: -inf where it is false (PyTorch's
            # conversion), chosen exactly by train.select
            lowest = _constant(em, float("-inf"), (), element)
            scores = Value(em.op(
                f"train.select {m.name}, {scores.name}, {lowest.name} : "
                f"{tensor_type(m.shape, 'i1')}, {scores.type}, {lowest.type} -> "
                f"{tensor_type(scores_shape, element)}"), scores_shape, element)
        else:
            scores = Value(em.op(f"train.add {scores.name}, {m.name} : {scores.type}, "
                                 f"{m.type} -> {tensor_type(scores_shape, element)}"),
                           scores_shape, element)
    attr = " causal" if causal else ""
    probs = Value(em.op(f"train.softmax {scores.name} axis {len(scores_shape) - 1}{attr} : "
                        f"{scores.type}"), scores_shape, element)
    if m is not None and m.element == "i1":
        # A row the keep-mask hides entirely is all -inf, which softmax
        # makes NaN: PyTorch's math form (its _safe_softmax) gives zeros
        # there. Selecting 0 where the mask is false does that, and changes
        # no other row (its hidden scores are already exactly 0).
        zero = _constant(em, 0.0, (), element)
        probs = Value(em.op(
            f"train.select {m.name}, {probs.name}, {zero.name} : "
            f"{tensor_type(m.shape, 'i1')}, {probs.type}, {zero.type} -> "
            f"{probs.type}"), scores_shape, element)
    if dropout_p:
        probs = Value(_dropout_op(em, probs, float(dropout_p)), scores_shape, element)
    return em.op(f"train.batch_matmul {probs.name}, {v.name} : {probs.type}, {v.type} -> "
                 f"{tensor_type(_shape(node), element)}")


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.linear.default: _linear,
    torch.ops.aten.conv2d.default: _conv2d,
    torch.ops.aten.conv2d.padding: _conv2d,
    torch.ops.aten.matmul.default: _matmul,
    torch.ops.aten.bmm.default: _matmul,
    torch.ops.aten.mm.default: _matmul,
    torch.ops.aten.addmm.default: _addmm,
    torch.ops.aten.scaled_dot_product_attention.default: _attention,
}
