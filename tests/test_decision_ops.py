"""The decision is a few batched kernels: op and host-sync budgets of ``Realizer.relevance`` counted with
``arr_coc.profiling.OpCounter`` (deterministic counts, never wall-clock), CPU banding off (what a GPU launches), and
the batch invariance that batching must not break.

Budgets (issue 24): ``Realizer.relevance`` <= 150 aten ops (views apart) for one frame and <= 1.5x that for eight,
with no host sync. The frames are the size of a real document page (1,248 tokens, Qwen2.5-VL's grid of the example
invoice) so that no op count hides behind a tiny shape; the counts do not depend on the pixels.
"""

from __future__ import annotations

import pytest
import torch

from arr_coc.config import RelevanceConfig
from arr_coc.knowing import ParticipatoryScorer, unit
from arr_coc.profiling import OpCounter
from arr_coc.query import parse_query
from arr_coc.realizing import Realizer
from arr_coc.tensors import ConstantCache

GRID = (39, 32)  # the example invoice's Qwen2.5-VL grid: 1,248 tokens of 28 px
ONE_FRAME_BUDGET = 150


def _frames(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, 3, GRID[0] * 28, GRID[1] * 28), generator=g, dtype=torch.uint8)


def _count(realizer: Realizer, frames: torch.Tensor, query: str, prior: torch.Tensor | None) -> OpCounter:
    realizer.relevance(frames, GRID, query, prior=prior)  # the first call builds the cached constants
    with OpCounter() as counter:
        realizer.relevance(frames, GRID, query, prior=prior)
    return counter


@pytest.mark.parametrize("with_prior", [False, True], ids=["texture", "text-prior"])
@pytest.mark.parametrize(
    ("query", "budget"),
    [
        ("How much must be paid?", ONE_FRAME_BUDGET),  # a document question: the "answer is text" cue
        (None, ONE_FRAME_BUDGET),  # query-blind
        # a spatial and a colour cue: each adds its own map (4-7 ops), their product and a rescale (10 ops)
        ("the red logo at the top left", ONE_FRAME_BUDGET + 10),
    ],
)
def test_relevance_op_and_sync_budget(with_prior: bool, query: str | None, budget: int) -> None:
    realizer = Realizer(RelevanceConfig(cpu_band_elements=0)).eval()
    counts = {}
    for n in (1, 8):
        frames = _frames(n)
        prior = torch.rand(n, *GRID) if with_prior else None
        counts[n] = _count(realizer, frames, query, prior)
    assert counts[1].n_ops <= budget, counts[1].summary()
    assert counts[8].n_ops <= 1.5 * budget, counts[8].summary()
    assert counts[8].n_ops <= 1.5 * counts[1].n_ops, (counts[1].summary(), counts[8].summary())  # no loop per frame
    assert counts[1].n_syncs == 0 and counts[8].n_syncs == 0, (counts[1].syncs, counts[8].syncs)


def test_relevance_of_frames_together_equals_each_alone_bit_for_bit() -> None:
    """Eight frames in one pass give each frame exactly what it gets alone (CPU bands on and off)."""
    frames = _frames(8, seed=1)
    frames[3] //= 8  # a low-contrast neighbour
    for band in (0, 32767):
        realizer = Realizer(RelevanceConfig(cpu_band_elements=band)).eval()
        together = realizer.relevance(frames, GRID, "What is the total?")
        for i in range(8):
            alone = realizer.relevance(frames[i : i + 1], GRID, "What is the total?")
            assert torch.equal(together.scores[i], alone.scores[0]), (band, i)
            assert torch.equal(together.texture[i], alone.texture[0]), (band, i)


def test_mixed_queries_in_one_batch_equal_each_alone() -> None:
    """The participatory scorer groups samples by query: a batch of different queries scores each as alone."""
    g = torch.Generator().manual_seed(2)
    texture = torch.rand(4, 13, 5, 7, generator=g)
    queries = ["the red part at the top", "What is the total?", "Describe the image", "the red part at the top"]
    cues = [parse_query(q) for q in queries]
    scorer = ParticipatoryScorer()
    together, signal = scorer(texture, cues)
    for i in range(4):
        alone, s = scorer(texture[i : i + 1], cues[i : i + 1])
        assert torch.equal(together[i], alone[0]) and torch.equal(signal[i], s[0]), queries[i]


def test_unit_is_idempotent_bit_for_bit() -> None:
    """The realizer skips a rescaling of a map that is already rescaled: exact because unit() is idempotent."""
    g = torch.Generator().manual_seed(3)
    for x in (torch.rand(3, 6, 7, generator=g) * 5 - 2, torch.full((2, 4, 4), 0.3), torch.rand(1, 9) * 1e-9):
        once = unit(x)
        assert torch.equal(unit(once), once)


def test_constant_cache_is_bounded_and_builds_once() -> None:
    cache = ConstantCache(maxsize=2)
    built = []

    def build(i: int):
        built.append(i)
        return torch.full((2,), float(i))

    a = cache.get("a", lambda: build(1))
    assert cache.get("a", lambda: build(2)) is a and built == [1]
    cache.get("b", lambda: build(3))
    cache.get("c", lambda: build(4))  # evicts "a", the least recently used
    assert len(cache) == 2
    cache.get("a", lambda: build(5))
    assert built == [1, 3, 4, 5]
    with torch.inference_mode():  # built inside inference mode, usable outside it (training)
        x = ConstantCache().get("x", lambda: torch.ones(2))
    assert not x.is_inference()


def _adaptive_k_reference(scores: torch.Tensor, mass: float = 0.5, tiers=(64, 100, 160, 256, 400)) -> int:
    """The one-map algorithm as it was written before the batched version (a Python branch and one sync)."""
    s = torch.nan_to_num(scores.float().flatten(), nan=0.0)
    excess = (s - s.median()).clamp_min(0)
    total = excess.sum()
    if total <= 0:
        k = tiers[-1]
    else:
        cum = torch.cumsum(torch.sort(excess, descending=True).values, 0) / total
        k = int(torch.searchsorted(cum, torch.tensor([mass])).item()) + 1
        k = next(t for t in tiers if t >= max(tiers[0], min(tiers[-1], k)))
    return max(1, min(s.numel(), k))


@pytest.mark.parametrize("n", [7, 64, 1248, 1249])
def test_batched_budget_and_top_k_equal_the_one_map_versions(n: int) -> None:
    """adaptive_ks and top_k_mask give, row by row, what the one-map code gives, with no host sync."""
    from arr_coc.attending import adaptive_ks, select, top_k_mask

    g = torch.Generator().manual_seed(n)
    peaked = torch.rand(n, generator=g) ** 8
    rows = [peaked, torch.rand(n, generator=g), torch.zeros(n), (torch.rand(n, generator=g) * 4).round() / 4]
    rows.append(torch.where(torch.rand(n, generator=g) < 0.1, float("nan"), torch.rand(n, generator=g)))
    scores = torch.stack(rows)  # (5, n): peaked, uniform, flat, heavy ties, NaNs
    top_k_mask(scores, adaptive_ks(scores))  # the first call builds the cached constants
    with OpCounter() as counter:
        ks = adaptive_ks(scores)
        mask = top_k_mask(scores, ks)
    assert counter.n_syncs == 0, counter.syncs
    for b in range(scores.shape[0]):
        assert int(ks[b]) == _adaptive_k_reference(scores[b]), b
        assert torch.equal(mask[b].nonzero()[:, 0], select(scores[b], int(ks[b]))), b


def test_relevance_items_equal_each_item_alone_and_batch_the_ops() -> None:
    """Items of equal size with different questions (and token features / query embeddings of different lengths)
    go through one pass: each equals relevance() on it alone, bit for bit, and eight cost about what one costs."""
    g = torch.Generator().manual_seed(4)
    realizer = Realizer(RelevanceConfig(cpu_band_elements=0)).eval()
    grid = (6, 5)
    frames = [torch.randint(0, 256, (1, 3, 6 * 28, 5 * 28), generator=g, dtype=torch.uint8) for _ in range(8)]
    frames.append(torch.randint(0, 256, (2, 3, 4 * 28, 5 * 28), generator=g, dtype=torch.uint8))  # another size
    grids = [grid] * 8 + [(4, 5)]
    queries = ["What is the total?", "the red part at the top", None, "Describe the image"] * 2 + ["What is it?"]
    feats = [torch.randn(f.shape[0] * 30 if i < 8 else 40, 16, generator=g) for i, f in enumerate(frames)]
    embeds = [torch.randn(1 + i % 3, 16, generator=g) for i in range(9)]
    embeds[2] = None
    together = realizer.relevance_items(frames, grids, queries, feats, embeds)
    for i in range(9):
        alone = realizer.relevance(frames[i], grids[i], queries[i], feats[i], embeds[i])
        assert torch.equal(together[i].scores, alone.scores), i
        assert torch.equal(together[i].weights, alone.weights), i
    with OpCounter() as one:
        realizer.relevance_items(frames[:1], grids[:1], queries[:1], feats[:1], embeds[:1])
    with OpCounter() as eight:
        realizer.relevance_items(frames[:8], grids[:8], queries[:8], feats[:8], embeds[:8])
    assert eight.n_ops <= 1.5 * one.n_ops, (one.summary(), eight.summary())
