"""The learned box scorer's ``box_scores`` on the calling thread: no wait on torch's intra-op thread pool.

``BoxScorer.box_scores`` runs inside every text-path decision of the default relevance, on the host, over one
page's boxes (60-300 rows of 65 features; the shipped checkpoint: five members of 65 -> 16 -> 1). Through torch each
``nn.Linear`` is an MKL call on torch's intra-op OpenMP pool; with the host's cores busy (a VLM beside it, other
processes) each call waits for the pool's sleeping threads to be scheduled (measured: results/learned_relevance.md,
round 10). ``torch.set_num_threads`` cannot be scoped to the scorer: it sets the pool of the process (and the count
every new thread starts with), so it would slow a model forward running in another thread at the same time, and a
lock around it would serialise them. This forward uses no pool: each matrix product is a numpy (BLAS) call of at
most ``MAX_WORK`` multiply-adds (rows cut into chunks), which BLAS runs on the calling thread; the (N, F) ops are
numpy ufuncs; the page's (N,) ``tanh`` / ``exp`` are torch's own (their last bit as the torch forward's), on a
size torch runs on the calling thread (under its grain of 32768 elements). The weights are numpy views of the
module's own tensors (``plan``, kept per scorer while its modules and tensors are the same objects on the same
memory: the views see in-place writes such as ``load_state_dict`` or a training step; ``.to()``, a new tensor or
layer makes a new plan). A call writes nothing but its own arrays (and the plan cache, where two threads at once
store the same plan): two threads score at once safely; torch's thread settings are never touched.

The same float32 operations in the same order as the torch forward (standardise, each member's layers, the
members' sum divided by their count, the bound's tanh, the out-of-range checks, the residual, the page's scaling),
bit-identical except the matrix products: OpenBLAS sums in another order than MKL, so a score may differ from the
torch forward's in its last bits (the kept sets are compared in results/learned_relevance.md, round 10).

``plan`` is None (``BoxScorer.box_scores`` then runs ``torch_box_scores``) for a scorer with a tensor that is not
float32 on the CPU, or a network of layers other than ``nn.Linear``, ``nn.ReLU``, ``nn.Sequential`` and averaged
members.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import torch
from torch import nn

# the most multiply-adds one BLAS call gets: OpenBLAS ran a (300 x 65) @ (65 x 16) product (312k) on the calling
# thread and a (1000 x 65) @ (65 x 16) one (1.04M) on its pool (measured under load); 2**17 stays below both
MAX_WORK = 2**17


def _view(t: torch.Tensor) -> np.ndarray | None:
    """A float32 CPU tensor's numpy view (shares its memory); None for any other tensor."""
    if t.dtype != torch.float32 or t.device.type != "cpu":
        return None
    return t.detach().numpy()


def _ops(net: nn.Module, seen: list[tuple[Any, ...]]) -> list[tuple[Any, ...]] | None:
    """A member's layers as numpy steps: ``("linear", W.T, b, rows a chunk)`` / ``("relu",)``; None if a layer is
    of another kind or a tensor not float32 on the CPU. Adds what the steps read to ``seen`` (``_fresh``)."""
    if isinstance(net, nn.ReLU):
        return [("relu",)]
    if isinstance(net, nn.Linear):
        w = _view(net.weight)
        b = None if net.bias is None else _view(net.bias)
        if w is None or (net.bias is not None and b is None):
            return None
        _note(seen, net._parameters)
        return [("linear", w.T, b, max(1, MAX_WORK // max(1, w.size)))]
    if isinstance(net, nn.Sequential):
        _note(seen, net._modules)
        out: list[tuple[Any, ...]] = []
        for m in net:
            ops = _ops(m, seen)
            if ops is None:
                return None
            out += ops
        return out
    return None


def _note(seen: list[tuple[Any, ...]], entries: dict[str, Any]) -> None:
    """Add each entry of a module's ``_parameters`` / ``_buffers`` / ``_modules`` (and a tensor's storage)."""
    for key, obj in entries.items():
        seen.append((entries, key, obj, obj.data_ptr() if isinstance(obj, torch.Tensor) else None))


def _fresh(seen: list[tuple[Any, ...]]) -> bool:
    """Whether every module and tensor a plan read is still the one its owner holds, on the same storage
    (``load_state_dict`` and optimiser steps write in place, which the views see; ``.to()``, a new tensor, layer
    or network makes a new plan)."""
    for entries, key, obj, ptr in seen:
        if entries.get(key) is not obj or (ptr is not None and obj.data_ptr() != ptr):
            return False
    return True


Plan = tuple[list[list[tuple[Any, ...]]], list[np.ndarray]]
_PLANS: weakref.WeakKeyDictionary[nn.Module, tuple[list[tuple[Any, ...]], Plan]] = weakref.WeakKeyDictionary()
_BUFFERS = ("mean", "scale", "mask", "lo", "hi")


def plan(sc: Any) -> Plan | None:
    """(each member's numpy steps, the views of ``mean, scale, mask, lo, hi``) of a ``BoxScorer``, or None when it
    cannot run here (a tensor not float32 on the CPU, a layer other than ``nn.Linear`` / ``nn.ReLU`` /
    ``nn.Sequential``). Kept per scorer while ``_fresh``; two threads may build it at once (the same plan)."""
    cached = _PLANS.get(sc)
    if cached is not None and _fresh(cached[0]):
        return cached[1]
    seen: list[tuple[Any, ...]] = []
    _note(seen, sc._modules)
    _note(seen, {k: v for k, v in sc._buffers.items() if k in _BUFFERS})
    members = getattr(sc.net, "members", None)
    if isinstance(members, nn.ModuleList) and len(members) > 0:
        _note(seen, sc.net._modules)
        _note(seen, members._modules)
        nets = list(members)
    else:
        nets = [sc.net]
    steps = [_ops(n, seen) for n in nets]
    buffers = [_view(getattr(sc, name)) for name in _BUFFERS]
    if any(s is None for s in steps) or any(b is None for b in buffers):
        return None
    out: Plan = (steps, buffers)  # type: ignore[assignment]
    _PLANS[sc] = (seen, out)
    return out


def supported(scorer: Any) -> bool:
    """Whether ``host_box_scores`` can score for ``scorer`` (a ``BoxScorer``): every tensor float32 on the CPU and a
    network of ``nn.Linear``, ``nn.ReLU``, ``nn.Sequential`` (or averaged members of them)."""
    return plan(scorer) is not None


def _run(steps: list[tuple[Any, ...]], x: np.ndarray) -> np.ndarray:
    """(N, out) one member's output (``nn.Sequential`` / ``nn.Linear`` forward) for rows ``x`` (N, F), float32."""
    for step in steps:
        if step[0] == "relu":
            x = np.maximum(x, np.float32(0.0))
            continue
        _, wt, b, rows = step
        y = x @ wt if len(x) <= rows else np.concatenate([x[i : i + rows] @ wt for i in range(0, len(x), rows)])
        x = y + b if b is not None else y
    return x


def net_output(members: list[list[tuple[Any, ...]]], z: np.ndarray) -> np.ndarray:
    """(N, out) the network's output for standardised rows ``z``: one member's, or the members' sum divided by
    their count (``torch.stack(...).mean(0)``)."""
    acc = _run(members[0], z)
    if len(members) == 1:
        return acc
    for m in members[1:]:
        acc = acc + _run(m, z)
    return acc / np.float32(len(members))


def _outside(z: np.ndarray, lo: np.ndarray, hi: np.ndarray, margin: float) -> np.ndarray:
    """(N,) bool, ``BoxScorer._outside`` of standardised rows: a feature outside the training range widened by
    ``margin`` times it."""
    with np.errstate(invalid="ignore"):  # 0 * inf (no training range): NaN, and nothing compares outside
        pad = np.float32(margin) * (hi - lo)
        low, high = lo - pad - np.float32(1e-6), hi + pad + np.float32(1e-6)
    return ((z < low) | (z > high)).any(-1)


def _exp(v: np.ndarray) -> np.ndarray:
    """``torch.exp`` of a page's (N,) values: torch's own exp (its last bit), on the calling thread (torch runs an
    elementwise op under 32768 elements without its pool)."""
    return torch.exp(torch.from_numpy(np.ascontiguousarray(v))).numpy()


def host_box_scores(sc: Any, feats: np.ndarray, steps: Any = None) -> np.ndarray:
    """(N,) ``BoxScorer.box_scores`` of the rows ``feats`` (N, F), N > 0, computed in numpy (see the module).

    Args:
        sc: the ``BoxScorer``.
        feats: its ``own_columns`` of ``box_features`` rows.
        steps: ``plan(sc)`` when the caller has it (else computed here).

    Raises:
        ValueError: if the rows do not have the scorer's feature count, or the scorer cannot run here (``plan``).
    """
    x = np.ascontiguousarray(feats, dtype=np.float32)
    if x.shape[-1] != len(sc.features):
        raise ValueError(f"expected {len(sc.features)} features per box, got {x.shape[-1]}")
    steps = steps if steps is not None else plan(sc)
    if steps is None:
        raise ValueError("this box scorer cannot run in numpy (a tensor not float32 on the CPU, or another layer)")
    members, (mean, scale, mask, lo, hi) = steps
    z = (x - mean) / scale * mask  # (N, F), as BoxScorer standardises
    if not sc.residual:
        logits = net_output(members, z)[:, 0]
        return _exp(logits - logits.max()).astype(np.float32)
    rule = np.maximum(x[:, sc.features.index("rule")], np.float32(0.0))
    out_page = sc.ood_page is not None and (
        np.float32(_outside(z, lo, hi, 0.0).sum()) / np.float32(len(x)) > np.float32(sc.ood_page)
    )
    if out_page:  # a page unlike the training pages: the rules alone
        s = rule
    else:
        c = net_output(members, z)[:, 0]
        if sc.bound is not None:
            bound = np.float32(sc.bound)
            c = bound * torch.tanh(torch.from_numpy(c / bound)).numpy()
        if sc.ood_margin is not None:
            c = np.where(_outside(z, lo, hi, sc.ood_margin), np.float32(0.0), c)
        e = _exp(c)
        s = rule * e + np.float32(sc.floor) * np.maximum(e - np.float32(1.0), np.float32(0.0))
    return (s / np.maximum(np.float32(1.0), s.max())).astype(np.float32)
