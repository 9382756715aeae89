"""Qwen2.5-VL adapter for ``compress``.

Same seams as Qwen2-VL; the one difference is that video temporal positions are spaced by
``tokens_per_second * second_per_grid_ts`` (absolute time), so ``second_per_grid_ts`` from the processor must reach
``get_rope_index`` when the full sequence's positions are computed.
"""

from __future__ import annotations

from .base import FamilyAdapter

ADAPTER = FamilyAdapter(
    name="qwen2.5-vl",
    class_names=("Qwen2_5_VLForConditionalGeneration",),
    module="transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
    extra_rope_keys=("second_per_grid_ts",),
)
