"""Pooling: max, average and adaptive average, with PyTorch's window
geometry (ceil_mode, count_include_pad)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

import torch

from ._core import (Value, _Emitter, _Unsupported, _constant, _element, _emit, _node_args,
                    _operand, _pairs, _reshape, _shape, _slice, float_literal, tensor_type)


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


HANDLERS: Dict[Any, Callable[[_Emitter, torch.fx.Node], str]] = {
    torch.ops.aten.max_pool2d.default: _max_pool2d,
    torch.ops.aten.avg_pool2d.default: _avg_pool2d,
    torch.ops.aten.adaptive_avg_pool2d.default: _adaptive_avg_pool2d,
}
