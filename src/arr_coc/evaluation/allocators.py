"""The allocators ``arr-coc eval`` compares, each as the ``compress(...)`` options that select it.

==========  ========================================================================================================
allocator   what decides which visual tokens are kept
==========  ========================================================================================================
model       the default pipeline inside the model (``compress(scorer="auto")``): texture scorers, the model's own
            visual-token / question-embedding coupling, the balancer
text        the same plus the OCR text prior of ``allocate --mode text`` (``compress(text_prior=True)``; needs the
            ``[ocr]`` extra and costs the OCR time per image)
texture     pixels and the question's words only (texture scorers + query cues, no model features, no OCR): the
            ``allocate --mode texture`` path run on the model's own resized pixels
foveate     ``compress(foveate=True)``: scored before the vision tower, which then encodes only the kept patches
random      query-blind baseline: uniform random scores, seeded by the image's pixels and the question (the same
            sample gets the same tokens in every run and every batch)
uniform     query-blind baseline: k tokens evenly spread in raster order, floor((i + 0.5) * N / k)
            (:func:`stride_keep`, the one stride baseline: the demo's and ``benchmarks/evidence_recall.py``'s too)
downscale   the honest baseline of a smaller image: no pruning, the whole page through the processor's own resize
            at the largest ``max_pixels`` that gives at most the same number of visual tokens
            (:func:`downscale_max_pixels`), to the unwrapped model
==========  ========================================================================================================

``arr-coc eval --detail thumbnail mixed`` adds, for every allocator that scores tokens (``model``, ``text``,
``texture``, ``foveate``), the same allocator with each level-of-detail mode (``compress(..., detail=...)``); those
rows are named ``<allocator>+<mode>``.
"""

from __future__ import annotations

import inspect
import zlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from ..attending import Budget, TokenScores, parse_budget, resolve_budget
from ..integrations.base import ImageContext

ALLOCATORS: tuple[str, ...] = ("text", "texture", "model", "foveate", "random", "uniform", "downscale")
DETAIL_ALLOCATORS: tuple[str, ...] = ("text", "texture", "model", "foveate")  # those --detail applies to


def downscale_max_pixels(height: int, width: int, tokens: int, factor: int, min_pixels: int) -> tuple[int, int]:
    """(min_pixels, max_pixels) at which the processor's ``smart_resize`` gives the most visual tokens <= ``tokens``.

    Args:
        height, width: the original image size.
        tokens: the budget in merged visual tokens (>= 1).
        factor: patch_size * merge_size (28 for Qwen2/2.5-VL, 32 for Qwen3-VL).
        min_pixels: the processor's lower bound; lowered when the budget is below it.

    Returns:
        (min_pixels, max_pixels) to pass as ``size={"shortest_edge": ..., "longest_edge": ...}``.
    """
    from ..grid import smart_resize

    unit = factor * factor
    if tokens < 1:
        raise ValueError(f"the downscale baseline needs a budget of at least one token, got {tokens}")
    lo = min(min_pixels, tokens * unit)

    def count(max_pixels: int) -> int:
        h, w = smart_resize(height, width, factor, lo, max_pixels)
        return (h // factor) * (w // factor)

    best = tokens * unit  # smart_resize floors to at most max_pixels / unit tokens here
    ceiling = (round(height / factor) * factor) * (round(width / factor) * factor)  # the size without a cap
    while best < ceiling and count(best + unit) <= tokens:
        best += unit
    return lo, best


def texture_scorer(ctx: ImageContext) -> torch.Tensor | TokenScores:
    """Relevance from the model's own pixels and the question's words: the default scorer of ``ctx.realizer`` (the
    one ``compress(realizer=...)`` decides with) with the model's features (visual tokens, question embeddings) taken
    away and no OCR (so its ``TokenScores`` has no units)."""
    from ..integrations.base import default_scorer

    return default_scorer(replace(ctx, token_feats=None, query_embeds=None, text_prior=False))


@dataclass(frozen=True)
class RandomScorer:
    """Uniform random scores, seeded by ``seed``, the image's patches and the question's tokens.

    The generator's seed is a CRC-32 of the item's pixel rows (a strided subset), its merged grid and its query
    ids, so a sample keeps the same random tokens whatever batch it is in and in every run.
    """

    seed: int = 0

    def __call__(self, ctx: ImageContext) -> torch.Tensor:
        rows = ctx.pixel_values[:: max(1, ctx.pixel_values.shape[0] // 64)]  # (<= 64 + 1, C * tps * p * p)
        key = zlib.crc32(rows.detach().float().cpu().numpy().tobytes())
        key = zlib.crc32(repr((ctx.merged_grid, ctx.query_ids.tolist(), self.seed)).encode(), key)
        generator = torch.Generator().manual_seed(key)
        return torch.rand(ctx.n_tokens, generator=generator)  # (N,) on the CPU, as compress accepts


@dataclass(frozen=True)
class UniformScorer:
    """Score 1 on ``k`` tokens evenly spread in raster order (``k`` resolved from ``budget`` as ``compress`` does),
    0 elsewhere, so that ``compress``'s top-k keeps exactly them."""

    budget: Budget

    def __call__(self, ctx: ImageContext) -> torch.Tensor:
        n = ctx.n_tokens
        k = resolve_budget(self.budget, n)
        scores = torch.zeros(n)  # (N,)
        scores[torch.from_numpy(stride_keep(n, k))] = 1.0  # (k,) indices
        return scores


def stride_keep(n_tokens: int, k: int) -> np.ndarray:
    """The query-blind stride baseline: ``k`` indices spread evenly over ``range(n_tokens)`` in raster order.

    Index i is floor((i + 0.5) * n / k), computed in integers (exact for any n and k); ``k`` is clamped to
    [1, n_tokens]. The one stride baseline of the project: ``eval``'s ``uniform`` allocator, the demo's baseline and
    ``benchmarks/evidence_recall.py``'s ``stride`` all use it.

    Returns:
        (k,) int64 indices, strictly increasing.

    Example:
        >>> stride_keep(10, 2).tolist()
        [2, 7]
    """
    k = max(1, min(int(k), int(n_tokens)))
    return (np.arange(k, dtype=np.int64) * 2 + 1) * int(n_tokens) // (2 * k)


def supports_foveate() -> bool:
    """Whether this version's ``compress`` has the ``foveate`` option."""
    from ..integrations import compress

    return "foveate" in inspect.signature(compress).parameters


def check_allocators(names: list[str] | tuple[str, ...], budgets: list[Budget]) -> None:
    """Refuse, before any model is loaded, allocators that cannot run here.

    Raises:
        ValueError: an unknown name, ``foveate`` without ``compress(foveate=...)``, ``uniform`` with an adaptive
            budget, ``text`` without the ``[ocr]`` extra.
    """
    for name in names:
        if name not in ALLOCATORS:
            raise ValueError(f"unknown allocator {name!r}; choose from: {', '.join(ALLOCATORS)}")
    if "foveate" in names and not supports_foveate():
        raise ValueError(
            "the foveate allocator needs compress(..., foveate=True), which this version of arr_coc does not have "
            "yet; leave it out of --allocator"
        )
    if "uniform" in names and any(parse_budget(b) == "adaptive" for b in budgets):
        raise ValueError("the uniform allocator needs a count or a fraction, not an 'adaptive' budget")
    if "downscale" in names and any(parse_budget(b) == "adaptive" for b in budgets):
        raise ValueError("the downscale allocator needs a count or a fraction, not an 'adaptive' budget")
    if "text" in names:
        from ..realizing import resolve_mode

        resolve_mode("text")  # a clear ImportError naming the [ocr] extra when it is missing


def compress_options(name: str, budget: Budget, seed: int = 0) -> dict[str, Any]:
    """Keyword arguments of ``compress`` (besides model, budget, processor, query) for allocator ``name``."""
    if name == "model":
        return {"scorer": "auto"}
    if name == "text":
        return {"scorer": "auto", "text_prior": True}
    if name == "texture":
        return {"scorer": texture_scorer}
    if name == "foveate":
        return {"scorer": "auto", "foveate": True}
    if name == "random":
        return {"scorer": RandomScorer(seed)}
    if name == "uniform":
        return {"scorer": UniformScorer(budget)}
    if name == "downscale":
        raise ValueError("the downscale allocator runs the unwrapped model on a smaller image: no compress options")
    raise ValueError(f"unknown allocator {name!r}; choose from: {', '.join(ALLOCATORS)}")
