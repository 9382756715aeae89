"""The engine: how one machine runs the relevance model. Caches, CUDA graphs, the OCR stack, batching.

    frames ──► page caches (texture, resized frames) / CUDA graph of the texture ──► texture (T, 13, rows, cols)
    pictures ──► the OCR stack (``Reading``: reader, matcher; text mode) ──► text prior (T, rows, cols) + word units
    items of one frame size ──► one pass of the model (:class:`~arr_coc.model.RelevanceModel`) ──► Scoring per item

Nothing here changes a decision: a page cache returns what computing again would, a CUDA graph replays the same
kernels, items scored together get what each gets alone, bit for bit. So none of it belongs in a checkpoint: its
settings are :class:`EngineConfig`, a run-time config a caller passes (``Realizer(config, engine=EngineConfig(...))``),
never saved by ``save_pretrained``.

:meth:`Engine.score` is the one scoring path of every entry point (``Realizer.decide``, ``score``, ``relevance``):
text priors (host OCR) after the textures are launched, then each group of items of one frame size through the
model in one pass.

Example:
    >>> import torch
    >>> from arr_coc.model import RelevanceModel
    >>> engine = Engine(RelevanceModel(), EngineConfig(texture_cache_items=0))
    >>> s = engine.score([torch.zeros(1, 3, 56, 84, dtype=torch.uint8)], [(2, 3)], ["the title"], ["texture"])
    >>> tuple(s[0].scores.shape)
    (1, 2, 3)
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from .caching import LruCache, page_digest
from .config import RUNTIME_FIELDS
from .deciding import Scoring
from .graphs import ShapeGraphs
from .grid import Grid
from .model import Relevance, RelevanceModel
from .tensors import joined
from .text_prior import Picture, TextPrior, digested_pictures, item_text_prior
from .texture import DEFAULT_CPU_BAND, frames_from_image, texture_from_frames


@dataclass(frozen=True)
class EngineConfig:
    """How one machine runs the relevance model: no effect on a decision beyond float rounding, never saved in a
    checkpoint (a ``config.json`` of an older version that holds these fields loads: they are ignored there)."""

    # On a CPU the pixel-level texture work runs in bands of cell rows of fewer single-channel elements than this,
    # so that no op is split over intra-op threads (PyTorch splits an element-wise op above 32,768 elements; on a
    # busy machine every split waits for a descheduled thread; the spectral map's FFT runs in NumPy, on one thread).
    # 0: whole frames at once with torch's FFT, exactly the ops a GPU runs (``benchmarks/decision_ops.py`` counts them
    # so). Other devices: whole frames.
    cpu_band_elements: int = DEFAULT_CPU_BAND
    # Pages whose texture array the engine keeps (``Engine.texture_cache``: least recently used out, keyed by a
    # digest of all the frames' bytes, ``arr_coc.caching``), so a second question about a page skips the texture.
    # CPU frames only (on a GPU the texture is a few kernels; hashing would copy the frames to the host). An entry is
    # 13 float32 a token: 66 KB for a 1,280-token page, 1.3 MB for 25,600 tokens. 0: off.
    texture_cache_items: int = 32
    # Pages whose frames (the picture resized to the grid as the processor resizes it, ``Engine.frames``) the engine
    # keeps, keyed by a digest of the picture's pixels: ``allocate``'s resize costs more than the texture. An entry is
    # 2.35 KB a token (uint8, 28 x 28 x 3): 3 MB for a 1,280-token page. 0: off.
    frames_cache_items: int = 8
    # CUDA graphs of the texture (``arr_coc.graphs.ShapeGraphs``): frame shapes whose texture is recorded as one graph
    # and replayed (one launch instead of ~70), each captured on its second sighting, least recently used out; each
    # holds its intermediate buffers in a private pool (at most the sum of the texture's op outputs, 47 bytes a frame
    # pixel: 46 MB for a 1,248-token page). CUDA frames only (a CPU decision never uses them); 0: off. Measured
    # timings: docs/gpu.md (``benchmarks/decision_time.py --device cuda --graphs``).
    texture_graphs: int = 4

    def __post_init__(self) -> None:
        if self.cpu_band_elements < 0:
            raise ValueError(f"invalid EngineConfig: cpu_band_elements must be >= 0, got {self.cpu_band_elements}")
        if self.texture_cache_items < 0 or self.frames_cache_items < 0 or self.texture_graphs < 0:
            sizes = (self.texture_cache_items, self.frames_cache_items, self.texture_graphs)
            raise ValueError(
                f"invalid EngineConfig: texture_cache_items, frames_cache_items and texture_graphs must be >= 0, "
                f"got {sizes}"
            )

    def replace(self, **changes: Any) -> EngineConfig:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


assert RUNTIME_FIELDS == tuple(f.name for f in dataclasses.fields(EngineConfig))  # the config's list of them


class Engine:
    """Runs a :class:`~arr_coc.model.RelevanceModel`: its page caches, the texture's CUDA graphs, the OCR stack of its
    text path, and the grouping of items into passes.

    The only state kept between calls is two bounded, thread-safe page caches (``texture_cache`` of texture arrays,
    :meth:`texture`; ``frames_cache`` of pictures resized to the grid, :meth:`frames`), the graphs and the OCR stack,
    none of which changes a result, so one engine may serve several threads.
    """

    def __init__(self, model: RelevanceModel, config: EngineConfig | None = None):
        self.model = model
        self.config = config or EngineConfig()
        self._reading: Any = None  # the text path's Reading for model.config.reading, built on first use
        self._reading_lock = threading.Lock()
        # texture arrays of pages seen before, keyed by a digest of all their frames' bytes and the grid (CPU only)
        self.texture_cache: LruCache[bytes, torch.Tensor] = LruCache(self.config.texture_cache_items)
        # frames of pictures seen before (allocate's resize to the grid), keyed by a digest of the picture's pixels
        self.frames_cache: LruCache[bytes, torch.Tensor] = LruCache(self.config.frames_cache_items)
        # the texture of CUDA frames as a graph per frame shape (``config.texture_graphs``; 0: off): one replay
        # instead of ~70 launches, the same result
        self.texture_graphs = ShapeGraphs(self.texture_eager, self.config.texture_graphs)

    # ----- the OCR stack ----------------------------------------------------------------------------------------
    @property
    def reading(self) -> Any:
        """The text path (``arr_coc.reading.Reading``) of the model's config: the process-wide default one when
        ``config.reading`` is None and there is no box scorer; with a box scorer, its OCR reader (page cache) and
        embedder shared, the scorer in its matchers (``Reading.with_scorer``: the default relevance); else one built
        from ``ReadingConfig.from_dict(config.reading)`` on first use and owned by this engine (its OCR cache and
        models with it)."""
        from .reading import Reading, ReadingConfig, default_reading

        cfg, scorer = self.model.config, self.model.box_scorer
        if cfg.reading is None and scorer is None:
            return default_reading()
        base = default_reading() if cfg.reading is None else None
        with self._reading_lock:
            if self._reading is None or (base is not None and self._reading.reader is not base.reader):
                self._reading = (base.with_scorer(scorer) if base is not None else
                                 Reading(ReadingConfig.from_dict(cfg.reading), scorer=scorer))  # fmt: skip
            return self._reading

    # ----- pages: frames and texture, cached ---------------------------------------------------------------------
    def texture(self, frames: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
        """Texture of frames (T, 3, rows * cell, cols * cell) at the processor's resolution -> (T, 13, rows, cols).

        The texture depends on the page only, so a second question about a page takes it from ``texture_cache``
        (keyed by ``arr_coc.caching.page_digest`` of ALL the frames' bytes, shape, dtype and memory order plus the
        grid: another page or frames changed in place are another key; the memory order is part of the key because
        the texture's float sums follow it, last bits included). Cached only where that is cheap and safe
        (:meth:`texture_cacheable`: CPU frames, under ``inference_mode``, no dispatch mode such as fake tensors or
        an op counter); the caller gets its own copy, equal bit for bit to computing it again. Items scored
        together are one batch, keyed as one. CUDA frames go through ``texture_graphs`` (``config.texture_graphs``
        > 0, the default: a CUDA graph per frame shape, replayed).
        """
        if not self.texture_cacheable(frames):
            return self.texture_graphs(frames, int(rows), int(cols))  # eager unless a CUDA graph is on and usable
        key = page_digest(frames, f"texture {rows} {cols}")
        texture, _ = self.texture_cache.get_or_compute(key, lambda: self.texture_eager(frames, rows, cols))
        return texture.clone()  # the cached tensor stays the cache's: a caller may write into its copy

    def texture_eager(self, frames: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
        """The texture computed (no cache, no graph): ``arr_coc.texture.texture_from_frames`` with this engine's
        CPU band."""
        return texture_from_frames(frames, rows, cols, self.model.config, band=self.config.cpu_band_elements)

    def texture_cacheable(self, frames: torch.Tensor) -> bool:
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

    # ----- scoring: the one path ---------------------------------------------------------------------------------
    def score(
        self,
        frames: Sequence[torch.Tensor],
        grids: Sequence[tuple[int, int]],
        queries: Sequence[str | None],
        modes: Sequence[str],
        token_feats: Sequence[torch.Tensor | None] | None = None,
        query_embeds: Sequence[torch.Tensor | None] | None = None,
        priors: Sequence[torch.Tensor | None] | None = None,
        pictures: Sequence[Sequence[Picture] | None] | None = None,
        *,
        text_options: dict[str, Any] | None = None,
        reader: Any = None,
        grad: bool = False,
    ) -> list[Scoring]:
        """Relevance of every visual token of several images or videos: the text prior of each ``"text"`` item
        (unless given), then the model, items of one frame size in one pass. Each item's result equals scoring it
        alone, bit for bit.

        Args:
            frames: per item, frames (T, 3, rows * cell, cols * cell), uint8 or floats in [0, 1], any device.
            grids: per item, (rows, cols) of merged visual tokens.
            queries: per item, the question (None or empty: query-blind).
            modes: per item, ``"text"`` or ``"texture"`` (resolved).
            token_feats: per item, the model's merged visual tokens (T * rows * cols, D), or None.
            query_embeds: per item, the LM embeddings of the question's tokens (Q, D), or None.
            priors: per item, a text prior (T, rows, cols) already computed (skips the OCR), or None.
            pictures: per item, what the OCR reads (default: the frames).
            text_options: the text path's switches; reader: the OCR reader (default: this engine's).
            grad: score item by item outside ``inference_mode``, so the scores carry gradients to the model's
                parameters (training); default: under ``inference_mode``, items grouped.

        Returns:
            One :class:`~arr_coc.deciding.Scoring` per item, on its frames' device.
        """
        n = len(frames)
        feats = list(token_feats) if token_feats is not None else [None] * n
        embeds = list(query_embeds) if query_embeds is not None else [None] * n
        given = list(priors) if priors is not None else [None] * n
        pics = list(pictures) if pictures is not None else [None] * n
        if not len(grids) == len(queries) == len(modes) == len(feats) == len(embeds) == len(given) == len(pics) == n:
            raise ValueError(f"score got {n} items but lists of other lengths")
        digested, digest_ms = self._digest_pictures(frames, modes, given, pics, reader)  # a GPU: its one sync
        ahead = None
        if not grad:  # the textures first: on a GPU their kernels run while the host reads and matches the pages
            has_prior = [modes[i] == "text" or given[i] is not None for i in range(n)]
            ahead = self._textures_ahead(frames, grids, [f is not None for f in feats], has_prior)
        texts: list[TextPrior] = [
            item_text_prior(frames[i], tuple(grids[i]), queries[i], modes[i], given[i], pics[i], text_options, reader,
                            self)
            for i in range(n)
        ]  # fmt: skip
        prior = [t.prior for t in texts]
        if grad:  # training: item by item, with gradients (the same code as under inference_mode)
            rels = [self._relevance([frames[i]], [grids[i]], [queries[i]], [feats[i]], [embeds[i]], [prior[i]])[0]
                    for i in range(n)]  # fmt: skip
        else:
            rels = self.relevance(frames, grids, queries, feats, embeds, prior, textures=ahead)
        scorings = [t.scoring(rel, m) for t, rel, m in zip(texts, rels, modes, strict=True)]
        for i in digested:  # the pages' digests, all the items' in one pass
            scorings[i].timings_ms["digest"] = digest_ms
        return scorings

    @torch.inference_mode()
    def relevance(
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
        """The model's relevance of several items, no text path (``priors`` as given), under ``inference_mode``:
        items whose frames have the same shape, dtype and device (and the same grid) go through texture and the
        model together, whatever their queries; each item's result equals it scored alone, bit for bit (every op
        works within a frame, and the participatory scorer groups samples by query).

        Args:
            frames, grids, queries, token_feats, query_embeds, priors: per item, as in :meth:`score`.
            textures: the groups' textures computed ahead (:meth:`_textures_ahead`), by the group's items, with
                their ms; a group not in it computes its own.

        Returns:
            One :class:`~arr_coc.model.Relevance` per item, in order (``texture`` and ``scoring`` timings are the
            group's).
        """
        return self._relevance(frames, grids, queries, token_feats, query_embeds, priors, textures=textures)

    def _relevance(
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
        """:meth:`relevance` without its ``inference_mode`` (training runs this same code with gradients)."""
        n = len(frames)
        feats_in = list(token_feats) if token_feats is not None else [None] * n
        embeds_in = list(query_embeds) if query_embeds is not None else [None] * n
        priors_in = list(priors) if priors is not None else [None] * n
        if not len(grids) == len(queries) == len(feats_in) == len(embeds_in) == len(priors_in) == n:
            raise ValueError(f"relevance got {n} items but lists of other lengths")
        ahead = textures or {}
        out: list[Relevance | None] = [None] * n
        groups = _groups(frames, grids, [f is not None for f in feats_in], [p is not None for p in priors_in])
        for (_, _, _, rows, cols, _, _), members in groups.items():
            texture, texture_ms = ahead.get(tuple(members), (None, 0.0))
            counts = [int(frames[i].shape[0]) for i in members]  # frames per item
            t0 = time.perf_counter()
            if texture is None:
                texture = self.texture(joined([frames[i] for i in members]), rows, cols)  # (sum T, 13, rows, cols)
            t1 = time.perf_counter()
            cues, embeds = [], []
            for i, t in zip(members, counts, strict=True):
                cues += [self.model.cues(queries[i])] * t
                embeds += [embeds_in[i]] * t
            feats = prior = None
            if feats_in[members[0]] is not None:
                for i, t in zip(members, counts, strict=True):
                    if feats_in[i].shape[0] != t * rows * cols:  # type: ignore[union-attr]
                        what = "token_feats" if n == 1 else f"token_feats of item {i}"
                        raise ValueError(f"{what} has {feats_in[i].shape[0]} rows for a grid of {t * rows * cols} "  # type: ignore[union-attr]
                                         "tokens")  # fmt: skip
                feats = joined([feats_in[i].reshape(t, rows * cols, -1) for i, t in zip(members, counts, strict=True)])  # type: ignore[union-attr]
            if priors_in[members[0]] is not None:
                prior = joined([priors_in[i] for i in members])  # type: ignore[misc]
                if tuple(prior.shape) != (sum(counts), rows, cols):
                    raise ValueError(f"prior has shape {tuple(prior.shape)}, expected {(sum(counts), rows, cols)}")
            has_embeds = any(e is not None for e in embeds)
            scores, maps, weights = self.model(
                texture, cues, prior=prior, token_feats=feats, query_embeds=embeds if has_embeds else None
            )  # (sum T, rows, cols), each (sum T, rows, cols), (sum T, 3)
            t2 = time.perf_counter()
            timings = {"texture": texture_ms or (t1 - t0) * 1e3, "scoring": (t2 - t1) * 1e3}
            if len(members) == 1:  # the group's tensors are the item's (no slicing views)
                out[members[0]] = Relevance(scores, maps, weights, texture, timings)
                continue
            start = 0
            for i, t in zip(members, counts, strict=True):
                part = slice(start, start + t)
                out[i] = Relevance(
                    scores[part], {k: v[part] for k, v in maps.items()}, weights[part], texture[part], dict(timings)
                )
                start += t
        return out  # type: ignore[return-value]

    @torch.inference_mode()
    def _textures_ahead(
        self,
        frames: Sequence[torch.Tensor],
        grids: Sequence[tuple[int, int]],
        has_feats: Sequence[bool],
        has_prior: Sequence[bool],
    ) -> dict[tuple[int, ...], tuple[torch.Tensor, float]]:
        """The textures of :meth:`relevance`'s groups (the texture depends on the page, never on the question),
        with their ms. :meth:`score` computes them before the text path's host work: on a GPU their kernels (a CUDA
        graph's replay) then run while the host reads and matches the page, instead of after."""
        out = {}
        for (_, _, _, rows, cols, _, _), members in _groups(frames, grids, has_feats, has_prior).items():
            t0 = time.perf_counter()
            texture = self.texture(joined([frames[i] for i in members]), rows, cols)  # a group of one: its frames
            out[tuple(members)] = (texture, (time.perf_counter() - t0) * 1e3)
        return out

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


def _groups(
    frames: Sequence[torch.Tensor],
    grids: Sequence[tuple[int, int]],
    has_feats: Sequence[bool],
    has_prior: Sequence[bool],
) -> dict[tuple[Any, ...], list[int]]:
    """:meth:`Engine.relevance`'s groups: items whose frames have the same shape, dtype and device, the same grid,
    and token features and a prior alike, are scored in one pass."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, f in enumerate(frames):
        rows, cols = int(grids[i][0]), int(grids[i][1])
        key = (tuple(f.shape[1:]), f.dtype, f.device, rows, cols, not has_feats[i], not has_prior[i])
        groups.setdefault(key, []).append(i)
    return groups
