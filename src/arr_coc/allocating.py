"""The entry point ``allocate`` (an image and a question -> an :class:`Allocation`), a few lines on top of
:meth:`arr_coc.realizing.Realizer.decide` / :meth:`~arr_coc.realizing.Realizer.score` (a processor's patches -> each
token's relevance, ``score_visual_tokens``, is the family's: :mod:`arr_coc.integrations.qwen_patches`).

Example:
    >>> from PIL import Image
    >>> a = allocate(Image.new("RGB", (560, 280), "white"), "What is the title?", budget=10, mode="texture")
    >>> a.grid, a.budget, a.to_json()["kept"][:2]
    ((10, 20), 10, [[0, 0], [1, 0]])
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .attending import Budget, TokenBudget
from .balancing import SCORERS
from .checkpoint_check import check_scores
from .config import RelevanceConfig
from .deciding import choose
from .families import get_family
from .grid import GridSpec
from .io import load_image_with_size
from .query import MAX_QUERY_CHARS, normalize_text
from .realizing import Realizer, default_realizer
from .text_prior import query_notes, reading_for, resolve_mode


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
    tiles: Any = None  # a tiled family's layout (arr_coc.tiling: InternVLTiles / OneVisionTiles); None: a raster

    def page_view(self, keep: Any = None) -> tuple[np.ndarray, torch.Tensor]:
        """(scores (rows, cols) over the page, kept cells of that raster) for a heatmap: the allocation's own grid, or
        a tiled family's page raster (InternVL's tile mosaic, OneVision's anyres raster; :meth:`page_tokens`).
        ``keep``: token indices to show (default: the kept ones)."""
        keep = self.keep if keep is None else torch.as_tensor(keep)
        if self.tiles is None:
            return self.scores, keep
        cells = self.tiles.page_tokens()  # (r, c) token indices
        shown = np.isin(cells.reshape(-1), np.asarray(keep))
        return self.scores.reshape(-1)[cells], torch.from_numpy(np.flatnonzero(shown))

    def token_boxes(self) -> np.ndarray:
        """(n_tokens, 4) page boxes [x0, y0, x1, y1] of every visual token, in the model's order (NaN: a newline)."""
        if self.tiles is not None:
            return self.tiles.token_boxes()
        rows, cols = self.grid
        sx, sy = self.original[0] / cols, self.original[1] / rows
        r, c = np.divmod(np.arange(rows * cols), cols)
        return np.stack([c * sx, r * sy, (c + 1) * sx, (r + 1) * sy], 1)

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
        if self.tiles is not None:  # a tiled family: the layout, and each token's page box (null: a newline token)
            boxes = np.round(self.token_boxes(), 1)
            out["tiles"] = self.tiles.to_json()
            out["boxes"] = [None if np.isnan(b).any() else b.tolist() for b in boxes]
        return out


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
        realizer: the relevance model (default: :func:`default_realizer`, ``routed-cells``).
        device: where the relevance step runs (default: the CPU); OCR always runs on the CPU.
        reader: for mode "text": the OCR reader (anything with ``read(image) -> list[TextBox]``; default the
            process-wide ``TextReader``), e.g. one that remembers a page already read.

    Returns:
        An ``Allocation``.
    """
    budget = TokenBudget.parse(budget)  # fail fast, before any image work; parsed once
    mode = resolve_mode(mode)
    realizer = realizer or default_realizer()
    tiled = get_family(family)
    if tiled.tiles is not None:  # InternVL, LLaVA-OneVision: tiles, not one raster (arr_coc.tiling)
        from .tiling import allocate_tiled

        if min_pixels is not None or max_pixels is not None:
            raise ValueError(
                f"min_pixels / max_pixels do not apply to {tiled.name}: its processor cuts pages into fixed tiles"
            )
        return allocate_tiled(image, query, budget, tiled, mode, text_options, realizer, device, reader)
    spec = GridSpec.for_family(family, min_pixels, max_pixels)
    notes: list[str] = []
    t_image = time.perf_counter()
    # the image first: a missing or unreadable file is refused before any OCR or text model loads (seconds)
    img, (orig_w, orig_h) = load_image_with_size(image, target_pixels=spec.max_pixels, notes=notes)
    t_models = time.perf_counter()
    if mode == "text":
        reading_for(text_options, realizer)  # loads the OCR / text models on first use only
    models_ms = (time.perf_counter() - t_models) * 1e3
    t0 = t_image + models_ms / 1e3  # "load" and "total" count the image's decode, not the models' loading
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
    scores = rel.scores[0].float().cpu().numpy()  # (rows, cols)
    check_scores(scores)  # NaN / infinity: an error for this item, never a silent ordering
    return Allocation(
        family=spec.family,
        grid=(grid.rows, grid.cols),
        resized=grid.resized,
        original=(orig_w, orig_h),
        keep=item.keep.cpu(),
        scores=scores,
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
