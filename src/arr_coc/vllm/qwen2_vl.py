"""Qwen2-VL in vLLM with per-request pruning and foveation (the plugin's Qwen2-VL seams).

The vision tower (``Qwen2VisionTransformer.forward(x, grid_thw, encoder_metadata=...)``) takes its data-dependent
tensors as one metadata dict. For the kept patches we build that dict from the tower's own full-grid metadata
(``prepare_encoder_metadata``): the rotary cos/sin of the FULL grid gathered at the kept patches, and one
full-attention segment per image of the kept patches (``arr_coc.integrations.foveation``), then run the tower on
those patches only. Its output is one merged token per kept token, in kept order.
"""

from __future__ import annotations

import torch
from vllm.model_executor.models.qwen2_vl import (
    Qwen2VLDummyInputsBuilder,
    Qwen2VLForConditionalGeneration,
    Qwen2VLMultiModalProcessor,
    Qwen2VLProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY

from arr_coc.integrations.foveation import KeptItem, concat_items, gather_rows, kept_cu_seqlens, kept_patch_rows

from .common import ModelMixin, ProcessorMixin


class ArrCocQwen2VLProcessor(ProcessorMixin, Qwen2VLMultiModalProcessor):
    """Qwen2-VL's processor + the plugin's decision and placeholder counts."""


def kept_item_rotary(visual: torch.nn.Module, grid: tuple[int, int, int], keep: torch.Tensor) -> KeptItem:
    """Rotary cos/sin of the full grid at the kept patches + the kept full-attention segments, for one image.

    Args:
        visual: a ``Qwen2VisionTransformer`` (or any tower whose ``prepare_encoder_metadata`` gives per-patch
            ``rotary_pos_emb_cos`` / ``_sin`` in patch order).
        grid: the image's FULL patch grid (t, h, w).
        keep (torch.LongTensor of shape (k,)): kept merged-token indices, ascending.
    """
    m = int(visual.spatial_merge_size)
    full = visual.prepare_encoder_metadata([list(grid)])  # the tower's own metadata of the full grid
    t, h, w = grid
    return KeptItem(
        rows=kept_patch_rows(keep, m),
        n_tokens=int(keep.numel()),
        kwargs={
            "rotary_pos_emb_cos": gather_rows(full["rotary_pos_emb_cos"], keep, m),  # (k*m*m, D)
            "rotary_pos_emb_sin": gather_rows(full["rotary_pos_emb_sin"], keep, m),
            "cu_seqlens": kept_cu_seqlens(keep, (t, h // m, w // m), m),  # (frames + 1,)
        },
    )


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocQwen2VLProcessor, info=Qwen2VLProcessingInfo, dummy_inputs=Qwen2VLDummyInputsBuilder
)
class ArrCocQwen2VLForConditionalGeneration(ModelMixin, Qwen2VLForConditionalGeneration):
    """vLLM's Qwen2-VL; images of pruned requests are encoded on their kept patches only."""

    def encode_kept(
        self, pixel_values: torch.Tensor, grids: list[tuple[int, int, int]], keeps: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        visual = self.visual
        items = [kept_item_rotary(visual, g, k) for g, k in zip(grids, keeps, strict=True)]
        starts = torch.tensor([0] + [g[0] * g[1] * g[2] for g in grids[:-1]]).cumsum(0).tolist()
        rows, packed = concat_items(items, starts)
        cu = packed["cu_seqlens"].to(visual.device)
        metadata = {
            "rotary_pos_emb_cos": packed["rotary_pos_emb_cos"],
            "rotary_pos_emb_sin": packed["rotary_pos_emb_sin"],
            "cu_seqlens": cu,
            "max_seqlen": visual.compute_attn_mask_seqlen(cu),
        }
        out = visual(pixel_values[rows.to(pixel_values.device)], grid_thw=None, encoder_metadata=metadata)  # (sum k, D)
        return list(out.split([int(k.numel()) for k in keeps]))
