"""ARR-COC-VIS: query-aware visual token allocation and pruning for Qwen-VL models.

>>> import arr_coc
>>> a = arr_coc.allocate("examples/invoice.jpg", "How much must be paid?", budget=0.11)   # which tokens matter
>>> processor = arr_coc.load_processor(checkpoint)      # AutoProcessor, or the images-only stand-in
>>> cm = arr_coc.compress(model, budget=0.22, processor=processor)       # prune inside the model
"""

from .allocating import Allocation, allocate
from .attending import TIERS, TokenScores, resolve_budget, select
from .grid import Grid, GridSpec
from .processing import PilQwenVLProcessor, load_processor
from .realizing import Realizer

__all__ = [
    "TIERS",
    "Allocation",
    "Grid",
    "GridSpec",
    "PilQwenVLProcessor",
    "Realizer",
    "TokenScores",
    "allocate",
    "compress",
    "load_processor",
    "resolve_budget",
    "score_visual_tokens",
    "select",
]
__version__ = "0.1.0"


def __getattr__(name: str):
    # compress() needs transformers; import it only when asked for, so `allocate` works without it.
    if name == "compress":
        from .integrations import compress

        return compress
    if name == "score_visual_tokens":  # a Qwen-VL processor's patches -> each token's relevance (the Qwen line's)
        from .integrations.qwen_patches import score_visual_tokens

        return score_visual_tokens
    raise AttributeError(f"module 'arr_coc' has no attribute {name!r}")
