"""Normalization: layer, group and batch norm (batch norm's running
statistics are state the step returns)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import torch

from ._core import (Argument, Value, _Emitter, _Unsupported, _constant, _emit, _node_args,
                    _operand, _reshape, float_literal, tensor_type)


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


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.layer_norm.default: _layer_norm,
    torch.ops.aten.group_norm.default: _group_norm,
}
