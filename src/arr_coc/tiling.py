"""Tiled families' geometry: which page region every visual token of InternVL and LLaVA-OneVision covers.

Both cut a page into tiles before their vision tower, so a visual token is a cell of one tile (or of the
whole-page thumbnail / base view), not a cell of one raster over the page as in the Qwen line (:mod:`arr_coc.grid`).

* **InternVL** (:class:`InternVLTiles`): ``rows x cols`` tiles of ``tile`` px (448) -- the grid whose aspect ratio is
  nearest the page's among those of ``min_tiles`` to ``max_tiles`` tiles (``GotOcr2ImageProcessor``'s
  ``get_optimal_tiled_canvas``) -- then a thumbnail of the whole page when there is more than one tile. Each tile
  is ``side x side`` tokens (16: 448 px / 14-px patches / the 2x pixel shuffle), in raster order, tile after tile
  (row-major), the thumbnail last.
* **LLaVA-OneVision** (:class:`OneVisionTiles`): a base view (the page resized to one tile, ``side x side`` tokens,
  27 for SigLIP-384) first, then the anyres mosaic: the page fitted into the best of ``image_grid_pinpoints``
  (``select_best_resolution``), padded to it, cut into tiles; the model stitches the tiles' cells into one raster,
  crops the padding off (``unpad_image``), shrinks it bilinearly when it exceeds ``anyres_max_N`` tiles' worth, and
  ends every row with a newline token (the ``image_newline`` embedding). Newline tokens cover no region (their box is
  NaN); :meth:`OneVisionTiles.newline_tokens` lists them.

The layouts follow the processors' settings; a setting whose effect is not mapped here is refused with one line
naming it (:func:`internvl_tiles_for`, :func:`onevision_tiles_for`). Nothing here imports ``torch`` or
``transformers``: the arithmetic is the processors', re-implemented and tested against them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


# ----- InternVL -------------------------------------------------------------------------------------------------------
def optimal_tiled_canvas(height: int, width: int, tile: int, min_tiles: int, max_tiles: int) -> tuple[int, int]:
    """(cols, rows) of InternVL's tile grid for a ``height x width`` page (``get_optimal_tiled_canvas``)."""
    grids = sorted(
        ((w, h) for w in range(1, max_tiles + 1) for h in range(1, max_tiles + 1) if min_tiles <= w * h <= max_tiles),
        key=lambda g: g[0] * g[1],
    )
    aspect, area = width / height, width * height
    best, best_diff = (1, 1), float("inf")
    for g in grids:
        diff = abs(aspect - g[0] / g[1])
        if diff < best_diff:
            best, best_diff = g, diff
        elif diff == best_diff and area > 0.5 * tile * tile * g[0] * g[1]:
            best = g
    return best


@dataclass(frozen=True)
class InternVLTiles:
    """InternVL's tiles of one page: ``rows x cols`` tiles of ``tile`` px, a thumbnail when more than one."""

    height: int  # the page, as loaded
    width: int
    rows: int
    cols: int
    thumbnail: bool
    tile: int = 448
    side: int = 16  # tokens a tile side

    @property
    def n_tiles(self) -> int:
        return self.rows * self.cols + int(self.thumbnail)

    @property
    def n_tokens(self) -> int:
        return self.n_tiles * self.side * self.side

    def token_boxes(self) -> np.ndarray:
        """(n_tokens, 4) page boxes [x0, y0, x1, y1] in the page's pixels, in the model's token order."""
        s = self.side
        cell_y, cell_x = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
        cell_y, cell_x = cell_y.reshape(-1), cell_x.reshape(-1)
        out = []
        sx, sy = self.width / (self.cols * s), self.height / (self.rows * s)  # a tile cell on the page
        for t in range(self.rows * self.cols):
            r, c = divmod(t, self.cols)
            x0, y0 = (c * s + cell_x) * sx, (r * s + cell_y) * sy
            out.append(np.stack([x0, y0, x0 + sx, y0 + sy], 1))
        if self.thumbnail:
            tx, ty = self.width / s, self.height / s
            out.append(np.stack([cell_x * tx, cell_y * ty, (cell_x + 1) * tx, (cell_y + 1) * ty], 1))
        return np.concatenate(out).astype(np.float64)

    def page_tokens(self) -> np.ndarray:
        """(rows * 16, cols * 16) the token index of each cell of the tiles' mosaic over the page (the thumbnail's
        tokens, a second view of the page, are in none): what a heatmap over the page draws."""
        s = self.side
        r, c = np.meshgrid(np.arange(self.rows * s), np.arange(self.cols * s), indexing="ij")
        return ((r // s) * self.cols + c // s) * s * s + (r % s) * s + c % s

    def to_json(self) -> dict[str, Any]:
        return {"scheme": "internvl", "tiles": [self.rows, self.cols], "thumbnail": self.thumbnail,
                "tile_px": self.tile, "tokens_per_tile": self.side * self.side}  # fmt: skip


INTERNVL_KNOWN = {"crop_to_patches", "min_patches", "max_patches", "size", "do_resize"}


def internvl_tiles_for(
    height: int, width: int, settings: dict[str, Any] | None = None, side: int = 16
) -> InternVLTiles:
    """The tiles InternVL's processor makes of a ``height x width`` page with ``settings`` (its image processor's:
    ``crop_to_patches`` (True for InternVL's processor), ``min_patches`` 1, ``max_patches`` 12, ``size`` 448).

    Raises:
        ValueError: one line naming a setting this layout cannot map (``do_resize=False``, a non-square ``size``).
    """
    s = {"crop_to_patches": True, "min_patches": 1, "max_patches": 12, "size": 448, **(settings or {})}
    if s.get("do_resize") is False:
        raise ValueError("InternVL image processor setting do_resize=False is not supported: tiles need resizing")
    size = s["size"]
    if isinstance(size, dict):
        if size.get("height") != size.get("width") or size.get("height") is None:
            raise ValueError(f"InternVL image processor setting size={size} is not supported: tiles must be square")
        size = size["height"]
    tile = int(size)
    if not s["crop_to_patches"] or int(s["max_patches"]) <= 1:
        return InternVLTiles(height, width, 1, 1, False, tile, side)
    cols, rows = optimal_tiled_canvas(height, width, tile, int(s["min_patches"]), int(s["max_patches"]))
    return InternVLTiles(height, width, rows, cols, rows * cols > 1, tile, side)


def internvl_settings(image_processor: Any) -> dict[str, Any]:
    """The settings :func:`internvl_tiles_for` reads, from an InternVL image processor (``crop_to_patches`` is
    what InternVL's processor passes, True)."""
    size = getattr(image_processor, "size", None)
    size = dict(size) if size is not None and hasattr(size, "keys") else getattr(size, "__dict__", size)
    return {
        "crop_to_patches": True,
        "min_patches": getattr(image_processor, "min_patches", 1),
        "max_patches": getattr(image_processor, "max_patches", 12),
        "size": {k: v for k, v in (size or {}).items() if k in ("height", "width") and v is not None} or 448,
        "do_resize": getattr(image_processor, "do_resize", True),
    }


# ----- LLaVA-OneVision ------------------------------------------------------------------------------------------------
def select_best_resolution(height: int, width: int, resolutions: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(height, width) of the pinpoint LLaVA-NeXT / OneVision fits a page into (``select_best_resolution``)."""
    best, best_eff, best_waste = None, 0, float("inf")
    for h, w in resolutions:
        scale = min(w / width, h / height)
        eff = min(int(width * scale) * int(height * scale), width * height)
        waste = w * h - eff
        if eff > best_eff or (eff == best_eff and waste < best_waste):
            best, best_eff, best_waste = (int(h), int(w)), eff, waste
    assert best is not None, "image_grid_pinpoints is empty"
    return best


@dataclass(frozen=True)
class OneVisionTiles:
    """LLaVA-OneVision's tokens of one page (see the module docstring).

    Attributes:
        height, width: the page (``image_sizes``).
        side: tokens a tile side (27 for 384-px SigLIP tiles of 14-px patches); ``tile``: the tile's pixels.
        rows, cols: the anyres tiles (0, 0: no anyres part, as for an image of a multi-image prompt).
        crop: (top, bottom, left, right) cells the model crops off the mosaic (its padding).
        final: (h, w) of the anyres raster after the crop and the bilinear shrink (without the newline column).
    """

    height: int
    width: int
    side: int
    tile: int
    rows: int
    cols: int
    crop: tuple[int, int, int, int]
    final: tuple[int, int]

    @property
    def n_base(self) -> int:
        return self.side * self.side

    @property
    def n_tokens(self) -> int:
        h, w = self.final
        return self.n_base + (h * (w + 1) if self.rows else 1)

    @property
    def unpadded(self) -> tuple[int, int]:
        t, b, left, right = self.crop
        return self.rows * self.side - t - b, self.cols * self.side - left - right

    def newline_tokens(self) -> np.ndarray:
        """Indices of the newline tokens (one a row of the anyres raster; one after the base without it)."""
        if not self.rows:
            return np.asarray([self.n_base], dtype=np.int64)
        h, w = self.final
        return self.n_base + np.arange(h, dtype=np.int64) * (w + 1) + w

    def anyres_tokens(self) -> np.ndarray:
        """Indices of the anyres cells' tokens, in raster order over ``final`` (newlines skipped)."""
        h, w = self.final
        r, c = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        return (self.n_base + r * (w + 1) + c).reshape(-1).astype(np.int64)

    def token_boxes(self) -> np.ndarray:
        """(n_tokens, 4) page boxes [x0, y0, x1, y1] in the page's pixels, model order; NaN for newline tokens."""
        s = self.side
        out = np.full((self.n_tokens, 4), np.nan)
        yy, xx = np.meshgrid(np.arange(s), np.arange(s), indexing="ij")
        bx, by = self.width / s, self.height / s  # the base view is the page squeezed into one tile
        out[: self.n_base] = np.stack([xx * bx, yy * by, (xx + 1) * bx, (yy + 1) * by], -1).reshape(-1, 4)
        if self.rows:
            h, w = self.final
            uh, uw = self.unpadded
            t, _, left, _ = self.crop
            # a mosaic cell is (tile / side) resized px; the page was fitted into the mosaic at scale f, centred
            best_h, best_w = self.rows * self.tile, self.cols * self.tile
            f = min(best_w / self.width, best_h / self.height)
            cell = self.tile / s
            pad_y, pad_x = (best_h - self.height * f) / 2, (best_w - self.width * f) / 2
            yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
            y0, x0 = (t + yy * uh / h) * cell, (left + xx * uw / w) * cell
            y1, x1 = (t + (yy + 1) * uh / h) * cell, (left + (xx + 1) * uw / w) * cell
            boxes = np.stack([(x0 - pad_x) / f, (y0 - pad_y) / f, (x1 - pad_x) / f, (y1 - pad_y) / f], -1)
            boxes[..., [0, 2]] = boxes[..., [0, 2]].clip(0, self.width)
            boxes[..., [1, 3]] = boxes[..., [1, 3]].clip(0, self.height)
            out[self.anyres_tokens()] = boxes.reshape(-1, 4)
        return out

    def page_tokens(self) -> np.ndarray:
        """(h, w) the token index of each cell of the anyres raster (the page, padding cropped; without an anyres
        part, the base view's 27 x 27): what a heatmap over the page draws (the base view and the newlines: none)."""
        if not self.rows:
            return np.arange(self.n_base).reshape(self.side, self.side)
        return self.anyres_tokens().reshape(self.final)

    def to_json(self) -> dict[str, Any]:
        return {"scheme": "llava-onevision", "tiles": [self.rows, self.cols], "base": [self.side, self.side],
                "anyres": list(self.final), "newline_tokens": self.newline_tokens().tolist()}  # fmt: skip


ONEVISION_STRATEGIES = ("full",)


def onevision_tiles_for(
    height: int,
    width: int,
    pinpoints: Sequence[Sequence[int]],
    tile: int = 384,
    side: int = 27,
    aspect_ratio: str = "anyres_max_9",
    patched: bool = True,
    strategy: str = "full",
) -> OneVisionTiles:
    """The tokens LLaVA-OneVision makes of a ``height x width`` page (``image_sizes``), with the model's
    ``image_grid_pinpoints``, tile (``vision_config.image_size``), ``vision_aspect_ratio`` and
    ``vision_feature_select_strategy``; ``patched`` False: an image of a multi-image prompt (base + one newline).

    Raises:
        ValueError: one line naming a setting this layout cannot map.
    """
    if strategy not in ONEVISION_STRATEGIES:
        raise ValueError(
            f"LLaVA-OneVision setting vision_feature_select_strategy={strategy!r} is not supported (only 'full': the "
            "base view's token count must be its grid's)"
        )
    if not (isinstance(aspect_ratio, str) and aspect_ratio.startswith("anyres_max_")):
        raise ValueError(f"LLaVA-OneVision setting vision_aspect_ratio={aspect_ratio!r} is not supported")
    max_tiles = int(aspect_ratio[len("anyres_max_") :])
    if not patched:
        return OneVisionTiles(height, width, side, tile, 0, 0, (0, 0, 0, 0), (0, 0))
    best_h, best_w = select_best_resolution(height, width, pinpoints)
    rows, cols = best_h // tile, best_w // tile
    cur_h, cur_w = rows * side, cols * side
    crop = (0, 0, 0, 0)
    if width / height > cur_w / cur_h:  # unpad_image's arithmetic on the cell grid
        new_h = int(round(height * (cur_w / width), 7))
        pad = (cur_h - new_h) // 2
        crop, cur_h = (pad, pad, 0, 0), cur_h - 2 * pad
    else:
        new_w = int(round(width * (cur_h / height), 7))
        pad = (cur_w - new_w) // 2
        crop, cur_w = (0, 0, pad, pad), cur_w - 2 * pad
    ratio = math.sqrt(cur_h * cur_w / (max_tiles * side * side))
    final = (int(cur_h // ratio), int(cur_w // ratio)) if ratio > 1.1 else (cur_h, cur_w)
    return OneVisionTiles(height, width, side, tile, rows, cols, crop, final)


def newlines_stay(keep: np.ndarray, scores: np.ndarray, lay: OneVisionTiles) -> tuple[np.ndarray, np.ndarray]:
    """``keep`` (n_tokens,) bool with every newline token kept, and each newline's score (its row's best).

    The contract's rule for row structure, as Mistral3's ``[IMG_BREAK]``: a row with no kept cell keeps its newline
    (the newlines are the only row structure the language model reads; an empty row shows as a newline after a
    newline, the rows below stay on their rows). They cost one token a row, not counted in the budget."""
    keep = keep.copy()
    lines = lay.newline_tokens()
    keep[lines] = True
    if not lay.rows:
        return keep, np.asarray([scores[: lay.n_base].max()])
    h, w = lay.final
    cells = lay.anyres_tokens().reshape(h, w)
    return keep, scores[cells].max(1)


def anyres_frame(frames: Any, lay: OneVisionTiles, patch: int) -> Any:
    """The anyres raster's pixels from an image's tiles ``frames`` (torch, (1 + tiles, 3, S, S), base first): the
    tiles' cells stitched row-major, the model's crop, resized to ``final`` cells when the model shrinks its
    features: (1, 3, final_h * patch, final_w * patch)."""
    import torch

    s = lay.side * patch
    tiles = frames[1 : 1 + lay.rows * lay.cols, :, :s, :s]  # (R*C, 3, s, s)
    mosaic = tiles.reshape(lay.rows, lay.cols, 3, s, s).permute(2, 0, 3, 1, 4).reshape(3, lay.rows * s, lay.cols * s)
    t, b, left, right = lay.crop
    crop = mosaic[:, t * patch : mosaic.shape[1] - b * patch, left * patch : mosaic.shape[2] - right * patch]
    h, w = lay.final
    if crop.shape[1:] != (h * patch, w * patch):
        crop = torch.nn.functional.interpolate(crop[None].float(), (h * patch, w * patch), mode="bilinear")[0]
    return crop[None]


# ----- allocate for a tiled family ------------------------------------------------------------------------------------
# LLaVA-OneVision's published configs (llava-onevision-qwen2-{0.5b,7b,72b}-ov-hf): 384-px tiles, 1x1 to 6x6 tiles
ONEVISION_PINPOINTS = [[384 * r, 384 * c] for r in range(1, 7) for c in range(1, 7)]


def tile_images(image: Any, scheme: str, settings: dict[str, Any] | None = None) -> tuple[Any, Any, list[Any]]:
    """A page as the family's processor tiles it: (layout, frames uint8 (tiles, 3, S, S) in the model's tile order,
    the views [(frames, (rows, cols), tokens or None)] relevance scores).

    PIL bicubic resizes, as the processors' PIL backends; LLaVA-OneVision pads the fitted page with black."""
    import torch
    from PIL import Image

    w, h = image.size
    rgb = image.convert("RGB")

    def tensor(img: Any) -> Any:
        return torch.from_numpy(np.asarray(img, dtype=np.uint8).copy()).permute(2, 0, 1)  # (3, H, W)

    if scheme == "internvl":
        lay = internvl_tiles_for(h, w, settings)
        t = lay.tile
        canvas = rgb.resize((lay.cols * t, lay.rows * t), Image.Resampling.BICUBIC)
        tiles = [
            canvas.crop((c * t, r * t, (c + 1) * t, (r + 1) * t)) for r in range(lay.rows) for c in range(lay.cols)
        ]
        if lay.thumbnail:
            tiles.append(rgb.resize((t, t), Image.Resampling.BICUBIC))
        frames = torch.stack([tensor(x) for x in tiles])
        return lay, frames, [(frames, (lay.side, lay.side), None)]
    if scheme != "llava-onevision":
        raise ValueError(f"unknown tiling scheme {scheme!r}; known: internvl, llava-onevision")
    s = dict(settings or {})
    tile, patch = int(s.get("tile", 384)), int(s.get("patch", 14))
    side = tile // patch
    lay = onevision_tiles_for(h, w, s.get("pinpoints", ONEVISION_PINPOINTS), tile, side,
                              s.get("aspect_ratio", "anyres_max_9"))  # fmt: skip
    tiles = [rgb.resize((tile, tile), Image.Resampling.BICUBIC)]
    best_h, best_w = lay.rows * tile, lay.cols * tile
    f = min(best_w / w, best_h / h)
    nw, nh = min(math.ceil(w * f), best_w), min(math.ceil(h * f), best_h)
    canvas = Image.new("RGB", (best_w, best_h), (0, 0, 0))
    canvas.paste(rgb.resize((nw, nh), Image.Resampling.BICUBIC), ((best_w - nw) // 2, (best_h - nh) // 2))
    tiles += [canvas.crop((c * tile, r * tile, (c + 1) * tile, (r + 1) * tile))
              for r in range(lay.rows) for c in range(lay.cols)]  # fmt: skip
    frames = torch.stack([tensor(x) for x in tiles])
    cut = side * patch
    views = [(frames[:1, :, :cut, :cut], (side, side), np.arange(lay.n_base, dtype=np.int64))]
    if lay.rows:
        any_frame = anyres_frame(frames.float(), lay, patch).round().clamp(0, 255).to(torch.uint8)
        views.append((any_frame, lay.final, lay.anyres_tokens()))
    return lay, frames, views


def allocate_tiled(image: Any, query: str | None, budget: Any, family: Any, mode: str, text_options: Any,
                   realizer: Any, device: Any, reader: Any, settings: dict[str, Any] | None = None) -> Any:  # fmt: skip
    """``allocate`` for a tiled family (``family.tiles``): the page tiled as the processor tiles it, each view
    scored, the kept tokens in the model's token order (every newline kept). ``Allocation.grid`` is
    (tiles * 16, 16) for InternVL (tile after tile) and (1, n_tokens) for LLaVA-OneVision; ``Allocation.tiles``
    holds the layout and :meth:`Allocation.token_boxes` each token's page box."""
    import time

    import torch

    from .allocating import Allocation
    from .attending import TokenBudget
    from .balancing import SCORERS
    from .io import load_image_with_size
    from .query import MAX_QUERY_CHARS, normalize_text
    from .text_prior import query_notes, reading_for

    parsed = TokenBudget.parse(budget)
    notes: list[str] = []
    t0 = time.perf_counter()
    img, (orig_w, orig_h) = load_image_with_size(image, notes=notes)
    if img.size != (orig_w, orig_h):
        img = img.resize((orig_w, orig_h))
    if mode == "text":
        reading_for(text_options, realizer)
    lay, _, views = tile_images(img, family.tiles, settings)
    text = normalize_text(query or "")
    notes.extend(query_notes(text))
    cells = [f.shape[0] * g[0] * g[1] for f, g, _ in views]
    value = parsed.value
    budgets = [
        max(1, round(value * c / sum(cells))) if isinstance(value, int) and len(views) > 1 else parsed for c in cells
    ]  # a count shared by the views in proportion to their cells
    frames = [f if device is None else f.to(device) for f, _, _ in views]
    t1 = time.perf_counter()
    decision = realizer.decide(frames, [g for _, g, _ in views], [text] * len(views), budgets, mode,
                               text_options=text_options, reader=reader, patch=family.patch_size,
                               merge=family.merge_size)  # fmt: skip
    n = lay.n_tokens
    keep = np.zeros(n, dtype=bool)
    scores = np.full(n, -np.inf, dtype=np.float32)
    for (_, _, tokens), item in zip(views, decision.items, strict=True):
        idx = np.arange(n) if tokens is None else tokens
        scores[idx] = item.scoring.relevance.scores.float().cpu().numpy().reshape(-1)
        keep[idx[item.keep.cpu().numpy()]] = True
    if isinstance(lay, OneVisionTiles):
        keep, line_scores = newlines_stay(keep, scores, lay)
        scores[lay.newline_tokens()] = line_scores
        grid = (1, n)
    else:
        grid = (lay.n_tiles * lay.side, lay.side)
    t2 = time.perf_counter()
    rel = decision.items[0].scoring.relevance
    resized = (lay.cols * lay.tile, lay.rows * lay.tile) if lay.rows else (lay.tile, lay.tile)
    return Allocation(
        family=family.name, grid=grid, resized=resized, original=(orig_w, orig_h),
        keep=torch.from_numpy(np.flatnonzero(keep)), scores=scores.reshape(grid),
        query=("" if query is None else str(query))[:MAX_QUERY_CHARS], mode=mode,
        weights={name: float(w) for name, w in zip(SCORERS, rel.weights[0].tolist(), strict=True)},
        timings_ms={"load": (t1 - t0) * 1e3, "texture": 0.0, "ocr": 0.0, "scoring": (t2 - t1) * 1e3,
                    "total": (t2 - t0) * 1e3, "model_load": 0.0},
        notes=notes, config=realizer.config, tiles=lay,
    )  # fmt: skip


__all__ = [
    "InternVLTiles",
    "allocate_tiled",
    "anyres_frame",
    "newlines_stay",
    "tile_images",
    "OneVisionTiles",
    "internvl_settings",
    "internvl_tiles_for",
    "onevision_tiles_for",
    "optimal_tiled_canvas",
    "select_best_resolution",
]
