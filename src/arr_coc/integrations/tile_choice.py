"""Tiles chosen by relevance (InternVL, LLaVA-OneVision): ``compress(tile_choice="concentrate")`` keeps as many tokens
as the decision did, but in the fewest tiles, so that ``foveate=True`` encodes fewer tiles.

The decision spreads the kept tokens over the page: on ``examples/invoice.jpg`` it keeps tokens in all 13 of InternVL's
tiles at 22% and 11%, so the foveated tower does the unpruned tower's work (results/tiles.md). Concentrated
(:func:`concentrate`, per image, on the decision ``compress`` made anyway): ``k`` = the tokens it kept (structure
tokens, OneVision's newlines, not counted: they stay); the tiles are ranked by the relevance the top ``k`` cells put in
them (each cell's score less the lowest, plus a little, so every top cell counts) and taken in that order until they
hold ``2 k`` cells; the image then keeps its ``k`` most relevant cells among those tiles and the thumbnail / base view
(always encoded), unless that touches no fewer tiles than the decision's own set (then the decision stands). The cost
is the decision's ``k``; what changes is where the tokens sit. The selection's word units (text mode) are not kept
whole across the cut (a word in a tile not taken loses its cells). One host read of the scores and the kept set a
call (the bookkeeping reads them anyway).

Each adapter says which tile each of an item's tokens is a cell of (:meth:`~.contract.Adapter.token_tiles`: a tile
index, -1 for the thumbnail / base view, -2 for a structure token); a family without tiles refuses the option at wrap
time in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from arr_coc.deciding import Choice

TILE_CHOICES = ("spread", "concentrate")  # spread: the decision as it is (the default)


def concentrate(choice: Choice, scores: torch.Tensor, tiles: np.ndarray) -> Choice:
    """``choice``'s token count in the fewest tiles (see the module doc). ``tiles``: (n,) per token its tile (-1: the
    coarse view, -2: structure)."""
    s = scores.detach().float().cpu().numpy().astype(np.float64).reshape(-1)
    kept = np.zeros(s.size, dtype=bool)
    kept[choice.keep.cpu().numpy()] = True
    structure = tiles == -2
    cand = np.flatnonzero(~structure)
    k = int((kept & ~structure).sum())
    if k == 0 or k >= cand.size:
        return choice
    finite = np.where(np.isfinite(s), s, np.nan)
    low = np.nanmin(finite[cand]) if np.isfinite(finite[cand]).any() else 0.0
    s = np.where(np.isfinite(s), s, low)
    top = cand[np.argsort(-s[cand], kind="stable")[:k]]
    fine = top[tiles[top] >= 0]
    n_tiles = int(tiles.max()) + 1
    if n_tiles <= 0 or fine.size == 0:
        return choice
    mass = np.bincount(tiles[fine], weights=s[fine] - low + 1e-6, minlength=n_tiles)
    size = np.bincount(tiles[tiles >= 0], minlength=n_tiles)
    chosen: list[int] = []
    for t in np.argsort(-mass, kind="stable"):
        if mass[t] <= 0 or size[chosen].sum() >= 2 * k:
            break
        chosen.append(int(t))
    allowed = cand[np.isin(tiles[cand], [-1, *chosen])]
    keep = kept & structure  # the structure tokens the decision kept (OneVision: every newline)
    keep[allowed[np.argsort(-s[allowed], kind="stable")[:k]]] = True
    if np.unique(tiles[keep & (tiles >= 0)]).size >= np.unique(tiles[kept & (tiles >= 0)]).size:
        return choice  # the decision's own tokens already sit in as few tiles
    idx = torch.from_numpy(np.flatnonzero(keep)).to(choice.keep.device)
    return Choice(idx, int(idx.numel()), choice.requested)


def concentrate_tiles(adapter: Any, items: Sequence[Any], decided: Sequence[tuple[Choice, torch.Tensor]]) -> list:
    """Each image's decision concentrated in its fewest tiles (:func:`concentrate`); other items as they are."""
    out = []
    for item, (choice, scores) in zip(items, decided, strict=True):
        tiles = adapter.token_tiles(item) if item.kind == "image" else None
        out.append((concentrate(choice, scores, tiles) if tiles is not None else choice, scores))
    return out


__all__ = ["TILE_CHOICES", "concentrate", "concentrate_tiles"]
