"""Gemma 3 in vLLM with per-request pruning (the plugin's Gemma 3 seams; the 1-D families' shared part is
:mod:`.linear`).

vLLM 0.32 expands an image's ``<start_of_image>`` into ``\\n\\n<start_of_image>`` + ``mm_tokens_per_image``
``<image_soft_token>`` + ``<end_of_image>\\n\\n``. A pruned image drops only the soft tokens not kept; the markers and
newlines stay. Every image is the tower's square, decided on as ``sqrt(mm_tokens_per_image)`` cells a side (as
``compress`` maps it, :mod:`arr_coc.integrations.gemma3`); SigLIP runs on the whole image and the kept rows of its
pooled output fill the kept placeholders. Pan and scan is refused in one line (its crops are extra images whose place
on the page the grid does not know).

**Bidirectional image attention.** vLLM reads each image's bidirectional span from its placeholder's embedding range
(``mm_position.extract_embeds_range()``, the GPU model runner's ``mm_req_doc_ranges``), which for a pruned image is
exactly the run of its kept soft tokens: the span follows the kept tokens, as ``compress``'s rebuilt
``token_type_ids`` do. vLLM's CPU attention backend has no such spans at all: on the CPU build Gemma 3's image tokens
attend causally, pruned or not (``tests/vllm_plugin/test_vllm_gemma3.py`` checks both facts).

Pruned items run eagerly under vLLM's encoder CUDA graphs (they report a size no captured graph holds, as the M-RoPE
families' do in :class:`~arr_coc.vllm.common.ModelMixin`); not run here (no GPU build of vLLM in this environment).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from vllm.model_executor.models.gemma3_mm import (
    Gemma3DummyInputsBuilder,
    Gemma3ForConditionalGeneration,
    Gemma3MultiModalProcessor,
    Gemma3ProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY

from .common import EAGER_ONLY_TOKENS, select_kept_items, split_keeps
from .linear import LinearModelMixin, LinearProcessorMixin
from .options import COUNT_FIELD, KEEP_FIELD, ArrCocOptionError


class ArrCocGemma3Processor(LinearProcessorMixin, Gemma3MultiModalProcessor):
    """Gemma 3's processor + the plugin's decision and pruned layout."""

    family = "gemma-3"

    def prompt_image_id(self) -> int:
        return int(self.info.get_hf_config().boi_token_index)  # <start_of_image>: one an image before expansion

    def token_grid(self, frame: torch.Tensor) -> tuple[int, int]:
        side = math.isqrt(int(self.info.get_hf_config().mm_tokens_per_image))
        return side, side

    def check_processed(self, processed: Any) -> None:
        crops = processed.get("num_patches")
        if crops is not None and bool((torch.as_tensor(crops) > 1).any()):
            raise ArrCocOptionError(
                "arr_coc: Gemma 3's pan and scan (do_pan_and_scan=True) is not pruned: its crops are extra images "
                "whose place on the page the token grid does not know; send do_pan_and_scan false"
            )


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocGemma3Processor, info=Gemma3ProcessingInfo, dummy_inputs=Gemma3DummyInputsBuilder
)
class ArrCocGemma3ForConditionalGeneration(LinearModelMixin, Gemma3ForConditionalGeneration):
    """vLLM's Gemma 3; a pruned image's kept rows of the full tower's output fill its kept placeholders."""

    def get_encoder_cudagraph_item_specs(self, mm_kwargs: dict[str, Any]) -> Any:
        if KEEP_FIELD not in mm_kwargs:
            return super().get_encoder_cudagraph_item_specs(mm_kwargs)
        from vllm.v1.worker.encoder_cudagraph_defs import EncoderItemSpec

        keeps = split_keeps(mm_kwargs[KEEP_FIELD], mm_kwargs[COUNT_FIELD])
        return [
            EncoderItemSpec(
                input_size=self.vit_positions_per_patch,  # the whole image runs through the tower
                output_tokens=int(k.numel()),  # one row per kept placeholder
                path_output_tokens={"default": EAGER_ONLY_TOKENS},  # fits no captured graph: eager, alone
            )
            for k in keeps
        ]

    def select_encoder_cudagraph_items(self, mm_kwargs: dict[str, Any], indices: list[int]) -> dict[str, Any]:
        return select_kept_items(super().select_encoder_cudagraph_items(mm_kwargs, indices), mm_kwargs, indices)

    def prepare_encoder_cudagraph_replay_buffers(self, mm_kwargs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if KEEP_FIELD in mm_kwargs:
            raise RuntimeError("arr_coc: a pruned Gemma 3 image reached vLLM's encoder CUDA graph; it must run eagerly")
        return super().prepare_encoder_cudagraph_replay_buffers(mm_kwargs, *args, **kwargs)

    def encoder_eager_forward(self, mm_kwargs: dict[str, Any], path: str = "default") -> torch.Tensor:
        if KEEP_FIELD not in mm_kwargs:
            return super().encoder_eager_forward(mm_kwargs, path=path)
        return torch.cat(list(self.embed_multimodal(**mm_kwargs)))
