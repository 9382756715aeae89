"""GLM-4.1V in vLLM with per-request pruning and foveation (the plugin's GLM-4.1V seams).

vLLM's GLM-4.1V tower (``Glm4vVisionTransformer.forward(x, grid_thw, encoder_metadata=...)``) takes its data-dependent
tensors as one metadata dict from its own ``prepare_encoder_metadata``: the learned position embedding resampled
(bicubic) over each image's grid (``pos_embeds``, one row a patch), the rotary cos/sin of each patch's (h, w), one
full-attention segment per frame. For the kept patches we gather the FULL grid's ``pos_embeds`` and cos/sin at the
kept patches and give one segment per image of the kept patches (as the Qwen3-VL seam does); the tower's 2x2
convolution then merges each kept token's own 4 patches. Its output is one token per kept token, in kept order.

Positions are vLLM's GLM-4.1V layout (text from the previous maximum + 1, an image's tokens at (t, h, w) + start),
which :func:`arr_coc.vllm.common.pruned_mrope_positions` computes for the full sequence and gathers at the kept tokens.
The question is read between ``<|user|>`` and ``<|assistant|>`` (the adapter's ``vllm_markers``,
:mod:`arr_coc.integrations.glm4v`). Images only: a request with a video is served as vLLM serves it.

GLM-OCR is not served yet: its vLLM tower ignores ``encoder_metadata`` and computes its rotary angles from the grid
inside ``forward``, so it cannot be run on kept patches without rewriting that forward.
"""

from __future__ import annotations

import torch
from vllm.model_executor.layers.attention import MMEncoderAttention
from vllm.model_executor.models.glm4_1v import (
    Glm4vDummyInputsBuilder,
    Glm4vForConditionalGeneration,
    Glm4vMultiModalProcessor,
    Glm4vProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY

from arr_coc.integrations.foveation import KeptItem, concat_items, gather_rows, kept_cu_seqlens, kept_patch_rows

from .common import ModelMixin, ProcessorMixin


class ArrCocGlm4vProcessor(ProcessorMixin, Glm4vMultiModalProcessor):
    """GLM-4.1V's processor + the plugin's decision and placeholder counts."""


def kept_item_glm(visual: torch.nn.Module, grid: tuple[int, int, int], keep: torch.Tensor) -> KeptItem:
    """Position embeddings and rotary of the full grid at the kept patches + kept segments, for one image.

    Args:
        visual: a ``Glm4vVisionTransformer``.
        grid: the image's FULL patch grid (t, h, w).
        keep (torch.LongTensor of shape (k,)): kept merged-token indices, ascending.
    """
    m = int(visual.spatial_merge_size)
    t, h, w = grid
    full = visual.prepare_encoder_metadata([list(grid)])  # the tower's own metadata of the full grid
    return KeptItem(
        rows=kept_patch_rows(keep, m),
        n_tokens=int(keep.numel()),
        kwargs={
            "pos_embeds": gather_rows(full["pos_embeds"], keep, m),  # (k*m*m, D)
            "rotary_pos_emb_cos": gather_rows(full["rotary_pos_emb_cos"], keep, m),
            "rotary_pos_emb_sin": gather_rows(full["rotary_pos_emb_sin"], keep, m),
            "cu_seqlens": kept_cu_seqlens(keep, (t, h // m, w // m), m),  # (frames + 1,)
        },
    )


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocGlm4vProcessor, info=Glm4vProcessingInfo, dummy_inputs=Glm4vDummyInputsBuilder
)
class ArrCocGlm4vForConditionalGeneration(ModelMixin, Glm4vForConditionalGeneration):
    """vLLM's GLM-4.1V; images of pruned requests are encoded on their kept patches only."""

    def encode_kept(
        self, pixel_values: torch.Tensor, grids: list[tuple[int, int, int]], keeps: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        visual = self.visual
        items = [kept_item_glm(visual, g, k) for g, k in zip(grids, keeps, strict=True)]
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
                backend, cu, visual.hidden_size, visual.tp_size, device
            ),
        }
        out = visual(pixel_values[rows.to(pixel_values.device)], grid_thw=None, encoder_metadata=metadata)  # (sum k, D)
        return list(out.split([int(k.numel()) for k in keeps]))
