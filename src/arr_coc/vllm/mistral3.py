"""Mistral3 (Pixtral vision) in vLLM with per-request pruning (the plugin's Mistral3 seams; the 1-D families' shared
part is :mod:`.linear`).

vLLM 0.32's Mistral3 processor lays an image out as Pixtral does: rows of ``[IMG]``, each closed by ``[IMG_BREAK]``,
the last by ``[IMG_END]``. A pruned image drops only its ``[IMG]`` placeholders that are not kept: every break and the
end stay, a row with no kept cell keeps its break (as ``compress`` does, :mod:`arr_coc.integrations.mistral3`). Its
pixels (cropped to the image by vLLM's processor) are decided on as ``(H / 28, W / 28)`` cells; the Pixtral tower runs
on the whole image (its attention spans all of an image's patches) and the kept rows of its merged output are scattered
into the kept placeholders. Positions are vLLM's: the pruned prompt renumbered (``positions="renumber"``; see
:mod:`.linear`).
"""

from __future__ import annotations

import torch
from vllm.model_executor.models.mistral3 import (
    Mistral3DummyInputsBuilder,
    Mistral3ForConditionalGeneration,
    Mistral3MultiModalProcessor,
    Mistral3ProcessingInfo,
)
from vllm.multimodal import MULTIMODAL_REGISTRY

from .linear import LinearModelMixin, LinearProcessorMixin


class ArrCocMistral3Processor(LinearProcessorMixin, Mistral3MultiModalProcessor):
    """Mistral3's processor + the plugin's decision and pruned row layout."""

    family = "mistral3"

    def prompt_image_id(self) -> int:
        return int(self.info.get_hf_config().image_token_id)  # [IMG]: one a image before vLLM expands it

    def token_grid(self, frame: torch.Tensor) -> tuple[int, int]:
        cfg = self.info.get_hf_config()
        cell = int(cfg.vision_config.patch_size) * int(cfg.spatial_merge_size)
        _, _, h, w = frame.shape
        if h % cell or w % cell:
            raise ValueError(
                f"arr_coc: an image is {h}x{w} pixels, not a whole number of {cell}-pixel cells (patch x "
                "spatial_merge_size); the processor's patch_size does not match the model's"
            )
        return h // cell, w // cell


@MULTIMODAL_REGISTRY.register_processor(
    ArrCocMistral3Processor, info=Mistral3ProcessingInfo, dummy_inputs=Mistral3DummyInputsBuilder
)
class ArrCocMistral3ForConditionalGeneration(LinearModelMixin, Mistral3ForConditionalGeneration):
    """vLLM's Mistral3; a pruned image's kept rows of the full tower's output fill its kept placeholders."""
