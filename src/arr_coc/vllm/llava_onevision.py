"""LLaVA-OneVision (``LlavaOnevisionForConditionalGeneration``) in vLLM with per-request pruning and tile foveation
(the plugin's OneVision seams).

vLLM 0.32's processor runs the HF ``LlavaOnevisionProcessor`` (``pixel_values``: an image's base view then its anyres
tiles; ``image_sizes``) and replaces each ``<image>`` with the layout's count of ``<image>`` (base view, anyres rows
each ending with a newline token). vLLM's model always lays an image out as anyres (it reads no
``batch_num_images``), so every image is "patched". The plugin:

* decides as ``compress(..., foveate=True)`` does (:mod:`arr_coc.integrations.llava_onevision`: two rasters an
  image, the base view and the anyres raster rebuilt from the tiles, a count budget shared by their cells; every row
  keeps its newline), with the adapter's own ``tiles`` / ``views`` / ``join_views`` on the processor's pixels;
* repeats ``<image>`` once per KEPT token (newlines included: they are placeholders whose feature is the learned
  ``image_newline``);
* encodes the base view and only the anyres tiles a kept token reads (the bilinear shrink's source cells included,
  :func:`arr_coc.integrations.llava_onevision.tiles_read`), each tile alone through vLLM's own tower and projector;
  vLLM's own ``_merge_image_patch_embeddings`` packs them, tiles not run left at zero (no kept token reads them), and
  the kept rows are taken.

Positions are vLLM's (the token index): ``compress(..., positions="renumber")`` (:mod:`.tiled` says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from vllm.model_executor.models.llava_onevision import (
    LlavaOnevisionDummyInputsBuilder,
    LlavaOnevisionForConditionalGeneration,
    LlavaOnevisionMultiModalProcessor,
    LlavaOnevisionProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY

from arr_coc.integrations.llava_onevision import ADAPTER, tiles_read

from .common import COUNT_FIELD, KEEP_FIELD, KEY, ProcessorMixin, split_keeps
from .tiled import Raster, TiledProcessorMixin, decide_rasters, unnormalize


def layout(hf_config: Any, height: int, width: int) -> Any:
    """An image's :class:`~arr_coc.tiling.OneVisionTiles` as vLLM lays it out (always anyres)."""
    return ADAPTER.tiles(SimpleNamespace(config=hf_config), int(height), int(width), True)


class ArrCocLlavaOnevisionProcessor(TiledProcessorMixin, ProcessorMixin, LlavaOnevisionMultiModalProcessor):
    """vLLM's LLaVA-OneVision processor + the plugin's decision and placeholder counts."""

    def _apply_hf_processor_main(self, mm_items: Any, hf_kwargs: Mapping[str, object]) -> Any:
        options = self.arr_coc_options(hf_kwargs)
        hf_only = {k: v for k, v in hf_kwargs.items() if k != KEY}
        processed = LlavaOnevisionMultiModalProcessor._apply_hf_processor_main(self, mm_items, hf_only)
        if options is None or "pixel_values" not in processed:
            return processed
        cfg = self.info.get_hf_config()
        ip = self.info.get_hf_processor().image_processor
        model = SimpleNamespace(config=cfg)
        sizes = torch.as_tensor(processed["image_sizes"]).reshape(-1, 2).tolist()
        items = [SimpleNamespace(layout=layout(cfg, h, w)) for h, w in sizes]
        frames = [unnormalize(processed["pixel_values"][i], ip.image_mean, ip.image_std) for i in range(len(items))]
        views = ADAPTER.views(model, items, frames, 1)  # each image's base view and anyres raster
        decided = decide_rasters([Raster(v.item, v.frames, v.grid, v.tokens) for v in views], len(items), options)
        keeps = []
        for i, item in enumerate(items):
            parts = [(v, d.choice, d.scores.detach().float().flatten()) for v, d in zip(views, decided, strict=True)
                     if v.item == i]  # fmt: skip
            choice, _ = ADAPTER.join_views(item, parts, item.layout.n_tokens)  # newlines stay
            keeps.append(choice.keep.long().cpu())
        processed[KEEP_FIELD] = torch.cat(keeps)  # (sum k_i,)
        processed[COUNT_FIELD] = torch.tensor([int(k.numel()) for k in keeps])  # (num_images,)
        return processed


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocLlavaOnevisionProcessor, info=LlavaOnevisionProcessingInfo, dummy_inputs=LlavaOnevisionDummyInputsBuilder
)
class ArrCocLlavaOnevisionForConditionalGeneration(LlavaOnevisionForConditionalGeneration):
    """vLLM's LLaVA-OneVision; images of pruned requests are encoded on their base view and the tiles a kept token
    reads only."""

    def embed_multimodal(self, **kwargs: object) -> Any:
        if KEEP_FIELD not in kwargs:  # no item of this batch is pruned: vLLM's own path
            return super().embed_multimodal(**kwargs)
        pixel_values = kwargs["pixel_values"]
        images = list(pixel_values) if isinstance(pixel_values, (list, tuple)) else list(pixel_values.unbind(0))
        sizes = torch.as_tensor(kwargs["image_sizes"]).reshape(-1, 2)
        keeps = split_keeps(kwargs[KEEP_FIELD], kwargs[COUNT_FIELD])
        layouts = [layout(self.config, h, w) for h, w in sizes.tolist()]
        wanted = tiles_encoded(layouts, keeps)
        batch = torch.stack([images[i][t] for i, t in wanted])  # (S, 3, H, W)
        encoded = self.multi_modal_projector(self._image_pixels_to_features(self.vision_tower, batch))  # (S, n, D)
        at = {key: j for j, key in enumerate(wanted)}
        out = []
        for i, (lay, keep) in enumerate(zip(layouts, keeps, strict=True)):
            tiles = encoded.new_zeros((1 + lay.rows * lay.cols, *encoded.shape[1:]))
            for t in range(tiles.shape[0]):
                if (i, t) in at:
                    tiles[t] = encoded[at[(i, t)]]
            # vLLM's own packing, called as its _process_image_input calls it
            packed = self._merge_image_patch_embeddings(
                sizes[i], tiles, image_newline=self.image_newline, strategy="spatial_unpad"
            )
            out.append(packed[keep.to(packed.device)])  # (k_i, D)
        return tuple(out)


def tiles_encoded(layouts: list[Any], keeps: list[torch.Tensor]) -> list[tuple[int, int]]:
    """(image, tile) pairs the foveated encoder runs (tile 0: the base view, always)."""
    return [
        (i, t) for i, (lay, k) in enumerate(zip(layouts, keeps, strict=True)) for t in tiles_read(lay, np.asarray(k))
    ]


__all__ = ["ArrCocLlavaOnevisionForConditionalGeneration", "ArrCocLlavaOnevisionProcessor", "layout", "tiles_encoded"]
