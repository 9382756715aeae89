"""The ONNX ops of the PP-OCR networks, each as a small torch function: what :mod:`arr_coc.reading.ocr.onnx_torch`
builds a graph from (``OP_BUILDERS``: op type -> a builder taking the node's attributes, its static inputs and the
opset, returning the op's function of its inputs). Shape arithmetic stays on Python ints, so nothing reads tensor data
back from the device.

Example:
    >>> sorted(SUPPORTED_OPS)[:3]
    ['Add', 'AveragePool', 'BatchNormalization']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

# A value flowing through the graph: a tensor, or (for shape arithmetic) a Python int / tuple of ints / float.
Value = Any
OpFn = Callable[[list[Value]], list[Value]]


class UnsupportedOnnxOp(NotImplementedError):
    """The graph uses an ONNX op (or an attribute value) this translator does not implement."""


# --------------------------------------------------------------------------------------------------------------------
# helpers


def _is_tensor(v: Value) -> bool:
    return isinstance(v, torch.Tensor)


def _tensor_like(v: Value, like: torch.Tensor) -> torch.Tensor:
    """``v`` as a tensor on ``like``'s device, in ``like``'s dtype (``Tensor.new_tensor``'s defaults)."""
    if _is_tensor(v):
        return v
    return like.new_tensor(v)


def _pyval(arr: np.ndarray) -> Value:
    """A constant as a Python value: int / float for 0-d arrays, tuple for 1-d arrays."""
    if arr.ndim == 0:
        return arr.item()
    if arr.ndim == 1:
        return tuple(arr.tolist())
    raise UnsupportedOnnxOp(f"constant of shape {arr.shape} used as a static (shape/axes) argument")


def _as_tuple(v: Value) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _same_pads(
    in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int], upper: bool
) -> list[int]:
    """F.pad list (last dim first: [w_begin, w_end, h_begin, h_end]) for ONNX auto_pad SAME_UPPER/SAME_LOWER."""
    pads: list[int] = []
    for size, k, s, d in zip(in_sizes, kernel, strides, dilations, strict=True):
        out = -(-size // s)  # ceil(size / s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        small = total // 2
        begin, end = (small, total - small) if upper else (total - small, small)
        pads.append((begin, end))
    return [p for begin_end in reversed(pads) for p in begin_end]


def _explicit_pads(pads: Sequence[int]) -> list[int]:
    """ONNX pads [x1_begin, x2_begin, x1_end, x2_end] -> F.pad list [x2_begin, x2_end, x1_begin, x1_end]."""
    n = len(pads) // 2
    out: list[int] = []
    for i in reversed(range(n)):
        out += [pads[i], pads[i + n]]
    return out


def _padding(
    attrs: dict[str, Any],
    kernel: Sequence[int],
    strides: Sequence[int],
    dilations: Sequence[int],
) -> Callable[[torch.Tensor], tuple[list[int] | None, int | list[int]]]:
    """Returns fn(x) -> (F.pad list or None, symmetric padding for the torch op)."""
    auto = attrs.get("auto_pad", "NOTSET")
    n = len(kernel)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        upper = auto == "SAME_UPPER"

        def same(x: torch.Tensor) -> tuple[list[int] | None, int | list[int]]:
            return _same_pads(x.shape[-n:], kernel, strides, dilations, upper), 0

        return same
    if auto == "VALID":
        return lambda x: (None, 0)
    if auto != "NOTSET":
        raise UnsupportedOnnxOp(f"auto_pad={auto!r}")
    pads = list(attrs.get("pads", [0] * (2 * n)))
    if pads[:n] == pads[n:]:
        return lambda x: (None, pads[:n])
    fpads = _explicit_pads(pads)
    return lambda x: (fpads, 0)


# --------------------------------------------------------------------------------------------------------------------
# op builders: each takes (attrs, static inputs, opset) and returns fn(inputs) -> outputs


def _elementwise(fn: Callable[[Value, Value], Value], py: Callable[[Any, Any], Any]) -> Callable[..., OpFn]:
    def build(attrs: dict, static: list, opset: int) -> OpFn:
        def run(v: list[Value]) -> list[Value]:
            a, b = v
            if not _is_tensor(a) and not _is_tensor(b):  # shape arithmetic on Python values
                if isinstance(a, tuple) or isinstance(b, tuple):
                    n = max(len(_as_tuple(a)), len(_as_tuple(b)))
                    a2 = _as_tuple(a) * (n if not isinstance(a, tuple) else 1)
                    b2 = _as_tuple(b) * (n if not isinstance(b, tuple) else 1)
                    return [tuple(py(x, y) for x, y in zip(a2, b2, strict=True))]
                return [py(a, b)]
            if isinstance(a, int | float) or isinstance(b, int | float):
                return [py(a, b)]  # tensor with a Python scalar: no constant tensor is created on any device
            like = a if _is_tensor(a) else b
            return [fn(_tensor_like(a, like), _tensor_like(b, like))]

        return run

    return build


def _matmul(attrs: dict, static: list, opset: int) -> OpFn:
    def run(v: list[Value]) -> list[Value]:
        if not (_is_tensor(v[0]) and _is_tensor(v[1])):
            raise UnsupportedOnnxOp("MatMul with a constant scalar/shape operand")
        return [torch.matmul(v[0], v[1])]

    return run


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., OpFn]:
    return lambda attrs, static, opset: lambda v: [fn(v[0])]


def _conv(attrs: dict, static: list, opset: int) -> OpFn:
    kernel = list(attrs["kernel_shape"])
    n = len(kernel)
    if n != 2:
        raise UnsupportedOnnxOp(f"Conv with {n} spatial dims (only 2-D)")
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    group = int(attrs.get("group", 1))
    padding = _padding(attrs, kernel, strides, dilations)

    def run(v: list[Value]) -> list[Value]:
        x, w = v[0], v[1]  # (N, C, H, W), (O, C/group, kh, kw)
        b = v[2] if len(v) > 2 else None
        fpad, pad = padding(x)
        if fpad is not None:
            x = F.pad(x, fpad)
        return [F.conv2d(x, w, b, stride=strides, padding=pad, dilation=dilations, groups=group)]

    return run


def _conv_transpose(attrs: dict, static: list, opset: int) -> OpFn:
    kernel = list(attrs["kernel_shape"])
    n = len(kernel)
    if n != 2 or attrs.get("auto_pad", "NOTSET") != "NOTSET" or "output_shape" in attrs:
        raise UnsupportedOnnxOp("ConvTranspose other than 2-D with explicit pads")
    strides = list(attrs.get("strides", [1] * n))
    dilations = list(attrs.get("dilations", [1] * n))
    pads = list(attrs.get("pads", [0] * (2 * n)))
    if pads[:n] != pads[n:]:
        raise UnsupportedOnnxOp(f"ConvTranspose with asymmetric pads {pads}")
    out_pad = list(attrs.get("output_padding", [0] * n))
    group = int(attrs.get("group", 1))

    def run(v: list[Value]) -> list[Value]:
        b = v[2] if len(v) > 2 else None
        y = F.conv_transpose2d(
            v[0], v[1], b, stride=strides, padding=pads[:n], output_padding=out_pad, groups=group, dilation=dilations
        )
        return [y]

    return run


def _pool(kind: str) -> Callable[..., OpFn]:
    def build(attrs: dict, static: list, opset: int) -> OpFn:
        kernel = list(attrs["kernel_shape"])
        n = len(kernel)
        strides = list(attrs.get("strides", [1] * n))
        dilations = list(attrs.get("dilations", [1] * n))
        if n != 2 or dilations != [1] * n:
            raise UnsupportedOnnxOp(f"{kind} other than 2-D without dilation")
        ceil = bool(attrs.get("ceil_mode", 0))
        padding = _padding(attrs, kernel, strides, dilations)
        include_pad = bool(attrs.get("count_include_pad", 0))

        def run(v: list[Value]) -> list[Value]:
            x = v[0]  # (N, C, H, W)
            fpad, pad = padding(x)
            if kind == "MaxPool":
                if fpad is not None:
                    x = F.pad(x, fpad, value=-math.inf)  # padded cells never win the max, as in ONNX
                return [F.max_pool2d(x, kernel, strides, pad, ceil_mode=ceil)]
            if fpad is not None and any(fpad):
                raise UnsupportedOnnxOp("AveragePool with asymmetric/auto pads")
            return [F.avg_pool2d(x, kernel, strides, pad, ceil_mode=ceil, count_include_pad=include_pad)]

        return run

    return build


def _reduce_mean(attrs: dict, static: list, opset: int) -> OpFn:
    keep = bool(attrs.get("keepdims", 1))
    axes_attr = attrs.get("axes")

    def run(v: list[Value]) -> list[Value]:
        axes = axes_attr if axes_attr is not None else (static[1] if len(v) > 1 else None)
        if axes is None:
            return [v[0].mean(dim=None, keepdim=keep) if keep else v[0].mean()]
        return [v[0].mean(dim=list(_as_tuple(axes)), keepdim=keep)]

    return run


def _softmax(attrs: dict, static: list, opset: int) -> OpFn:
    axis = int(attrs.get("axis", -1 if opset >= 13 else 1))

    def run(v: list[Value]) -> list[Value]:
        x = v[0]
        if opset >= 13:
            return [torch.softmax(x, dim=axis)]
        # opset < 13: the input is coerced to 2-D [prod(d[:axis]), prod(d[axis:])] and normalised over the 2nd dim
        ax = axis % x.dim()
        return [torch.softmax(x.flatten(ax), dim=-1).reshape(x.shape)]

    return run


def _hard_sigmoid(attrs: dict, static: list, opset: int) -> OpFn:
    alpha, beta = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))
    if abs(alpha - 1 / 6) < 1e-7 and beta == 0.5:  # torch's hardsigmoid, clamp(x / 6 + 1 / 2, 0, 1): one kernel
        return lambda v: [F.hardsigmoid(v[0])]
    return lambda v: [(v[0] * alpha + beta).clamp(0.0, 1.0)]


def _gelu(attrs: dict, static: list, opset: int) -> OpFn:
    approximate = attrs.get("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise UnsupportedOnnxOp(f"Gelu with approximate={approximate!r}")
    return lambda v: [F.gelu(v[0], approximate=approximate)]


def _layer_norm(attrs: dict, static: list, opset: int) -> OpFn:
    axis, eps = int(attrs.get("axis", -1)), float(attrs.get("epsilon", 1e-5))

    def run(v: list[Value]) -> list[Value]:
        x = v[0]
        shape = tuple(x.shape[axis % x.dim() :])
        return [F.layer_norm(x, shape, v[1], v[2] if len(v) > 2 else None, eps)]

    return run


def _clip(attrs: dict, static: list, opset: int) -> OpFn:
    lo = attrs.get("min") if opset < 11 else (static[1] if len(static) > 1 else None)
    hi = attrs.get("max") if opset < 11 else (static[2] if len(static) > 2 else None)
    if opset >= 11 and ((len(static) > 1 and lo is None) or (len(static) > 2 and hi is None)):
        raise UnsupportedOnnxOp("Clip with non-constant bounds")
    return lambda v: [v[0].clamp(lo, hi)]


def _batch_norm(attrs: dict, static: list, opset: int) -> OpFn:
    eps = float(attrs.get("epsilon", 1e-5))
    # inference form: y = (x - mean) / sqrt(var + eps) * scale + bias
    return lambda v: [F.batch_norm(v[0], v[3], v[4], v[1], v[2], training=False, eps=eps)]


def _shape(attrs: dict, static: list, opset: int) -> OpFn:
    start, end = attrs.get("start", 0), attrs.get("end")
    return lambda v: [tuple(int(s) for s in v[0].shape[start:end])]


def _slice(attrs: dict, static: list, opset: int) -> OpFn:
    if opset < 10:
        raise UnsupportedOnnxOp("Slice before opset 10")

    def run(v: list[Value]) -> list[Value]:
        data = v[0]
        starts, ends = _as_tuple(v[1]), _as_tuple(v[2])
        axes = _as_tuple(v[3]) if len(v) > 3 and v[3] is not None else tuple(range(len(starts)))
        steps = _as_tuple(v[4]) if len(v) > 4 and v[4] is not None else (1,) * len(starts)
        if any(_is_tensor(s) for s in (*starts, *ends, *axes, *steps)):
            raise UnsupportedOnnxOp("Slice with tensor-valued starts/ends (only constants and shapes)")
        if isinstance(data, tuple):  # slicing a shape
            ((s, e, st),) = zip(starts, ends, steps, strict=True)
            return [data[slice(s, e, st)]]
        if any(st != 1 for st in steps):
            raise UnsupportedOnnxOp(f"Slice with steps {steps} on a tensor (only 1)")
        for s, e, ax in zip(starts, ends, axes, strict=True):
            s, e, _ = slice(s, e).indices(data.shape[ax])  # negative / out-of-range bounds clamped as in ONNX
            data = data.narrow(ax, s, max(e - s, 0))
        return [data]

    return run


def _squeeze(attrs: dict, static: list, opset: int) -> OpFn:
    def run(v: list[Value]) -> list[Value]:
        axes = attrs.get("axes") if opset < 13 else (_as_tuple(v[1]) if len(v) > 1 else None)
        x = v[0]
        if isinstance(x, tuple):  # (k,) shape vector -> scalar
            if len(x) != 1:
                raise UnsupportedOnnxOp(f"Squeeze of a shape vector of length {len(x)}")
            return [x[0]]
        if axes is None:
            return [x.squeeze()]
        return [x.squeeze(tuple(a % x.dim() for a in axes))]

    return run


def _unsqueeze(attrs: dict, static: list, opset: int) -> OpFn:
    def run(v: list[Value]) -> list[Value]:
        axes = list(attrs.get("axes") if opset < 13 else _as_tuple(v[1]))
        x = v[0]
        if not _is_tensor(x):  # scalar -> (1,), the only shape-arithmetic case
            if isinstance(x, tuple) or axes != [0]:
                raise UnsupportedOnnxOp(f"Unsqueeze of a shape value with axes {axes}")
            return [(x,)]
        rank = x.dim() + len(axes)
        for a in sorted(a % rank for a in axes):
            x = x.unsqueeze(a)
        return [x]

    return run


def _concat(attrs: dict, static: list, opset: int) -> OpFn:
    axis = int(attrs["axis"])

    def run(v: list[Value]) -> list[Value]:
        if not any(_is_tensor(x) for x in v):  # shape vectors
            return [tuple(i for x in v for i in _as_tuple(x))]
        like = next(x for x in v if _is_tensor(x))
        return [torch.cat([_tensor_like(x, like) for x in v], dim=axis)]

    return run


def _reshape(attrs: dict, static: list, opset: int) -> OpFn:
    allowzero = bool(attrs.get("allowzero", 0))

    def run(v: list[Value]) -> list[Value]:
        x, shape = v[0], v[1]
        if _is_tensor(shape):
            raise UnsupportedOnnxOp("Reshape to a tensor-valued shape (only constants and shape arithmetic)")
        if not _is_tensor(x):  # a shape value: scalar <-> 1-element vector
            flat = _as_tuple(x)
            if _as_tuple(shape) == () and len(flat) == 1:
                return [flat[0]]
            if len(_as_tuple(shape)) == 1:
                return [flat]
            raise UnsupportedOnnxOp(f"Reshape of a shape value to {shape}")
        shape = [x.shape[i] if (s == 0 and not allowzero) else s for i, s in enumerate(_as_tuple(shape))]
        return [x.reshape(shape)]

    return run


def _transpose(attrs: dict, static: list, opset: int) -> OpFn:
    perm = attrs.get("perm")
    return lambda v: [v[0].permute(*(perm if perm is not None else reversed(range(v[0].dim()))))]


_ONNX_INT_TYPES = {2, 3, 4, 5, 6, 7, 12, 13}  # uint8 int8 uint16 int16 int32 int64 uint32 uint64
_ONNX_FLOAT_TYPES = {1, 10, 11, 16}  # float float16 double bfloat16


def _cast(attrs: dict, static: list, opset: int) -> OpFn:
    to = int(attrs["to"])
    if to not in _ONNX_INT_TYPES | _ONNX_FLOAT_TYPES:
        raise UnsupportedOnnxOp(f"Cast to ONNX type {to}")

    def run(v: list[Value]) -> list[Value]:
        x = v[0]
        if not _is_tensor(x):
            if to in _ONNX_INT_TYPES:
                return [tuple(int(i) for i in x) if isinstance(x, tuple) else int(x)]
            return [tuple(float(i) for i in x) if isinstance(x, tuple) else float(x)]
        if to in _ONNX_INT_TYPES:
            return [x.to(torch.int64)]
        # float casts keep the module's compute dtype (a float32 graph runs in bfloat16 when the module is bfloat16)
        return [x if x.is_floating_point() else x.float()]

    return run


def _resize(attrs: dict, static: list, opset: int) -> OpFn:
    mode = attrs.get("mode", "nearest")
    coord = attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest = attrs.get("nearest_mode", "round_prefer_floor")
    if opset < 11:
        raise UnsupportedOnnxOp("Resize before opset 11")
    if mode == "nearest" and coord == "asymmetric" and nearest == "floor":
        torch_mode, align = "nearest", None  # torch 'nearest' is src = floor(dst * in / out)
    elif mode == "linear" and coord in ("half_pixel", "pytorch_half_pixel", "align_corners"):
        torch_mode, align = "bilinear", coord == "align_corners"
    else:
        raise UnsupportedOnnxOp(f"Resize mode={mode} coordinate_transformation_mode={coord} nearest_mode={nearest}")
    scales = static[2] if len(static) > 2 else None
    sizes_static = static[3] if len(static) > 3 else None

    def run(v: list[Value]) -> list[Value]:
        x = v[0]  # (N, C, H, W)
        sizes = v[3] if len(v) > 3 and v[3] is not None else sizes_static
        if sizes is not None and len(_as_tuple(sizes)) == x.dim():
            if _is_tensor(sizes):
                raise UnsupportedOnnxOp("Resize with tensor-valued sizes")
            out = list(_as_tuple(sizes))
        elif scales is not None and len(_as_tuple(scales)) == x.dim():
            out = [int(math.floor(d * s)) for d, s in zip(x.shape, _as_tuple(scales), strict=True)]
        else:
            raise UnsupportedOnnxOp("Resize needs constant scales or shape-valued sizes")
        if list(out[:2]) != list(x.shape[:2]):
            raise UnsupportedOnnxOp("Resize of the batch or channel dimension")
        return [F.interpolate(x, size=out[2:], mode=torch_mode, align_corners=align)]

    return run


def _identity(attrs: dict, static: list, opset: int) -> OpFn:
    return lambda v: [v[0]]


OP_BUILDERS: dict[str, Callable[[dict, list, int], OpFn]] = {
    "Add": _elementwise(torch.add, lambda a, b: a + b),
    "Sub": _elementwise(torch.sub, lambda a, b: a - b),
    "Mul": _elementwise(torch.mul, lambda a, b: a * b),
    "Div": _elementwise(torch.div, lambda a, b: a // b if isinstance(a, int) and isinstance(b, int) else a / b),
    "Pow": _elementwise(torch.pow, lambda a, b: a**b),
    "Relu": _unary(torch.relu),
    "Sigmoid": _unary(torch.sigmoid),
    "Erf": _unary(torch.erf),
    "Sqrt": _unary(torch.sqrt),
    "HardSigmoid": _hard_sigmoid,
    "Gelu": _gelu,
    "LayerNormalization": _layer_norm,
    "Clip": _clip,
    "Identity": _identity,
    "Conv": _conv,
    "ConvTranspose": _conv_transpose,
    "MaxPool": _pool("MaxPool"),
    "AveragePool": _pool("AveragePool"),
    "GlobalAveragePool": _unary(lambda x: x.mean(dim=(-2, -1), keepdim=True)),
    "BatchNormalization": _batch_norm,
    "ReduceMean": _reduce_mean,
    "MatMul": _matmul,
    "Softmax": _softmax,
    "Resize": _resize,
    "Shape": _shape,
    "Slice": _slice,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "Concat": _concat,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Cast": _cast,
}
SUPPORTED_OPS: frozenset[str] = frozenset(OP_BUILDERS) | {"Constant"}
