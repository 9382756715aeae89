"""Integrations of ARR-COC-VIS with model libraries. Everything that touches a library's internals lives here.

``compress(model, budget=...)`` wraps a ``transformers`` Qwen-VL model (Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
Qwen3-VL-MoE) so that only the visual tokens relevant to the question reach the language model, each at its
original M-RoPE position. ``transformers`` is imported only when a model is wrapped.
"""

from .base import ImageContext, VisualAllocation, cosine_scorer
from .compress import SUPPORTED_CLASSES, CompressedModel, PrunedInputs, compress, tier_levels
from .options import CompressOptions

__all__ = [
    "SUPPORTED_CLASSES",
    "CompressOptions",
    "CompressedModel",
    "ImageContext",
    "PrunedInputs",
    "VisualAllocation",
    "compress",
    "cosine_scorer",
    "tier_levels",
]
