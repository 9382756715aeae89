"""Qwen3.5 and Qwen3.5-MoE in vLLM with per-request pruning and foveation (the plugin's Qwen3.5 seams).

vLLM's Qwen3.5 classes are its Qwen3-VL class with a hybrid (Gated-DeltaNet + attention) language model and the same
vision tower (``Qwen3_VisionTransformer``) without DeepStack levels; its processor is Qwen3-VL's. So the plugin's
Qwen3-VL encoder (:mod:`arr_coc.vllm.qwen3_vl`: the kept patches with the full grid's position embeddings and rotary
angles) serves it unchanged, and the recurrent state is built from the pruned prompt as from any prompt.
"""

from __future__ import annotations

from vllm.model_executor.models.qwen3_5 import (
    Qwen3_5ForConditionalGeneration,
    Qwen3_5MoeForConditionalGeneration,
    Qwen3_5MoeProcessingInfo,
    Qwen3_5ProcessingInfo,
)
from vllm.model_executor.models.qwen3_vl import Qwen3VLDummyInputsBuilder
from vllm.multimodal import MULTIMODAL_REGISTRY

from .qwen3_vl import ArrCocQwen3VLProcessor, _Qwen3Encoder


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocQwen3VLProcessor, info=Qwen3_5ProcessingInfo, dummy_inputs=Qwen3VLDummyInputsBuilder
)
class ArrCocQwen3_5ForConditionalGeneration(_Qwen3Encoder, Qwen3_5ForConditionalGeneration):
    """vLLM's Qwen3.5; images of pruned requests are encoded on their kept patches only."""


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocQwen3VLProcessor, info=Qwen3_5MoeProcessingInfo, dummy_inputs=Qwen3VLDummyInputsBuilder
)
class ArrCocQwen3_5MoeForConditionalGeneration(_Qwen3Encoder, Qwen3_5MoeForConditionalGeneration):
    """vLLM's Qwen3.5-MoE; same seams as Qwen3.5."""
