"""CUDA graphs of fixed-shape work: one replay instead of dozens of kernel launches.

At batch 1 on a GPU the decision is launch-bound: the texture of a page is ~70 small kernels whose launches cost far
more host time than their GPU work (a lent H200: ~130 launches, 0.4 ms of GPU work, 2.8 ms a decision). A CUDA graph
records those launches once and replays them with one call. :class:`ShapeGraphs` does that for a function of one
tensor whose ops depend only on the tensor's shape (and on Python arguments that are part of the key): the texture of
frames of one size, which depends on the page alone, never on the question.

How it is used, and what it guarantees:

* **On by default for CUDA frames** (``EngineConfig.texture_graphs``: how many frame shapes to keep graphs for,
  4 by default; 0: off), and only where a graph is safe: no dispatch mode active (fake tensors, op counters), no
  autograd (inference), not inside another capture. A CPU decision never uses them.
* A shape is captured on its **second** sighting (``after``): a page size seen once is computed eagerly, so a stream of
  pages of ever new sizes never pays for captures it would not replay. At most ``max_graphs`` shapes are held, least
  recently used out (each holds its intermediate buffers in a private memory pool).
* **The same result as the eager call**: the replay runs the kernels the capture recorded, on a private copy of the
  input (``static_in``), into the output buffer the capture allocated; the caller gets a copy of that buffer. Every
  tensor the recorded kernels read must outlive the graph: the function's constants come from
  :data:`arr_coc.tensors.CONSTANTS` (built on the warm-up run, before the capture) and the entry keeps a reference to
  each of them.
* **Nothing silent**: a capture that fails (an op that cannot be captured) is reported once with a ``RuntimeWarning``
  and that shape runs eagerly from then on.

The capture itself (``capture``) is a parameter so the bookkeeping above is tested on any machine: the default,
:func:`cuda_capture`, records a ``torch.cuda.CUDAGraph`` after a warm-up run on a side stream (PyTorch's recipe);
``tests/test_graphs.py`` passes :func:`eager_capture`, which "replays" by running the function again into the same
static output. On a lent H100 (``python benchmarks/decision_time.py --device cuda --no-semantic --graphs``, four
runs) the decision at batch 1 took 1.2-1.9 ms with the texture's graph against 2.7-4.2 ms eagerly, every graphed
decision equal to the eager one bit for bit.
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import torch

from .tensors import CONSTANTS

Fn = Callable[[torch.Tensor], torch.Tensor]  # the function recorded, of its static input
Recorded = tuple[Callable[[], None], Any]  # (replay, static output)
Capture = Callable[[Fn, torch.Tensor], Recorded]


def cuda_capture(fn: Fn, static_in: torch.Tensor) -> Recorded:
    """Record ``fn(static_in)`` as a CUDA graph: a warm-up run on a side stream (cuFFT plans, cuBLAS handles and the
    function's cached constants are made there, outside the capture), then the capture.

    Returns:
        ``(replay, static_out)``: ``replay()`` reruns the recorded kernels on whatever ``static_in`` holds, writing
        ``static_out``.
    """
    with torch.cuda.device(static_in.device):  # the input's GPU, whichever is current
        current = torch.cuda.current_stream()
        side = torch.cuda.Stream()
        side.wait_stream(current)
        with torch.cuda.stream(side):
            fn(static_in)
        current.wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: only this thread's unsafe CUDA calls invalidate the capture (a server's other threads go on)
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            static_out = fn(static_in)

    def replay() -> None:
        with torch.cuda.device(static_in.device):
            graph.replay()

    return replay, static_out


def eager_capture(fn: Fn, static_in: torch.Tensor) -> Recorded:
    """A stand-in for :func:`cuda_capture` on any device: ``replay()`` computes ``fn(static_in)`` again and writes it
    into the same ``static_out`` (the contract of a graph's replay, without the graph)."""
    static_out = fn(static_in)

    def replay() -> None:
        static_out.copy_(fn(static_in))

    return replay, static_out


def opaque_capture(fn: Fn, static_in: torch.Tensor) -> Recorded:
    """:func:`eager_capture` whose replay is hidden from dispatch modes, as a graph's replay is one launch: with
    ``ShapeGraphs(..., under_modes=True)`` an ``OpCounter`` on a CPU counts what a GPU launches with graphs (the
    input's copy in, the output's copy out and everything outside the graph; the replays are counted apart,
    ``ShapeGraphs.replays``). ``benchmarks/decision_ops.py`` uses it."""
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        static_out = fn(static_in)

    def replay() -> None:
        with _disable_current_modes():
            static_out.copy_(fn(static_in))

    return replay, static_out


@dataclass
class _Entry:
    """A captured shape: its input and output buffers, its replay and the constants its kernels read."""

    static_in: torch.Tensor
    static_out: torch.Tensor
    replay: Callable[[], None]
    keep: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class ShapeGraphs:
    """``fn(x, *args)`` through a graph per (shape, strides, dtype, device of ``x``, ``args``), on CUDA.

    Args:
        fn: a function of one tensor and hashable Python arguments, returning one tensor; its ops must depend only on
            the tensor's shape and the arguments (no host sync, no value-dependent sizes) and its constants must come
            from :data:`arr_coc.tensors.CONSTANTS`.
        max_graphs: shapes held at most (least recently used out); 0: never capture.
        after: the sighting of a shape on which it is captured (2: the second call with that shape; 1: the first).
        capture: how a graph is recorded (:func:`cuda_capture`; tests pass :func:`eager_capture`).
        devices: device types graphs are used on (``("cuda",)``; tests add ``"cpu"``).
        under_modes: also under an active dispatch or function mode (off: an op counter or a tracer sees the eager
            ops; on: for counting with :func:`opaque_capture`).

    Example:
        >>> g = ShapeGraphs(lambda x: x * 2 + 1, max_graphs=2, capture=eager_capture, devices=("cpu",))
        >>> [g(torch.ones(2)).tolist() for _ in range(3)], g.captured
        ([[3.0, 3.0], [3.0, 3.0], [3.0, 3.0]], 1)
    """

    def __init__(
        self,
        fn: Callable[..., torch.Tensor],
        max_graphs: int,
        after: int = 2,
        capture: Capture | None = None,
        devices: tuple[str, ...] = ("cuda",),
        under_modes: bool = False,
    ) -> None:
        if max_graphs < 0 or after < 1:
            raise ValueError(f"max_graphs must be >= 0 and after >= 1, got {max_graphs}, {after}")
        self.fn = fn
        self.max_graphs = int(max_graphs)
        self.after = int(after)
        self.capture = capture or cuda_capture
        self.devices = tuple(devices)
        self.under_modes = bool(under_modes)
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._seen: OrderedDict[Hashable, int] = OrderedDict()  # sightings of shapes not captured yet (bounded)
        self._failed: set[Hashable] = set()  # shapes whose capture failed: eager from then on
        self._lock = threading.Lock()
        self.replays = 0  # calls answered by a replay (for benchmarks and tests)

    @property
    def captured(self) -> int:
        """Shapes held now."""
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Drop every held graph (their memory pools go back to the allocator once no replay is running)."""
        with self._lock:
            self._entries.clear()
            self._seen.clear()

    def usable(self, x: torch.Tensor) -> bool:
        """Whether a call with ``x`` may go through a graph (device, no dispatch mode, no autograd, no capture)."""
        if self.max_graphs == 0 or x.device.type not in self.devices:
            return False
        if torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None:
            return False
        if not self.under_modes and (torch._C._is_torch_function_mode_enabled() or _any_dispatch_mode()):
            return False  # an op counter or a tracer must see the ops, not a replay
        if torch.is_grad_enabled() and x.requires_grad:
            return False
        if not _dense(x):
            return False  # an expanded view: no buffer of its strides to copy it into
        return not (x.device.type == "cuda" and torch.cuda.is_current_stream_capturing())

    def __call__(self, x: torch.Tensor, *args: Hashable) -> torch.Tensor:
        """``fn(x, *args)``: eagerly, or by a replay of its graph (a copy of the graph's output)."""
        if not self.usable(x):
            return self.fn(x, *args)
        key = (tuple(x.shape), x.stride(), x.dtype, x.device, args)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                record = False
            elif key in self._failed:
                record = False
            else:  # count the sighting; capture on the ``after``-th
                seen = self._seen.pop(key, 0) + 1
                record = seen >= self.after
                if not record:
                    self._seen[key] = seen
                    while len(self._seen) > 4 * max(self.max_graphs, 1):
                        self._seen.popitem(last=False)
        if entry is None and record:
            entry = self._record(key, x, args)
        if entry is None:
            return self.fn(x, *args)
        with entry.lock:  # one replay at a time per shape: the buffers are shared
            entry.static_in.copy_(x)
            entry.replay()
            self.replays += 1
            return entry.static_out.clone()

    def _record(self, key: Hashable, x: torch.Tensor, args: tuple[Hashable, ...]) -> _Entry | None:
        static_in = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
        static_in.copy_(x)
        try:
            replay, static_out = self.capture(lambda t: self.fn(t, *args), static_in)
        except Exception as e:  # noqa: BLE001 - any op that cannot be captured: this shape runs eagerly
            with self._lock:
                self._failed.add(key)
            warnings.warn(
                f"arr_coc: capturing a CUDA graph for input {tuple(x.shape)} {x.dtype} failed ({type(e).__name__}: "
                f"{e}); that shape runs without a graph",
                RuntimeWarning,
                stacklevel=3,
            )
            return None
        if not isinstance(static_out, torch.Tensor):
            raise TypeError(f"a graphed function must return one tensor, got {type(static_out).__name__}")
        entry = _Entry(static_in, static_out, replay, keep=CONSTANTS.values())
        with self._lock:
            self._entries[key] = entry
            while len(self._entries) > self.max_graphs:
                self._entries.popitem(last=False)
        return entry


def _dense(x: torch.Tensor) -> bool:
    """Whether ``x``'s elements fill its memory exactly once in some order of its dimensions (a permutation of a
    contiguous tensor): a buffer of the same strides can hold a copy of it."""
    dims = sorted((st, n) for n, st in zip(x.shape, x.stride(), strict=True) if n != 1)
    expected = 1
    for st, n in dims:
        if st != expected:
            return False
        expected *= n
    return True


def _any_dispatch_mode() -> bool:
    """Whether a ``TorchDispatchMode`` (an op counter, a tracer) is active on this thread."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    return _get_current_dispatch_mode() is not None
