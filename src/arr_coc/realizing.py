"""Realizing: the whole pipeline, image + question -> which visual tokens to keep.

    image ──► texture (13 channels on the model's grid) ─┐
    query ──► cues ──────────────────────────────────────┼─► knowing (3 scorers) ─► balancing ─► relevance
    (text mode) OCR + query matching ─► text prior ──────┘                                          │
                                                                     deciding (budget, top-K) ◄─────┘

A :class:`Realizer` is the relevance model (:class:`~arr_coc.model.RelevanceModel`: the scorers, the balancer, what a
checkpoint saves) run by an engine (:class:`~arr_coc.engine.Engine`: page caches, CUDA graphs, the OCR stack,
batching; its own run-time :class:`~arr_coc.engine.EngineConfig`, never in a checkpoint). It has one way to score,
:meth:`Realizer.score` (the engine's :meth:`~arr_coc.engine.Engine.score`), and one way to decide,
:meth:`Realizer.decide`: score, then :func:`arr_coc.deciding.choose_all` (the budget resolved with THIS realizer's
config, top-K with words whole, or the level-of-detail split). Every entry point is a few lines on top of it:
``allocate`` (:mod:`arr_coc.allocating`), ``score_visual_tokens`` and ``compress``, the vLLM plugin, the demo,
``eval`` and the trainer. Same frames, same realizer: same tokens.

Modes: ``"text"`` adds the OCR-based text prior (needs the ``[ocr]`` extra; the primary path for documents),
``"texture"`` is the fast query-agnostic-pixels path (query cues only), ``"auto"`` picks ``"text"`` when the
``[ocr]`` extra is installed and records the choice in ``Allocation.mode``.

Example:
    >>> r = Realizer()
    >>> d = r.decide([torch.zeros(1, 3, 56, 84, dtype=torch.uint8)], [(2, 3)], ["What is the title?"], 2)
    >>> d[0].keep.tolist(), d[0].budget
    ([0, 1], 2)
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import nn

from .attending import Budget, TokenBudget
from .caching import digest_scope
from .config import RelevanceConfig
from .deciding import Choice, Decision, ItemDecision, Scoring, choose, choose_all
from .engine import Engine, EngineConfig
from .grid import Grid
from .model import (  # noqa: F401
    _CHECKPOINTS,
    BUILTIN_RELEVANCE,
    DEFAULT_RELEVANCE,
    RULES,
    Relevance,
    RelevanceModel,
    relevance_folder,
)
from .text_prior import (  # noqa: F401  (importable from here, as before the split)
    MODES,
    Picture,
    digested_pictures,
    ocr_available,
    pictures_from_frames,
    query_notes,
    resolve_mode,
    text_prior_maps,
)


class Realizer(RelevanceModel):
    """The relevance model and the engine that runs it: frames + query (+ token features, query embeddings, text
    prior) -> scores -> kept tokens.

    The model's part (parameters, ``config``, ``box_scorer``, :meth:`forward`, ``from_pretrained`` /
    ``save_pretrained``) is :class:`~arr_coc.model.RelevanceModel`'s; ``engine`` runs it (``texture_cache``,
    ``frames_cache``, ``texture_graphs`` and ``reading`` are its). A call keeps nothing but a page's frames and texture
    array in the engine's bounded, thread-safe caches, so one instance may serve several threads; it runs on the
    frames' device (``realizer.to("cuda")`` saves the copy of its ~30 numbers per call).

    Args:
        config: the model's weights and thresholds (default ``RelevanceConfig()``).
        box_scorer: the text path's learned box scorer, or None (the rules).
        engine: the run-time settings (cache sizes, CPU band, CUDA graphs; default ``EngineConfig()``).

    Example:
        >>> r = Realizer(RelevanceConfig(edge_quantile=0.8), engine=EngineConfig(texture_cache_items=0))
        >>> r.relevance(torch.zeros(1, 3, 56, 84, dtype=torch.uint8), (2, 3), "What is the title?").scores.shape
        torch.Size([1, 2, 3])
    """

    def __init__(
        self,
        config: RelevanceConfig | None = None,
        box_scorer: nn.Module | None = None,
        engine: EngineConfig | None = None,
    ):
        super().__init__(config, box_scorer)
        self.engine = Engine(self, engine)

    # ----- the engine's parts, by their old names ---------------------------------------------------------------
    @property
    def reading(self) -> Any:
        """The text path (``arr_coc.reading.Reading``): :attr:`Engine.reading <arr_coc.engine.Engine.reading>`."""
        return self.engine.reading

    @property
    def texture_cache(self) -> Any:
        """The engine's cache of pages' texture arrays (``LruCache``)."""
        return self.engine.texture_cache

    @property
    def frames_cache(self) -> Any:
        """The engine's cache of pictures resized to a grid (``LruCache``)."""
        return self.engine.frames_cache

    @property
    def texture_graphs(self) -> Any:
        """The engine's CUDA graphs of the texture (``arr_coc.graphs.ShapeGraphs``; may be replaced)."""
        return self.engine.texture_graphs

    @texture_graphs.setter
    def texture_graphs(self, graphs: Any) -> None:
        self.engine.texture_graphs = graphs

    @property
    def _reading(self) -> Any:  # the engine's own text path once built (a test may set a stand-in)
        return self.engine._reading

    @_reading.setter
    def _reading(self, reading: Any) -> None:
        self.engine._reading = reading

    def texture(self, frames: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
        """(T, 3, rows * cell, cols * cell) -> (T, 13, rows, cols): :meth:`arr_coc.engine.Engine.texture`."""
        return self.engine.texture(frames, rows, cols)

    def _texture_eager(self, frames: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
        """The texture computed, no cache, no graph (what a ``ShapeGraphs`` of it records)."""
        return self.engine.texture_eager(frames, rows, cols)

    def frames(
        self, image: Image.Image, grid: Grid, pixels: np.ndarray | None = None, *, copy: bool = True
    ) -> torch.Tensor:
        """``image`` resized to ``grid`` as the processor resizes it, (1, 3, H, W) uint8:
        :meth:`arr_coc.engine.Engine.frames`."""
        return self.engine.frames(image, grid, pixels, copy=copy)

    # ----- scoring ----------------------------------------------------------------------------------------------
    def score(
        self,
        frames: torch.Tensor,
        grid: tuple[int, int],
        query: str | None,
        mode: str = "texture",
        *,
        token_feats: torch.Tensor | None = None,
        query_embeds: torch.Tensor | None = None,
        prior: torch.Tensor | None = None,
        pictures: Sequence[Picture] | None = None,
        text_options: dict[str, Any] | None = None,
        reader: Any = None,
        grad: bool = False,
    ) -> Scoring:
        """Relevance of every visual token of one image or video (T frames), with the text path in mode ``"text"``:
        :meth:`arr_coc.engine.Engine.score` of one item. With ``grad=True`` the scores carry gradients to the
        realizer's parameters (the answer trainer calls it so).

        Args:
            frames (torch.Tensor of shape (T, 3, rows * cell, cols * cell)): the pixels the vision tower sees, uint8 or
                floats in [0, 1], any device.
            grid: (rows, cols) of merged visual tokens.
            query: the question (None or empty: query-blind).
            mode: ``"text"`` (add the OCR text prior, unless ``prior`` is given) or ``"texture"``.
            token_feats (torch.Tensor of shape (T * rows * cols, D) or None): the model's merged visual tokens.
            query_embeds (torch.Tensor of shape (Q, D) or None): the language model's embeddings of the query.
            prior (torch.Tensor of shape (T, rows, cols) or None): a text prior already computed (e.g. cached).
            pictures: what the OCR reads (T pictures covering the grid; default: the frames themselves).
            text_options: the text path's ablation switches (``ReadingConfig.with_switches``).
            reader: the OCR reader (default: this realizer's).
            grad: score outside ``inference_mode`` (training); default: under ``inference_mode``.

        Returns:
            A :class:`~arr_coc.deciding.Scoring` on the frames' device.
        """
        return self.engine.score(
            [frames], [(int(grid[0]), int(grid[1]))], [query], [mode], [token_feats], [query_embeds], [prior],
            [pictures], text_options=text_options, reader=reader, grad=grad,
        )[0]  # fmt: skip

    def relevance(
        self,
        frames: torch.Tensor,
        grid: tuple[int, int],
        query: str | None,
        token_feats: torch.Tensor | None = None,
        query_embeds: torch.Tensor | None = None,
        prior: torch.Tensor | None = None,
        *,
        texture: torch.Tensor | None = None,
    ) -> Relevance:
        """The model's relevance of T frames of one item, no text path (``prior`` as given), under
        ``inference_mode``: :meth:`arr_coc.engine.Engine.relevance` of one item (``texture``: the frames' texture
        (T, 13, rows, cols) if already computed). Shapes as in :meth:`score`."""
        textures = {(0,): (texture, 0.0)} if texture is not None else None
        return self.engine.relevance([frames], [grid], [query], [token_feats], [query_embeds], [prior],
                                     textures=textures)[0]  # fmt: skip

    def relevance_items(
        self,
        frames: Sequence[torch.Tensor],
        grids: Sequence[tuple[int, int]],
        queries: Sequence[str | None],
        token_feats: Sequence[torch.Tensor | None] | None = None,
        query_embeds: Sequence[torch.Tensor | None] | None = None,
        priors: Sequence[torch.Tensor | None] | None = None,
    ) -> list[Relevance]:
        """:meth:`relevance` of several items, each with its own query, in as few passes as possible (deprecated
        alias of :meth:`arr_coc.engine.Engine.relevance`)."""
        return self.engine.relevance(frames, grids, queries, token_feats, query_embeds, priors)

    # ----- deciding ---------------------------------------------------------------------------------------------
    @digest_scope()  # the texture's and the OCR's keys of a page hash its bytes once
    def decide(
        self,
        frames: Sequence[torch.Tensor],
        grids: Sequence[tuple[int, int]],
        queries: Sequence[str | None],
        budget: Budget | TokenBudget | Sequence[Budget | TokenBudget] = "adaptive",
        mode: str | Sequence[str] = "texture",
        *,
        token_feats: Sequence[torch.Tensor | None] | None = None,
        query_embeds: Sequence[torch.Tensor | None] | None = None,
        priors: Sequence[torch.Tensor | None] | None = None,
        pictures: Sequence[Sequence[Picture] | None] | None = None,
        features: Sequence[torch.Tensor | None] | None = None,
        redundancy: float = 0.0,
        detail: str | None = None,
        patch: int = 14,
        merge: int = 2,
        text_options: dict[str, Any] | None = None,
        reader: Any = None,
        grad: bool = False,
    ) -> Decision:
        """Which visual tokens of each image or video to keep: the one home of the decision.

        :meth:`score` for every item (the engine's one pass per frame size), then
        :func:`arr_coc.deciding.choose_all` with THIS realizer's config (a checkpoint's adaptive tiers): top-K with
        words whole, or the level-of-detail split (``detail``), plain items chosen together. ``allocate``,
        ``score_visual_tokens``, ``compress`` (drop, foveate, thumbnail, mixed), the vLLM plugin, the demo, ``eval``
        and the answer trainer all decide here; the result equals deciding each item alone, bit for bit.

        Args:
            frames: per item, frames (T, 3, rows * cell, cols * cell), uint8 or floats in [0, 1], any device.
            grids: per item, (rows, cols) of merged visual tokens.
            queries: per item, the question (None or empty: query-blind).
            budget: one budget for every item, or one per item (count, fraction, ``"adaptive"`` or a parsed
                :class:`~arr_coc.attending.TokenBudget`), parsed once per call.
            mode: ``"text"`` / ``"texture"`` (``"auto"`` resolved here), one for every item or one per item.
            token_feats, query_embeds, priors, pictures: per item, or None (see :meth:`arr_coc.engine.Engine.score`).
            features: per item, features (N, D) for ``redundancy`` (near-duplicates), or None.
            redundancy: in [0, 1] (``arr_coc.attending.select``).
            detail: None (drop-only), ``"thumbnail"`` or ``"mixed"`` (single-frame items).
            patch, merge: the tower's patch side and merge size (the thumbnail's grid).
            text_options: the text path's switches; reader: the OCR reader (default: this realizer's).
            grad: score outside ``inference_mode`` so the scores carry gradients (training); default off.

        Returns:
            A :class:`~arr_coc.deciding.Decision`: one :class:`~arr_coc.deciding.ItemDecision` per item.
        """
        n = len(frames)
        if len(grids) != n or len(queries) != n:
            raise ValueError(f"decide got {n} items, {len(grids)} grids and {len(queries)} queries")
        parsed = [TokenBudget.parse(b) for b in _per_item(budget, n, "budget", (str, int, float, TokenBudget))]
        modes = [resolve_mode(m) for m in _per_item(mode, n, "mode", (str,))]
        per_item = [_per_item(x, n, name) for x, name in ((token_feats, "token_feats"), (query_embeds, "query_embeds"),
                    (priors, "priors"), (pictures, "pictures"))]  # fmt: skip
        redund = _per_item(features, n, "features")
        scorings = self.engine.score(frames, grids, queries, modes, *per_item, text_options=text_options,
                                     reader=reader, grad=grad)  # fmt: skip
        # the choice runs outside inference_mode: its indices are ordinary tensors a caller may index with under
        # autograd (compress trained through with labels)
        choices = choose_all(
            scorings, parsed, self.config, frames=[int(f.shape[0]) for f in frames], grids=grids, features=redund,
            redundancy=redundancy, detail=detail, patch=patch, merge=merge, batched=not grad,
        )  # fmt: skip
        return Decision([ItemDecision(s, c) for s, c in zip(scorings, choices, strict=True)], self.config)

    def choose(self, scores: torch.Tensor, budget: Budget | TokenBudget, **options: Any) -> Choice:
        """:func:`arr_coc.deciding.choose` with this realizer's config (its adaptive tiers): which tokens of one
        item's ``scores`` (N,) to keep (``options``: units, features, redundancy, detail, grid, patch, merge).
        ``compress`` calls it on a custom scorer's scores."""
        return choose(scores, budget, self.config, **options)

    def select(
        self,
        scores: torch.Tensor,
        budget: Budget,
        features: torch.Tensor | None = None,
        redundancy: float = 0.0,
        units: Sequence[torch.Tensor | np.ndarray] = (),
    ) -> torch.Tensor:
        """Deprecated: ``choose(scores, budget, ...).keep``, the kept token indices (k,), ascending."""
        return self.choose(scores, budget, units=units, features=features, redundancy=redundancy).keep


def _per_item(value: Any, n: int, name: str, scalar: tuple[type, ...] = ()) -> list[Any]:
    """``value`` for each of ``n`` items: None -> n Nones; a scalar of one of the ``scalar`` types -> repeated; else a
    sequence of exactly n entries."""
    if value is None:
        return [None] * n
    if scalar and isinstance(value, scalar):
        return [value] * n
    values = list(value)
    if len(values) != n:
        raise ValueError(f"{name} has {len(values)} entries for {n} items")
    return values


_default_lock = threading.Lock()
_default: Realizer | None = None


def default_realizer() -> Realizer:
    """The shared default :class:`Realizer`, used when no ``realizer=`` is passed: ``Realizer.default()``, the
    relevance named by ``arr_coc.model.DEFAULT_RELEVANCE`` (``routed-cells``: the rules where their structural
    evidence found the question's referent or the question is a printed-header table-cell question, the built-in
    learned box scorer elsewhere) on ``RelevanceConfig()``.
    ``Realizer.from_pretrained("rules")`` is the training-free one without a box scorer (the default before).

    Built once, under a lock, frozen (``eval()``, no gradients) and never modified afterwards: a call reads it
    and keeps nothing but a page's frames and texture array in its bounded, thread-safe page caches, so threads may
    share it. To use other weights, or to train, build ``Realizer(config)`` and pass it as ``realizer=`` to
    ``allocate`` / ``compress``.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = Realizer.default()
        return _default


def __getattr__(name: str) -> Any:
    # the entry points moved to arr_coc.allocating (which imports this module): importable from here as before
    # (score_visual_tokens, a Qwen-VL processor's patches -> relevance, is the Qwen line's: arr_coc.score_visual_tokens)
    if name in ("Allocation", "allocate"):
        from . import allocating

        return getattr(allocating, name)
    raise AttributeError(f"module 'arr_coc.realizing' has no attribute {name!r}")
