"""Tensor helpers shared by the stages: constants that follow the input's device and dtype.

The house rule (STYLE.md, "device and dtype follow the input"): no module-level tensors, which would be CPU float32;
every constant of the relevance step is built from Python numbers next to the tensor it meets, with :func:`constant`.
Texture, knowing, balancing and attending all use it; it lives here, not in one of them.

Example:
    >>> import torch
    >>> constant([1.0, 2.0], torch.zeros(3, dtype=torch.float64))
    tensor([1., 2.], dtype=torch.float64)
"""

from __future__ import annotations

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
