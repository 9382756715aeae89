"""Per-page caches: what depends only on a page is computed once, and a second question pays only for the question.

Document QA asks several questions about one page. The page-only work (the texture array, the OCR, the box
embeddings, the layout) is kept in bounded caches keyed by the page's CONTENT:

- :func:`page_digest`: a 16-byte digest of an array's or tensor's bytes, shape, dtype and memory order (and a salt
  such as the reader's settings or the grid), with xxHash's XXH3-128 (about 10 GB/s: 0.1 ms for the 4.7 MB of the
  example invoice, against 10 ms for blake2b) seeded with a random secret drawn once per process: the digest of the
  bytes, then of that and the rest. An array over immutable ``bytes`` (``np.asarray`` of a PIL image, as ``allocate``
  makes once per call) has its bytes' digest remembered while the memo holds those ``bytes`` (the last 4), so the
  frames' and the OCR's keys of one page hash its bytes once.
- :class:`LruCache`: a bounded, thread-safe LRU map with hit / miss counters, where threads that miss on the same
  key at once compute it once.

The key rule (why a cache never serves another page's result): every key hashes ALL the bytes the cached result was
computed from, never a subsample, an object id or a file name. So a different page, an array mutated in place since
it was cached, or the same pixels at another shape, dtype or memory order gives another key (a miss, never a wrong
hit). Two different pages share a key only on a 128-bit hash collision: about 2^-128 for any two given pages
(2^-64 after 2^32 pages), and, since the seed is a secret of the process, nobody outside it can compute digests to
search for a colliding pair. Cached values are shared: they are immutable (tuples, frozen dataclasses, read-only
arrays) or the cache hands out copies.

Example:
    >>> import numpy as np
    >>> cache = LruCache(max_items=2)
    >>> page = np.zeros((4, 6, 3), np.uint8)
    >>> cache.get_or_compute(page_digest(page), lambda: "read once")
    ('read once', False)
    >>> cache.get_or_compute(page_digest(page.copy()), lambda: "read again")  # same content, same key
    ('read once', True)
    >>> page[0, 0, 0] = 1  # mutated in place: another key
    >>> cache.get_or_compute(page_digest(page), lambda: "read again")
    ('read again', False)
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import numpy as np
import torch
import xxhash

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_SEED = secrets.randbits(64)  # the digests' secret: drawn once per process, never written anywhere


def _dense_order(t: torch.Tensor) -> tuple[int, ...] | None:
    """The permutation of ``t``'s dimensions in which its memory is contiguous (None if there is none)."""
    order = tuple(sorted(range(t.dim()), key=lambda d: -t.stride(d)))
    return order if t.permute(order).is_contiguous() else None


def page_digest(pixels: np.ndarray | torch.Tensor, salt: str = "") -> bytes:
    """16-byte digest of all of ``pixels``' bytes, their shape, dtype, memory order and ``salt``.

    Args:
        pixels: a NumPy array (any layout; a non-contiguous one is copied once) or a CPU tensor (a contiguous or
            densely permuted one is hashed in place: ``frames_from_image``'s (1, 3, H, W) view of an (H, W, 3)
            image costs no copy).
        salt: what else the cached result depends on (settings, grid), so one cache can serve several of them.

    Raises:
        ValueError: for a tensor that is not on the CPU (hashing it would copy it to the host; cache on the host).
    """
    if isinstance(pixels, torch.Tensor):
        if pixels.device.type != "cpu":
            raise ValueError(f"page_digest hashes CPU data; got a tensor on {pixels.device}")
        t = pixels.detach()
        order = _dense_order(t) if t.dim() else ()
        if order is None:
            t, order = t.contiguous(), tuple(range(t.dim()))
        flat = t.permute(order).reshape(-1).view(torch.uint8).numpy()  # the bytes in memory order, no copy
        head = repr(("torch", tuple(t.shape), str(t.dtype), order, salt))
    else:
        arr = np.ascontiguousarray(pixels)
        flat = arr.reshape(-1).view(np.uint8)
        head = repr(("numpy", arr.shape, arr.dtype.str, salt))
    h = xxhash.xxh3_128(seed=_SEED)
    h.update(head.encode())
    h.update(_content_digest(flat, _frozen_bytes(flat)))  # the bytes hashed are flat's: memoised if they are frozen
    return h.digest()


def _frozen_bytes(arr: np.ndarray) -> bytes | None:
    """The ``bytes`` object ``arr`` views, if it views one (``np.asarray`` of a PIL image does): its content can never
    change. None for anything else (an array that owns or views writable memory)."""
    base = arr.base
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, bytes) else None


def _content_digest(flat: np.ndarray, frozen: bytes | None) -> bytes:
    """XXH3-128 (seeded) of ``flat``'s bytes; remembered for the last ``_FROZEN_ITEMS`` arrays over immutable
    ``bytes`` (``frozen``), so that the keys of several caches for one page (frames, OCR) hash its bytes once. The
    memo holds those ``bytes`` objects, so their ids cannot be reused by other objects while they are in it."""
    if frozen is None:
        return xxhash.xxh3_128(flat, seed=_SEED).digest()
    key = (id(frozen), flat.__array_interface__["data"][0], flat.nbytes)
    with _FROZEN_LOCK:
        found = _FROZEN.get(key)
        if found is not None:
            _FROZEN.move_to_end(key)
            return found[1]
    digest = xxhash.xxh3_128(flat, seed=_SEED).digest()
    with _FROZEN_LOCK:
        _FROZEN[key] = (frozen, digest)
        while len(_FROZEN) > _FROZEN_ITEMS:
            _FROZEN.popitem(last=False)
    return digest


_FROZEN_ITEMS = 4  # pages whose bytes (and digest) the memo holds: a few MB each
_FROZEN: OrderedDict[tuple[int, int, int], tuple[bytes, bytes]] = OrderedDict()
_FROZEN_LOCK = threading.Lock()


class _InFlight(Generic[V]):
    """A key one thread is computing: the others wait on ``done``; ``value`` is unset if the computation failed."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.ok = False
        self.value: V | None = None


class LruCache(Generic[K, V]):
    """A bounded, thread-safe LRU map: at most ``max_items`` entries (least recently used first out; 0: nothing is
    stored), with ``hits`` / ``misses`` counters. Threads that miss on the same key at once compute it once
    (:meth:`get_or_compute`): the first computes, the others wait for its result (if it fails, one of them computes
    in its place).

    Args:
        max_items: Entries kept (>= 0).
    """

    def __init__(self, max_items: int = 64) -> None:
        if max_items < 0:
            raise ValueError(f"max_items must be >= 0, got {max_items}")
        self.max_items = int(max_items)
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[K, _InFlight[V]] = {}  # keys being computed now: the others wait on them
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        """The value stored for ``key`` (and mark it recently used), or None."""
        with self._lock:
            if key not in self._items:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key]

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> tuple[V, bool]:
        """The value of ``key``: stored, being computed by another thread (wait for it), or ``compute()`` here and
        stored. A thread that waited counts as a hit. If ``compute`` raises, the error goes to the thread that called
        it, and a waiting thread computes in its place.

        Returns:
            (value, whether it came from the cache or another thread's computation).
        """
        while True:
            with self._lock:
                if key in self._items:
                    self._items.move_to_end(key)
                    self.hits += 1
                    return self._items[key], True
                flight = self._computing.get(key)
                owner = flight is None
                if owner:
                    flight = self._computing[key] = _InFlight()
                    self.misses += 1
            assert flight is not None
            if not owner:
                flight.done.wait()
                if flight.ok:
                    with self._lock:
                        self.hits += 1
                    return flight.value, True  # type: ignore[return-value]
                continue  # the computing thread failed: try again (this thread may compute now)
            try:
                flight.value = compute()
                flight.ok = True
                self.put(key, flight.value)
                return flight.value, False
            finally:
                with self._lock:
                    self._computing.pop(key, None)
                flight.done.set()

    def put(self, key: K, value: V) -> None:
        """Store ``value`` for ``key``, dropping the least recently used entries beyond ``max_items``."""
        if self.max_items == 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry (and reset the hit / miss counters)."""
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items
