"""Qwen3-VL and Qwen3-VL-MoE in vLLM with per-request pruning and foveation (the plugin's Qwen3-VL seams).

Qwen3-VL's tower adds a learned position embedding interpolated to the grid (``pos_embeds``) before its blocks and
returns, beside the merged tokens, one DeepStack feature per token and level, concatenated along the hidden axis
(``[main | level 1 | level 2 ...]``); the model splits them and adds each level after its decoder layer at the
placeholder tokens. For the kept patches we gather the FULL grid's ``pos_embeds`` and rotary cos/sin (the tower's
own ``prepare_encoder_metadata``) at the kept patches, with one full-attention segment per image of the kept patches:
the tower then returns the kept tokens with their DeepStack levels from the same reduced run, so the levels are
pruned with exactly the indices of the main tokens.
"""

from __future__ import annotations

import torch
from vllm.model_executor.layers.attention import MMEncoderAttention
from vllm.model_executor.models.qwen3_vl import (
    Qwen3VLDummyInputsBuilder,
    Qwen3VLForConditionalGeneration,
    Qwen3VLMultiModalProcessor,
    Qwen3VLProcessingInfo,
)
from vllm.model_executor.models.qwen3_vl_moe import Qwen3VLMoeForConditionalGeneration, Qwen3VLMoeProcessingInfo
from vllm.multimodal import MULTIMODAL_REGISTRY

from arr_coc.integrations.foveation import KeptItem, concat_items, gather_rows, kept_cu_seqlens, kept_patch_rows

from .common import ModelMixin, ProcessorMixin


class ArrCocQwen3VLProcessor(ProcessorMixin, Qwen3VLMultiModalProcessor):
    """Qwen3-VL's processor + the plugin's decision and placeholder counts."""


def kept_item_pos_embeds(visual: torch.nn.Module, grid: tuple[int, int, int], keep: torch.Tensor) -> KeptItem:
    """Position embeddings and rotary of the full grid at the kept patches + kept segments, for one image.

    Args:
        visual: a ``Qwen3_VisionTransformer``.
        grid: the image's FULL patch grid (t, h, w).
        keep (torch.LongTensor of shape (k,)): kept merged-token indices, ascending.
    """
    m = int(visual.spatial_merge_size)
    t, h, w = grid
    full = visual.prepare_encoder_metadata([list(grid)])
    return KeptItem(
        rows=kept_patch_rows(keep, m),
        n_tokens=int(keep.numel()),
        kwargs={
            "pos_embeds": gather_rows(full["pos_embeds"], keep, m),  # (k*m*m, D)
            "rotary_pos_emb_cos": gather_rows(full["rotary_pos_emb_cos"], keep, m),
            "rotary_pos_emb_sin": gather_rows(full["rotary_pos_emb_sin"], keep, m),
            "cu_seqlens": kept_cu_seqlens(keep, (t, h // m, w // m), m),
        },
    )


class _Qwen3Encoder(ModelMixin):
    def encode_kept(
        self, pixel_values: torch.Tensor, grids: list[tuple[int, int, int]], keeps: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        visual = self.visual
        items = [kept_item_pos_embeds(visual, g, k) for g, k in zip(grids, keeps, strict=True)]
        starts = torch.tensor([0] + [g[0] * g[1] * g[2] for g in grids[:-1]]).cumsum(0).tolist()
        rows, packed = concat_items(items, starts)
        device, backend = visual.device, visual.attn_backend
        cu = packed["cu_seqlens"].to(torch.int32).cpu().numpy()
        metadata = {
            "pos_embeds": packed["pos_embeds"].to(device),
            "rotary_pos_emb_cos": packed["rotary_pos_emb_cos"].to(device),
            "rotary_pos_emb_sin": packed["rotary_pos_emb_sin"].to(device),
            "sequence_lengths": MMEncoderAttention.maybe_compute_seq_lens(backend, cu, device),
            "max_seqlen": torch.tensor(MMEncoderAttention.compute_max_seqlen(backend, cu), dtype=torch.int32),
            "cu_seqlens": MMEncoderAttention.maybe_recompute_cu_seqlens(
                backend, cu, visual.hidden_size, visual.tp_size, device,
                fp8_padded_hidden_size=visual.fp8_padded_hidden_size,
            ),
        }  # fmt: skip
        out = visual(pixel_values[rows.to(pixel_values.device)], grid_thw=None, encoder_metadata=metadata)
        return list(out.split([int(k.numel()) for k in keeps]))  # each (k_i, D * (1 + DeepStack levels))


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocQwen3VLProcessor, info=Qwen3VLProcessingInfo, dummy_inputs=Qwen3VLDummyInputsBuilder
)
class ArrCocQwen3VLForConditionalGeneration(_Qwen3Encoder, Qwen3VLForConditionalGeneration):
    """vLLM's Qwen3-VL; images of pruned requests are encoded on their kept patches only, DeepStack with them."""


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocQwen3VLProcessor, info=Qwen3VLMoeProcessingInfo, dummy_inputs=Qwen3VLDummyInputsBuilder
)
class ArrCocQwen3VLMoeForConditionalGeneration(_Qwen3Encoder, Qwen3VLMoeForConditionalGeneration):
    """vLLM's Qwen3-VL-MoE; same seams as Qwen3-VL."""
