"""Qwen2.5-VL in vLLM with per-request pruning and foveation (the plugin's Qwen2.5-VL seams).

Qwen2.5-VL's tower visits merged tokens window by window (``window_index``), attends within windows in all blocks
but ``fullatt_block_indexes``, and takes rotary cos/sin already in window order (``encoder_metadata``). For the kept
patches: the windows of the ORIGINAL grid (the tower's own ``get_window_index_thw``), each restricted to its kept
members (``arr_coc.integrations.foveation.kept_windows``), the full grid's rotary (``rotary_pos_emb_thw``) at the
kept tokens in that window order, and one full-attention segment of the kept patches per image. The backend-specific
pieces (max sequence lengths, FlashInfer offsets) come from vLLM's own ``MMEncoderAttention`` helpers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from vllm.model_executor.layers.attention import MMEncoderAttention
from vllm.model_executor.models.qwen2_5_vl import (
    Qwen2_5_VLDummyInputsBuilder,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2_5_VLMultiModalProcessor,
    Qwen2_5_VLProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY

from arr_coc.integrations.foveation import KeptItem, concat_items, kept_cu_seqlens, kept_patch_rows, kept_windows

from .common import ModelMixin, ProcessorMixin


class ArrCocQwen2_5_VLProcessor(ProcessorMixin, Qwen2_5_VLMultiModalProcessor):
    """Qwen2.5-VL's processor + the plugin's decision and placeholder counts."""


def kept_item_windows(visual: torch.nn.Module, grid: tuple[int, int, int], keep: torch.Tensor) -> KeptItem:
    """One image's kept patches in the tower's terms: rotary (window order), windows, full-attention segments.

    Args:
        visual: a ``Qwen2_5_VisionTransformer``.
        grid: the image's FULL patch grid (t, h, w).
        keep (torch.LongTensor of shape (k,)): kept merged-token indices, ascending.
    """
    m = int(visual.spatial_merge_size)
    t, h, w = grid
    full_index, full_cu = visual.get_window_index_thw(t, h, w)  # (N,), (W,) boundaries in patches, no leading 0
    full_cu = F.pad(full_cu.long(), (1, 0))  # (W+1,)
    window_index, cu_window = kept_windows(keep, full_index, full_cu, m)  # (k,), (W'+1,)
    cos, sin = visual.rotary_pos_emb_thw(t, h, w)  # (N, m*m, D) each, raster token order
    order = keep[window_index.cpu()].to(cos.device)  # kept tokens in window order
    return KeptItem(
        rows=kept_patch_rows(keep, m),
        n_tokens=int(keep.numel()),
        kwargs={
            "rotary_pos_emb_cos": cos[order].flatten(0, 1),  # (k*m*m, D)
            "rotary_pos_emb_sin": sin[order].flatten(0, 1),
            "window_index": window_index,
            "cu_window_seqlens": cu_window,
            "cu_seqlens": kept_cu_seqlens(keep, (t, h // m, w // m), m),
        },
    )


def finish_metadata(visual: torch.nn.Module, packed: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The packed pieces -> the tower's ``encoder_metadata`` (as its ``prepare_encoder_metadata`` finishes it)."""
    device = visual.device
    backend = visual.attn_backend
    cu = packed["cu_seqlens"].to(torch.int32).cpu().numpy()
    cu_window = packed["cu_window_seqlens"].to(torch.int32).cpu().numpy()
    window_index = packed["window_index"].long()
    reverse = torch.empty_like(window_index)
    reverse[window_index] = torch.arange(window_index.numel())

    def recompute(c):
        return MMEncoderAttention.maybe_recompute_cu_seqlens(
            backend, c, visual.hidden_size, visual.tp_size, device, fp8_padded_hidden_size=visual.fp8_padded_hidden_size
        )

    return {
        "rotary_pos_emb_cos": packed["rotary_pos_emb_cos"].to(device),
        "rotary_pos_emb_sin": packed["rotary_pos_emb_sin"].to(device),
        "window_index": window_index.to(device),
        "reverse_indices": reverse.to(device),
        "cu_seqlens": recompute(cu),
        "cu_window_seqlens": recompute(cu_window),
        "max_seqlen_full": torch.tensor(MMEncoderAttention.compute_max_seqlen(backend, cu), dtype=torch.int32),
        "max_seqlen_window": torch.tensor(MMEncoderAttention.compute_max_seqlen(backend, cu_window), dtype=torch.int32),
        "sequence_lengths_full": MMEncoderAttention.maybe_compute_seq_lens(backend, cu, device),
        "sequence_lengths_window": MMEncoderAttention.maybe_compute_seq_lens(backend, cu_window, device),
    }


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocQwen2_5_VLProcessor, info=Qwen2_5_VLProcessingInfo, dummy_inputs=Qwen2_5_VLDummyInputsBuilder
)
class ArrCocQwen2_5_VLForConditionalGeneration(ModelMixin, Qwen2_5_VLForConditionalGeneration):
    """vLLM's Qwen2.5-VL; images of pruned requests are encoded on their kept patches only."""

    def encode_kept(
        self, pixel_values: torch.Tensor, grids: list[tuple[int, int, int]], keeps: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        visual = self.visual
        items = [kept_item_windows(visual, g, k) for g, k in zip(grids, keeps, strict=True)]
        starts = torch.tensor([0] + [g[0] * g[1] * g[2] for g in grids[:-1]]).cumsum(0).tolist()
        rows, packed = concat_items(items, starts)
        metadata = finish_metadata(visual, packed)
        out = visual(pixel_values[rows.to(pixel_values.device)], grid_thw=None, encoder_metadata=metadata)  # (sum k, D)
        return list(out.split([int(k.numel()) for k in keeps]))
