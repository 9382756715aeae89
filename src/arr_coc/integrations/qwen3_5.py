"""Qwen3.5 (dense and MoE) adapter for ``compress``.

Qwen3.5's vision tower is Qwen3-VL's without DeepStack (patch 16, merge 2, a learned position embedding interpolated
to each grid, 2-D rotary angles, full attention per image / frame), and its prompt and positions are Qwen3-VL's:
``<|vision_start|>`` + one ``<|image_pad|>`` a merged token + ``<|vision_end|>``, 3-row interleaved M-RoPE from the
model's own ``get_rope_index``, the 4-row ``(text, t, h, w)`` positions in ``generate``, a timestamp before each
video frame. So :class:`Qwen3_5Adapter` is :class:`~arr_coc.integrations.qwen3_vl.Qwen3Adapter` with the DeepStack
parts off and its own one-call-per-block tower (:func:`qwen3_5_tower`).

What differs is the language model: a hybrid of Gated-DeltaNet (linear attention with a recurrent state and a causal
convolution) and full-attention layers. Nothing in ``compress`` depends on it: the pruned prompt goes through the
model's own forward with explicit positions, and the recurrent state is built from the pruned prompt as any other
prompt's (tests/test_family_tester.py checks ``generate`` with cache against step-by-step forwards).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import torch

from .foveation import PaddedSegments
from .qwen2_5_vl import block_forward
from .qwen3_vl import Qwen3Adapter

# what qwen3_5_tower reads of the tower (checked before use; a release without them is refused)
_TOWER_ATTRS = (
    "patch_embed", "pos_embed", "rotary_pos_emb", "blocks", "merger", "num_grid_per_side", "interpolation_mode",
    "interpolation_align_corners",
)  # fmt: skip


def qwen3_5_tower(
    visual: Any, hidden: torch.Tensor, kwargs: dict[str, torch.Tensor], layout: type = PaddedSegments
) -> Any:
    """The Qwen3.5 vision tower on packed patches with ONE attention call per block for all images / frames.

    What ``Qwen3_5VisionModel.forward`` computes from precomputed tensors (:meth:`Qwen3_5Adapter.kept_item`, packed):
    patch embedding plus the learned position embedding interpolated with the given taps, rotary embedding, the
    blocks (one segment per image / frame, ``cu_seqlens``), the merger.

    Args:
        visual: ``model.model.visual``.
        hidden (torch.Tensor of shape (P, C*temporal_patch_size*patch_size**2)): patches, in the tower's dtype.
        kwargs: ``position_ids`` (P, 2), ``cu_seqlens`` (segments + 1,), ``interp_indices`` / ``interp_weights``
            (P, taps).
        layout: ``PaddedSegments`` (foveation: one call) or ``GroupedSegments`` (the whole tower: one call per segment
            length, the model's own result bit for bit).

    Returns:
        ``BaseModelOutputWithPooling``: ``last_hidden_state`` (P, D), ``pooler_output`` (P / merge**2, out).
    """
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    module = importlib.import_module(type(visual).__module__)  # the tower's own modeling file
    rotary = getattr(module, "apply_rotary_pos_emb_vision", None)
    if rotary is None:
        raise RuntimeError(f"{module.__name__} lacks apply_rotary_pos_emb_vision; the batched tower needs it")
    segments = layout.from_cu_seqlens(kwargs["cu_seqlens"])
    hidden = visual.patch_embed(hidden)  # (P, D)
    weights = kwargs["interp_weights"]  # (P, taps)
    pos = (visual.pos_embed(kwargs["interp_indices"]) * weights[:, :, None]).sum(1)  # (P, D)
    hidden = hidden + pos.to(hidden.dtype)
    position_embeddings = visual.rotary_pos_emb(hidden, kwargs["position_ids"])  # (cos, sin), each (P, head_dim)
    for block in visual.blocks:
        hidden = block_forward(block, hidden, position_embeddings, segments.attend, rotary)
    return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=visual.merger(hidden))


@dataclass
class Qwen3_5Adapter(Qwen3Adapter):
    """Adapter for Qwen3.5 and Qwen3.5-MoE: Qwen3-VL's, without DeepStack."""

    def batched_tower(self) -> tuple[Any, tuple[str, ...], str]:
        return qwen3_5_tower, _TOWER_ATTRS, "Qwen3.5"

    def supports_deepstack(self) -> bool:
        return False

    def n_deepstack_levels(self, model: Any) -> int:
        return 0

    def _deepstack(self, raw: Any) -> list[list[torch.Tensor]] | None:
        return None


# The dense and the MoE model: two classes of the "qwen3.5" row of arr_coc.families.
ADAPTER = Qwen3_5Adapter(name="qwen3.5")
MOE_ADAPTER = Qwen3_5Adapter(name="qwen3.5-moe")
