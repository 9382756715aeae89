"""InternVL (``InternVLForConditionalGeneration``: InternVL2.5 / InternVL3 "-hf" checkpoints) adapter for ``compress``.

InternVL's processor cuts an image into ``rows x cols`` tiles of 448 px (the grid whose aspect ratio is nearest the
image's, between ``min_patches`` and ``max_patches`` tiles) plus, when there is more than one tile, a 448-px thumbnail
of the whole image, last. The tower (InternViT, patch 14) runs on each tile alone; a pixel shuffle (``downsample_ratio``
0.5) folds each 2 x 2 block of patches into one token, so a tile is a 16 x 16 raster of tokens (256), each covering a
28-px cell of its tile. The prompt holds ``<img>`` + 256 ``<IMG_CONTEXT>`` a tile (tile after tile, the thumbnail last)
+ ``</img>``; the language model (Qwen2 / Qwen2.5 / InternLM) takes plain 1-D positions.

So an image is an item of ``T`` frames (its tiles, thumbnail last), each a 16 x 16 grid: visual token ``i`` of the
image covers cell ``i % 256`` (raster) of tile ``i // 256``, exactly the model's order; what that cell is on the page
(:func:`arr_coc.tiling.internvl_token_boxes`) depends on the tile layout, which ``allocate`` computes from the
processor's settings and the page size. ``compress`` needs no layout: the tiles themselves are what relevance sees.
``<img>`` / ``</img>`` are text to ``compress`` (they stay, at their positions).

The processor returns only ``pixel_values`` (every image's tiles, stacked); each image's tile count is its run of
``<IMG_CONTEXT>`` tokens / 256 (a run that is not a whole number of tiles, or runs that do not add up to the pixels'
tiles, is refused naming both counts).

Foveation (tiles chosen before the tower): the tower runs only on the tiles with at least one kept token, and on the
thumbnail always; each tile is encoded alone by the model, so a kept token's features are the model's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .base import EncodedVisual, Kind, take_rows
from .contract import Visual, VisualInputs
from .linear import LinearAdapter
from .sequence import HostPrompt, VisualItem


def _pair(value: Any) -> tuple[int, int]:
    return (int(value[0]), int(value[1])) if isinstance(value, (list, tuple)) else (int(value), int(value))


@dataclass
class InternVLAdapter(LinearAdapter):
    """Adapter for ``InternVLForConditionalGeneration`` (see the module docstring): the 1-D base
    (:class:`~.linear.LinearAdapter`: placeholder and turn markers, 1-D positions, the model's inputs with an attention
    mask always) with InternVL's tiles."""

    name: str = "internvl"
    marker_tokens: Any = field(default_factory=lambda: {
        "im_start": "<|im_start|>", "im_end": "<|im_end|>", "vision_start": "<img>", "vision_end": "</img>",
    })  # fmt: skip

    # ----- where the visual tokens are ----------------------------------------------------------------------------
    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        px = kwargs.pop("pixel_values", None)
        kwargs.pop("image_sizes", None)  # InternVL's forward takes and ignores it
        return VisualInputs({"image": (px, None)})

    def tokens_per_tile(self, model: Any) -> tuple[int, int]:
        """(cells a tile side, tokens a tile): ``image_size / patch_size * downsample_ratio``, squared."""
        cfg = model.config
        size, patch = _pair(cfg.vision_config.image_size), _pair(cfg.vision_config.patch_size)
        ratio = float(cfg.downsample_ratio)
        side = int(round(size[0] // patch[0] * ratio))
        if size[0] != size[1] or patch[0] != patch[1] or side * side != int(cfg.image_seq_length):
            raise ValueError(
                f"InternVL config: image_size {size}, patch_size {patch}, downsample_ratio {ratio} and "
                f"image_seq_length {cfg.image_seq_length} do not describe square tiles of image_seq_length tokens"
            )
        return side, side * side

    def geometry(self, model: Any) -> tuple[int, int, int]:
        """(14, 2, 1): a token is a 2 x 2 block of 14-px patches of one tile (the pixel shuffle)."""
        ratio = float(model.config.downsample_ratio)
        merge = int(round(1 / ratio))
        if abs(merge * ratio - 1) > 1e-6:
            raise ValueError(f"InternVL config: downsample_ratio {ratio} is not 1 / an integer; cannot map its tokens")
        return _pair(model.config.vision_config.patch_size)[0], merge, 1

    def locate(self, prompt: HostPrompt, visual: Visual, ids: dict[str, int], model: Any) -> list[VisualItem]:
        """Each run of placeholders is one image of ``run / 256`` tiles (in prompt order, as the model scatters)."""
        px = visual["image"][0]
        token = ids["image"]
        side, per_tile = self.tokens_per_tile(model)
        _, merge, _ = self.geometry(model)
        if px is None:
            if (prompt.input_ids == token).any():
                raise ValueError("input_ids holds image placeholder tokens but no pixel_values were passed")
            return []
        items, tile, grid_rows = [], 0, []
        for sample, row in enumerate(prompt.input_ids):
            hits = np.flatnonzero(row == token)
            if not hits.size:
                continue
            breaks = np.flatnonzero(np.diff(hits) != 1) + 1
            for run in np.split(hits, breaks):
                if run.size % per_tile:
                    raise ValueError(
                        f"image {len(items)} has {run.size} placeholder tokens, not a whole number of tiles of "
                        f"{per_tile} tokens ({run.size / per_tile:.2f} tiles); the prompt and the image do not match"
                    )
                if prompt.attention_mask is not None and not prompt.attention_mask[sample, run].all():
                    raise ValueError("some image placeholder tokens are masked out by attention_mask")
                n_tiles = run.size // per_tile
                thw = (n_tiles, side * merge, side * merge)
                span = (int(run[0]), int(run[-1]))
                items.append(VisualItem("image", len(items), sample, run.astype(np.int64), thw, tile, span))
                grid_rows.append(thw)
                tile += n_tiles
        if tile != px.shape[0]:
            raise ValueError(
                f"the prompt's image placeholders describe {tile} tiles ({tile * per_tile} tokens) but pixel_values "
                f"holds {px.shape[0]} tiles; the prompt and the images do not match"
            )
        grids = np.asarray(grid_rows, dtype=np.int64).reshape(-1, 3)  # (num_images, 3): tiles, h, w (patches)
        prompt.grids["image"] = grids  # what foveation reads (host)
        visual["image"] = (px, torch.from_numpy(grids))  # what encode reads: the tile counts found here
        return items

    # ----- what relevance sees ------------------------------------------------------------------------------------
    def item_pixels(self, visual: Visual, item: VisualItem) -> torch.Tensor:
        px = visual[item.kind][0]
        assert px is not None
        return px[item.patch_start : item.patch_start + item.grid_thw[0]]  # (T, 3, 448, 448): its tiles

    def frames(self, model, visual, items, plan, sent, mean, std) -> list[torch.Tensor]:
        """Each image's tiles (thumbnail last) with the normalisation undone: (T, 3, 448, 448) in [0, 1]."""
        out = []
        for it in items:
            px = self.item_pixels(visual, it).float()
            m, s = px.new_tensor(mean).view(1, 3, 1, 1), px.new_tensor(std).view(1, 3, 1, 1)
            out.append((px * s + m).clamp(0, 1))
        return out

    # ----- the encoder --------------------------------------------------------------------------------------------
    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid: Any) -> EncodedVisual:
        raw = model.model.get_image_features(pixel_values=pixel_values, return_dict=True)
        flat = raw.pooler_output.flatten(0, 1)  # (tiles * 256, D)
        if grid is None:
            raise ValueError("InternVL: encode() needs the images' tile counts (located in the prompt first)")
        sizes = [int(g[0]) for g in grid.tolist()]
        _, per_tile = self.tokens_per_tile(model)
        return EncodedVisual(raw=raw, features=list(flat.split([n * per_tile for n in sizes])))

    def encode_kept(
        self,
        model: Any,
        kind: Kind,
        pixel_values: torch.Tensor,
        grid: Any,
        keeps: Sequence[torch.Tensor],
        host_grids: Any = None,
    ) -> EncodedVisual:
        """The tower on the tiles with a kept token (and every thumbnail) only; ``features[i]``: (k_i, D)."""
        assert host_grids is not None, "InternVL foveation needs the tile counts located in the prompt"
        _, per_tile = self.tokens_per_tile(model)
        chosen, rows, start = [], [], 0
        for (n_tiles, _, _), keep in zip(np.asarray(host_grids).tolist(), keeps, strict=True):
            k = np.asarray(keep, dtype=np.int64)
            tiles = selected_tiles(k, n_tiles, per_tile)
            slot = {t: len(chosen) + j for j, t in enumerate(tiles)}
            chosen += [start + t for t in tiles]
            rows.append(np.asarray([slot[int(i) // per_tile] * per_tile + int(i) % per_tile for i in k], np.int64))
            start += n_tiles
        index = torch.as_tensor(chosen, dtype=torch.long)
        raw = model.model.get_image_features(
            pixel_values=pixel_values.index_select(0, index.to(pixel_values.device)), return_dict=True
        )
        flat = raw.pooler_output.flatten(0, 1)  # (chosen tiles * 256, D)
        feats = [flat[torch.from_numpy(r).to(flat.device)] for r in rows]
        raw.encoded_tiles = index  # which tiles the tower saw (for tests and the benchmark)
        return EncodedVisual(raw=raw, features=feats)

    def supports_foveation(self) -> bool:
        return True

    def supports_tile_choice(self) -> bool:
        return True

    def token_tiles(self, item: VisualItem) -> np.ndarray:
        """Each token's tile (token i is a cell of tile i // 256; the thumbnail, the last tile of several: -1)."""
        tiles = int(item.grid_thw[0])
        tile = np.arange(len(item.cols), dtype=np.int64) // (len(item.cols) // tiles)
        return np.where(tile == tiles - 1, -1, tile) if tiles > 1 else tile

    # ----- level of detail: the thumbnail kept whole (own_coarse.py) ----------------------------------------------
    def supports_detail(self) -> bool:
        return True

    def has_own_coarse_view(self) -> bool:
        return True

    def coarse_tokens(self, item: VisualItem) -> np.ndarray | None:
        """The thumbnail's tokens (the last tile of a page of more than one tile; a one-tile page has none)."""
        tiles = int(item.grid_thw[0])
        per_tile = len(item.cols) // tiles
        return np.arange((tiles - 1) * per_tile, tiles * per_tile, dtype=np.int64) if tiles > 1 else None

    def pruned_output(self, encoded, keeps, levels, flat=None) -> Any:
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        kept = take_rows(encoded.features, keeps, flat)
        return BaseModelOutputWithPooling(pooler_output=torch.cat(kept).unsqueeze(0))  # (1, sum k, D)


def selected_tiles(keep: np.ndarray, n_tiles: int, per_tile: int) -> list[int]:
    """The tiles of an image the tower must see: every tile with a kept token, and the thumbnail (the last tile of an
    image of more than one) always; ascending."""
    tiles = {int(i) // per_tile for i in np.asarray(keep).tolist()}
    if n_tiles > 1:
        tiles.add(n_tiles - 1)
    return sorted(tiles)


ADAPTER = InternVLAdapter()
