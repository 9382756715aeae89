"""Deciding: relevance scores + a budget -> which visual tokens of one image or video to keep.

    scores (N,) ──► budget (TokenBudget, resolved with the realizer's config) ──► top-K, words whole ──► keep
                                                                            └─► detail: coarse view + fine tokens

This is the second half of :meth:`arr_coc.realizing.Realizer.decide` (the first half scores the tokens), and the
one place where a budget becomes a count and a count becomes kept tokens: ``allocate``, ``compress`` (drop, foveate,
thumbnail, mixed; with the default scorer or a custom one), the vLLM plugin, the demo, ``eval`` and the answer
trainer all go through :func:`choose`, with the config of the realizer they use, so a checkpoint's adaptive tiers
hold everywhere.

Example:
    >>> import torch
    >>> from arr_coc.attending import TokenBudget
    >>> choose(torch.tensor([0.1, 0.9, 0.5, 0.9]), TokenBudget.parse(2)).keep.tolist()
    [1, 3]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .attending import Budget, TokenBudget, adaptive_ks, select, top_k_indices
from .config import RelevanceConfig
from .detail_plan import DetailPlan, plan_detail
from .tensors import joined

if TYPE_CHECKING:
    from .model import Relevance


@dataclass
class Choice:
    """What :func:`choose` kept of one item.

    Attributes:
        keep (torch.LongTensor of shape (k,)): kept token indices, strictly increasing, on the scores' device; with
            a level-of-detail plan, the kept placeholder positions of the image (mixed: fine tokens and anchors;
            thumbnail: the fine tokens).
        budget: tokens this item costs (``len(keep)``; with a plan, fine + coarse tokens).
        requested: the budget resolved for this item (the count ``TokenBudget.resolve`` gave, with the config).
        plan: the level-of-detail split (``arr_coc.detail_plan.DetailPlan``), or None (drop-only).
    """

    keep: torch.Tensor
    budget: int
    requested: int
    plan: DetailPlan | None = None


@dataclass
class Scoring:
    """What :meth:`arr_coc.realizing.Realizer.score` computed for one image or video.

    Attributes:
        scores (torch.Tensor of shape (T, rows, cols)): relevance of every token (differentiable in the realizer's
            parameters outside ``inference_mode``).
        units: the text path's word cells (indices into the (T * rows * cols) raster), kept whole by the selection.
        prior (torch.Tensor of shape (T, rows, cols) or None): the text prior (mode ``"text"``, or given).
        mode: ``"text"`` or ``"texture"``: the path that ran.
        relevance: the model's :class:`~arr_coc.model.Relevance` (maps, weights, texture, timings).
        boxes: the OCR boxes of each frame (mode ``"text"``), in the pixels of the picture the OCR read.
        sizes: (W, H) of each frame's picture the OCR read (mode ``"text"``): what maps its boxes to the grid.
        evidence: each frame's structural evidence (``Evidence``, or None) (mode ``"text"``).
        timings_ms: host wall time of ``ocr`` (the OCR look-up or read, the matching, the word units), ``texture``,
            ``scoring`` and ``select``, and ``digest`` (the pages' digests of a decision's text items read from their
            frames, all of them in one pass) where it ran.
    """

    scores: torch.Tensor
    units: Sequence[np.ndarray] = field(default_factory=list)
    prior: torch.Tensor | None = None
    mode: str = "texture"
    relevance: Relevance | None = None
    boxes: list[list[Any]] = field(default_factory=list)
    evidence: list[Any] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    sizes: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class ItemDecision:
    """What :meth:`arr_coc.realizing.Realizer.decide` decided for one image or video: how it scored and what it
    kept.

    Attributes:
        scoring: the :class:`Scoring` (scores, word units, text prior, maps, OCR boxes, timings).
        choice: the :class:`Choice` (kept indices, tokens spent, the resolved budget, the level-of-detail plan).
    """

    scoring: Scoring
    choice: Choice

    @property
    def keep(self) -> torch.Tensor:
        """(k,) kept token indices, ascending (:attr:`Choice.keep`)."""
        return self.choice.keep

    @property
    def budget(self) -> int:
        """Tokens this item costs (:attr:`Choice.budget`)."""
        return self.choice.budget

    @property
    def plan(self) -> DetailPlan | None:
        """The level-of-detail plan, or None (drop-only)."""
        return self.choice.plan

    @property
    def scores(self) -> torch.Tensor:
        """(T, rows, cols) relevance (:attr:`Scoring.scores`)."""
        return self.scoring.scores

    @property
    def units(self) -> Sequence[np.ndarray]:
        """The word cells kept whole."""
        return self.scoring.units


@dataclass
class Decision:
    """What :meth:`arr_coc.realizing.Realizer.decide` decided for a batch of images or videos.

    Attributes:
        items: one :class:`ItemDecision` per item, in the order given.
        config: the realizer's config that resolved every budget (its adaptive tiers).
    """

    items: list[ItemDecision]
    config: RelevanceConfig

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> ItemDecision:
        return self.items[i]

    @property
    def keeps(self) -> list[torch.Tensor]:
        """Each item's kept token indices, (k_i,) ascending."""
        return [item.keep for item in self.items]


def choose(
    scores: torch.Tensor,
    budget: Budget | TokenBudget,
    config: RelevanceConfig | None = None,
    *,
    units: Sequence[torch.Tensor | np.ndarray] = (),
    features: torch.Tensor | None = None,
    redundancy: float = 0.0,
    detail: str | None = None,
    grid: tuple[int, int] | None = None,
    patch: int = 14,
    merge: int = 2,
) -> Choice:
    """Which tokens of one item to keep: the budget resolved with ``config``, then top-K (words whole), or with
    ``detail`` the level-of-detail split of that budget (:func:`arr_coc.detail_plan.plan_detail`).

    Args:
        scores (torch.Tensor of shape (N,)): relevance, higher = more relevant (NaN = least).
        budget: a :class:`~arr_coc.attending.TokenBudget` (or a value it parses).
        config: the realizer's config (its ``adaptive_mass`` and ``adaptive_tiers``); None: the default config.
        units: cell sets kept whole (the text path's word cells).
        features (torch.Tensor of shape (N, D) or None): for ``redundancy > 0``: near-duplicates by these.
        redundancy: in [0, 1] (``arr_coc.attending.select``).
        detail: None (drop-only), ``"thumbnail"`` or ``"mixed"``: images only, ``grid`` (rows, cols) is then needed.
        grid: (rows, cols) of the item's single frame (level of detail only).
        patch, merge: the tower's patch side and merge size (the thumbnail's grid).

    Returns:
        A :class:`Choice`. A budget too small for any coarse view gives the drop-only plan ``"drop"`` (its
        ``note`` says why; one small image never stops a batch).
    """
    cfg = config or RelevanceConfig()
    scores = scores.flatten()  # (N,)
    total = TokenBudget.parse(budget).resolve(scores.numel(), scores, cfg)
    feats = features if redundancy > 0 else None

    def select_k(k: int) -> torch.Tensor:  # (k,) ascending: top-k, words whole, near-duplicates skipped
        return select(scores, min(int(k), scores.numel()), feats, redundancy, units)

    if detail is None:
        keep = select_k(total)
        return Choice(keep, int(keep.numel()), total)
    if grid is None:
        raise ValueError("a level-of-detail choice needs the item's (rows, cols) grid")
    try:
        plan = plan_detail(detail, scores, grid, total, select_k, patch=patch, merge=merge, config=cfg)
    except ValueError as err:  # a small image: its budget holds no coarse view (documented clamp)
        plan = DetailPlan("drop", select_k(total), total, total, note=str(err))
    keep = plan.kept if plan.mode != "thumbnail" else plan.fine
    return Choice(keep.to(scores.device), plan.budget, total, plan)


def choose_all(
    scorings: Sequence[Scoring],
    budgets: Sequence[TokenBudget],
    config: RelevanceConfig | None = None,
    *,
    frames: Sequence[int],
    grids: Sequence[tuple[int, int]],
    features: Sequence[torch.Tensor | None] = (),
    redundancy: float = 0.0,
    detail: str | None = None,
    patch: int = 14,
    merge: int = 2,
    batched: bool = True,
) -> list[Choice]:
    """:func:`choose` for every item of a decision, batched: the second half of ``Realizer.decide``.

    Plain top-K items (no word units, no redundancy, no level of detail) of one size and count are chosen together
    (``top_k_indices``: 3-4 ops a group); their adaptive counts are computed together too and read to the host once for
    the whole call (the one sync of an adaptive budget). The rest go through :func:`choose` one by one. Each item's
    choice equals :func:`choose` on it alone, bit for bit. Each scoring's ``timings_ms["select"]`` gets its time.

    Args:
        scorings: per item, its :class:`Scoring` (``scores`` (T, rows, cols), ``units``).
        budgets: per item, the parsed budget.
        config: the realizer's config (its adaptive tiers); None: the default.
        frames: per item, its frame count T (level of detail is for single-frame items only).
        grids: per item, (rows, cols).
        features: per item, features (N, D) for ``redundancy``, or None (empty: None for all).
        redundancy, detail, patch, merge: see :func:`choose`.
        batched: choose plain items together (off: each through :func:`choose`, e.g. while training).
    """
    n = len(scorings)
    cfg = config or RelevanceConfig()
    redund = list(features) if features else [None] * n
    choices: list[Choice | None] = [None] * n
    counts: dict[int, int] = {}  # item -> its token count K, for the plain items
    adaptive: dict[tuple[Any, ...], list[int]] = {}
    for i in range(n):
        s = scorings[i].scores
        plain = not scorings[i].units and (redund[i] is None or redundancy <= 0) and not (detail and frames[i] == 1)
        if plain and batched:
            if budgets[i].adaptive:
                adaptive.setdefault((s.numel(), s.device, s.dtype), []).append(i)
            else:
                counts[i] = budgets[i].resolve(s.numel())
    if adaptive:
        ks = [
            adaptive_ks(joined([scorings[i].scores.reshape(-1) for i in members], stack=True), cfg)
            for members in adaptive.values()
        ]  # each (G,)
        values = (ks[0] if len(ks) == 1 else torch.cat(ks)).tolist()  # one read for every adaptive item
        counts.update(zip([i for members in adaptive.values() for i in members], values, strict=True))
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, k in counts.items():
        s = scorings[i].scores
        groups.setdefault((s.numel(), int(k), s.device, s.dtype), []).append(i)
    for (_, k, _, _), members in groups.items():
        t0 = time.perf_counter()
        keeps = top_k_indices(joined([scorings[i].scores.reshape(-1) for i in members], stack=True), k)  # (G, k)
        for row, i in enumerate(members):
            choices[i] = Choice(keeps[row], k, k)
            scorings[i].timings_ms["select"] = (time.perf_counter() - t0) * 1e3
    for i in range(n):
        if choices[i] is None:
            t0 = time.perf_counter()
            choices[i] = choose(
                scorings[i].scores.flatten(), budgets[i], config, units=scorings[i].units, features=redund[i],
                redundancy=redundancy, detail=detail if frames[i] == 1 else None, grid=tuple(grids[i]),
                patch=patch, merge=merge,
            )  # fmt: skip
            scorings[i].timings_ms["select"] = (time.perf_counter() - t0) * 1e3
    return choices  # type: ignore[return-value]


def allocate_tokens(
    scores: torch.Tensor,
    budget: Budget | TokenBudget,
    features: torch.Tensor | None = None,
    redundancy: float = 0.0,
    units: Sequence[torch.Tensor | np.ndarray] = (),
    config: RelevanceConfig | None = None,
) -> torch.Tensor:
    """The kept indices of :func:`choose` (drop-only): (k,) ascending, on the scores' device.

    Args:
        scores (torch.Tensor of shape (N,)): relevance; budget: count, fraction or ``"adaptive"``.
        features (torch.Tensor of shape (N, D) or None), redundancy: near-duplicates (``redundancy > 0``).
        units: cell sets kept whole; config: the realizer's config (None: the default).
    """
    return choose(scores, budget, config, units=units, features=features, redundancy=redundancy).keep


__all__ = ["Choice", "Decision", "ItemDecision", "Scoring", "allocate_tokens", "choose", "choose_all"]
