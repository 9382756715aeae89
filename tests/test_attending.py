"""Budgets and selection: always within [1, N], raster order, ties to the lower index, clear errors."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from arr_coc.attending import TIERS, adaptive_k, parse_budget, resolve_budget, select, snap_to_tier


@pytest.mark.parametrize(
    ("budget", "n", "expected"),
    [(64, 1000, 64), (5000, 1000, 1000), (0.111, 1296, 144), (1.0, 7, 7), ("22%", 1000, 220), ("0.5", 3, 2),
     ("12", 100, 12), (0.0001, 50, 1)],
)  # fmt: skip
def test_resolve_budget(budget, n: int, expected: int) -> None:
    assert resolve_budget(budget, n) == expected


@pytest.mark.parametrize("bad", [0, -3, math.nan, math.inf, -0.5, 1.5, True, "", "lots", "0", None, [64], "-1"])
def test_bad_budgets_name_the_problem(bad) -> None:
    with pytest.raises(ValueError, match="budget"):
        parse_budget(bad)


def test_adaptive_needs_scores_and_stays_in_tiers() -> None:
    with pytest.raises(ValueError, match="adaptive"):
        resolve_budget("adaptive", 100)
    peaked = torch.zeros(1500)
    peaked[:20] = 1.0
    assert resolve_budget("adaptive", 1500, peaked) == 64
    assert resolve_budget("adaptive", 1500, torch.ones(1500)) == 400  # flat: nothing stands out
    assert resolve_budget("adaptive", 30, torch.rand(30)) == 30  # never more than exist
    spread = torch.rand(1500, generator=torch.Generator().manual_seed(0))
    assert adaptive_k(spread) in TIERS


def test_snap_to_tier() -> None:
    assert [snap_to_tier(k) for k in (1, 64, 65, 101, 300, 999)] == [64, 64, 100, 160, 400, 400]


def test_select_ties_raster_and_nan() -> None:
    assert select(torch.tensor([0.1, 0.9, 0.5, 0.9]), 2).tolist() == [1, 3]
    assert select(torch.tensor([1.0, 1.0, 1.0, 1.0]), 2).tolist() == [0, 1]
    assert select(torch.tensor([math.nan, 0.2, 0.1]), 2).tolist() == [1, 2]
    assert select(torch.tensor([0.3, 0.2]), 99).tolist() == [0, 1]
    with pytest.raises(ValueError, match="1-D"):
        select(torch.zeros(2, 2), 1)


def test_redundancy_skips_duplicates() -> None:
    scores = torch.tensor([1.0, 0.99, 0.6, 0.0])
    feats = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])  # tokens 0 and 1 are identical
    assert select(scores, 2).tolist() == [0, 1]
    assert select(scores, 2, features=feats, redundancy=0.8).tolist() == [0, 2]


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=300),
    frac=st.floats(0.001, 1.0),
    redundancy=st.sampled_from([0.0, 0.5]),
)
def test_select_properties(scores: list[float], frac: float, redundancy: float) -> None:
    s = torch.tensor(scores)
    k = resolve_budget(frac, len(scores))
    feats = torch.randn(len(scores), 4, generator=torch.Generator().manual_seed(0)) if redundancy else None
    keep = select(s, k, features=feats, redundancy=redundancy)
    assert 1 <= keep.numel() == k <= len(scores)
    assert torch.all(keep[1:] > keep[:-1])  # raster order, no duplicates
    if not redundancy:  # plain top-K: nothing dropped beats anything kept
        dropped = torch.ones(len(scores), dtype=torch.bool)
        dropped[keep] = False
        if dropped.any():
            assert s[dropped].max() <= s[keep].min()
