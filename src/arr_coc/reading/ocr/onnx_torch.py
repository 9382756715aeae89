"""Run an ONNX graph with torch: a small translator for the op set of the PP-OCR networks that rapidocr ships.

Why: rapidocr runs its detection (DBNet) and recognition (SVTR/CRNN) networks with onnxruntime on the CPU, 0.3-2.7 s
a page on 2 cores. Running the same graphs with torch puts OCR on the model's device and dtype (a GPU in bfloat16
costs milliseconds). ``onnx2torch`` converts neither graph (``auto_pad=SAME_UPPER`` convolutions) and imports
torchvision, so this file interprets the graph itself, one small function per ONNX op.

How:
    * ``OnnxModule(path)`` parses the model with the ``onnx`` package. Float initializers become buffers, so
      ``module.to(device, dtype)`` moves them; integer initializers and ``Constant`` nodes (shapes, axes, Resize
      scales) stay Python values read when the graph is built.
    * Shape arithmetic (``Shape`` -> ``Slice`` -> ``Concat`` -> ``Reshape``) runs on Python tuples of ints taken from
      ``tensor.shape``, so any input size works (dynamic H/W for detection, dynamic width for recognition), nothing
      reads tensor data back from the device, and ``FakeTensorMode`` can trace it.
    * ``auto_pad=SAME_UPPER``/``SAME_LOWER`` pads are computed from the input size at run time (asymmetric when the
      total pad is odd, the extra pixel at the end for SAME_UPPER), as the ONNX spec says.
    * An op outside ``SUPPORTED_OPS`` raises ``UnsupportedOnnxOp`` naming the op and the node, when the graph is built.

The rapidocr drop-in that runs the PP-OCR networks through this module is ``arr_coc.reading.ocr.torch_backend``.

Example:
    >>> det = OnnxModule("PP-OCRv6_det_small.onnx").to("cuda", torch.bfloat16)    # doctest: +SKIP
    >>> prob = det(images)  # (N, 3, H, W), H and W multiples of 32 -> (N, 1, H, W)   # doctest: +SKIP
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from .onnx_ops import OP_BUILDERS, SUPPORTED_OPS, OpFn, UnsupportedOnnxOp, Value, _pyval  # noqa: F401

# --------------------------------------------------------------------------------------------------------------------
# the module


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else tuple(v) if isinstance(v, list) else v
    return out


class _Step(NamedTuple):
    """One translated node: its ONNX op type, the torch function, and the names of its inputs and outputs."""

    op: str
    fn: OpFn
    inputs: list[str]
    outputs: list[str]


def _fold_conv_bias(nodes: list[Any], consts: dict[str, np.ndarray], outputs: set[str]) -> list[Any]:
    """Fold ``Conv(x, w) -> Add(., b)`` with a per-channel constant ``b`` of shape (1, C, 1, 1) into ``Conv(x, w, b)``.

    PaddlePaddle exports put every conv bias in a separate Add (75 of the detector's 83 convs): folding saves one
    pass over each feature map (and one kernel launch on a GPU). Same arithmetic up to rounding (the bias is added
    inside the convolution). New bias constants are added to ``consts`` under ``<add input>::bias``.
    """
    from onnx import helper

    users: dict[str, list[Any]] = {}
    for n in nodes:
        for i in n.input:
            users.setdefault(i, []).append(n)
    folded: dict[int, Any] = {}  # id(conv) -> fused node
    skip: set[int] = set()  # id(add) nodes absorbed
    for n in nodes:
        if n.op_type != "Conv" or len(n.input) != 2 or n.input[1] not in consts or n.output[0] in outputs:
            continue
        after = users.get(n.output[0], [])
        if len(after) != 1 or after[0].op_type != "Add":
            continue
        add = after[0]
        other = add.input[1] if add.input[0] == n.output[0] else add.input[0]
        c_out = consts[n.input[1]].shape[0]
        b = consts.get(other)
        if b is None or not np.issubdtype(b.dtype, np.floating) or b.shape not in ((1, c_out, 1, 1), (c_out, 1, 1)):
            continue
        consts[other + "::bias"] = b.reshape(c_out)
        fused = helper.make_node("Conv", [n.input[0], n.input[1], other + "::bias"], [add.output[0]], name=n.name)
        fused.attribute.extend(n.attribute)
        folded[id(n)] = fused
        skip.add(id(add))
    return [folded.get(id(n), n) for n in nodes if id(n) not in skip]


def _fuse_chains(nodes: list[Any], consts: dict[str, np.ndarray], outputs: set[str]) -> list[Any]:
    """Replace PaddlePaddle's exported GELU and LayerNorm chains with one ``Gelu`` / ``LayerNormalization`` node each.

    The exporter writes GELU as five nodes, ``Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)``, and LayerNorm over the
    last axis as nine (``ReduceMean``, ``Sub``, ``Pow 2``, ``ReduceMean``, ``Add eps``, ``Sqrt``, ``Div``, ``Mul
    gamma``, ``Add beta``): on a GPU each node is a kernel launch over the whole map, and the PP-OCR networks run
    launch-bound. One node each is the same function (ONNX's own ``Gelu`` of opset 20 and ``LayerNormalization`` of
    opset 17, which onnxruntime also fuses these chains into), computed by ``F.gelu`` / ``F.layer_norm`` (the
    latter accumulates in float32 for bfloat16 / float16 inputs); the results differ from the chain in rounding only.
    A chain is fused only when its intermediates feed nothing else and its constants are the expected ones.
    """
    from onnx import helper

    users: dict[str, list[Any]] = {}
    producer: dict[str, Any] = {}
    for n in nodes:
        for i in n.input:
            users.setdefault(i, []).append(n)
        for o in n.output:
            producer[o] = n

    def scalar(name: str) -> float | None:
        c = consts.get(name)
        return float(c) if c is not None and c.size == 1 and np.issubdtype(c.dtype, np.floating) else None

    def sole_user(node: Any, op: str) -> Any:
        us = users.get(node.output[0], [])
        ok = len(us) == 1 and us[0].op_type == op and node.output[0] not in outputs
        return us[0] if ok else None

    def other(node: Any, name: str) -> str:
        return node.input[1] if node.input[0] == name else node.input[0]

    def last_axis(node: Any) -> bool:
        a = _attrs(node)
        return node.op_type == "ReduceMean" and tuple(a.get("axes", ())) == (-1,) and a.get("keepdims", 1) == 1

    replace: dict[int, Any] = {}  # id(last node of a chain) -> the fused node
    drop: set[int] = set()
    for n in nodes:
        if n.op_type == "Erf":  # GELU
            div = producer.get(n.input[0])
            if div is None or div.op_type != "Div" or scalar(div.input[1]) is None:
                continue
            x = div.input[0]
            add = sole_user(n, "Add")
            mul = sole_user(add, "Mul") if add is not None else None
            half = sole_user(mul, "Mul") if mul is not None else None
            if (
                half is None
                or sole_user(div, "Erf") is not n
                or abs(scalar(div.input[1]) - math.sqrt(2)) > 1e-6  # type: ignore[operator]
                or scalar(other(add, n.output[0])) != 1.0
                or other(mul, add.output[0]) != x
                or scalar(other(half, mul.output[0])) != 0.5
            ):
                continue
            replace[id(half)] = helper.make_node("Gelu", [x], [half.output[0]], name=f"{half.name}::gelu")
            drop.update(map(id, (div, n, add, mul)))
        elif n.op_type == "Pow" and scalar(n.input[1]) == 2.0:  # LayerNorm over the last axis
            sub = producer.get(n.input[0])
            if sub is None or sub.op_type != "Sub" or sub.output[0] in outputs:
                continue
            x, mean = sub.input
            rm1 = producer.get(mean)
            rm2 = sole_user(n, "ReduceMean")
            add = sole_user(rm2, "Add") if rm2 is not None else None
            sqrt = sole_user(add, "Sqrt") if add is not None else None
            div = sole_user(sqrt, "Div") if sqrt is not None else None
            mul = sole_user(div, "Mul") if div is not None else None
            bias = sole_user(mul, "Add") if mul is not None else None
            if bias is None or rm1 is None or not (last_axis(rm1) and last_axis(rm2)) or rm1.input[0] != x:
                continue
            eps = scalar(other(add, rm2.output[0]))
            gamma, beta = other(mul, div.output[0]), other(bias, mul.output[0])
            if (
                eps is None
                or sole_user(rm1, "Sub") is not sub
                or {id(u) for u in users.get(sub.output[0], [])} != {id(n), id(div)}
                or list(div.input) != [sub.output[0], sqrt.output[0]]
                or any(consts.get(g) is None or consts[g].ndim != 1 for g in (gamma, beta))
            ):
                continue
            replace[id(bias)] = helper.make_node(
                "LayerNormalization", [x, gamma, beta], [bias.output[0]], name=f"{bias.name}::layer_norm", axis=-1,
                epsilon=eps,
            )  # fmt: skip
            drop.update(map(id, (rm1, sub, n, rm2, add, sqrt, div, mul)))
    return [replace.get(id(n), n) for n in nodes if id(n) not in drop]


def _skip_identities(nodes: list[Any], outputs: set[str]) -> list[Any]:
    """Drop ``Identity`` nodes (135 of the recogniser's 480: the exporter's casts and renames), reading their input
    wherever their output is read; an ``Identity`` that writes a graph output stays."""
    from onnx import helper

    alias: dict[str, str] = {}
    kept = []
    for n in nodes:
        ins = [alias.get(i, i) for i in n.input]
        if n.op_type == "Identity" and n.output[0] not in outputs:
            alias[n.output[0]] = ins[0]
            continue
        if ins != list(n.input):
            renamed = helper.make_node(n.op_type, ins, list(n.output), name=n.name, domain=n.domain or None)
            renamed.attribute.extend(n.attribute)
            n = renamed
        kept.append(n)
    return kept


class OnnxModule(nn.Module):
    """An ONNX graph (one input, one output used) as a ``torch.nn.Module``.

    Args:
        model: Path to an ``.onnx`` file or a loaded ``onnx.ModelProto``.
        fold_bias: Fold ``Conv`` + per-channel ``Add`` pairs into a biased ``Conv`` (see ``_fold_conv_bias``).
        fuse: Run the exporter's GELU and LayerNorm chains as one ``Gelu`` / ``LayerNormalization`` node each (see
            ``_fuse_chains``). ``Identity`` nodes are skipped either way (``_skip_identities``: they launch nothing).

    Raises:
        UnsupportedOnnxOp: the graph uses an op outside ``SUPPORTED_OPS`` (the message names the op and the node).
        ImportError: the ``onnx`` package is missing (``pip install -e '.[ocr]' in the arr-coc-vis clone``).

    Example:
        >>> net = OnnxModule("det.onnx").to("cuda", torch.bfloat16)       # doctest: +SKIP
        >>> prob = net(images)  # (N, 3, H, W) -> (N, 1, H, W)                  # doctest: +SKIP
    """

    def __init__(self, model: str | Path | Any, fold_bias: bool = True, fuse: bool = True) -> None:
        super().__init__()
        import onnx
        from onnx import numpy_helper

        proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
        graph = proto.graph
        self.opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 0)
        self.metadata: dict[str, str] = {p.key: p.value for p in proto.metadata_props}

        consts: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant":
                a = _attrs(node)
                if "value" not in a:
                    raise UnsupportedOnnxOp(f"Constant node {node.name!r} without a 'value' tensor")
                consts[node.output[0]] = numpy_helper.to_array(a["value"])
        unknown = [(n.op_type, n.name or n.output[0]) for n in graph.node if n.op_type not in SUPPORTED_OPS]
        if unknown:
            op, name = unknown[0]
            raise UnsupportedOnnxOp(
                f"ONNX op {op!r} (node {name!r}) is not supported; {len(unknown)} unsupported node(s) in all. "
                f"Supported ops: {', '.join(sorted(SUPPORTED_OPS))}"
            )

        nodes = [n for n in graph.node if n.op_type != "Constant"]
        if fold_bias:
            nodes = _fold_conv_bias(nodes, consts, {o.name for o in graph.output})
        if fuse:
            nodes = _fuse_chains(nodes, consts, {o.name for o in graph.output})
        nodes = _skip_identities(nodes, {o.name for o in graph.output})

        # float constants become buffers (moved by .to); integer ones are Python values (shapes, axes)
        self._buffer_of: dict[str, str] = {}
        self._python: dict[str, Value] = {}
        for i, (name, arr) in enumerate(consts.items()):
            if np.issubdtype(arr.dtype, np.floating) and arr.ndim > 0:
                key = f"c{i}"
                self.register_buffer(key, torch.from_numpy(np.array(arr, dtype=np.float32)))
                self._buffer_of[name] = key
            elif np.issubdtype(arr.dtype, np.floating):
                self._python[name] = float(arr)  # 0-d float (Pow exponent, Clip bound): a Python scalar
            else:
                self._python[name] = _pyval(arr)

        def static(name: str) -> Value:
            if name in self._python:
                return self._python[name]
            if name in consts and consts[name].ndim <= 1:
                return _pyval(consts[name])  # 1-d float constants (Resize scales) are also needed as Python values
            return None

        graph_inputs = [i.name for i in graph.input if i.name not in consts]
        if len(graph_inputs) != 1:
            raise UnsupportedOnnxOp(f"graphs with exactly one input are supported, got {graph_inputs}")
        self.input_name = graph_inputs[0]
        self.output_names = [o.name for o in graph.output]

        self._nodes: list[_Step] = []
        for node in nodes:
            st = [static(n) if n else None for n in node.input]
            fn = OP_BUILDERS[node.op_type](_attrs(node), st, self.opset)
            self._nodes.append(_Step(node.op_type, fn, list(node.input), list(node.output)))
        # free each intermediate after its last use (the detector's maps are large)
        last_use: dict[str, int] = {}
        for k, step in enumerate(self._nodes):
            for n in step.inputs:
                last_use[n] = k
        keep = set(self.output_names)
        self._free_after: list[list[str]] = [[] for _ in self._nodes]
        for n, k in last_use.items():
            if n not in keep and n not in consts:
                self._free_after[k].append(n)

    def _lookup(self, env: dict[str, Value], name: str) -> Value:
        if not name:
            return None
        if name in env:
            return env[name]
        if name in self._buffer_of:
            return getattr(self, self._buffer_of[name])
        if name in self._python:
            return self._python[name]
        raise KeyError(f"ONNX value {name!r} is used before it is computed")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Run the graph.

        Args:
            x: The graph's input, e.g. ``(N, 3, H, W)`` images, in the module's dtype and on its device.

        Returns:
            The graph's first output (e.g. ``(N, 1, H, W)`` text probability for the detector,
            ``(N, T, num_classes)`` character probabilities for the recogniser).
        """
        env: dict[str, Value] = {self.input_name: x}
        for step, free in zip(self._nodes, self._free_after, strict=True):
            results = step.fn([self._lookup(env, n) for n in step.inputs])
            for name, value in zip(step.outputs, results, strict=False):
                env[name] = value
            for name in free:
                env.pop(name, None)
        return env[self.output_names[0]]
