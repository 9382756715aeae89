"""Realizing: the whole pipeline, image + question -> which visual tokens to keep.

    image ──► texture (13 channels on the model's grid) ─┐
    query ──► cues ──────────────────────────────────────┼─► knowing (3 scorers) ─► balancing ─► relevance
    (text mode) OCR + query matching ─► text prior ──────┘                                          │
                                                                     attending (budget, top-K) ◄────┘

One object decides: a :class:`Realizer` built from one :class:`~arr_coc.config.RelevanceConfig`.
:meth:`Realizer.decide` takes a batch of items (frames (T, 3, H, W) at the processor's resolution, on any device),
their grids, questions, a budget and a mode, and returns a :class:`~arr_coc.deciding.Decision`: per item the kept
tokens, scores, word units, the budget resolved with THIS realizer's config, the text prior and the level-of-detail
plan. It is :meth:`Realizer.score` (text prior -> :meth:`Realizer.relevance`; with ``grad=True`` the same code with
gradients, what the answer trainer calls) then :meth:`Realizer.choose` (:func:`arr_coc.deciding.choose`).
Every entry point is a few lines on top of it: ``allocate`` (an image resized as the processor does -> an
``Allocation``), ``score_visual_tokens`` and ``compress`` (a processor's ``pixel_values``), the vLLM plugin, the demo,
``eval`` and the trainer. Same frames, same realizer: same tokens.

Modes: ``"text"`` adds the OCR-based text prior (needs the ``[ocr]`` extra; the primary path for documents),
``"texture"`` is the fast query-agnostic-pixels path (query cues only), ``"auto"`` picks ``"text"`` when the
``[ocr]`` extra is installed and records the choice in ``Allocation.mode``.

Example:
    >>> from PIL import Image
    >>> a = allocate(Image.new("RGB", (560, 280), "white"), "What is the title?", budget=10, mode="texture")
    >>> a.grid, a.budget, a.to_json()["kept"][:2]
    ((10, 20), 10, [[0, 0], [0, 1]])
"""

from __future__ import annotations

import functools
import importlib.util
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import nn

from .attending import Budget, TokenBudget, TokenScores, WordUnits, adaptive_ks, top_k_indices
from .balancing import SCORERS, TensionBalancer
from .caching import LruCache, digest_scope, frame_digests, page_digest
from .config import CHANNELS, RelevanceConfig
from .deciding import Choice, Decision, ItemDecision, Scoring, choose
from .graphs import ShapeGraphs
from .grid import Grid, GridSpec
from .io import load_image_with_size
from .knowing import InformationScorer, ParticipatoryScorer, PerspectivalScorer, channel_index, unit_last
from .query import MAX_QUERY_CHARS, QueryCues, broken_text_notes, normalize_text, parse_query
from .tensors import joined
from .texture import frames_from_image, frames_from_patches, texture_from_frames

MODES = ("auto", "text", "texture")
_EDGE_DENSITY = CHANNELS.index("edge_density")
Picture = Image.Image | np.ndarray  # what the OCR reads: a PIL image or an (H, W, 3) uint8 RGB array

# relevance checkpoints shipped inside the package (src/arr_coc/checkpoints/<folder>/, each with PROVENANCE.md): the
# name a user passes (``Realizer.builtin(name)``, ``--relevance NAME``) -> its folder. Opt-in: the default is the rules.
BUILTIN_RELEVANCE: dict[str, str] = {"learned": "learned-2026-11", "learned-2026-11": "learned-2026-11"}
_CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"


def relevance_folder(folder_or_name: str | Path) -> Path:
    """The checkpoint folder of ``--relevance`` / :meth:`Realizer.from_pretrained`: an existing folder as given,
    else a built-in name (``BUILTIN_RELEVANCE``) as the shipped folder; a folder of that name wins (``./learned``).

    Raises:
        FileNotFoundError: if it is neither a folder nor a built-in name (the message lists the built-in names).
    """
    path = Path(folder_or_name).expanduser()
    if path.is_dir():
        return path
    name = str(folder_or_name)
    if name in BUILTIN_RELEVANCE:
        return _CHECKPOINTS / BUILTIN_RELEVANCE[name]
    raise FileNotFoundError(
        f"{name} is not a relevance checkpoint folder (a folder holding config.json, written by arr-coc train) nor "
        f"a built-in name (built-in: {', '.join(BUILTIN_RELEVANCE)})"
    )


@dataclass
class Allocation:
    """What ``allocate`` decided for one image and one query.

    ``keep`` holds indices ``r * cols + c`` into the model's visual-token sequence of this image, ascending.
    """

    family: str  # model family whose grid this is
    grid: tuple[int, int]  # (rows, cols) of merged visual tokens
    resized: tuple[int, int]  # (W, H) the processor resizes the image to
    original: tuple[int, int]  # (W, H) of the image as loaded (after EXIF rotation)
    keep: torch.Tensor  # (K,) kept token indices, ascending
    scores: np.ndarray  # (rows, cols) relevance, higher = more relevant
    query: str  # the query as the user typed it (normalised internally only), cut to MAX_QUERY_CHARS (4,000)
    mode: str  # "text" or "texture": the path that ran
    weights: dict[str, float]  # balancer weights of information / perspectival / participatory
    components: dict[str, np.ndarray] = field(default_factory=dict)  # each scorer's (rows, cols) map
    timings_ms: dict[str, float] = field(default_factory=dict)  # load, texture, ocr, scoring, total; model_load apart
    text_boxes: list[Any] = field(default_factory=list)  # OCR boxes (text mode)
    evidence: Any = None  # structural evidence kept first (text mode; ``.rule`` names the budget rule), or None
    units: Sequence[np.ndarray] = field(default_factory=list)  # text mode: each word's cells, kept whole by ``select``
    notes: list[str] = field(default_factory=list)  # what the user should know (question not understood, frames)
    config: RelevanceConfig | None = None  # the realizer's config that decided (its adaptive tiers); None: default

    @property
    def budget(self) -> int:
        return int(self.keep.numel())

    @property
    def n_tokens(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def mask(self) -> np.ndarray:
        """(rows, cols) bool, True where a token is kept."""
        m = np.zeros(self.n_tokens, dtype=bool)
        m[self.keep.numpy()] = True
        return m.reshape(self.grid)

    @property
    def kept_cells(self) -> list[list[int]]:
        cols = self.grid[1]
        return [[int(i) // cols, int(i) % cols] for i in self.keep.tolist()]

    def select(self, budget: Budget) -> torch.Tensor:
        """The tokens this allocation keeps at another ``budget`` (same scores, words kept whole): (K,) ascending.

        ``"adaptive"`` uses the tiers of the realizer that made the allocation (:attr:`config`)."""
        scores = torch.from_numpy(np.ascontiguousarray(self.scores, dtype=np.float32)).flatten()  # (rows * cols,)
        return choose(scores, TokenBudget.parse(budget), self.config, units=self.units).keep

    def to_json(self, id: Any = None) -> dict[str, Any]:
        """The JSON contract of ``arr-coc allocate``.

        Keys: ``id``; ``grid`` [rows, cols] of visual tokens; ``resized`` and ``original`` [W, H] in pixels (note
        the order: grid is rows first, the sizes are width first); ``budget`` (tokens kept); ``kept`` [[r, c], ...]
        in raster order (token index r * cols + c); ``scores`` rows x cols relevance; ``mode`` ("text" or
        "texture", the path that ran); ``family`` (whose grid); ``query`` (as the user typed it); and, only when
        there is something to say, ``notes``: sentences for the user (the question has no word the pipeline can read,
        only the first frame of a multi-page file was used).
        """
        out = {
            "id": id,
            "grid": list(self.grid),
            "resized": list(self.resized),
            "original": list(self.original),
            "budget": self.budget,
            "kept": self.kept_cells,
            "scores": [[round(float(v), 5) for v in row] for row in self.scores],
            "mode": self.mode,
            "family": self.family,
            "query": self.query,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass
class Relevance:
    """What :meth:`Realizer.relevance` computed for T frames.

    Attributes:
        scores (torch.Tensor of shape (T, rows, cols)): relevance of every cell, higher = more relevant.
        maps: each scorer's map by name (information, perspectival, participatory), each (T, rows, cols).
        weights (torch.Tensor of shape (T, 3)): the balancer's weights of the three scorers.
        texture (torch.Tensor of shape (T, 13, rows, cols)): the texture array.
        timings_ms: ``texture`` and ``scoring`` wall time (on a GPU: time to launch, unless synchronised).
    """

    scores: torch.Tensor
    maps: dict[str, torch.Tensor]
    weights: torch.Tensor
    texture: torch.Tensor
    timings_ms: dict[str, float] = field(default_factory=dict)


class Realizer(nn.Module):
    """The relevance model as one object: frames + query (+ token features, query embeddings, text prior) -> scores.

    ``allocate`` and ``compress`` both call :meth:`relevance`, so the map a user sees is the map the model gets.
    Every weight and threshold comes from ``config`` (:class:`~arr_coc.config.RelevanceConfig`); the learnable ones
    become parameters of the three scorers and the balancer. The only state kept between calls is two bounded,
    thread-safe page caches (``texture_cache`` of texture arrays, :meth:`texture`; ``frames_cache`` of pictures
    resized to the grid, :meth:`frames`; sizes in the config), which change no result, so one instance may serve
    several threads; it runs on the frames' device (parameters are used as ``p.to(x)``, a no-op once the module sits
    there: ``realizer.to("cuda")`` saves the copy of its ~30 numbers per call).

    Example:
        >>> r = Realizer(RelevanceConfig(edge_quantile=0.8))
        >>> rel = r.relevance(torch.zeros(1, 3, 56, 84, dtype=torch.uint8), (2, 3), "What is the title?")
        >>> rel.scores.shape
        torch.Size([1, 2, 3])
    """

    def __init__(self, config: RelevanceConfig | None = None, box_scorer: nn.Module | None = None):
        super().__init__()
        self.config = config or RelevanceConfig()
        # the text path's learned box scorer (``arr_coc.reading.matching.learned.BoxScorer``; None: the rules). A
        # submodule, so ``realizer.box_scorer.parameters()`` / ``realizer.state_dict()`` reach its tensors.
        self.box_scorer = box_scorer
        self.information = InformationScorer(self.config)
        self.perspectival = PerspectivalScorer(self.config)
        self.participatory = ParticipatoryScorer(self.config)
        self.balancer = TensionBalancer(self.config)
        self._reading: Any = None  # the text path's Reading for config.reading, built on first use
        self._reading_lock = threading.Lock()
        # texture arrays of pages seen before, keyed by a digest of all their frames' bytes and the grid (CPU only)
        self.texture_cache: LruCache[bytes, torch.Tensor] = LruCache(self.config.texture_cache_items)
        # frames of pictures seen before (allocate's resize to the grid), keyed by a digest of the picture's pixels
        self.frames_cache: LruCache[bytes, torch.Tensor] = LruCache(self.config.frames_cache_items)
        # the texture of CUDA frames as a graph per frame shape (``config.texture_graphs``; 0: off): one replay
        # instead of ~70 launches, the same result
        self.texture_graphs = ShapeGraphs(self._texture_eager, self.config.texture_graphs)

    @property
    def reading(self) -> Any:
        """The text path (``arr_coc.reading.Reading``) of this config: the process-wide default one when
        ``config.reading`` is None, else one built from ``ReadingConfig.from_dict(config.reading)`` on first use and
        owned by this realizer (its OCR cache and models with it)."""
        from .reading import Reading, ReadingConfig, default_reading

        if self.config.reading is None and self.box_scorer is None:
            return default_reading()
        with self._reading_lock:
            if self._reading is None:
                cfg = ReadingConfig.from_dict(self.config.reading) if self.config.reading else ReadingConfig()
                self._reading = Reading(cfg, scorer=self.box_scorer)
            return self._reading

    @classmethod
    def from_pretrained(cls, folder: str | Path) -> Realizer:
        """A realizer from a checkpoint folder written by ``arr-coc train`` (or :meth:`save_pretrained`), or from a
        built-in one by name (``BUILTIN_RELEVANCE``, :func:`relevance_folder`): ``config.json`` (``RelevanceConfig``,
        the text path's ``ReadingConfig`` inside) and, when present, ``scorer.json`` + ``model.safetensors`` (the
        learned box scorer, its feature columns checked against today's ``box_features``). Frozen (``eval()``, no
        gradients).

        Raises:
            FileNotFoundError: if ``folder`` is neither a built-in name nor a folder holding ``config.json``.
            ValueError: if the box scorer needs features this version no longer computes.
        """
        folder = relevance_folder(folder)
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(
                f"{folder} is not a relevance checkpoint folder (no config.json; write one with arr-coc train)"
            )
        config = RelevanceConfig.from_json((folder / "config.json").read_text())
        scorer = None
        if (folder / "scorer.json").is_file():
            from .reading.matching.learned import BoxScorer

            scorer = BoxScorer.load(folder)
        return cls(config, box_scorer=scorer).eval().requires_grad_(False)

    @classmethod
    def builtin(cls, name: str = "learned") -> Realizer:
        """A relevance checkpoint shipped inside the package (``BUILTIN_RELEVANCE``; no training needed): the same
        loading as :meth:`from_pretrained`, a name only (never a folder).

        Example:
            >>> Realizer.builtin("learned").box_scorer.features[-1]
            'rule'

        Raises:
            ValueError: if ``name`` is not a built-in name (the message lists them).
        """
        if name not in BUILTIN_RELEVANCE:
            raise ValueError(f"unknown built-in relevance {name!r}; built-in: {', '.join(BUILTIN_RELEVANCE)}")
        return cls.from_pretrained(_CHECKPOINTS / BUILTIN_RELEVANCE[name])

    def save_pretrained(self, folder: str | Path) -> None:
        """Write ``config.json`` and, with a box scorer, ``scorer.json`` + ``model.safetensors`` into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(self.config.to_json(indent=1) + "\n")
        if self.box_scorer is not None:
            self.box_scorer.save(folder)

    def cues(self, query: str | None) -> QueryCues:
        """The query's cues, with this config's weights."""
        return parse_query(query, self.config)

    def texture(self, frames: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
        """Texture of frames (T, 3, rows * cell, cols * cell) at the processor's resolution -> (T, 13, rows, cols).

        The texture depends on the page only, so a second question about a page takes it from ``texture_cache``
        (keyed by ``arr_coc.caching.page_digest`` of ALL the frames' bytes, shape, dtype and memory order plus the
        grid: another page or frames changed in place are another key; the memory order is part of the key because
        the texture's float sums follow it, last bits included). Cached only where that is cheap and safe
        (:meth:`_texture_cacheable`: CPU frames, under ``inference_mode``, no dispatch mode such as fake tensors or
        an op counter); the caller gets its own copy, equal bit for bit to computing it again. Items decided
        together (:meth:`relevance_items`) are one batch, keyed as one. CUDA frames go through ``texture_graphs``
        (``config.texture_graphs`` > 0, the default: a CUDA graph per frame shape, replayed).
        """
        if not self._texture_cacheable(frames):
            return self.texture_graphs(frames, int(rows), int(cols))  # eager unless a CUDA graph is on and usable
        key = page_digest(frames, f"texture {rows} {cols}")
        texture, _ = self.texture_cache.get_or_compute(
            key, lambda: texture_from_frames(frames, rows, cols, self.config)
        )
        return texture.clone()  # the cached tensor stays the cache's: a caller may write into its copy

    def _texture_eager(self, frames: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
        return texture_from_frames(frames, rows, cols, self.config)

    def frames(
        self, image: Image.Image, grid: Grid, pixels: np.ndarray | None = None, *, copy: bool = True
    ) -> torch.Tensor:
        """``arr_coc.texture.frames_from_image``: ``image`` resized to ``grid`` as the processor resizes it, (1, 3,
        rows * cell, cols * cell) uint8; from ``frames_cache`` when this picture (all its pixels: ``page_digest``)
        was resized to this grid before. The caller gets its own copy, unless ``copy=False``: then it gets the
        cache's own tensor and must not write into it (``allocate`` only reads it: a 3 MB copy saved per question).

        Args:
            image: the picture.
            grid: the grid to resize it to.
            pixels: ``np.asarray`` of the RGB ``image`` if the caller has it already (the key is its digest; copying
                a page's bytes out of PIL costs more than hashing them, so ``allocate`` does it once for the
                frames and the OCR).
        """
        rgb = image if image.mode == "RGB" else image.convert("RGB")
        if self.frames_cache.max_items == 0:
            return frames_from_image(rgb, grid)
        if pixels is None or pixels.shape != (rgb.height, rgb.width, 3) or pixels.dtype != np.uint8:
            pixels = np.asarray(rgb)
        key = page_digest(pixels, f"frames {grid.resized}")
        frames, _ = self.frames_cache.get_or_compute(key, lambda: frames_from_image(rgb, grid))
        return frames.clone() if copy else frames  # (1, 3, H, W), the same memory order as frames_from_image's

    def _texture_cacheable(self, frames: torch.Tensor) -> bool:
        """Whether :meth:`texture` may use ``texture_cache`` for ``frames``: a cache that holds pages, CPU frames
        (a GPU computes the texture in a few kernels; a digest would copy the frames to the host), inference mode
        (a cached inference tensor cannot enter an autograd graph: training recomputes) and no active dispatch mode
        (fake tensors have no bytes; an op counter counts what a call computes)."""
        return (
            self.texture_cache.max_items > 0
            and frames.device.type == "cpu"
            and torch.is_inference_mode_enabled()
            and torch._C._len_torch_dispatch_stack() == 0
        )

    def select(
        self,
        scores: torch.Tensor,
        budget: Budget,
        features: torch.Tensor | None = None,
        redundancy: float = 0.0,
        units: Sequence[torch.Tensor | np.ndarray] = (),
    ) -> torch.Tensor:
        """Kept token indices (k,), ascending, for ``budget`` over ``scores`` (N,) (adaptive settings from config);
        each of ``units`` (the cells of one word) kept whole or not at all (:meth:`choose`'s ``keep``)."""
        return self.choose(scores, budget, units=units, features=features, redundancy=redundancy).keep

    def choose(
        self,
        scores: torch.Tensor,
        budget: Budget | TokenBudget,
        *,
        units: Sequence[torch.Tensor | np.ndarray] = (),
        features: torch.Tensor | None = None,
        redundancy: float = 0.0,
        detail: str | None = None,
        grid: tuple[int, int] | None = None,
        patch: int = 14,
        merge: int = 2,
    ) -> Choice:
        """Which tokens of one item to keep for ``budget``, resolved with THIS realizer's config (its adaptive
        tiers): :func:`arr_coc.deciding.choose` (top-K with words whole, or the level-of-detail split with
        ``detail``). The second half of :meth:`decide`; ``compress`` calls it on a custom scorer's scores.

        Args:
            scores (torch.Tensor of shape (N,)): relevance.
            budget: a :class:`~arr_coc.attending.TokenBudget` (or a value it parses).
            units, features, redundancy, detail, grid, patch, merge: see :func:`arr_coc.deciding.choose`.
        """
        return choose(
            scores, budget, self.config, units=units, features=features, redundancy=redundancy, detail=detail,
            grid=grid, patch=patch, merge=merge,
        )  # fmt: skip

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
        """Relevance of every visual token of one image or video (T frames), with the text path in mode ``"text"``.

        The first half of :meth:`decide`, and the one differentiable scoring method: with ``grad=True`` the scores
        carry gradients to the realizer's parameters (the answer trainer calls it so).

        Args:
            frames (torch.Tensor of shape (T, 3, rows * cell, cols * cell)): the pixels the vision tower sees, uint8 or
                floats in [0, 1], any device.
            grid: (rows, cols) of merged visual tokens.
            query: the question (None or empty: query-blind).
            mode: ``"text"`` (add the OCR text prior, unless ``prior`` is given) or ``"texture"``.
            token_feats (torch.Tensor of shape (T * rows * cols, D) or None): the model's merged visual tokens.
            query_embeds (torch.Tensor of shape (Q, D) or None): the language model's embeddings of the query.
            prior (torch.Tensor of shape (T, rows, cols) or None): a text prior already computed (e.g. cached).
            pictures: what the OCR reads (T pictures covering the grid; default: the frames themselves, one uint8
                copy to the CPU).
            text_options: the text path's ablation switches (``ReadingConfig.with_switches``).
            reader: the OCR reader (default: this realizer's); it reads ``pictures`` (default: the frames, as
                (H, W, 3) uint8 arrays).
            grad: run :meth:`relevance`'s code outside ``inference_mode``, so the scores carry gradients to the
                realizer's parameters (training); default: under ``inference_mode``.

        Returns:
            A :class:`~arr_coc.deciding.Scoring` on the frames' device.
        """
        rows, cols = int(grid[0]), int(grid[1])
        pics = [pictures]
        self._digest_pictures([frames], [mode], [prior], pics, reader)
        text = self._text_prior(frames, (rows, cols), query, mode, prior, pics[0], text_options, reader)
        # grad: relevance's own code without its inference_mode (functools.wraps keeps it as __wrapped__), so training
        # scores with exactly the code that decides
        relevance = functools.partial(type(self).relevance.__wrapped__, self) if grad else self.relevance
        rel = relevance(
            frames, (rows, cols), query, token_feats=token_feats, query_embeds=query_embeds, prior=text.prior
        )  # scores (T, rows, cols)
        return text.scoring(rel, mode)

    def _digest_pictures(
        self,
        frames: Sequence[torch.Tensor],
        modes: Sequence[str],
        given: Sequence[torch.Tensor | None],
        pics: list[Any],
        reader: Any,
    ) -> tuple[list[int], float]:
        """Fill ``pics`` of the text items read from their frames by the built-in reader with their
        ``digested_pictures``: every such item's frames hashed where they lie, one host sync for all of them.

        Returns:
            The items filled, and the ms it took."""
        t0 = time.perf_counter()
        want = [i for i in range(len(frames)) if modes[i] == "text" and given[i] is None and pics[i] is None]
        if not want:
            return [], 0.0
        from .reading.ocr.reader import TextReader

        if not isinstance(reader or self.reading.reader, TextReader):
            return [], 0.0
        for i, pictures in zip(want, digested_pictures([frames[i] for i in want]), strict=True):
            pics[i] = pictures
        return want, (time.perf_counter() - t0) * 1e3

    def _text_prior(
        self,
        frames: torch.Tensor,
        grid: tuple[int, int],
        query: str | None,
        mode: str,
        prior: torch.Tensor | None,
        pictures: Sequence[Picture] | None,
        text_options: dict[str, Any] | None,
        reader: Any,
    ) -> _TextPrior:
        """The text path of one item (mode ``"text"`` without a given prior): OCR + matching -> the prior
        (T, rows, cols) on the frames' device, word units, boxes and evidence; else ``prior`` as given."""
        if not (mode == "text" and prior is None):
            return _TextPrior(prior)
        t0 = time.perf_counter()
        # pictures: given, or the frames' digested pictures (_digest_pictures), or else copied to the host here
        pics = list(pictures) if pictures is not None else pictures_from_frames(frames)
        prior, boxes, evidence, units = text_prior_maps(pics, query or "", grid[0], grid[1], text_options, reader, self)
        return _TextPrior(prior.to(frames.device), units, boxes, evidence, (time.perf_counter() - t0) * 1e3)

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

        Per item: text prior (mode ``"text"``) -> :meth:`relevance` -> the budget resolved with THIS realizer's config
        (a checkpoint's adaptive tiers) -> top-K with words whole, or the level-of-detail split (``detail``).
        ``allocate``, ``score_visual_tokens``, ``compress`` (drop, foveate, thumbnail, mixed), the vLLM plugin, the
        demo, ``eval`` and the answer trainer all decide here. The budget is parsed once per call. Batched: items of
        one frame size are scored in one pass (:meth:`relevance_items`), and plain top-K items (no word units, no
        redundancy, no level of detail) of one size and count are chosen together (``top_k_indices``), with one host
        read of the counts for the adaptive ones; the result equals deciding each item alone, bit for bit.

        Args:
            frames: per item, frames (T, 3, rows * cell, cols * cell), uint8 or floats in [0, 1], any device
                (:func:`arr_coc.texture.frames_from_image` / ``frames_from_patches``).
            grids: per item, (rows, cols) of merged visual tokens.
            queries: per item, the question (None or empty: query-blind).
            budget: one budget for every item, or one per item (count, fraction, ``"adaptive"`` or a parsed
                :class:`~arr_coc.attending.TokenBudget`).
            mode: ``"text"`` / ``"texture"`` (``"auto"`` resolved here), one for every item or one per item.
            token_feats: per item, the model's merged visual tokens (T * rows * cols, D), or None.
            query_embeds: per item, the LM embeddings of the question's tokens (Q, D), or None.
            priors: per item, a text prior (T, rows, cols) already computed (skips the OCR), or None.
            pictures: per item, what the OCR reads (default: the frames; ``allocate`` passes the loaded image).
            features: per item, features (N, D) for ``redundancy`` (near-duplicates), or None.
            redundancy: in [0, 1] (``arr_coc.attending.select``).
            detail: None (drop-only), ``"thumbnail"`` or ``"mixed"`` (single-frame items; see
                ``arr_coc.integrations.detail``).
            patch, merge: the tower's patch side and merge size (the thumbnail's grid).
            text_options: the text path's switches; reader: the OCR reader (default: this realizer's).
            grad: score outside ``inference_mode`` so the scores carry gradients (training); default off.

        Returns:
            A :class:`~arr_coc.deciding.Decision`: one :class:`~arr_coc.deciding.ItemDecision` per item.

        Example:
            >>> r = Realizer()
            >>> d = r.decide([torch.zeros(1, 3, 56, 84, dtype=torch.uint8)], [(2, 3)], ["What is the title?"], 2)
            >>> d[0].keep.tolist(), d[0].budget
            ([0, 1], 2)
        """
        n = len(frames)
        if len(grids) != n or len(queries) != n:
            raise ValueError(f"decide got {n} items, {len(grids)} grids and {len(queries)} queries")
        budgets = _per_item(budget, n, "budget", (str, int, float, TokenBudget))
        parsed = [TokenBudget.parse(b) for b in budgets]  # parsed once per call
        modes = [resolve_mode(m) for m in _per_item(mode, n, "mode", (str,))]
        feats, embeds, given = (_per_item(x, n, name) for x, name in ((token_feats, "token_feats"),
                                (query_embeds, "query_embeds"), (priors, "priors")))  # fmt: skip
        pics, redund = _per_item(pictures, n, "pictures"), _per_item(features, n, "features")
        if grad:  # training: item by item, outside inference_mode
            scorings = [
                self.score(
                    frames[i],
                    grids[i],
                    queries[i],
                    modes[i],
                    token_feats=feats[i],
                    query_embeds=embeds[i],
                    prior=given[i],
                    pictures=pics[i],
                    text_options=text_options,
                    reader=reader,
                    grad=True,
                )  # fmt: skip
                for i in range(n)
            ]
        else:  # the text priors (host OCR), then every item's relevance in one pass per frame size
            digested, digest_ms = self._digest_pictures(frames, modes, given, pics, reader)  # a GPU: its one sync
            has_prior = [modes[i] == "text" or given[i] is not None for i in range(n)]
            ahead = self._textures_ahead(frames, grids, [f is not None for f in feats], has_prior)
            texts = [
                self._text_prior(frames[i], tuple(grids[i]), queries[i], modes[i], given[i], pics[i], text_options,
                                 reader)
                for i in range(n)
            ]  # fmt: skip
            rels = self.relevance_items(frames, grids, queries, feats, embeds, [t.prior for t in texts], textures=ahead)
            scorings = [t.scoring(rel, m) for t, rel, m in zip(texts, rels, modes, strict=True)]
            for i in digested:  # the pages' digests, all the items' in one pass
                scorings[i].timings_ms["digest"] = digest_ms
        # the choice runs outside inference_mode: its indices are ordinary tensors a caller may index with under
        # autograd (compress trained through with labels). Plain top-K items (no word units, no redundancy, no level
        # of detail) of one size and count are chosen together (3-4 ops a group); their adaptive counts are computed
        # together too and read to the host once for the whole call (the one sync of an adaptive budget)
        choices: list[Choice | None] = [None] * n
        counts: dict[int, int] = {}  # item -> its token count K, for the plain items
        adaptive: dict[tuple[Any, ...], list[int]] = {}
        for i in range(n):
            s = scorings[i].scores
            single = frames[i].shape[0] == 1
            plain = not scorings[i].units and (redund[i] is None or redundancy <= 0) and not (detail and single)
            if plain and not grad:
                if parsed[i].adaptive:
                    adaptive.setdefault((s.numel(), s.device, s.dtype), []).append(i)
                else:
                    counts[i] = parsed[i].resolve(s.numel())
        if adaptive:
            ks = [
                adaptive_ks(joined([scorings[i].scores.reshape(-1) for i in members], stack=True), self.config)
                for members in adaptive.values()
            ]  # each (G,)
            values = (ks[0] if len(ks) == 1 else torch.cat(ks)).tolist()  # one read for every adaptive item
            counts.update(zip([i for members in adaptive.values() for i in members], values, strict=True))
        batched: dict[tuple[Any, ...], list[int]] = {}
        for i, k in counts.items():
            s = scorings[i].scores
            batched.setdefault((s.numel(), int(k), s.device, s.dtype), []).append(i)
        for (_, k, _, _), members in batched.items():
            t0 = time.perf_counter()
            keeps = top_k_indices(joined([scorings[i].scores.reshape(-1) for i in members], stack=True), k)  # (G, k)
            for row, i in enumerate(members):
                choices[i] = Choice(keeps[row], k, k)
                scorings[i].timings_ms["select"] = (time.perf_counter() - t0) * 1e3
        items = []
        for i in range(n):
            scoring = scorings[i]
            if choices[i] is None:
                t0 = time.perf_counter()
                single = frames[i].shape[0] == 1
                choices[i] = self.choose(
                    scoring.scores.flatten(), parsed[i], units=scoring.units, features=redund[i],
                    redundancy=redundancy, detail=detail if single else None, grid=tuple(grids[i]), patch=patch,
                    merge=merge,
                )  # fmt: skip
                scoring.timings_ms["select"] = (time.perf_counter() - t0) * 1e3
            items.append(ItemDecision(scoring, choices[i]))  # type: ignore[arg-type]
        return Decision(items, self.config)

    @torch.inference_mode()
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
        """Relevance of every visual token of T frames of one image or video, for one query.

        Args:
            frames (torch.Tensor of shape (T, 3, rows * cell, cols * cell)): the pixels the vision tower sees, uint8
                or floats in [0, 1] (see :func:`arr_coc.texture.texture_from_frames`), any device.
            grid: (rows, cols) of merged visual tokens.
            query: the question (None or empty: query-blind).
            token_feats (torch.Tensor of shape (T * rows * cols, D) or None): the model's merged visual tokens.
            query_embeds (torch.Tensor of shape (Q, D) or None): the language model's embeddings of the query tokens.
            prior (torch.Tensor of shape (T, rows, cols) or None): a query-conditioned map in [0, 1] (the text prior).
            texture (torch.Tensor of shape (T, 13, rows, cols) or None): :meth:`texture` of the frames if the caller
                computed it already (``decide`` launches it before the text path's host work).

        Returns:
            :class:`Relevance`, on the frames' device (under ``inference_mode``; ``score(..., grad=True)`` runs this
            same code with gradients).
        """
        rows, cols = int(grid[0]), int(grid[1])
        t = frames.shape[0]
        t0 = time.perf_counter()
        if texture is None:
            texture = self.texture(frames, rows, cols)  # (T, 13, rows, cols)
        t1 = time.perf_counter()
        feats = None
        if token_feats is not None:
            if token_feats.shape[0] != t * rows * cols:
                raise ValueError(f"token_feats has {token_feats.shape[0]} rows for a grid of {t * rows * cols} tokens")
            feats = token_feats.reshape(t, rows * cols, -1)  # (T, rows * cols, D)
        if prior is not None and tuple(prior.shape) != (t, rows, cols):
            raise ValueError(f"prior has shape {tuple(prior.shape)}, expected {(t, rows, cols)}")
        embeds = [query_embeds] * t if query_embeds is not None else None
        cues = [self.cues(query)] * t
        scores, maps, weights = self(texture, cues, prior=prior, token_feats=feats, query_embeds=embeds)
        t2 = time.perf_counter()
        return Relevance(scores, maps, weights, texture, {"texture": (t1 - t0) * 1e3, "scoring": (t2 - t1) * 1e3})

    @torch.inference_mode()
    def relevance_items(
        self,
        frames: Sequence[torch.Tensor],
        grids: Sequence[tuple[int, int]],
        queries: Sequence[str | None],
        token_feats: Sequence[torch.Tensor | None] | None = None,
        query_embeds: Sequence[torch.Tensor | None] | None = None,
        priors: Sequence[torch.Tensor | None] | None = None,
        *,
        textures: dict[tuple[int, ...], tuple[torch.Tensor, float]] | None = None,
    ) -> list[Relevance]:
        """:meth:`relevance` of several images or videos, each with its own query, in as few passes as possible:
        items whose frames have the same shape, dtype and device (and the same grid) go through texture and the
        scorers together, whatever their queries; each item's result equals :meth:`relevance` on it alone, bit for
        bit (every op works within a frame, and the participatory scorer groups samples by query).

        Args:
            frames: per item, (T_i, 3, rows_i * cell, cols_i * cell) uint8 or floats in [0, 1].
            grids: per item, (rows_i, cols_i).
            queries: per item, the question (None: query-blind).
            token_feats: per item, (T_i * rows_i * cols_i, D) or None.
            query_embeds: per item, (Q_i, D) or None.
            priors: per item, (T_i, rows_i, cols_i) or None.
            textures: the groups' textures computed ahead (:meth:`_textures_ahead`), by the group's items, with
                their ms; a group not in it computes its own.

        Returns:
            One :class:`Relevance` per item, in order (``texture`` and ``scoring`` timings are the group's).
        """
        n = len(frames)
        feats_in = list(token_feats) if token_feats is not None else [None] * n
        embeds_in = list(query_embeds) if query_embeds is not None else [None] * n
        priors_in = list(priors) if priors is not None else [None] * n
        if not len(grids) == len(queries) == len(feats_in) == len(embeds_in) == len(priors_in) == n:
            raise ValueError(f"relevance_items got {n} items but lists of other lengths")
        groups = _groups(frames, grids, [f is not None for f in feats_in], [p is not None for p in priors_in])
        ahead = textures or {}
        out: list[Relevance | None] = [None] * n
        for (_, _, _, rows, cols, no_feats, no_prior), members in groups.items():
            texture, texture_ms = ahead.get(tuple(members), (None, 0.0))
            if len(members) == 1:
                i = members[0]
                out[i] = rel = self.relevance(frames[i], (rows, cols), queries[i], feats_in[i], embeds_in[i],
                                              priors_in[i], texture=texture)  # fmt: skip
                if texture is not None:
                    rel.timings_ms["texture"] = texture_ms
                continue
            counts = [int(frames[i].shape[0]) for i in members]  # frames per item
            t0 = time.perf_counter()
            if texture is None:
                texture = self._group_texture(frames, members, rows, cols)  # (sum T, 13, rows, cols)
            t1 = time.perf_counter()
            cues, embeds, feats, prior = [], [], None, None
            for i, t in zip(members, counts, strict=True):
                cue = self.cues(queries[i])
                cues += [cue] * t
                embeds += [embeds_in[i]] * t
            if not no_feats:
                for i, t in zip(members, counts, strict=True):
                    if feats_in[i].shape[0] != t * rows * cols:  # type: ignore[union-attr]
                        raise ValueError(f"token_feats of item {i} do not match its grid of {t * rows * cols} tokens")
                feats = joined(
                    [feats_in[i].reshape(t, rows * cols, -1) for i, t in zip(members, counts, strict=True)]  # type: ignore[union-attr]
                )  # (sum T, rows * cols, D)
            if not no_prior:
                prior = torch.cat([priors_in[i] for i in members])  # type: ignore[misc]
                if tuple(prior.shape) != (sum(counts), rows, cols):
                    raise ValueError(f"priors have shape {tuple(prior.shape)}, expected {(sum(counts), rows, cols)}")
            has_embeds = any(e is not None for e in embeds)
            scores, maps, weights = self(
                texture, cues, prior=prior, token_feats=feats, query_embeds=embeds if has_embeds else None
            )
            t2 = time.perf_counter()
            timings = {"texture": texture_ms or (t1 - t0) * 1e3, "scoring": (t2 - t1) * 1e3}
            start = 0
            for i, t in zip(members, counts, strict=True):
                part = slice(start, start + t)
                out[i] = Relevance(
                    scores[part], {k: v[part] for k, v in maps.items()}, weights[part], texture[part], dict(timings)
                )
                start += t
        return out  # type: ignore[return-value]

    def _group_texture(self, frames: Sequence[torch.Tensor], members: list[int], rows: int, cols: int) -> torch.Tensor:
        """:meth:`texture` of the items ``members`` of one group of :func:`_groups`, as one batch."""
        return self.texture(joined([frames[i] for i in members]), rows, cols)

    @torch.inference_mode()
    def _textures_ahead(
        self,
        frames: Sequence[torch.Tensor],
        grids: Sequence[tuple[int, int]],
        has_feats: Sequence[bool],
        has_prior: Sequence[bool],
    ) -> dict[tuple[int, ...], tuple[torch.Tensor, float]]:
        """The textures of :meth:`relevance_items`' groups (the texture depends on the page, never on the question),
        with their ms. ``decide`` computes them before the text path's host work: on a GPU their kernels (a CUDA
        graph's replay) then run while the host reads and matches the page, instead of after."""
        out = {}
        for (_, _, _, rows, cols, _, _), members in _groups(frames, grids, has_feats, has_prior).items():
            t0 = time.perf_counter()
            texture = self._group_texture(frames, members, rows, cols)  # (a group of one: its frames themselves)
            out[tuple(members)] = (texture, (time.perf_counter() - t0) * 1e3)
        return out

    def forward(
        self,
        texture: torch.Tensor,
        cues: list[QueryCues],
        prior: torch.Tensor | None = None,
        token_feats: torch.Tensor | None = None,
        query_embeds: list[torch.Tensor | None] | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """Relevance of every cell from texture arrays (the trainable part of :meth:`relevance`).

        Args:
            texture (torch.Tensor of shape (B, 13, H, W)): texture arrays.
            cues: B parsed queries.
            prior (torch.Tensor of shape (B, H, W) or None): text prior in [0, 1].
            token_feats (torch.Tensor of shape (B, H * W, D) or None): visual tokens in the LM's embedding space.
            query_embeds: optional B tensors (Q, D) of query token embeddings.

        Returns:
            relevance (B, H, W), the scorers' maps by name (each (B, H, W)), and the weights (B, 3).
        """
        # every map the scorers rescale first, in one pass: information's and perspectival's channels, the edge
        # density of the participatory scorer's textness and, inside a model, its coupling to the query embeddings;
        # then the three maps that are rescaled next, in one pass too
        ci, cp = len(self.information.index), len(self.perspectival.index)
        channels = (*self.information.index, *self.perspectival.index, _EDGE_DENSITY)
        picked = texture.index_select(1, channel_index(channels, texture))  # (B, ci + cp + 1, H, W)
        has: list[float] | None = None
        if token_feats is not None and query_embeds is not None:
            sims, has = self.participatory.coupling_raw(texture, token_feats, query_embeds)  # (B, H, W)
            picked = torch.cat([picked, sims[:, None]], 1)  # (B, ci + cp + 2, H, W)
        units = unit_last(picked, 2)  # each map rescaled on its own (the bits of unit() on it alone)
        raw = torch.stack(
            [
                self.information.mix(units[:, :ci]),
                self.perspectival.mix(units[:, ci : ci + cp]),
                self.participatory.textness_raw(texture, units[:, ci + cp]),
            ],
            1,
        )  # (B, 3, H, W)
        rescaled = unit_last(raw, 2)  # (B, 3, H, W)
        info, persp = rescaled[:, 0], rescaled[:, 1]
        coupling = (units[:, -1], has) if has is not None else None
        part, signal = self.participatory(texture, cues, prior, textness=rescaled[:, 2], coupling=coupling)
        weights = self.balancer(cues, signal)  # (B, 3)
        maps = torch.stack([info, persp, part], 1)  # (B, 3, H, W)
        relevance = torch.einsum("bshw,bs->bhw", maps, weights)
        return relevance, dict(zip(SCORERS, (info, persp, part), strict=True)), weights


def _groups(
    frames: Sequence[torch.Tensor],
    grids: Sequence[tuple[int, int]],
    has_feats: Sequence[bool],
    has_prior: Sequence[bool],
) -> dict[tuple[Any, ...], list[int]]:
    """:meth:`Realizer.relevance_items`' groups: items whose frames have the same shape, dtype and device, the same
    grid, and token features and a prior alike, are scored in one pass."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, f in enumerate(frames):
        rows, cols = int(grids[i][0]), int(grids[i][1])
        key = (tuple(f.shape[1:]), f.dtype, f.device, rows, cols, not has_feats[i], not has_prior[i])
        groups.setdefault(key, []).append(i)
    return groups


_default_lock = threading.Lock()
_default: Realizer | None = None


@dataclass
class _TextPrior:
    """What the text path gave one item (:meth:`Realizer._text_prior`): the prior and what comes with it."""

    prior: torch.Tensor | None  # (T, rows, cols) on the frames' device, or None (texture mode)
    units: Sequence[np.ndarray] = field(default_factory=list)
    boxes: list[list[Any]] = field(default_factory=list)
    evidence: list[Any] = field(default_factory=list)
    ocr_ms: float = 0.0

    def scoring(self, rel: Relevance, mode: str) -> Scoring:
        """The item's :class:`~arr_coc.deciding.Scoring` from its relevance."""
        timings = {"ocr": self.ocr_ms, **rel.timings_ms}
        return Scoring(rel.scores, self.units, self.prior, mode, rel, self.boxes, self.evidence, timings)


def default_realizer() -> Realizer:
    """The shared training-free :class:`Realizer` (``RelevanceConfig()``), used when no ``realizer=`` is passed.

    Built once, under a lock, frozen (``eval()``, no gradients) and never modified afterwards: a call reads it
    and keeps nothing but a page's frames and texture array in its bounded, thread-safe page caches, so threads may
    share it. To use other weights, or to train, build ``Realizer(config)`` and pass it as ``realizer=`` to
    ``allocate`` / ``compress``.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = Realizer().eval().requires_grad_(False)
        return _default


def ocr_available() -> bool:
    """Whether the ``[ocr]`` extra (rapidocr + onnxruntime) is importable."""
    return all(importlib.util.find_spec(m) is not None for m in ("rapidocr", "onnxruntime"))


def resolve_mode(mode: str) -> str:
    """``"text"`` or ``"texture"`` for a user's ``mode``; ``"text"`` without the ``[ocr]`` extra is an error."""
    mode = str(mode).strip().lower()
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "auto":
        return "text" if ocr_available() else "texture"
    if mode == "text" and not ocr_available():
        from .reading import MissingExtraError

        raise MissingExtraError(
            "mode='text' needs the OCR extra: pip install -e '.[ocr]' in the arr-coc-vis clone (rapidocr, "
            "onnxruntime); or use mode='texture'"
        )
    return mode


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


def _reading(text_options: dict[str, Any] | None, realizer: Realizer | None = None):
    """The OCR reader and query matcher of ``realizer``'s text path for ``text_options``, models loaded (once)."""
    reading = (realizer or default_realizer()).reading
    reading.warmup(semantic=(text_options or {}).get("semantic") is not False)
    return reading.reader, reading.matcher(**(text_options or {}))


def text_prior_maps(
    pictures: Sequence[Picture],
    query: str,
    rows: int,
    cols: int,
    text_options: dict[str, Any] | None = None,
    reader: Any = None,
    realizer: Realizer | None = None,
) -> tuple[torch.Tensor, list[list[Any]], list[Any], WordUnits]:
    """The OCR text prior of ``allocate``'s "text" mode, one map per picture (needs the ``[ocr]`` extra).

    Args:
        pictures: RGB pictures covering the grid, PIL images or (H, W, 3) uint8 arrays (their own pixel sizes; boxes
            are mapped to the grid).
        query: the question (normalised here).
        rows, cols: the grid.
        text_options: the matcher's ``{"lexical", "semantic", "layout", "structure", "query_parsing",
            "whole_words"}`` switches.
        reader: the OCR reader (anything with ``read(picture) -> list[TextBox]``, a picture being a PIL image or an
            (H, W, 3) uint8 array; default the realizer's).
        realizer: whose text path (``Realizer.reading``: ``RelevanceConfig.reading``) to use; default the default.

    Returns:
        torch.Tensor of shape (T, rows, cols) in [0, 1], float32 on the CPU (OCR runs on the CPU), the OCR boxes
        of each picture, each picture's structural evidence (``arr_coc.reading.layout.structural_query.Evidence``:
        which budget rule fired) or None, and the words' cells (``QueryMatcher.units``) as indices into the (T * rows *
        cols) raster of all pictures, for a selection that keeps words whole.
    """
    resolve_mode("text")  # a clear error when the [ocr] extra is missing
    shared, matcher = _reading(text_options, realizer)
    reader = reader or shared
    text = normalize_text(query)
    maps, boxes, evidence, units = [], [], [], []
    for picture in pictures:
        found = reader.read(picture)
        size = picture.size if isinstance(picture, Image.Image) else (picture.shape[1], picture.shape[0])  # (W, H)
        rel, ev = matcher.relevance_and_evidence(found, text, rows, cols, size)
        maps.append(np.asarray(rel, dtype=np.float32))
        boxes.append(found)
        evidence.append(ev)
        units.append(matcher.units(found, rows, cols, size))
    # one picture's units are the page's own (cached, with their selection tables); more are offset into one raster
    joined = WordUnits.join(units, [t * rows * cols for t in range(len(units))]) if units else WordUnits(())
    return torch.from_numpy(np.stack(maps)), boxes, evidence, joined


def query_notes(query: str) -> list[str]:
    """What to tell the user about a question the pipeline cannot read: ``[]`` when every word can be read.

    The OCR and the text path read Chinese, Japanese and Latin-script words and digits
    (``arr_coc.reading.scripts``); words in other scripts (Korean, Arabic, Devanagari, Thai, Cyrillic, ...) and
    punctuation match nothing. A question with no readable word is query-blind, as an empty one is (the caller says
    so for an empty question).

    Example:
        >>> query_notes("How much?"), query_notes("需要支付多少钱？"), len(query_notes("얼마입니까?"))
        ([], [], 1)
    """
    from .reading.scripts import script_notes

    text = str(query or "").strip()
    if not text:
        return []
    return broken_text_notes(text) + script_notes(text)


def digested_pictures(frames: Sequence[torch.Tensor]) -> list[list[Any]]:
    """The pictures of each item's frames (T, 3, H, W) for the built-in OCR reader, known by their digests
    (``arr_coc.reading.ocr.reader.DigestedPicture``): each frame rounded to uint8 on its device and hashed there
    (``arr_coc.caching.frame_digests``: on a GPU only the digests cross to the host, in one sync for all the items); a
    frame's pixels are copied to the host (:func:`pictures_from_frames`) only if the reader has not read that page
    before."""
    from .reading.ocr.reader import DigestedPicture

    u8 = [_uint8_frames(f) for f in frames]
    out = []
    for item, digests in zip(u8, frame_digests(u8, "picture"), strict=True):
        shape = (int(item.shape[2]), int(item.shape[3]), 3)
        fetch = functools.partial(_host_picture, item)
        out.append([DigestedPicture(d, shape, functools.partial(fetch, t)) for t, d in enumerate(digests)])
    return out


def _host_picture(frames: torch.Tensor, t: int) -> np.ndarray:
    return pictures_from_frames(frames[t : t + 1])[0]


def _uint8_frames(frames: torch.Tensor) -> torch.Tensor:
    """Frames as the OCR reads them: uint8, rounded on their device from floats in [0, 1]."""
    if frames.dtype == torch.uint8:
        return frames
    return (frames.float().clamp(0, 1) * 255).round().to(torch.uint8)


def pictures_from_frames(frames: torch.Tensor) -> list[np.ndarray]:
    """The explicit step that leaves the device for OCR: frames (T, 3, H, W) -> T RGB pictures, (H, W, 3) uint8
    arrays (what the OCR cache hashes; the reader makes a PIL image of one only for a page it has not read).

    Each frame is rounded to uint8 ON its device first, so one uint8 copy (a quarter of float32's bytes) crosses to
    the CPU.
    """
    frames = _uint8_frames(frames)  # (T, 3, H, W) on the device
    host = frames.permute(0, 2, 3, 1).contiguous().cpu().numpy()  # (T, H, W, 3): the one device -> host copy
    return list(host)


@torch.inference_mode()
def allocate(
    image: Any,
    query: str | None,
    budget: Budget = "adaptive",
    family: str = "qwen2.5-vl",
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    mode: str = "auto",
    text_options: dict[str, Any] | None = None,
    realizer: Realizer | None = None,
    device: str | torch.device | None = None,
    reader: Any = None,
) -> Allocation:
    """Decide which visual tokens of ``image`` matter for ``query``.

    The image is resized exactly as the model's processor resizes it (PIL bicubic to the family's grid), and the
    same :meth:`Realizer.relevance` that ``compress`` runs inside the model scores it: for the same config,
    ``allocate`` keeps the tokens ``compress`` keeps (without the model's token features).

    Args:
        image: a path, bytes, file object, PIL image or NumPy array (see ``arr_coc.io.load_image``).
        query: the question; empty or None is allowed (a vague query: information and salience decide).
        budget: tokens to keep: an int, a fraction in (0, 1], or "adaptive" (see ``arr_coc.attending``).
        family: "qwen2-vl", "qwen2.5-vl" or "qwen3-vl": whose grid (28 or 32 px cells) to allocate on.
        min_pixels, max_pixels: the processor's resize limits (defaults: the processor's min, 1280 tokens max).
        mode: "text" (OCR-aware), "texture" (fast, no OCR) or "auto" (text if the [ocr] extra is installed).
        text_options: for mode "text": the ablation switches ``{"lexical", "semantic", "layout", "structure",
            "query_parsing", "whole_words"}`` (bools; see ``ReadingConfig.with_switches``).
        realizer: the relevance model (default: :func:`default_realizer`, the training-free one).
        device: where the relevance step runs (default: the CPU); OCR always runs on the CPU.
        reader: for mode "text": the OCR reader (anything with ``read(image) -> list[TextBox]``; default the
            process-wide ``TextReader``), e.g. one that remembers a page already read.

    Returns:
        An ``Allocation``.
    """
    budget = TokenBudget.parse(budget)  # fail fast, before any image work; parsed once
    mode = resolve_mode(mode)
    realizer = realizer or default_realizer()
    t_models = time.perf_counter()
    if mode == "text":
        _reading(text_options, realizer)  # loads the OCR / text models on first use only
    t0 = time.perf_counter()
    models_ms = (t0 - t_models) * 1e3
    spec = GridSpec.for_family(family, min_pixels, max_pixels)
    notes: list[str] = []
    img, (orig_w, orig_h) = load_image_with_size(image, target_pixels=spec.max_pixels, notes=notes)
    grid = spec.grid_for(orig_h, orig_w)
    text = normalize_text(query or "")
    notes.extend(query_notes(text))
    # the page's bytes copied out of PIL once: the frames' and the default OCR reader's cache keys both hash them (a
    # reader passed in gets the PIL image, as it always has)
    pixels = np.asarray(img) if mode == "text" else None  # (H, W, 3) uint8
    # (1, 3, H, W) uint8, resized as the processor does (cached per page; read here, never written: no copy)
    frames = realizer.frames(img, grid, pixels, copy=False)
    if device is not None:
        frames = frames.to(device)
    t1 = time.perf_counter()
    # the OCR reads the loaded image at its own size (boxes are mapped to the grid)
    picture = img if pixels is None or reader is not None else pixels
    item = realizer.decide(
        [frames], [(grid.rows, grid.cols)], [text], budget, mode, pictures=[[picture]], text_options=text_options,
        reader=reader,
    )[0]  # fmt: skip
    t3 = time.perf_counter()
    scoring = item.scoring
    rel = scoring.relevance
    assert rel is not None
    components = {name: m[0].float().cpu().numpy() for name, m in rel.maps.items()}
    if scoring.prior is not None:
        components["text_prior"] = scoring.prior[0].float().cpu().numpy()
    ocr_ms = scoring.timings_ms["ocr"]
    return Allocation(
        family=spec.family,
        grid=(grid.rows, grid.cols),
        resized=grid.resized,
        original=(orig_w, orig_h),
        keep=item.keep.cpu(),
        scores=rel.scores[0].float().cpu().numpy(),
        query=("" if query is None else str(query))[:MAX_QUERY_CHARS],  # as typed; cut as the pipeline cuts it
        mode=mode,
        weights={name: float(w) for name, w in zip(SCORERS, rel.weights[0].tolist(), strict=True)},
        components=components,
        timings_ms={
            "load": (t1 - t0) * 1e3,
            "texture": rel.timings_ms["texture"],
            "ocr": ocr_ms,
            "scoring": (t3 - t1) * 1e3 - ocr_ms - rel.timings_ms["texture"],
            "total": (t3 - t0) * 1e3,
            "model_load": models_ms,
        },
        text_boxes=scoring.boxes[0] if scoring.boxes else [],
        evidence=scoring.evidence[0] if scoring.evidence else None,
        units=scoring.units,
        notes=notes,
        config=realizer.config,
    )


@torch.inference_mode()
def score_visual_tokens(
    pixel_values: torch.Tensor,
    grid_thw: tuple[int, int, int],
    patch_size: int,
    merge_size: int,
    temporal_patch_size: int,
    token_feats: torch.Tensor | None = None,
    query_embeds: torch.Tensor | None = None,
    query_text: str | None = None,
    prior: torch.Tensor | None = None,
    text_prior: bool = False,
    text_options: dict[str, Any] | None = None,
    realizer: Realizer | None = None,
    image_mean: Sequence[float] | None = None,
    image_std: Sequence[float] | None = None,
    return_units: bool = False,
) -> torch.Tensor | TokenScores:
    """Relevance of each visual token of one image or video inside a loaded Qwen-VL model (``compress``'s scorer).

    The processor's patches are turned back into frames (:func:`arr_coc.texture.frames_from_patches`) and scored by
    the same :meth:`Realizer.relevance` as ``allocate``; everything stays on the device of ``pixel_values``
    except the OCR of ``text_prior`` (one uint8 copy per frame to the CPU, :func:`pictures_from_frames`).

    Args:
        pixel_values (torch.Tensor of shape (t*h*w, 3*temporal_patch_size*patch_size**2)): this item's patches.
        grid_thw: (t, h, w) patch grid of this image, as in ``image_grid_thw``.
        patch_size, merge_size, temporal_patch_size: the vision tower's, from the model config.
        token_feats (torch.Tensor of shape (N, D) or None): merged visual tokens in the LM embedding space,
            N = t * h * w / merge**2.
        query_embeds (torch.Tensor of shape (Q, D) or None): LM input embeddings of the query's tokens.
        query_text: optional query text (spatial, colour and text cues; the text prior's query).
        prior (torch.Tensor of shape (t, h / merge, w / merge) or None): query-conditioned map in [0, 1].
        text_prior: run OCR on the model's own resized pixels and add the text-aware prior of ``allocate``'s
            "text" mode (images only; needs the ``[ocr]`` extra; costs the OCR time, see the speed benchmark).
        text_options: the text prior's ablation switches (``ReadingConfig.with_switches``).
        realizer: the relevance model (default: :func:`default_realizer`).
        image_mean, image_std: the processor's normalisation (undone exactly when given).
        return_units: return ``TokenScores(scores, units)`` with the text prior's word units (empty without it),
            so that ``compress`` keeps words whole as ``allocate`` does.

    Returns:
        torch.Tensor of shape (N,), float32 on the device of ``pixel_values``: relevance of each token in raster
        order over (t, h / merge, w / merge); or that and the units (``return_units``).
    """
    frames = frames_from_patches(
        pixel_values, grid_thw, patch_size, merge_size, temporal_patch_size, image_mean, image_std
    )  # (t, 3, H, W)
    rows, cols = int(grid_thw[1]) // merge_size, int(grid_thw[2]) // merge_size
    realizer = realizer or default_realizer()
    mode = "text" if text_prior and prior is None and query_text else "texture"
    scoring = realizer.score(
        frames, (rows, cols), query_text, mode, token_feats=token_feats, query_embeds=query_embeds, prior=prior,
        text_options=text_options,
    )  # fmt: skip
    scores = scoring.scores.flatten()  # (N,)
    return TokenScores(scores, scoring.units) if return_units else scores
