"""LLaVA-OneVision (``LlavaOnevisionForConditionalGeneration``) adapter for ``compress``.

An image's placeholders (``<image>``, one a token, ``image_token_id``) are, in the model's order: the base view (the
page squeezed into one tile, ``side x side`` tokens: 27 x 27 for SigLIP-384), then the anyres raster -- the tiles'
cells stitched, the padding cropped off, shrunk bilinearly past ``anyres_max_N`` tiles -- each row ending with a
newline token (the learned ``image_newline`` embedding, itself a placeholder). An image of a multi-image prompt
(``batch_num_images`` > 1) is its base view and one newline. Which region each token covers:
:class:`arr_coc.tiling.OneVisionTiles`, from ``image_sizes`` and the model's ``image_grid_pinpoints``,
``vision_aspect_ratio`` and tile size (an unmapped setting is refused with one line naming it; an image whose
placeholders are not its layout's count is named with both counts).

The decision scores two rasters an image (:meth:`views`): the base view's tile, and the anyres raster rebuilt from
the tiles' pixels (stitched, cropped, resized to the raster exactly as the model shrinks its features), each cell
one token; a count budget is shared between them by their cells. **Newlines stay**, as Mistral3's ``[IMG_BREAK]``:
every row keeps its newline, a row with no kept cell too (the newlines are the only row structure the language model
reads), one token a row not counted in the budget; so does the base view's one newline (multi-image). The language
model takes 1-D positions.

Foveation (tiles chosen before the tower): the tower runs on the base view always and on the tiles whose cells feed
a kept anyres token (the bilinear shrink's two source rows and columns included), each tile alone through the
model's own ``get_image_features``; the model's own ``pack_image_features`` then packs them, tiles not run left at
zero (no kept token reads them), and the kept rows are taken.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from arr_coc.deciding import Choice
from arr_coc.tiling import OneVisionTiles, anyres_frame, newlines_stay, onevision_tiles_for

from .base import EncodedVisual, Kind
from .contract import View, Visual, VisualInputs
from .linear import LinearAdapter
from .sequence import HostPrompt, VisualItem, locate_items


@dataclass
class TiledItem(VisualItem):
    """A located image with its layout (:class:`~arr_coc.tiling.OneVisionTiles`)."""

    layout: Any = None


def per_sample_runs(patched: Sequence[int]) -> torch.Tensor:
    """A ``batch_num_images`` that makes the model patch exactly the ``patched`` images: 1 for each patched image,
    one entry a run of unpatched ones (an entry above 1 marks its images unpatched)."""
    out: list[int] = []
    for p in patched:
        if p:
            out.append(1)
        elif out and out[-1] < 0:
            out[-1] -= 1
        else:
            out.append(-1)
    if any(n == -1 for n in out):
        raise ValueError("LLaVA-OneVision: a lone unpatched image (batch_num_images) is not the model's layout")
    return torch.tensor([abs(n) for n in out])


@dataclass
class OneVisionAdapter(LinearAdapter):
    """Adapter for ``LlavaOnevisionForConditionalGeneration`` (see the module docstring): the 1-D base
    (:class:`~.linear.LinearAdapter`: placeholder and turn markers, 1-D positions, the model's inputs with an attention
    mask always) with OneVision's base view, anyres raster and newlines."""

    name: str = "llava-onevision"
    marker_tokens: Any = field(default_factory=lambda: {"im_start": "<|im_start|>", "im_end": "<|im_end|>"})
    input_names: Any = field(default_factory=lambda: {"image": ("pixel_values", "image_sizes")})

    # ----- where the visual tokens are ----------------------------------------------------------------------------
    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        if kwargs.get("pixel_values_videos") is not None:
            raise ValueError("compress() does not take LLaVA-OneVision videos yet; pass images (pixel_values)")
        px, sizes = kwargs.pop("pixel_values", None), kwargs.pop("image_sizes", None)
        per_sample = kwargs.pop("batch_num_images", None)
        if px is None or sizes is None:
            return VisualInputs({"image": (px, sizes)})
        sizes = torch.as_tensor(sizes).reshape(-1, 2)
        patched = torch.ones(sizes.shape[0], dtype=sizes.dtype, device=sizes.device)
        if per_sample is not None:  # the model patches an image only when its sample holds one image
            n = torch.as_tensor(per_sample, device=sizes.device).reshape(-1)
            patched = (n == 1).to(sizes.dtype).repeat_interleave(n)
        return VisualInputs({"image": (px, torch.cat([sizes, patched[:, None]], 1))})  # (n, 3): h, w, patched

    def geometry(self, model: Any) -> tuple[int, int, int]:
        """(patch, 1, 1): a token is one patch of a tile (no merge)."""
        return int(model.config.vision_config.patch_size), 1, 1

    def tiles(self, model: Any, height: int, width: int, patched: bool) -> OneVisionTiles:
        """The layout of one image (``image_sizes`` row), from the model's settings."""
        cfg, vc = model.config, model.config.vision_config
        tile, patch = int(vc.image_size), int(vc.patch_size)
        return onevision_tiles_for(
            height, width, cfg.image_grid_pinpoints, tile, tile // patch, cfg.vision_aspect_ratio, patched,
            cfg.vision_feature_select_strategy,
        )  # fmt: skip

    def layouts(self, model: Any, host_grid: np.ndarray) -> list[OneVisionTiles]:
        """Each image's layout from the host rows (height, width, patched) :meth:`locate` records."""
        return [self.tiles(model, int(h), int(w), bool(p)) for h, w, p in np.asarray(host_grid).tolist()]

    def locate(self, prompt: HostPrompt, visual: Visual, ids: dict[str, int], model: Any) -> list[VisualItem]:
        px, grid = visual["image"]
        token = ids["image"]
        if px is None:
            if (prompt.input_ids == token).any():
                raise ValueError("input_ids holds image placeholder tokens but no pixel_values were passed")
            return []
        if grid is None:
            raise ValueError("pixel_values was passed without image_sizes; pass both, as the processor returns them")
        rows = np.asarray(prompt.grids["image"]).reshape(-1, 3)  # (n, 3): h, w, patched (split_inputs)
        layouts = self.layouts(model, rows)
        counts = [lay.n_tokens for lay in layouts]
        n_found = int((prompt.input_ids == token).sum())
        if n_found != sum(counts):
            raise ValueError(
                f"input_ids holds {n_found} image placeholder tokens but the images' tiles (image_sizes with the "
                f"model's image_grid_pinpoints) make {sum(counts)} ({' + '.join(map(str, counts))}); the prompt and "
                "the images do not match"
            )
        grid_rows = np.asarray([[1, 1, n] for n in counts], dtype=np.int64).reshape(-1, 3)
        found = locate_items(prompt.input_ids, prompt.attention_mask, "image", token, grid_rows, 1, "image_sizes")
        return [
            TiledItem(it.kind, it.index, it.sample, it.cols, it.grid_thw, i, it.span, lay)
            for i, (it, lay) in enumerate(zip(found, layouts, strict=True))
        ]  # patch_start: the image's row of pixel_values

    # ----- what relevance sees ------------------------------------------------------------------------------------
    def item_pixels(self, visual: Visual, item: VisualItem) -> torch.Tensor:
        px = visual[item.kind][0]
        assert px is not None
        return px[item.patch_start] if px.dim() == 5 else px[item.patch_start : item.patch_start + 1]

    def frames(self, model, visual, items, plan, sent, mean, std) -> list[torch.Tensor]:
        """Each image's tiles (base first) with the normalisation undone: (1 + tiles, 3, S, S) in [0, 1]."""
        out = []
        for it in items:
            px = self.item_pixels(visual, it).float()
            m, s = px.new_tensor(mean).view(1, 3, 1, 1), px.new_tensor(std).view(1, 3, 1, 1)
            out.append((px * s + m).clamp(0, 1))
        return out

    def views(self, model: Any, items: Sequence[VisualItem], frames: Sequence[torch.Tensor], merge: int) -> list[View]:
        """Two rasters an image: its base view's tile, and the anyres raster rebuilt from its tiles."""
        patch = int(model.config.vision_config.patch_size)
        out = []
        for i, (it, f) in enumerate(zip(items, frames, strict=True)):
            lay = it.layout  # type: ignore[attr-defined]
            s = lay.side * patch
            out.append(View(i, f[:1, :, :s, :s], (lay.side, lay.side), np.arange(lay.n_base, dtype=np.int64)))
            if lay.rows:
                out.append(View(i, anyres_frame(f, lay, patch).clamp(0, 1), lay.final, lay.anyres_tokens()))
        return out

    def join_views(self, item: VisualItem, parts: Sequence[tuple[View, Any, torch.Tensor]], n: int) -> tuple[Any, Any]:
        lay = item.layout  # type: ignore[attr-defined]
        scores = torch.full((n,), float("-inf"))
        keep = np.zeros(n, dtype=bool)
        requested = 0
        for view, choice, s in parts:
            idx = torch.from_numpy(view.tokens)
            scores = scores.to(s.device)
            scores[idx.to(s.device)] = s
            keep[view.tokens[choice.keep.cpu().numpy()]] = True
            requested += int(choice.requested)
        lines = lay.newline_tokens()
        keep, line_scores = newlines_stay(keep, scores.cpu().numpy(), lay)
        scores[torch.from_numpy(lines).to(scores.device)] = torch.from_numpy(line_scores).to(scores)
        kept = torch.from_numpy(np.flatnonzero(keep)).to(parts[0][1].keep.device)
        return Choice(kept, int(kept.numel()), requested), scores

    def token_views(self, item: VisualItem) -> list[tuple[tuple[int, int], np.ndarray]] | None:
        lay = item.layout  # type: ignore[attr-defined]
        views = [((lay.side, lay.side), np.arange(lay.n_base, dtype=np.int64))]
        return views + [(lay.final, lay.anyres_tokens())] if lay.rows else views

    # ----- the encoder --------------------------------------------------------------------------------------------
    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid: Any) -> EncodedVisual:
        raw = model.model.get_image_features(
            pixel_values, grid[:, :2], batch_num_images=per_sample_runs(grid[:, 2].tolist()), return_dict=True
        )
        return EncodedVisual(raw=raw, features=list(raw.pooler_output))  # each (N_i, D)

    def encode_kept(
        self,
        model: Any,
        kind: Kind,
        pixel_values: torch.Tensor,
        grid: Any,
        keeps: Sequence[torch.Tensor],
        host_grids: Any = None,
    ) -> EncodedVisual:
        """The tower on the base views and the tiles a kept token reads, then the model's own packing."""
        assert host_grids is not None, "LLaVA-OneVision foveation needs the layouts located in the prompt"
        layouts = self.layouts(model, host_grids)
        wanted: list[tuple[int, int]] = []  # (image, tile) the tower runs on; tile 0 = the base view
        for i, (lay, keep) in enumerate(zip(layouts, keeps, strict=True)):
            wanted += [(i, t) for t in tiles_read(lay, np.asarray(keep, dtype=np.int64))]
        px = pixel_values if pixel_values.dim() == 5 else pixel_values.unsqueeze(1)
        runs = wanted if len(wanted) > 1 else wanted * 2  # the model's unpatched path needs two images or more
        batch = torch.stack([px[i, t] for i, t in runs])  # (S, 3, H, W)
        sizes = torch.tensor([[lay.height, lay.width] for lay in layouts])  # image_sizes (h, w)
        # each tile alone, as the model encodes an image of a multi-image prompt: its base tokens + one newline
        raw = model.model.get_image_features(
            batch, sizes.new_ones(len(runs), 2), batch_num_images=torch.tensor([len(runs)]), return_dict=True
        )
        per_tile = {key: f[:-1] for key, f in zip(wanted, raw.pooler_output, strict=False)}  # (side**2, D) each
        feats, dim = [], raw.pooler_output[0].shape[-1]
        for i, (lay, keep) in enumerate(zip(layouts, keeps, strict=True)):
            n_tiles = 1 + lay.rows * lay.cols
            some = next(iter(per_tile.values()))
            tiles = torch.zeros(n_tiles, lay.n_base, dim, dtype=some.dtype, device=some.device)
            for t in range(n_tiles):
                if (i, t) in per_tile:
                    tiles[t] = per_tile[(i, t)]
            packed, _ = model.model.pack_image_features(
                [tiles], sizes[i : i + 1] if lay.rows else None, image_newline=model.model.image_newline,
                vision_aspect_ratio=model.config.vision_aspect_ratio,
            )  # fmt: skip
            feats.append(packed[0][torch.as_tensor(np.asarray(keep, dtype=np.int64)).to(packed[0].device)])
        raw.encoded_tiles = wanted
        return EncodedVisual(raw=raw, features=feats)

    def supports_detail(self) -> bool:
        return True

    def has_own_coarse_view(self) -> bool:
        return True

    def coarse_tokens(self, item: VisualItem) -> np.ndarray | None:
        """The base view's tokens (an image with an anyres raster; an unpatched one is its base view only: None)."""
        lay = item.layout  # type: ignore[attr-defined]
        return np.arange(lay.n_base, dtype=np.int64) if lay.rows else None

    def structure_tokens(self, item: VisualItem) -> np.ndarray:
        """The newlines (one a row; every decision keeps them, :func:`newlines_stay`)."""
        return item.layout.newline_tokens()  # type: ignore[attr-defined]

    def supports_tile_choice(self) -> bool:
        return True

    def token_tiles(self, item: VisualItem) -> np.ndarray:
        """Each token's anyres tile (by the cell's centre on the mosaic; -1: the base view, -2: a newline)."""
        lay = item.layout  # type: ignore[attr-defined]
        out = np.full(lay.n_tokens, -1, dtype=np.int64)
        out[lay.newline_tokens()] = -2
        if lay.rows:
            (h, w), (uh, uw), (top, _, left, _) = lay.final, lay.unpadded, lay.crop
            r, c = np.divmod(np.arange(h * w), w)
            mr, mc = (r + 0.5) * uh / h + top, (c + 0.5) * uw / w + left  # the cell's centre on the mosaic
            out[lay.anyres_tokens()] = (mr // lay.side).astype(np.int64) * lay.cols + (mc // lay.side).astype(np.int64)
        return out

    def supports_foveation(self) -> bool:
        return True


def tiles_read(lay: OneVisionTiles, keep: np.ndarray) -> list[int]:
    """The tiles (0 = the base view, always; 1 + r * cols + c: an anyres tile) whose cells feed a kept token."""
    tiles = {0}
    if not lay.rows:
        return [0]
    h, w = lay.final
    uh, uw = lay.unpadded
    t, _, left, _ = lay.crop
    cells = lay.anyres_tokens()
    pos = np.searchsorted(cells, keep)
    hit = (pos < cells.size) & (cells[np.minimum(pos, cells.size - 1)] == keep)
    rr, cc = np.divmod(pos[hit], w)
    if (h, w) == (uh, uw):
        src_r, src_c = [rr], [cc]
    else:  # bilinear (align_corners=False): the two source rows / columns of each output cell
        fy, fx = np.maximum((rr + 0.5) * uh / h - 0.5, 0), np.maximum((cc + 0.5) * uw / w - 0.5, 0)
        r0, c0 = np.floor(fy).astype(np.int64), np.floor(fx).astype(np.int64)
        src_r, src_c = [r0, np.minimum(r0 + 1, uh - 1)], [c0, np.minimum(c0 + 1, uw - 1)]
    for sr in src_r:
        for sc in src_c:
            mr, mc = sr + t, sc + left  # mosaic cell
            tiles.update((1 + (mr // lay.side) * lay.cols + mc // lay.side).tolist())
    return sorted(tiles)


ADAPTER = OneVisionAdapter()
