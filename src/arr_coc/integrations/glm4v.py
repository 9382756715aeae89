"""GLM-4.1V, GLM-4.6V and GLM-OCR (whose layout, positions and tower are GLM-4.1V's) adapter for ``compress``.

GLM-4.1V lays an image out as ``<|begin_of_image|>`` + one ``<|image|>`` a merged token + ``<|end_of_image|>``, and
positions it as Qwen2-VL does: 3-row M-RoPE from the model's own ``get_rope_index`` (text 0, 1, ...; an image's tokens
at (t, h, w) from the position after the text before it; text after it from max + 1), 4-row ``(text, t, h, w)``
positions in ``generate``, ``forward(mm_encoder_outputs=..., position_ids=...)``. Its tower (patch 14, merge 2) is
Qwen2-VL-like: full attention per image with 2-D rotary angles, plus a learned position embedding resampled
(bicubic) at each patch's (h, w) over the image's grid, and a 2x2 convolution in place of the merge. Every piece of it
reads the precomputed ``position_ids`` / ``cu_seqlens`` the shared foveation passes, so the kept patches get the
rotary angles AND the position embedding of their place in the full grid with the default
:class:`~arr_coc.integrations.qwen_common.QwenAdapter` (foveation and level of detail included).

What differs from Qwen is named here: the image start / end tokens (``image_start_token_id`` /
``image_end_token_id``), and the chat turn markers (``<|user|>`` / ``<|assistant|>``, no ``<|im_end|>``), which the
question is read between. Videos are not taken yet: GLM-4.1V marks a video's frames with the IMAGE placeholder (and
token type 2), which the shared locating step does not read; ``compress`` refuses them with one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from .base import EncodedVisual, Kind
from .qwen_common import QwenAdapter

# the token each marker id is looked up by in a vLLM tokenizer's vocabulary (the vLLM plugin's question walk)
VLLM_MARKERS: dict[str, str] = {
    "vision_start": "<|begin_of_image|>",
    "vision_end": "<|end_of_image|>",
    "im_start": "<|user|>",
    "im_end": "<|assistant|>",
    "newline": "Ċ",  # byte-level BPE's "\n"
}


@dataclass
class Glm4vAdapter(QwenAdapter):
    """Adapter for GLM-4.1V / GLM-4.6V (``Glm4vForConditionalGeneration``, ``Glm46VForConditionalGeneration``)."""

    vllm_markers: ClassVar[Mapping[str, str]] = VLLM_MARKERS

    def token_ids(self, model: Any) -> dict[str, int]:
        cfg = model.config
        return {
            "image": int(cfg.image_token_id),
            "video": int(cfg.video_token_id),
            "vision_start": int(cfg.image_start_token_id),
            "vision_end": int(cfg.image_end_token_id),
        }

    def special_ids(self, model: Any, tokenizer: Any = None) -> dict[str, int]:
        """The placeholders and image markers, and the user turn's bounds: ``<|user|>`` opens it (as ``im_start``),
        ``<|assistant|>`` closes it (as ``im_end``), from ``tokenizer`` when it knows them, else the family's row."""
        from arr_coc.families import get_family

        defaults = get_family(self.name).token_ids
        ids = {**self.token_ids(model), **{k: defaults[k] for k in ("im_start", "im_end", "newline")}}
        if tokenizer is not None and hasattr(tokenizer, "convert_tokens_to_ids"):
            for key, text in (("im_start", "<|user|>"), ("im_end", "<|assistant|>")):
                value = tokenizer.convert_tokens_to_ids(text)
                if isinstance(value, int) and value >= 0 and value != getattr(tokenizer, "unk_token_id", None):
                    ids[key] = value
        return ids

    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> EncodedVisual:
        if kind != "image":
            raise ValueError(
                "compress() does not take GLM-4.1V videos yet (their frames use the image placeholder); pass images"
            )
        return super().encode(model, kind, pixel_values, grid_thw)

    def encode_kept(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid_thw: torch.Tensor, keeps: Any,
                    host_grids: Any = None) -> EncodedVisual:  # fmt: skip
        if kind != "image":
            raise ValueError(
                "compress() does not take GLM-4.1V videos yet (their frames use the image placeholder); pass images"
            )
        return super().encode_kept(model, kind, pixel_values, grid_thw, keeps, host_grids)


# GLM-4.1V and GLM-4.6V: two classes of the "glm-4.1v" row of arr_coc.families; GLM-OCR: the "glm-ocr" row.
ADAPTER = Glm4vAdapter(name="glm-4.1v")
GLM46V_ADAPTER = Glm4vAdapter(name="glm-4.6v")
OCR_ADAPTER = Glm4vAdapter(name="glm-ocr")  # GLM-OCR: GLM-4.1V's layout and tower, its own tokenizer (a row of its own)
