"""Qwen3-VL (and Qwen3-VL-MoE) adapter for ``compress``: DeepStack-aware pruning.

Qwen3-VL adds, besides the merged visual tokens, one "DeepStack" feature per visual token for each of a few ViT
levels (``config.vision_config.deepstack_visual_indexes``); level ``l`` is ADDED to the hidden state of the visual
tokens after decoder layer ``l``. The model builds those from ``mm_encoder_outputs[kind].deepstack_features`` (one
list per level, one (N_i, D) tensor per image/video) and places them with the same placeholder mask as the main
tokens, so pruning must slice every level with exactly the indices kept for the main tokens. That is what
:meth:`Qwen3Adapter.pruned_output` does.

DeepStack tiers (``compress(..., deepstack_tiers=...)``) decide how many levels a kept token receives by zeroing
the rows of the levels it does not receive: adding zero to a hidden state is the same as not receiving the level.
This is a level-of-detail knob only; it saves no compute (the zeros are still added).

Video prompts of Qwen3-VL carry a timestamp per frame (``<0.5 seconds><|vision_start|>frame<|vision_end|>...``), so
one video's tokens are split over several runs in ``input_ids``; ``get_rope_index`` handles that itself and the
wrapper maps tokens to videos by order, so nothing here depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .base import EncodedVisual, FamilyAdapter


@dataclass
class Qwen3Adapter(FamilyAdapter):
    """Adapter for Qwen3-VL-style models with DeepStack features."""

    def supports_deepstack(self) -> bool:
        return True

    def _deepstack(self, raw: Any) -> list[list[torch.Tensor]] | None:
        feats = getattr(raw, "deepstack_features", None)
        if not feats:
            return None
        return [list(level) for level in feats]

    def pruned_output(
        self, encoded: EncodedVisual, keeps: Sequence[torch.Tensor], levels: Sequence[torch.Tensor | None]
    ) -> Any:
        """Kept main tokens AND kept DeepStack rows (same indices); rows of levels a token does not receive are zero.

        Args:
            encoded: output of :meth:`encode`.
            keeps: per item, LongTensor (k_i,) of kept indices, ascending.
            levels: per item, LongTensor (k_i,) with the number of DeepStack levels each kept token receives (the
                first ``n`` levels), or ``None`` for all levels.
        """
        pooled = tuple(f[k.to(f.device)] for f, k in zip(encoded.features, keeps, strict=True))  # each (k_i, D)
        if encoded.deepstack is None:
            return type(encoded.raw)(pooler_output=pooled)
        deepstack = []
        for level_idx, level in enumerate(encoded.deepstack):
            rows = []
            for feat, keep, n_levels in zip(level, keeps, levels, strict=True):
                kept = feat[keep.to(feat.device)]  # (k_i, D)
                if n_levels is not None:
                    receives = (n_levels.to(feat.device) > level_idx).unsqueeze(1)  # (k_i, 1)
                    kept = kept * receives.to(kept.dtype)
                rows.append(kept)
            deepstack.append(tuple(rows))
        return type(encoded.raw)(pooler_output=pooled, deepstack_features=deepstack)


ADAPTER = Qwen3Adapter(
    name="qwen3-vl",
    class_names=("Qwen3VLForConditionalGeneration",),
    module="transformers.models.qwen3_vl.modeling_qwen3_vl",
    image_mean=(0.5, 0.5, 0.5),  # Qwen3-VL's image processor normalises with mean = std = 0.5
    image_std=(0.5, 0.5, 0.5),
)
MOE_ADAPTER = Qwen3Adapter(
    name="qwen3-vl-moe",
    class_names=("Qwen3VLMoeForConditionalGeneration",),
    module="transformers.models.qwen3_vl_moe.modeling_qwen3_vl_moe",
    image_mean=(0.5, 0.5, 0.5),
    image_std=(0.5, 0.5, 0.5),
)
