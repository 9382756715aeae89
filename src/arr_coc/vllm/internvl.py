"""InternVL ("-hf" checkpoints, ``InternVLForConditionalGeneration``) in vLLM with per-request pruning and tile
foveation (the plugin's InternVL seams).

vLLM 0.32 serves this architecture with ``InternS1ForConditionalGeneration`` (``interns1.py``): its processor runs the
HF ``InternVLProcessor`` one image at a time (``pixel_values``: every image's tiles stacked, thumbnail last;
``image_num_patches``: tiles an image) and replaces the image's ``<IMG_CONTEXT>`` with ``<img>`` + 256 ``<IMG_CONTEXT>``
a tile + ``</img>``. The plugin:

* decides on each image's tiles as ``compress(..., foveate=True)`` does (:mod:`arr_coc.integrations.internvl`: the
  tiles are the frames of one raster of 16 x 16 tokens a tile, token ``i`` = cell ``i % 256`` of tile ``i // 256``),
  on the processor's own pixels;
* replaces the image with ``<img>`` + one ``<IMG_CONTEXT>`` a KEPT token + ``</img>`` (the markers stay, as in the HF
  adapter);
* encodes only the tiles with a kept token, and the thumbnail always (tile foveation: each tile is encoded alone by
  vLLM's own ``extract_feature``, so a kept token's features are the model's own), and takes the kept rows.

Positions are vLLM's (the token index): ``compress(..., positions="renumber")`` (:mod:`.tiled` says why).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch
from vllm.model_executor.models.interns1 import (
    InternS1DummyInputsBuilder,
    InternS1ForConditionalGeneration,
    InternS1MultiModalProcessor,
    InternS1ProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY
from vllm.multimodal.processing import PromptUpdateDetails

from arr_coc.integrations.internvl import selected_tiles

from .common import COUNT_FIELD, KEEP_FIELD, KEY, ProcessorMixin, split_keeps
from .tiled import Raster, TiledProcessorMixin, decide_rasters, unnormalize


def tile_plan(keeps: Sequence[torch.Tensor], tiles: Sequence[int], per_tile: int) -> tuple[list[int], list[np.ndarray]]:
    """Which tiles of a batch the tower runs on (indices into the stacked tiles) and, per image, the rows of its kept
    tokens in the encoded tiles' output (flattened, ``per_tile`` rows a tile)."""
    chosen: list[int] = []
    rows: list[np.ndarray] = []
    start = 0
    for keep, n_tiles in zip(keeps, tiles, strict=True):
        k = np.asarray(keep, dtype=np.int64)
        picked = selected_tiles(k, n_tiles, per_tile)
        slot = {t: len(chosen) + j for j, t in enumerate(picked)}
        chosen += [start + t for t in picked]
        rows.append(np.asarray([slot[int(i) // per_tile] * per_tile + int(i) % per_tile for i in k], np.int64))
        start += n_tiles
    return chosen, rows


class ArrCocInternVLProcessor(TiledProcessorMixin, ProcessorMixin, InternS1MultiModalProcessor):
    """vLLM's InternVL processor + the plugin's decision and placeholder counts."""

    def _apply_hf_processor_main(self, mm_items: Any, hf_kwargs: Mapping[str, object]) -> Any:
        options = self.arr_coc_options(hf_kwargs)
        hf_only = {k: v for k, v in hf_kwargs.items() if k != KEY}
        processed = InternS1MultiModalProcessor._apply_hf_processor_main(self, mm_items, hf_only)
        if options is None or "pixel_values" not in processed:
            return processed
        ip = self.info.get_hf_processor().image_processor
        side = int(round(self.info.get_hf_processor().image_seq_length ** 0.5))
        frames = unnormalize(processed["pixel_values"], ip.image_mean, ip.image_std)  # (tiles, 3, H, W)
        counts = [int(n) for n in processed["image_num_patches"].tolist()]
        starts = np.cumsum([0] + counts).tolist()  # each image's first tile
        rasters = [Raster(i, frames[starts[i] : starts[i + 1]], (side, side)) for i in range(len(counts))]
        keeps = [d.choice.keep.long().cpu() for d in decide_rasters(rasters, len(counts), options)]
        processed[KEEP_FIELD] = torch.cat(keeps)  # (sum k_i,)
        processed[COUNT_FIELD] = torch.tensor([int(k.numel()) for k in keeps])  # (num_images,)
        return processed

    def _get_prompt_updates(self, mm_items: Any, hf_processor_mm_kwargs: Any, out_mm_kwargs: Any) -> Any:
        hf_only = {k: v for k, v in hf_processor_mm_kwargs.items() if k != KEY}
        updates = InternS1MultiModalProcessor._get_prompt_updates(self, mm_items, hf_only, out_mm_kwargs)
        hf = self.info.get_hf_processor()
        start, end, context = hf.start_image_token_id, hf.end_image_token_id, hf.image_token_id

        def pruned(update: Any) -> Any:
            original = update.replacement

            def replacement(item_idx: int) -> Any:
                item = out_mm_kwargs["image"][item_idx]
                if KEEP_FIELD not in item:
                    return original(item_idx)
                k = int(item[KEEP_FIELD].data.numel())
                return PromptUpdateDetails.select_token_id([start] + [context] * k + [end], context)

            return replace(update, replacement=replacement)

        return [pruned(u) if u.modality == "image" else u for u in updates]


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocInternVLProcessor, info=InternS1ProcessingInfo, dummy_inputs=InternS1DummyInputsBuilder
)
class ArrCocInternVLForConditionalGeneration(InternS1ForConditionalGeneration):
    """vLLM's InternVL; images of pruned requests are encoded on their tiles with a kept token (and thumbnail) only."""

    def embed_multimodal(self, **kwargs: object) -> Any:
        if KEEP_FIELD not in kwargs:  # no item of this batch is pruned: vLLM's own path
            return super().embed_multimodal(**kwargs)
        pixel_values = kwargs["pixel_values"]
        if isinstance(pixel_values, (list, tuple)):
            pixel_values = torch.cat(list(pixel_values))
        tiles = [int(n) for n in torch.as_tensor(kwargs["image_num_patches"]).flatten().tolist()]
        keeps = split_keeps(kwargs[KEEP_FIELD], kwargs[COUNT_FIELD])
        chosen, rows = tile_plan(keeps, tiles, self.num_image_token)
        index = torch.tensor(chosen, dtype=torch.long, device=pixel_values.device)
        feats = self.extract_feature(pixel_values.index_select(0, index))  # (chosen, 256, D)
        flat = feats.reshape(-1, feats.shape[-1])
        return tuple(flat[torch.from_numpy(r).to(flat.device)] for r in rows)  # (k_i, D) each


__all__ = ["ArrCocInternVLForConditionalGeneration", "ArrCocInternVLProcessor", "tile_plan"]
