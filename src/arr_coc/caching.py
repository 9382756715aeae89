"""Per-page caches: what depends only on a page is computed once, and a second question pays only for the question.

Document QA asks several questions about one page. The page-only work (the texture array, the OCR, the box
embeddings, the layout) is kept in bounded caches keyed by the page's CONTENT:

- :func:`page_digest`: a 16-byte digest of an array's or tensor's bytes, shape, dtype and memory order (and a salt
  such as the reader's settings or the grid), with xxHash's XXH3-128 (about 10 GB/s: 0.1 ms for the 4.7 MB of the
  example invoice, against 10 ms for blake2b) seeded with a random secret drawn once per process: the digest of the
  bytes, then of that and the rest. An array over immutable ``bytes`` (``np.asarray`` of a PIL image, as ``allocate``
  makes once per call) has its bytes' digest remembered while the memo holds those ``bytes`` (the last 4), so the
  frames' and the OCR's keys of one page hash its bytes once.
- :func:`frame_digests` / :func:`device_digests`: one digest per frame where the frames lie. On a GPU the frames are
  hashed there by a two-level universal hash (about 16 kernels; 16 bytes a frame cross to the host in one sync for
  a whole batch, where a host digest would copy each frame over: 2.4 MB a page of 1,248 tokens); the OCR cache
  looks a page up by it (``TextReader.read`` of a ``DigestedPicture``) and copies a frame to the host only for a
  page it has not read. :func:`digest_scope`: within one call, memory hashed once is not hashed again (the texture's
  and the OCR's keys of one CPU page).
- :class:`LruCache`: a bounded, thread-safe LRU map with hit / miss counters, where threads that miss on the same
  key at once compute it once.

The key rule (why a cache never serves another page's result): every key hashes ALL the bytes the cached result was
computed from, never a subsample, an object id or a file name. So a different page, an array mutated in place since
it was cached, or the same pixels at another shape, dtype or memory order gives another key (a miss, never a wrong
hit). Two different pages share a key only on a 128-bit hash collision: about 2^-128 for any two given pages
(2^-64 after 2^32 pages; a device digest's universal hash: at most about 2^-92 for any two given frames), and, since
the seed is a secret of the process, nobody outside it can compute digests to
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

import contextlib
import contextvars
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np
import torch
import xxhash

from .tensors import joined

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


def salted_digest(digest: bytes, salt: str) -> bytes:
    """16-byte digest of a digest and ``salt`` (one cache's key for a page another digest names)."""
    h = xxhash.xxh3_128(seed=_SEED)
    h.update(b"salted")
    h.update(digest)
    h.update(salt.encode())
    return h.digest()


def frame_digests(frames: torch.Tensor | Sequence[torch.Tensor], salt: str = "") -> list[bytes] | list[list[bytes]]:
    """One 16-byte digest per frame (dim 0) of ``frames``, or of each item of a list of them, where the frames lie:
    on the CPU each frame's :func:`page_digest` (XXH3 over its bytes in place), on any other device
    :func:`device_digests` (hashed on the device: 16 bytes a frame cross to the host, one sync for all the items, not
    the frames). The two kinds never equal each other (the head names the kind), so a cache may hold both.

    Args:
        frames (torch.Tensor of shape (T, ...), or a list of them): any dtype, any memory layout.
        salt: what else the cached result depends on.

    Returns:
        ``frames``' T digests, or a list of each item's.
    """
    items = [frames] if isinstance(frames, torch.Tensor) else list(frames)
    out: list[list[bytes] | None] = [None] * len(items)
    on_device = [i for i, f in enumerate(items) if f.device.type != "cpu"]
    for i, f in enumerate(items):
        if f.device.type == "cpu":
            out[i] = [page_digest(frame, salt) for frame in f]
    for i, digests in zip(on_device, device_digests([items[i] for i in on_device], salt), strict=True):
        out[i] = digests
    return out[0] if isinstance(frames, torch.Tensor) else out  # type: ignore[return-value]


# device_digests' universal hash: 16-bit words times random coefficients modulo a prime P < 2**47, so that every
# product (< 2**63), every block's sum of _BLOCK of them and every second-level sum of _MAX_LIMBS stays inside int64
_P = (1 << 47) - 115  # prime
_BLOCK = 1 << 16  # 16-bit words a first-level block
_MAX_LIMBS = (1 << 16) - 1  # second-level terms: 3 limbs (16, 16 and 15 bits) of each block's value
_FUNCTIONS = 2  # independent hash functions: a pair of different frames collides with probability <= (2 / P) ** 2
_COEFFS: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}
_COEFFS_LOCK = threading.Lock()


def _coefficients(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The secret coefficients on ``device``: (F, _BLOCK) of the first level, (F, _MAX_LIMBS) of the second, uniform
    in [0, P), drawn once per process (from the digests' secret seed) and copied once to each device."""
    with _COEFFS_LOCK:
        found = _COEFFS.get(device)
        if found is None:
            host = _COEFFS.get(torch.device("cpu"))
            if host is None:
                g = torch.Generator().manual_seed(_SEED & ((1 << 63) - 1))
                host = tuple(
                    torch.randint(0, _P, (_FUNCTIONS, n), generator=g, dtype=torch.int64) for n in (_BLOCK, _MAX_LIMBS)
                )  # type: ignore[assignment]
                _COEFFS[torch.device("cpu")] = host  # type: ignore[assignment]
            found = _COEFFS[device] = tuple(c.to(device) for c in host)  # type: ignore[assignment]
        return found  # type: ignore[return-value]


def device_digests(frames: torch.Tensor | Sequence[torch.Tensor], salt: str = "") -> list[bytes] | list[list[bytes]]:
    """One 16-byte digest per frame (dim 0) of ``frames``, or of each item of a list of them, computed ON their
    device: a two-level universal hash of each frame's bytes (in its memory order, which is part of the key, as in
    :func:`page_digest`), whose 2 x 47 bits a frame are all that is copied to the host, in one sync for all the items;
    there they are hashed with the frame's shape, dtype, memory order and ``salt``. About 16 kernels an item, instead
    of a copy of every frame to the host (2.4 MB a page of 1,248 visual tokens) and XXH3 over it there.

    The guarantee: a frame is read as 16-bit words; each block of 2**16 words gets sum(a_i * w_i) mod P, and the
    blocks' values (cut in three limbs of at most 16 bits) sum(b_j * limb_j) mod P, with secret random coefficients a,
    b in [0, P), P = 2**47 - 115 prime. Two different frames of one shape differ in some block, whose values then
    differ except with probability 1 / P (the difference of two words is never a multiple of P), and two different
    value lists collide with probability 1 / P: at most 2 / P per function, about 2**-92 for the two, for any two
    given frames (the coefficients are secret, so nobody outside the process can aim at a collision). All integer
    arithmetic, so the same on every device (tested on the CPU against Python's integers).

    Args:
        frames (torch.Tensor of shape (T, ...), or a list of them): any dtype, any memory layout, any device (at
            most about 2.8 GB a frame; one host sync per device).
        salt: what else the cached result depends on.

    Returns:
        ``frames``' T digests, or a list of each item's.
    """
    items = [frames] if isinstance(frames, torch.Tensor) else list(frames)
    heads, data = [], []
    for item in items:
        t = item.detach()
        if t.dim() == 0:
            t = t.reshape(1)
        order = (_dense_order(t[0]) if t.shape[0] else None) if t.dim() > 1 else ()
        perm = (0, *(d + 1 for d in order)) if order is not None else None
        if perm is None or not t.permute(perm).is_contiguous():
            t = t.contiguous()
            order, perm = tuple(range(t.dim() - 1)), tuple(range(t.dim()))
        heads.append(repr(("device", tuple(t.shape[1:]), str(t.dtype), order, salt)).encode())
        per = int(np.prod(t.shape[1:], dtype=np.int64))  # elements a frame
        data.append(t.permute(perm).reshape(t.shape[0], per).view(torch.uint8))  # (T, bytes a frame), no copy
    # the items of one frame size and device hashed as one batch (their rows joined: one copy), one host sync a device
    batches: dict[tuple[int, torch.device], list[int]] = {}
    for i, d in enumerate(data):
        batches.setdefault((int(d.shape[1]), d.device), []).append(i)
    values = {key: universal_hash(joined([data[i] for i in members])) for key, members in batches.items()}
    rows: list[list[list[int]]] = [[] for _ in items]
    devices: dict[torch.device, list[tuple[int, torch.device]]] = {}
    for key in batches:
        devices.setdefault(key[1], []).append(key)
    for keys in devices.values():
        flat = (values[keys[0]] if len(keys) == 1 else torch.cat([values[k] for k in keys])).tolist()
        for key in keys:
            for i in batches[key]:
                rows[i], flat = flat[: data[i].shape[0]], flat[data[i].shape[0] :]
    out = []
    for head, item_rows in zip(heads, rows, strict=True):
        digests = []
        for vals in item_rows:
            h = xxhash.xxh3_128(seed=_SEED)
            h.update(head)
            h.update(np.asarray(vals, dtype=np.int64).tobytes())
            digests.append(h.digest())
        out.append(digests)
    return out[0] if isinstance(frames, torch.Tensor) else out


def universal_hash(data: torch.Tensor) -> torch.Tensor:
    """:func:`device_digests`' two-level universal hash of each row of ``data`` (T, bytes) uint8 on its device:
    (T, ``_FUNCTIONS``) int64 values in [0, P), on the device (no host sync; ~64 MB of int64 products a pass)."""
    n, nbytes = int(data.shape[0]), int(data.shape[1])
    blocks = max(1, -(-nbytes // (2 * _BLOCK)))
    if 3 * blocks > _MAX_LIMBS:
        raise ValueError(f"device_digests hashes frames of at most {_MAX_LIMBS // 3 * 2 * _BLOCK} bytes, got {nbytes}")
    a, b = _coefficients(data.device)
    step = max(1, _CHUNK_WORDS // (blocks * _BLOCK))  # frames a pass: its int64 products stay within ~64 MB
    values: list[torch.Tensor] = []
    for lo in range(0, n, step):
        part = torch.nn.functional.pad(data[lo : lo + step], (0, blocks * 2 * _BLOCK - nbytes))  # zeros after
        m = int(part.shape[0])
        w = part.view(torch.int16).to(torch.int64).bitwise_and_(0xFFFF).view(m, 1, blocks, _BLOCK)  # unsigned words
        first = (w * a.view(1, _FUNCTIONS, 1, _BLOCK)).remainder_(_P).sum(-1).remainder_(_P)  # (m, F, nb), < P
        limbs = torch.stack((first.bitwise_and(0xFFFF), first.bitwise_right_shift(16).bitwise_and_(0xFFFF),
                             first.bitwise_right_shift(32)), -1).view(m, _FUNCTIONS, 3 * blocks)  # fmt: skip
        values.append((limbs * b[:, : 3 * blocks]).remainder_(_P).sum(-1).remainder_(_P))  # (m, F)
    if not values:
        return torch.zeros(0, _FUNCTIONS, dtype=torch.int64, device=data.device)
    return values[0] if len(values) == 1 else torch.cat(values)


_CHUNK_WORDS = 1 << 22  # 16-bit words hashed in one pass (4 Mi: 64 MiB of int64 products for the two functions)


def _frozen_bytes(arr: np.ndarray) -> bytes | None:
    """The ``bytes`` object ``arr`` views, if it views one (``np.asarray`` of a PIL image does): its content can never
    change. None for anything else (an array that owns or views writable memory)."""
    base = arr.base
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, bytes) else None


@contextlib.contextmanager
def digest_scope() -> Iterator[None]:
    """Within the block (this thread or task only), the bytes of memory hashed once are not hashed again: the
    digests of one call's caches for one page (``Realizer.decide``: the texture's and the OCR's keys of the same
    frames) share one pass over its bytes. Sound because the caller does not write the pages it hashes during the
    block, and the memo holds every array it hashed, so no other array can take its memory before the block ends."""
    if _SCOPE.get() is not None:  # nested: the outer block's memo
        yield
        return
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


_SCOPE: contextvars.ContextVar[dict[tuple[int, int], tuple[np.ndarray, bytes]] | None] = contextvars.ContextVar(
    "arr_coc_digest_scope", default=None
)


def _content_digest(flat: np.ndarray, frozen: bytes | None) -> bytes:
    """XXH3-128 (seeded) of ``flat``'s bytes; remembered for the last ``_FROZEN_ITEMS`` arrays over immutable
    ``bytes`` (``frozen``), so that the keys of several caches for one page (frames, OCR) hash its bytes once, and
    within a :func:`digest_scope` for any array. The memo holds those ``bytes`` objects, so their ids cannot be reused
    by other objects while they are in it."""
    if frozen is None:
        scope = _SCOPE.get()
        if scope is None:
            return xxhash.xxh3_128(flat, seed=_SEED).digest()
        where = (flat.__array_interface__["data"][0], flat.nbytes)
        found = scope.get(where)
        if found is None:
            found = scope[where] = (flat, xxhash.xxh3_128(flat, seed=_SEED).digest())
        return found[1]
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
