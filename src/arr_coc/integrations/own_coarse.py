"""Level of detail on a family that shows the model its own coarse view of each image (InternVL's thumbnail: the whole
page in one 448-px tile after its tiles; LLaVA-OneVision's base view: the page squeezed into one 384-px tile before
its anyres raster): ``compress(detail="thumbnail")`` keeps that view WHOLE and spends the rest of the item's budget on
its tile cells, the most relevant first.

Why not the Qwen line's thumbnail (:mod:`.detail`): these families already see the whole page coarsely; inserting a
second thumbnail would put an image the model was not trained to see beside its own. ``"mixed"`` has no analogue (a
tile's cells cannot be merged into coarser tokens its tower has seen), so it is refused at wrap time in one line.

The split, per item (:func:`with_coarse`), on the decision ``compress`` made anyway (the same scores, the same budget
resolved): ``B`` = the tokens that decision kept, structure tokens (OneVision's newlines, which every decision keeps)
not counted. When ``B`` exceeds the coarse view's ``C`` tokens, the item keeps the ``C`` coarse tokens, its structure
tokens, and the ``B - C`` most relevant tile tokens of the decision's (the lowest-scored are given back); so the item
costs ``B`` tokens, as without the option. When ``B <= C`` (a budget that cannot hold the coarse view and one tile
token) the item is pruned drop-only, as the Qwen line's too-small images are. At full budget every token is kept, so
the output is the unwrapped model's. The tower is foveated only with ``foveate=True`` (the thumbnail / base view is
always encoded then; a tile with no kept cell is not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from arr_coc.deciding import Choice


def with_coarse(choice: Choice, scores: torch.Tensor, coarse: np.ndarray, structure: np.ndarray) -> Choice:
    """``choice`` with the coarse tokens ``coarse`` kept whole and its lowest-scored other tokens given back, so that
    the kept tokens outside ``structure`` stay as many (see the module doc); unchanged when they are no more than
    ``len(coarse)``. ``scores``: (n,) of the item's tokens; no host sync."""
    n, device = scores.numel(), scores.device
    mask = torch.zeros(n, dtype=torch.bool, device=device)

    def marks(idx: Any) -> torch.Tensor:
        out = mask.clone()
        out[torch.as_tensor(idx, dtype=torch.long, device=device)] = True
        return out

    kept, is_coarse, is_struct = marks(choice.keep), marks(coarse), marks(structure)
    budget = (kept & ~is_struct).sum()
    room = (budget - int(coarse.size)).clamp(min=0)
    candidates = kept & ~is_coarse & ~is_struct
    ranked = torch.where(candidates, scores.float(), torch.full_like(scores.float(), float("-inf")))
    order = torch.argsort(ranked, descending=True, stable=True)
    rank = torch.empty(n, dtype=torch.long, device=device)
    rank[order] = torch.arange(n, device=device)
    split = is_coarse | (kept & is_struct) | (candidates & (rank < room))
    keep = torch.nonzero(torch.where(budget > int(coarse.size), split, kept)).flatten()
    return Choice(keep, int(keep.numel()), choice.requested)


def keep_own_coarse(adapter: Any, items: Sequence[Any], decided: Sequence[tuple[Choice, torch.Tensor]]) -> list:
    """Each item's decision with its own coarse view kept whole (:func:`with_coarse`); items without one as they are."""
    out = []
    for item, (choice, scores) in zip(items, decided, strict=True):
        coarse = adapter.coarse_tokens(item) if item.kind == "image" else None
        if coarse is not None and coarse.size:
            choice = with_coarse(choice, scores, coarse, adapter.structure_tokens(item))
        out.append((choice, scores))
    return out


__all__ = ["keep_own_coarse", "with_coarse"]
