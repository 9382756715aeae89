"""Tensor helpers shared by the stages: constants that follow the input's device and dtype.

The house rule "device and dtype follow the input": no module-level tensors, which would be CPU float32;
every constant of the relevance step is built from Python numbers next to the tensor it meets, with :func:`constant`.
Texture, knowing, balancing and attending all use it; it lives here, not in one of them.

Example:
    >>> import torch
    >>> constant([1.0, 2.0], torch.zeros(3, dtype=torch.float64))
    tensor([1., 2.], dtype=torch.float64)
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import torch


def constant(values: Any, like: torch.Tensor) -> torch.Tensor:
    """A tensor of Python numbers in the dtype and on the device of ``like`` (made on the host, then copied there).

    The one way constants enter the relevance step: never a module-level tensor, never the CPU by default. A single
    number is written with a fill on the device (no host copy at all).
    """
    host = torch.tensor(values, dtype=like.dtype)  # built on the host from Python numbers
    if host.numel() == 1:
        single = values
        while isinstance(single, (list, tuple)):
            single = single[0]
        return like.new_full(host.shape, float(single))
    return host.to(like)


class ConstantCache:
    """A bounded, thread-safe cache of constant tensors keyed by what they depend on (shape, device, dtype, ...).

    The relevance step's constants (blur weights, index grids, cell positions) depend only on sizes, the config and the
    device / dtype: built once per key instead of on every call (each build is several ops and a host-to-device copy
    on a GPU). An explicit object with a size bound (least recently used out first) and a lock, never a module-level
    tensor. Cached tensors are shared: never modify one in place.

    Example:
        >>> cache = ConstantCache(maxsize=2)
        >>> a = cache.get(("ramp", 3), lambda: torch.arange(3))
        >>> cache.get(("ramp", 3), lambda: torch.zeros(3)) is a
        True
    """

    def __init__(self, maxsize: int = 128):
        import threading
        from collections import OrderedDict

        self.maxsize = int(maxsize)
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any, build: Any) -> Any:
        """The value cached under ``key``; on a miss built with ``build()`` (outside the lock) and kept."""
        if torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None:
            return build()  # fake tensors (shape checks, fake CUDA on a CPU) belong to their mode: never cached
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        with torch.inference_mode(False), torch.no_grad():  # a normal tensor: usable in and outside inference mode
            value = build()
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def values(self) -> list[Any]:
        """Every value held now (a CUDA graph keeps the constants its kernels read alive: ``arr_coc.graphs``)."""
        with self._lock:
            return list(self._items.values())


# The relevance step's constants, shared by texture, knowing and balancing (bounded: at most 256 entries).
CONSTANTS = ConstantCache(maxsize=256)


def cached_constant(values: Any, like: torch.Tensor) -> torch.Tensor:
    """:func:`constant` through :data:`CONSTANTS`: built once per values, device and dtype (the query-dependent
    constants of a decision, e.g. the balancer's query features, repeat across the frames and calls of one query).
    Never modify the result in place."""
    key = ("constant", _frozen(values), like.device, like.dtype)
    return CONSTANTS.get(key, lambda: constant(values, like))


# id(parameter) -> {(device, dtype): ((version, data pointer), its copy there)}; an entry goes when its parameter
# does (weakref.finalize), so an id reused by a later tensor never finds it. (A WeakKeyDictionary would compare
# tensors with ==, elementwise.)
_PARAM_COPIES: dict[int, dict[Any, tuple[Any, torch.Tensor]]] = {}
_PARAM_LOCK = threading.RLock()  # reentrant: a finaliser may run (garbage collection) while it is held


def _forget_param(key: int) -> None:
    with _PARAM_LOCK:
        _PARAM_COPIES.pop(key, None)


def param_like(param: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``param.to(like)`` (a module's weight next to the tensor it meets) without a copy per call.

    The realizer usually stays on the CPU while ``compress`` decides on the model's GPU: ``p.to(x)`` of each of its
    few weights was a host-to-device copy on every decision (from pageable memory, so the host waits for it). The copy
    is kept, per device and dtype, for as long as the parameter lives and is unchanged: its version counter (bumped by
    every in-place update: an optimiser step, ``load_state_dict``) and its data pointer (``.data`` replaced) are
    checked on each call, a few attribute reads. Where autograd must see the copy (grad mode on and the parameter
    trainable) it is ``param.to(like)`` as before. Never modify the result in place.
    """
    if param.device == like.device and param.dtype == like.dtype:
        return param
    if torch.is_grad_enabled() and param.requires_grad:
        return param.to(like)
    if torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None:
        return param.to(like)  # fake tensors belong to their mode: never cached
    if param.is_inference():  # made under inference_mode (a module built there): no version counter to check
        return param.to(like)
    stamp = (param._version, param.data_ptr())
    where = (like.device, like.dtype)
    key = id(param)
    with _PARAM_LOCK:
        copies = _PARAM_COPIES.get(key)
        hit = copies.get(where) if copies is not None else None
        if hit is not None and hit[0] == stamp:
            return hit[1]
    with torch.inference_mode(False), torch.no_grad():  # a normal tensor: usable in and outside inference mode
        copy = param.detach().to(like, copy=True)
    with _PARAM_LOCK:
        if key not in _PARAM_COPIES:
            weakref.finalize(param, _forget_param, key)
            _PARAM_COPIES[key] = {}
        _PARAM_COPIES[key][where] = (stamp, copy)
    return copy


def _frozen(values: Any) -> Any:
    """Nested lists / tuples of numbers as nested tuples (a hashable key)."""
    if isinstance(values, (list, tuple)):
        return tuple(_frozen(v) for v in values)
    return float(values)


def joined(tensors: Sequence[torch.Tensor], stack: bool = False) -> torch.Tensor:
    """``torch.cat(tensors)`` (or ``torch.stack`` with ``stack=True``), as a VIEW when the tensors already lie side by
    side in one storage, in order (the parts of one tensor, e.g. the items of one batched pass): no copy, no op.
    Otherwise the copy. The values are the same either way; a view shares memory, so never modify the result in place.

    Args:
        tensors: same shape (``stack``) or same trailing shape (``cat`` along dim 0), same dtype and device.
    """
    first = tensors[0]
    adjacent = len(tensors) > 1 and all(t.is_contiguous() and t.dtype == first.dtype for t in tensors)
    if adjacent and not torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE):
        storage = first.untyped_storage().data_ptr()
        offset = first.storage_offset()
        for t in tensors:
            if t.untyped_storage().data_ptr() != storage or t.storage_offset() != offset:
                adjacent = False
                break
            if t.shape[0 if stack else 1 :] != first.shape[0 if stack else 1 :]:
                adjacent = False
                break
            offset += t.numel()
    if not adjacent:
        if len(tensors) == 1:
            return first.unsqueeze(0) if stack else first
        return torch.stack(list(tensors)) if stack else torch.cat(list(tensors))
    rows = len(tensors) if stack else sum(int(t.shape[0]) for t in tensors)
    shape = (rows, *first.shape) if stack else (rows, *first.shape[1:])
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    return first.as_strided(shape, strides, first.storage_offset())
