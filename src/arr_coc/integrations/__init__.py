"""Integrations of ARR-COC-VIS with model libraries. Everything that touches a library's internals lives here.

``compress(model, budget=...)`` wraps a ``transformers`` vision-language model of a registered family
(:mod:`arr_coc.families`) so that only the visual tokens relevant to the question reach the language model, each at
its original position. A family is one adapter filling in :mod:`.contract`. ``transformers`` is imported only when a
model is wrapped.
"""

from .base import ImageContext, VisualAllocation, cosine_scorer
from .compress import SUPPORTED_CLASSES, CompressedModel, PrunedInputs, compress
from .options import CompressOptions
from .qwen3_vl import tier_levels

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
