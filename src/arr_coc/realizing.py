"""Realizing: the whole pipeline, image + question -> which visual tokens to keep.

    image ──► texture (13 channels on the model's grid) ─┐
    query ──► cues ──────────────────────────────────────┼─► knowing (3 scorers) ─► balancing ─► relevance
    (text mode) OCR + query matching ─► text prior ──────┘                                          │
                                                                     attending (budget, top-K) ◄────┘

``allocate`` runs it on one image and returns an ``Allocation`` (what is kept, the scores, and the sizes that
tie them to the model's tokens). ``score_visual_tokens`` is the same pipeline on a processor's ``pixel_values``
and the model's own visual tokens; ``arr_coc.compress`` calls it inside a loaded Qwen-VL model.

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

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from .attending import Budget, parse_budget, resolve_budget, select
from .balancing import SCORERS, TensionBalancer
from .grid import GridSpec
from .io import load_image_with_size
from .knowing import InformationScorer, ParticipatoryScorer, PerspectivalScorer
from .query import QueryCues, normalize_text, parse_query
from .texture import frames_from_patches, texture_array, texture_from_pixels

MODES = ("auto", "text", "texture")


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
    query: str  # the query as used (normalised)
    mode: str  # "text" or "texture": the path that ran
    weights: dict[str, float]  # balancer weights of information / perspectival / participatory
    components: dict[str, np.ndarray] = field(default_factory=dict)  # each scorer's (rows, cols) map
    timings_ms: dict[str, float] = field(default_factory=dict)  # load, texture, ocr, scoring, total; model_load apart
    text_boxes: list[Any] = field(default_factory=list)  # OCR boxes (text mode)
    evidence: Any = None  # structural evidence kept first (text mode; ``.rule`` names the budget rule), or None

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

    def to_json(self, id: Any = None) -> dict[str, Any]:
        """The JSON contract of ``arr-coc allocate``: exactly id, grid, resized, original, budget, kept, scores."""
        return {
            "id": id,
            "grid": list(self.grid),
            "resized": list(self.resized),
            "original": list(self.original),
            "budget": self.budget,
            "kept": self.kept_cells,
            "scores": [[round(float(v), 5) for v in row] for row in self.scores],
        }


class Realizer(nn.Module):
    """The three scorers and the balancer as one module: texture + queries (+ optional evidence) -> relevance."""

    def __init__(self):
        super().__init__()
        self.information = InformationScorer()
        self.perspectival = PerspectivalScorer()
        self.participatory = ParticipatoryScorer()
        self.balancer = TensionBalancer()

    def forward(
        self,
        texture: torch.Tensor,
        cues: list[QueryCues],
        prior: torch.Tensor | None = None,
        token_feats: torch.Tensor | None = None,
        query_embeds: list[torch.Tensor | None] | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor]:
        """Relevance of every cell.

        Args:
            texture: (B, 13, H, W) texture arrays.
            cues: B parsed queries.
            prior: optional (B, H, W) text prior in [0, 1].
            token_feats: optional (B, H * W, D) visual tokens in the language model's embedding space.
            query_embeds: optional B tensors (Q, D) of query token embeddings.

        Returns:
            relevance (B, H, W), the scorers' maps by name (each (B, H, W)), and the weights (B, 3).
        """
        info = self.information(texture)
        persp = self.perspectival(texture)
        part, signal = self.participatory(texture, cues, prior, token_feats, query_embeds)
        weights = self.balancer(cues, signal)  # (B, 3)
        maps = torch.stack([info, persp, part], 1)  # (B, 3, H, W)
        relevance = torch.einsum("bshw,bs->bhw", maps, weights)
        return relevance, dict(zip(SCORERS, (info, persp, part), strict=True)), weights


_DEFAULT_REALIZER: Realizer | None = None


def default_realizer() -> Realizer:
    """The process-wide training-free realizer (built once)."""
    global _DEFAULT_REALIZER
    if _DEFAULT_REALIZER is None:
        _DEFAULT_REALIZER = Realizer().eval()
    return _DEFAULT_REALIZER


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
            "mode='text' needs the OCR extra: pip install 'arr-coc-vis[ocr]' (rapidocr, onnxruntime); "
            "or use mode='texture'"
        )
    return mode


def _reading(text_options: dict[str, Any] | None):
    """The process-wide OCR reader and query matcher for ``text_options``, their models loaded (once)."""
    from .reading import shared_matcher, shared_reader

    return shared_reader(warm=True), shared_matcher(warm=True, **(text_options or {}))


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
    reader: Any = None,
) -> Allocation:
    """Decide which visual tokens of ``image`` matter for ``query``.

    Args:
        image: a path, bytes, file object, PIL image or NumPy array (see ``arr_coc.io.load_image``).
        query: the question; empty or None is allowed (a vague query: information and salience decide).
        budget: tokens to keep: an int, a fraction in (0, 1], or "adaptive" (see ``arr_coc.attending``).
        family: "qwen2-vl", "qwen2.5-vl" or "qwen3-vl": whose grid (28 or 32 px cells) to allocate on.
        min_pixels, max_pixels: the processor's resize limits (defaults: the processor's min, 1280 tokens max).
        mode: "text" (OCR-aware), "texture" (fast, no OCR) or "auto" (text if the [ocr] extra is installed).
        text_options: for mode "text": ``{"lexical": bool, "semantic": bool, "layout": bool}`` (ablations).
        realizer: scorers and balancer to use (default: the training-free ones).
        reader: for mode "text": the OCR reader (anything with ``read(image) -> list[TextBox]``; default the
            process-wide ``TextReader``), e.g. one that remembers a page already read.

    Returns:
        An ``Allocation``.
    """
    parse_budget(budget)  # fail fast, before any image work
    mode = resolve_mode(mode)
    t_models = time.perf_counter()
    shared, matcher = _reading(text_options) if mode == "text" else (None, None)  # loads models on first use only
    reader = reader or shared
    t0 = time.perf_counter()
    models_ms = (t0 - t_models) * 1e3
    spec = GridSpec.for_family(family, min_pixels, max_pixels)
    img, (orig_w, orig_h) = load_image_with_size(image, target_pixels=spec.max_pixels)
    grid = spec.grid_for(orig_h, orig_w)
    text = normalize_text(query or "")
    cues = parse_query(text)

    t1 = time.perf_counter()
    texture = texture_array(img, grid)[None]  # (1, 13, rows, cols)
    t2 = time.perf_counter()
    prior, boxes, evidence = None, [], None
    if mode == "text":
        boxes = reader.read(img)
        t_ocr = time.perf_counter()
        prior_map, evidence = matcher.relevance_and_evidence(boxes, text, grid.rows, grid.cols, img.size)  # img px
        prior = torch.from_numpy(np.asarray(prior_map, dtype=np.float32))[None]
    else:
        t_ocr = t2
    relevance, maps, weights = (realizer or default_realizer())(texture, [cues], prior=prior)
    scores = relevance[0].flatten()
    k = resolve_budget(budget, grid.n_tokens, scores)
    keep = select(scores, k)
    t3 = time.perf_counter()
    return Allocation(
        family=spec.family,
        grid=(grid.rows, grid.cols),
        resized=grid.resized,
        original=(orig_w, orig_h),
        keep=keep,
        scores=relevance[0].numpy().astype(np.float32),
        query=text,
        mode=mode,
        weights={name: float(w) for name, w in zip(SCORERS, weights[0].tolist(), strict=True)},
        components={name: m[0].numpy() for name, m in maps.items()}
        | ({"text_prior": prior[0].numpy()} if prior is not None else {}),
        timings_ms={
            "load": (t1 - t0) * 1e3,
            "texture": (t2 - t1) * 1e3,
            "ocr": (t_ocr - t2) * 1e3,
            "scoring": (t3 - t_ocr) * 1e3,
            "total": (t3 - t0) * 1e3,
            "model_load": models_ms,
        },
        text_boxes=boxes,
        evidence=evidence,
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
) -> torch.Tensor:
    """Relevance of each visual token of one image or video inside a loaded Qwen-VL model.

    Args:
        pixel_values: (t * h * w, 3 * temporal_patch_size * patch_size**2) this image's processor patches.
        grid_thw: (t, h, w) patch grid of this image, as in ``image_grid_thw``.
        patch_size, merge_size, temporal_patch_size: the vision tower's, from the model config.
        token_feats: optional (N, D) merged visual tokens in the LM embedding space, N = t * h * w / merge**2.
        query_embeds: optional (Q, D) LM input embeddings of the query's tokens.
        query_text: optional query text (spatial, colour and text cues; the text prior's query).
        prior: optional (t, h / merge, w / merge) query-conditioned map in [0, 1].
        text_prior: run OCR on the model's own resized pixels and add the text-aware prior of ``allocate``'s
            "text" mode (images only; needs the ``[ocr]`` extra; costs the OCR time, see the speed benchmark).
        text_options: the text prior's ``{"lexical", "semantic", "layout"}`` switches.
        realizer: scorers and balancer (default: the training-free ones).

    Returns:
        Float tensor (N,), relevance of each token in raster order over (t, h / merge, w / merge).
    """
    frames = frames_from_patches(pixel_values, grid_thw, patch_size, merge_size, temporal_patch_size)  # (t,3,H,W)
    t, rows, cols = int(grid_thw[0]), int(grid_thw[1]) // merge_size, int(grid_thw[2]) // merge_size
    half = F.avg_pool2d(frames, 2) if (patch_size * merge_size) % 4 == 0 else frames
    texture = texture_from_pixels(half, rows, cols)  # (t, 13, rows, cols)
    cues = [parse_query(query_text)] * t
    if text_prior and prior is None and query_text:
        resolve_mode("text")  # a clear error when the [ocr] extra is missing
        reader, matcher = _reading(text_options)
        maps = []
        for frame in frames:  # (3, H, W) -> an RGB picture at the model's own resolution
            picture = Image.fromarray((frame.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8))
            maps.append(matcher.relevance(reader.read(picture), normalize_text(query_text), rows, cols, picture.size))
        prior = torch.from_numpy(np.stack(maps).astype(np.float32))  # (t, rows, cols)
    feats = None
    if token_feats is not None:
        if token_feats.shape[0] != t * rows * cols:
            raise ValueError(f"token_feats has {token_feats.shape[0]} rows for a grid of {t * rows * cols} tokens")
        feats = token_feats.reshape(t, rows * cols, -1)
    embeds = [query_embeds] * t if query_embeds is not None else None
    relevance, _, _ = (realizer or default_realizer())(
        texture, cues, prior=prior, token_feats=feats, query_embeds=embeds
    )
    return relevance.flatten()
