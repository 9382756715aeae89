"""``arr_coc.tensors.param_like``: a parameter next to the tensor it meets, copied once while it is unchanged."""

from __future__ import annotations

import gc

import torch
from torch import nn

from arr_coc.tensors import _PARAM_COPIES, param_like


def test_same_device_and_dtype_is_the_parameter_itself() -> None:
    p = nn.Parameter(torch.arange(3.0))
    assert param_like(p, torch.zeros(2)) is p


def test_copy_is_kept_until_the_parameter_changes() -> None:
    p = nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))
    like = torch.zeros(2, dtype=torch.float64)  # another dtype stands for another device: a copy is needed
    with torch.inference_mode():
        a = param_like(p, like)
        assert param_like(p, like) is a  # no second copy
    assert a.dtype == torch.float64 and torch.equal(a, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    with torch.no_grad():
        p.mul_(2)  # an in-place update (an optimiser step): the version counter moves
    b = param_like(p, like)
    assert b is not a and torch.equal(b, torch.tensor([2.0, 4.0, 6.0], dtype=torch.float64))
    p.data = torch.tensor([7.0, 8.0, 9.0])  # .data replaced: another data pointer
    assert torch.equal(param_like(p, like), torch.tensor([7.0, 8.0, 9.0], dtype=torch.float64))


def test_a_parameter_made_under_inference_mode_is_copied_each_call() -> None:
    """Such a tensor has no version counter: it gets ``param.to(like)``, never a cached copy that could go stale."""
    with torch.inference_mode():
        p = nn.Parameter(torch.tensor([1.0, 2.0]))
    like = torch.zeros(1, dtype=torch.float64)
    a, b = param_like(p, like), param_like(p, like)
    assert a is not b and torch.equal(a, b) and a.dtype == torch.float64


def test_training_gets_a_differentiable_copy() -> None:
    p = nn.Parameter(torch.tensor([1.0, 2.0]))
    out = param_like(p, torch.zeros(1, dtype=torch.float64))
    assert out.requires_grad
    out.sum().backward()
    assert torch.equal(p.grad, torch.ones(2))


def test_copies_go_with_their_parameter() -> None:
    p = nn.Parameter(torch.tensor([1.0]))
    with torch.no_grad():
        param_like(p, torch.zeros(1, dtype=torch.float64))
    n = len(_PARAM_COPIES)
    del p
    gc.collect()
    assert len(_PARAM_COPIES) == n - 1


def test_realizer_decides_the_same_with_its_weights_in_another_dtype() -> None:
    """The scorers read their weights through param_like: float64 frames give the same scores as weights moved
    there by hand (the module in float64)."""
    from arr_coc.realizing import Realizer

    frames = torch.rand(1, 3, 56, 84, generator=torch.Generator().manual_seed(0))
    a = Realizer().eval()
    b = Realizer().eval().double()
    texture = a.texture(frames.double(), 2, 3)
    with torch.inference_mode():
        ra, *_ = a(texture, [a.cues("What is the total?")])
        rb, *_ = b(texture, [b.cues("What is the total?")])
    assert torch.equal(ra, rb)
