"""Profiling: count the aten ops a piece of code launches and the host syncs it makes, on any device (a CPU too).

A decision made of hundreds of tiny ops is launch-bound on a GPU however little arithmetic it does, and every host
sync stalls the launch queue until the GPU has caught up. Both are deterministic counts, so a CPU can measure what
a GPU will pay, a test can assert them and a benchmark can print them (``benchmarks/decision_ops.py``).

What counts (:class:`OpCounter`):

* **op**: every aten operator call that reaches the dispatcher below autograd (a ``TorchDispatchMode`` sees it),
  except views: kernels, but also factory calls (``empty``, ``zeros``) and scalar reads. Composite ops arrive already
  split into the ops that run (``x.mean()`` is one op, ``F.normalize`` is several). An upper bound on kernel launches,
  and what a GPU's launch queue pays per op in the eager path.
* **view**: an aten op that only makes a view (``func.is_view``: ``slice``, ``select``, ``view``, ``expand``,
  ``unsqueeze``, ``unfold``, ``detach``, ...): no kernel, a little host time; counted apart, in ``views``.
* **sync**: a point where the host must wait for the device's result:

  - ``aten._local_scalar_dense``: ``Tensor.item()``, ``int(t)``, ``float(t)``, ``bool(t)`` (Python control flow on a
    tensor, ``if t > 0:``), ``t.__index__`` (under ``inference_mode`` these arrive as ``aten.item`` /
    ``aten.is_nonzero``, counted the same);
  - ops whose output size depends on values (the device must finish before the host can size the output):
    ``nonzero``, ``masked_select``, ``unique`` in all its spellings, ``index`` / ``index_put_`` with a boolean mask
    (``x[mask]``, ``x[mask] = v``), ``repeat_interleave`` without ``output_size``, ``bincount``, ``equal``;
  - a copy from a non-CPU device to the CPU (``.cpu()``, ``.to("cpu")``, ``.tolist()``, ``.numpy()`` of a device
    tensor: the dispatch mode sees the ``_to_copy`` / ``copy_``);
  - on the CPU, where no copy happens, the calls that WOULD copy a device tensor to the host: ``Tensor.tolist``,
    ``Tensor.numpy``, ``np.asarray(t)`` (``__array__``), ``Tensor.cpu`` and ``Tensor.to("cpu")`` (the device named
    by the string ``"cpu"``), seen by a ``TorchFunctionMode`` (they reach no aten op on a CPU tensor). This assumes
    the tensor would live on the accelerator, so a CPU count is an upper bound for code that also moves genuinely
    host-side tensors. ``Tensor.to(other.device)`` is taken for what it is on an accelerator, a move to the
    device, and not counted;
  - reading the host copy a counted sync made (``tolist``, ``numpy``, ``__array__`` of it) is not counted again:
    ``x.cpu().numpy()`` and ``x.cpu().tolist()`` wait once (on a GPU the ``.numpy()`` reads host memory). On a CPU
    ``.cpu()`` returns the tensor itself, so there a later read of that same tensor is taken for a read of the copy
    (another ``.cpu()`` / ``.to("cpu")`` of it is still counted).

  Host-to-device uploads are not counted: a CPU cannot tell a host tensor's move to the device from a no-op move
  of a tensor already there. On CUDA a blocking upload (``.to(device)`` of a host tensor, ``non_blocking=False``)
  DOES wait for the stream (PyTorch ends it with ``cudaStreamSynchronize``: ``memcpy_and_sync``), so the code keeps
  uploads off the path between queued device work and what follows it, or makes them pinned and non-blocking
  (``arr_coc.integrations.sequence.upload``); the rest upload constants once (cached) or follow a counted read.
* **host op**: an op inside :func:`on_host`, a region the caller declares to work on tensors that live on the host by
  construction (index bookkeeping built from a host copy the code already read, e.g. the foveated tower's inputs
  built from the decision's host copy, then uploaded once). On a GPU these launch nothing and wait for nothing; they
  cost host time, so they are counted apart, in ``host_ops``, and neither as ops nor as syncs. A region may only
  touch tensors made on the CPU inside it or from such copies: the code that opens one says why in a comment.

Example:
    >>> import torch
    >>> with OpCounter() as c:
    ...     x = torch.arange(4.0) * 2
    ...     _ = x.sum().item()
    >>> c.n_ops, c.n_syncs
    (4, 1)
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

_aten = torch.ops.aten

# aten ops that always make the host wait for the device (a value or a value-dependent size comes back)
_SYNC_OPS = frozenset(
    {
        _aten._local_scalar_dense.default,
        _aten.item.default,  # under inference_mode item / is_nonzero reach the mode themselves (not their inner
        _aten.is_nonzero.default,  # _local_scalar_dense): the same sync, counted once either way
        _aten.nonzero.default,
        _aten.nonzero_static.default,
        _aten.argwhere.default,
        _aten.masked_select.default,
        _aten._unique.default,
        _aten._unique2.default,
        _aten.unique_dim.default,
        _aten.unique_consecutive.default,
        _aten.unique_dim_consecutive.default,
        _aten.bincount.default,
        _aten.equal.default,
    }
)
# indexing ops that sync when one index is a boolean mask (the mask's nonzero sizes the result)
_MASK_INDEX_OPS = frozenset({_aten.index.Tensor, _aten.index_put.default, _aten.index_put_.default})
# copies that sync when they go from a device to the host
_COPY_OPS = frozenset({_aten._to_copy.default, _aten.copy_.default, _aten.to.dtype_layout, _aten.to.device})
# Tensor methods that copy to the host; seen at the Python level because on a CPU tensor they reach no aten op
_HOST_METHODS = frozenset({"tolist", "numpy", "__array__", "cpu"})
# of those, the ones that only read: on a host copy a counted sync made, they wait for nothing
_HOST_READS = frozenset({"tolist", "numpy", "__array__"})


_host = threading.local()  # depth of nested on_host regions in this thread


@contextmanager
def on_host() -> Iterator[None]:
    """Declare a region whose tensors live on the host by construction (see the module docstring): an
    :class:`OpCounter` counts its ops in ``host_ops``, not as ops or syncs. Outside a counter it does nothing."""
    _host.depth = getattr(_host, "depth", 0) + 1
    try:
        yield
    finally:
        _host.depth -= 1


def _in_host_region() -> bool:
    return getattr(_host, "depth", 0) > 0


def _is_mask(index: Any) -> bool:
    return isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8)


def _is_sync(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the aten call ``func(*args, **kwargs)`` makes the host wait for the device."""
    if func in _SYNC_OPS:
        return True
    if func in _MASK_INDEX_OPS:
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        return any(_is_mask(i) for i in indices or ())
    if func == _aten.repeat_interleave.Tensor or func == _aten.repeat_interleave.self_Tensor:
        return kwargs.get("output_size") is None
    if func in _COPY_OPS:
        src = args[1] if func == _aten.copy_.default else args[0]
        dst = args[0] if func == _aten.copy_.default else None
        if not isinstance(src, torch.Tensor) or src.device.type == "cpu":
            return False
        if dst is not None:
            return dst.device.type == "cpu"
        device = kwargs.get("device")
        if func == _aten.to.device:
            device = args[1] if len(args) > 1 else device
        return device is not None and torch.device(device).type == "cpu"
    return False


class _DispatchCounter(TorchDispatchMode):
    """Counts every aten op below autograd, and the ones that sync."""

    def __init__(self, owner: OpCounter):
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = str(func.overloadpacket.__name__)
        if _in_host_region():
            if not func.is_view:
                self.owner.host_ops[name] += 1
            return func(*args, **kwargs)
        (self.owner.views if func.is_view else self.owner.ops)[name] += 1
        if not _is_sync(func, args, kwargs):
            return func(*args, **kwargs)
        self.owner.syncs[name] += 1
        out = func(*args, **kwargs)
        if func in _COPY_OPS:  # the host copy itself: reading it later waits for nothing
            self.owner._mark_copied(args[0] if func == _aten.copy_.default else out)
        return out


class _FunctionCounter(TorchFunctionMode):
    """Counts the host copies a CPU tensor makes no aten op for (``tolist``, ``numpy``, ``cpu``, ``to("cpu")``)."""

    def __init__(self, owner: OpCounter):
        super().__init__()
        self.owner = owner

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if _in_host_region():
            return func(*args, **kwargs)
        if args and isinstance(args[0], torch.Tensor) and args[0].device.type == "cpu":
            to_host = name in _HOST_METHODS
            if name == "to":
                target = kwargs.get("device", args[1] if len(args) > 1 else None)
                to_host = isinstance(target, str) and torch.device(target).type == "cpu"
            reads_copy = name in _HOST_READS and self.owner._copied_already(args[0])
            if to_host and not reads_copy:
                self.owner.syncs[f"Tensor.{name}"] += 1
                out = func(*args, **kwargs)
                if isinstance(out, torch.Tensor):  # .cpu() / .to("cpu"): on a CPU the tensor itself
                    self.owner._mark_copied(out)
                return out
        return func(*args, **kwargs)


class OpCounter:
    """Context manager counting aten ops and host syncs (see the module docstring for what counts).

    Attributes:
        ops: calls per aten operator name, views excepted (e.g. ``{"add": 12, "mul": 9}``).
        views: calls per view operator name (no kernel launched).
        syncs: host syncs per cause (an aten operator name, or ``Tensor.tolist`` and the like).
        host_ops: ops inside :func:`on_host` regions (host tensors by construction), per aten operator name.

    Not thread-safe across threads that run torch code at the same time (the modes are per thread in torch, but a
    counter object is meant for one measured region); nesting two counters counts in both.
    """

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()
        self.views: Counter[str] = Counter()
        self.syncs: Counter[str] = Counter()
        self.host_ops: Counter[str] = Counter()
        self._modes: list[Any] = []
        self._copies: dict[int, weakref.ref[torch.Tensor]] = {}  # host copies already counted as a sync

    def _mark_copied(self, tensor: Any) -> None:
        if isinstance(tensor, torch.Tensor):
            self._copies[id(tensor)] = weakref.ref(tensor)

    def _copied_already(self, tensor: torch.Tensor) -> bool:
        """Whether ``tensor`` is the host copy a counted sync made (``x.cpu().numpy()`` waits once, not twice)."""
        ref = self._copies.get(id(tensor))
        return ref is not None and ref() is tensor

    @property
    def n_ops(self) -> int:
        """Total aten ops counted."""
        return sum(self.ops.values())

    @property
    def n_views(self) -> int:
        """Total view ops counted (not in :attr:`n_ops`)."""
        return sum(self.views.values())

    @property
    def n_host_ops(self) -> int:
        """Total ops inside :func:`on_host` regions (not in :attr:`n_ops`)."""
        return sum(self.host_ops.values())

    @property
    def n_syncs(self) -> int:
        """Total host syncs counted."""
        return sum(self.syncs.values())

    def __enter__(self) -> OpCounter:
        self._modes = [_FunctionCounter(self), _DispatchCounter(self)]
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(exc_type, exc, tb)
        self._modes = []

    def summary(self, top: int = 10) -> str:
        """One line: totals, the most frequent ops and every sync cause."""
        common = ", ".join(f"{name} {n}" for name, n in self.ops.most_common(top))
        syncs = ", ".join(f"{name} {n}" for name, n in self.syncs.most_common()) or "none"
        host = f"; {self.n_host_ops} host ops" if self.host_ops else ""
        return f"{self.n_ops} ops ({common}); {self.n_views} views; {self.n_syncs} syncs ({syncs}){host}"


def count_ops(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, OpCounter]:
    """Run ``fn(*args, **kwargs)`` under an :class:`OpCounter`; returns its result and the counter."""
    with OpCounter() as counter:
        result = fn(*args, **kwargs)
    return result, counter
