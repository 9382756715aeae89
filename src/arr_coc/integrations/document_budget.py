"""One budget over a prompt's images: ``compress(model, budget=0.01, budget_scope="prompt")``.

A prompt that holds a document's pages as images (a 20-page PDF is 20 images to Qwen-VL) gets, per row, ONE budget
spent over all the row's images by their relevance to the question, the split :func:`arr_coc.allocate_pages` makes
over a document's pages (:func:`arr_coc.pages.split_pages`, not a copy of it):

* the row's budget is resolved over all its images' tokens (:func:`arr_coc.pages.document_budget`): a count is a
  count for the whole row, a fraction a fraction of all its images' tokens, ``"adaptive"`` the most relevant image's
  adaptive count;
* a page's relevance is what its text path read (:func:`arr_coc.pages.match_pages`: its best text-prior cell plus
  its share of the question's rarer words), so it needs the text path (``text_prior=True``, the ``"decide"`` path);
  when no page stands out (:func:`arr_coc.pages.stands_out`), or without the text path (texture, a custom scorer),
  the budget is split evenly and every image keeps its own most relevant cells;
* each page's share is then spent from its key spans first, where the question's words stand together and the text
  after them (:func:`arr_coc.reading.matching.spans.refocus_pages`, ``PagesConfig.focus``: the in-page rule of
  :func:`arr_coc.pages.decide_pages`, the same function), on the page's OCR boxes of the text path; so for the same
  pages, question and budget the kept cells are ``allocate_pages``' (:class:`ScoredPage` gives it a scoring);
* a page can get nothing: it keeps ZERO visual tokens. Its vision markers (``<|vision_start|>``
  ``<|vision_end|>``) and every text token stay, at their original positions: the language model still sees that
  a page was there and where, the prompt's text (e.g. "Page 3:") keeps its place, and every other token keeps the
  position it has in the full sequence, so a pruned forward is the full one minus the dropped placeholders. Under
  ``foveate=True`` the vision tower does not run on such a page at all (:func:`.foveation.encode_kept`).

Rows with one image, videos, and the default ``budget_scope="item"`` are decided as before, item by item, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from arr_coc.attending import TokenBudget
from arr_coc.deciding import Choice

SCOPES = ("item", "prompt")


def check_scope(scope: str, detail: str | None, redundancy: float) -> None:
    """``budget_scope`` validated with the options it cannot go with yet.

    Raises:
        ValueError: an unknown scope, or ``"prompt"`` with ``detail`` or ``redundancy`` (their per-image plans are
            not split over a prompt yet).
    """
    if scope not in SCOPES:
        raise ValueError(f"budget_scope must be one of {', '.join(map(repr, SCOPES))}, got {scope!r}")
    if scope == "prompt" and detail is not None:
        raise ValueError("budget_scope='prompt' does not take detail=... yet: choose one of them")
    if scope == "prompt" and redundancy > 0:
        raise ValueError("budget_scope='prompt' does not take redundancy > 0 yet: choose one of them")


def prompt_groups(samples: Sequence[int], kinds: Sequence[str]) -> dict[int, list[int]]:
    """Per row, the positions of its images in the item list, for rows with at least two images (the rows whose
    budget is shared; the others are decided item by item)."""
    groups: dict[int, list[int]] = {}
    for i, (s, kind) in enumerate(zip(samples, kinds, strict=True)):
        if kind == "image":
            groups.setdefault(int(s), []).append(i)
    return {s: at for s, at in groups.items() if len(at) >= 2}


@dataclass(frozen=True)
class ScoredPage:
    """One image of a prompt as the in-page rule reads a page (the fields of an ``Allocation`` it uses), from the
    realizer's ``Scoring`` of that image (:meth:`of`).

    Attributes:
        scores (np.ndarray of shape (rows * cols,)): what the page split ranked; units: its word cells.
        text_boxes: its OCR boxes; evidence: its structural evidence (or None); grid: (rows, cols);
        original: (W, H) of the picture its boxes are in.
    """

    scores: np.ndarray
    units: Any
    text_boxes: list[Any]
    evidence: Any
    grid: tuple[int, int]
    original: tuple[int, int]

    @classmethod
    def of(cls, scoring: Any, scores: torch.Tensor) -> ScoredPage | None:
        """The page of a one-frame text-mode ``scoring`` whose boxes' picture size is known, ``scores`` (N,) on the
        host; else None (the page's share is kept as the split gave it)."""
        if scoring is None or scoring.mode != "text" or not scoring.boxes or not getattr(scoring, "sizes", None):
            return None
        t, rows, cols = scoring.scores.shape
        if t != 1:
            return None
        size = tuple(int(v) for v in scoring.sizes[0])
        ev = scoring.evidence[0] if scoring.evidence else None
        flat = scores.detach().float().numpy()  # (N,) on the host already (split_prompt's scores)
        return cls(flat, scoring.units, list(scoring.boxes[0]), ev, (int(rows), int(cols)), size)  # type: ignore[arg-type]


def split_prompt(
    scores: Sequence[torch.Tensor],
    budget: TokenBudget,
    query: str | None,
    scorings: Sequence[Any] | None = None,
    realizer: Any = None,
    config: Any = None,
    min_tokens: int = 0,
) -> list[torch.Tensor]:
    """One row's images: each image's kept indices for ONE ``budget`` over them all.

    Args:
        scores: per image, its relevance (N_i,) (what the per-image decision ranked).
        budget: the row's budget (count, fraction of all its images' tokens, or adaptive).
        query: the row's question (None or "": no page stands out).
        scorings: per image, the realizer's ``Scoring`` (its word units, text prior and OCR boxes), or None (a
            custom scorer: no text read, an even split, no word units).
        realizer: resolves an adaptive budget (its config's tiers); config: a :class:`arr_coc.pages.PagesConfig`.
        min_tokens: when some page stands out, every page still keeps its own best ``min_tokens`` (the floor of
            ``allocate_pages(floor=...)``; the vLLM plugin's 1: vLLM needs a placeholder per image); 0: none. When
            no page stands out the even split already gives every page its share.

    Returns:
        Per image, (k_i,) kept indices ascending, on the device of its scores; sum k_i = the row's budget resolved
        over sum N_i (at least 1).
    """
    from arr_coc.pages import PagesConfig, document_budget, match_pages, split_pages, stands_out
    from arr_coc.query import normalize_text
    from arr_coc.reading.matching.spans import refocus_pages
    from arr_coc.realizing import default_realizer

    config = config or PagesConfig()
    flat = [s.detach().float().flatten().cpu() for s in scores]  # (N_i,) each
    units = [list(sc.units) if sc is not None else [] for sc in scorings] if scorings else [[] for _ in flat]
    relevance: dict[int, float] = {}
    text = query or ""
    read = scorings is not None and all(sc is not None and sc.mode == "text" for sc in scorings)
    if read and text:
        assert scorings is not None
        texts = [" ".join(str(getattr(b, "text", "")) for frame in sc.boxes for b in frame) for sc in scorings]
        relevance = dict(enumerate(match_pages([sc.prior for sc in scorings], texts, text, config)))
    specific = stands_out(relevance, config) if relevance else False
    best = max(relevance, key=relevance.get) if relevance else None  # type: ignore[arg-type]
    best_scores = flat[best] if best is not None else max(flat, key=lambda s: float(s.max()) if s.numel() else 0.0)
    k = document_budget(budget, sum(int(s.numel()) for s in flat), best_scores, realizer or default_realizer())
    floor: int | str = min_tokens if specific and min_tokens > 0 else "auto"
    keeps = split_pages(flat, units, relevance, specific, k, floor, config.temperature)
    if read and text and config.focus:  # each page's share spent from its key spans first (as decide_pages)
        assert scorings is not None
        pages = [ScoredPage.of(sc, s) if k.numel() else None for sc, s, k in zip(scorings, flat, keeps, strict=True)]
        keeps = refocus_pages(pages, keeps, normalize_text(text), config.focus)
    return [keep.to(s.device) for keep, s in zip(keeps, scores, strict=True)]


def spend_per_prompt(
    decided: list[tuple[Choice, torch.Tensor]],
    samples: Sequence[int],
    kinds: Sequence[str],
    budgets: Sequence[TokenBudget],
    queries: Sequence[str | None],
    scorings: Sequence[Any] | None = None,
    realizer: Any = None,
) -> list[tuple[Choice, torch.Tensor]]:
    """``compress``'s per-item decision with each multi-image row's choices replaced by one split of the row's
    budget (:func:`split_prompt`); every other item's choice is returned as it was.

    Args:
        decided: per item, (its ``Choice``, its scores (N,)), as the decision step returns them.
        samples, kinds: per item, its row and ``"image"`` / ``"video"``.
        budgets: per row, its budget; queries: per item, its question text (or None).
        scorings: per item, the realizer's ``Scoring`` (the ``"decide"`` path), or None.
    """
    out = list(decided)
    for sample, at in prompt_groups(samples, kinds).items():
        query = next((queries[i] for i in at if queries[i]), None)
        mine = [scorings[i] for i in at] if scorings is not None else None
        keeps = split_prompt([decided[i][1] for i in at], budgets[sample], query, mine, realizer)
        for i, keep in zip(at, keeps, strict=True):
            n = int(keep.numel())
            out[i] = (Choice(keep, n, n), decided[i][1])
    return out
