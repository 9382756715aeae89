"""Level of detail, the plan: how one image's budget is split between a coarse view of the whole image and
full-resolution tokens (``detail="thumbnail" | "mixed"``). Pure index arithmetic on the merged-token grid; the
pixels, prompts and model inputs that carry a plan out are :mod:`arr_coc.integrations.detail`'s (its module
docstring describes both modes).

Example:
    >>> import torch
    >>> plan = plan_detail("mixed", torch.arange(64.0), (8, 8), 20, lambda k: torch.arange(64 - k, 64))
    >>> plan.mode, plan.budget, plan.factor
    ('mixed', 20, 4)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from .attending import adaptive_k
from .config import RelevanceConfig

DETAIL_MODES: tuple[str, ...] = ("thumbnail", "mixed")
COARSE_FACTORS: tuple[int, ...] = (2, 4, 8)  # block side, in merged tokens, of the mixed mode's coarse cells
MIN_THUMBNAIL_TOKENS = 4  # the smallest thumbnail: a 2x2 grid of merged tokens
MIN_COARSE_TOKENS = 4  # the mixed mode leaves at least this much of the budget to coarse cells when it can


def parse_detail(detail: str | None) -> str | None:
    """``None`` / ``"off"`` / ``"none"`` -> None (drop-only), else one of :data:`DETAIL_MODES`.

    Raises:
        ValueError: naming the bad value and the allowed ones.
    """
    if detail is None:
        return None
    if isinstance(detail, str) and detail.strip().lower() in ("off", "none", "drop", ""):
        return None
    if isinstance(detail, str) and detail.strip().lower() in DETAIL_MODES:
        return detail.strip().lower()
    raise ValueError(f"detail must be None (drop-only), 'thumbnail' or 'mixed', got {detail!r}")


def thumbnail_grid(grid_hw: tuple[int, int], patch: int, merge: int, max_tokens: int) -> tuple[int, int]:
    """Patch grid (th, tw) of a thumbnail with at most ``max_tokens`` merged tokens, as ``smart_resize`` picks it.

    Args:
        grid_hw: the item's (h, w) in patches.
        max_tokens: >= 1.
    """
    factor = patch * merge
    height, width = grid_hw[0] * patch, grid_hw[1] * patch
    max_pixels = max_tokens * factor * factor
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    while (h_bar // factor) * (w_bar // factor) > max_tokens:  # an extreme aspect ratio: shrink the longer side
        if h_bar >= w_bar:
            h_bar -= factor
        else:
            w_bar -= factor
    return h_bar // patch, w_bar // patch


def block_ids(merged_hw: tuple[int, int], factor: int) -> torch.Tensor:
    """Block of every merged token (raster over (ceil(h/c), ceil(w/c)) blocks of c x c tokens).

    Returns:
        torch.LongTensor of shape (h*w,).
    """
    h, w = merged_hw
    r = torch.arange(h).div(factor, rounding_mode="floor")  # (h,)
    c = torch.arange(w).div(factor, rounding_mode="floor")  # (w,)
    return (r[:, None] * math.ceil(w / factor) + c[None, :]).flatten()  # (h*w,)


def block_bounds(merged_hw: tuple[int, int], factor: int, block: int) -> tuple[int, int, int, int]:
    """(r0, c0, r1, c1), end exclusive, in merged tokens, of block ``block``."""
    h, w = merged_hw
    per_row = math.ceil(w / factor)
    r0, c0 = (block // per_row) * factor, (block % per_row) * factor
    return r0, c0, min(h, r0 + factor), min(w, c0 + factor)


def anchor_of(bounds: tuple[int, int, int, int], merged_w: int) -> int:
    """Merged-token index of a block's anchor cell: its centre, rounded towards the top-left."""
    r0, c0, r1, c1 = bounds
    return (r0 + (r1 - r0 - 1) // 2) * merged_w + (c0 + (c1 - c0 - 1) // 2)


def mixed_total(order: torch.Tensor, blocks: torch.Tensor, n_blocks: int) -> torch.Tensor:
    """Tokens spent when the first k of ``order`` are fine and every other block is one coarse token, for k = 1..N.

    Args:
        order (torch.LongTensor of shape (N,)): token indices, most relevant first.
        blocks (torch.LongTensor of shape (N,)): block of each token (:func:`block_ids`).

    Returns:
        torch.LongTensor of shape (N,): entry k-1 is ``k + n_blocks - blocks touched by the first k``.
    """
    seen = torch.zeros(n_blocks, dtype=torch.bool)
    first = torch.zeros(order.numel(), dtype=torch.long)
    for i, b in enumerate(blocks[order].tolist()):  # (N,) loop of python ints: N is a few thousand at most
        if not seen[b]:
            seen[b] = True
            first[i] = 1
    k = torch.arange(1, order.numel() + 1)
    return k + n_blocks - first.cumsum(0)


@dataclass
class DetailPlan:
    """How one image's budget is spent (one entry's ``VisualAllocation.detail``).

    Attributes:
        mode: ``"full"`` (B >= N: every token fine, no coarse view), ``"thumbnail"``, ``"mixed"``, or ``"drop"``
            (set by the wrapper when the image's budget holds no coarse view: drop-only, ``note`` says why).
        fine (torch.LongTensor of shape (k,)): full-resolution tokens kept, strictly increasing.
        budget: tokens spent on this image: fine + coarse (thumbnail tokens or coarse cells).
        fine_need: what the adaptive rule asked for (``adaptive_k``: the tier that holds the relevance mass).
        factor: mixed: block side c in merged tokens (0 otherwise).
        anchors (torch.LongTensor of shape (n_coarse,)): mixed: anchor cell of each coarse block, increasing.
        blocks: mixed: (r0, c0, r1, c1) of each coarse block (end exclusive), in ``anchors``' order.
        thumb_grid: thumbnail: (th, tw) in PATCHES (``None`` otherwise).
        n_thumb: thumbnail: its merged tokens (th * tw / merge**2).
        note: why a coarse view was not made (mode ``"drop"``).
    """

    mode: str
    fine: torch.Tensor
    budget: int
    fine_need: int
    factor: int = 0
    anchors: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    blocks: list[tuple[int, int, int, int]] = field(default_factory=list)
    thumb_grid: tuple[int, int] | None = None
    n_thumb: int = 0
    note: str = ""

    @property
    def n_coarse(self) -> int:
        """Tokens of the coarse view (thumbnail tokens or coarse cells)."""
        return self.n_thumb if self.mode == "thumbnail" else int(self.anchors.numel())

    @property
    def kept(self) -> torch.Tensor:
        """Placeholder columns of the ORIGINAL image kept in the prompt: fine tokens and (mixed) anchors, increasing."""
        return torch.cat([self.fine, self.anchors.to(self.fine.device)]).sort().values


Selector = Callable[[int], torch.Tensor]  # k -> kept indices (strictly increasing), e.g. top-k with word units


def plan_detail(
    mode: str,
    scores: torch.Tensor,
    merged_hw: tuple[int, int],
    budget: int,
    select_k: Selector,
    *,
    patch: int = 14,
    merge: int = 2,
    tiers: Sequence[int] | None = None,
    factors: Sequence[int] = COARSE_FACTORS,
    fine_need: int | None = None,
    config: RelevanceConfig | None = None,
) -> DetailPlan:
    """Split one image's budget between the coarse view and full-resolution tokens (see the module doc).

    Args:
        mode: ``"thumbnail"`` or ``"mixed"``.
        scores (torch.Tensor of shape (N,)): relevance, raster order over the merged grid.
        merged_hw: (h, w) in merged tokens (N = h*w; images only).
        budget: B, tokens for this image (already resolved, in [1, N]).
        select_k: the wrapper's selection at k (``allocate_tokens``: top-k, word units, redundancy).
        patch, merge: the tower's patch side and merge size (thumbnail grid).
        tiers: the budget tiers (default: ``config.adaptive_tiers``).
        fine_need: override of ``adaptive_k(scores, config)`` (tests).
        config: the realizer's config, whose adaptive settings split the budget (None: the default config); the
            caller resolves ``budget`` with the same config (``Realizer.choose``).

    Returns:
        A :class:`DetailPlan`; ``plan.budget <= budget`` and, without word units, ``== budget``.

    Raises:
        ValueError: the budget cannot hold the smallest coarse view plus one fine token.
    """
    h, w = merged_hw
    n = h * w
    if scores.numel() != n:
        raise ValueError(f"{scores.numel()} scores for a {h}x{w} token grid")
    if mode not in DETAIL_MODES:
        raise ValueError(f"detail must be one of {DETAIL_MODES}, got {mode!r}")
    need = int(fine_need) if fine_need is not None else adaptive_k(scores, config)
    tiers = tuple(int(t) for t in (tiers if tiers is not None else (config or RelevanceConfig()).adaptive_tiers))
    if budget >= n:
        return DetailPlan("full", torch.arange(n), n, need)
    if mode == "thumbnail":
        if budget < MIN_THUMBNAIL_TOKENS + 1:
            raise ValueError(
                f"a budget of {budget} tokens cannot hold the smallest thumbnail ({MIN_THUMBNAIL_TOKENS} tokens) and "
                f"one full-resolution token; give at least {MIN_THUMBNAIL_TOKENS + 1} tokens or use detail=None"
            )
        reserve = max(MIN_THUMBNAIL_TOKENS, min(int(tiers[0]), budget // 2))  # the overview's floor
        target = budget - min(need, budget - reserve)
        target = max(MIN_THUMBNAIL_TOKENS, min(target, n // 4))
        snapped = [t for t in tiers if t <= target]
        if snapped:
            target = snapped[-1]
        th, tw = thumbnail_grid((h * merge, w * merge), patch, merge, target)
        n_thumb = th * tw // (merge * merge)
        fine = select_k(budget - n_thumb)
        return DetailPlan("thumbnail", fine, int(fine.numel()) + n_thumb, need, thumb_grid=(th, tw), n_thumb=n_thumb)
    order = torch.sort(
        torch.nan_to_num(scores.detach().float().cpu(), nan=-math.inf), descending=True, stable=True
    ).indices  # (N,)
    want = max(1, min(need, budget - max(MIN_COARSE_TOKENS, min(int(tiers[0]), budget // 2))))
    covers = []
    for c in factors:
        blocks = block_ids(merged_hw, c)
        n_blocks = int(blocks.max()) + 1
        covers.append((c, blocks, n_blocks, mixed_total(order, blocks, n_blocks)))  # totals: (N,)
    # the finest cover that holds `want` fine tokens and still has a coarse cell; else the coarsest that fits
    chosen = next(((c, b, nb, want) for c, b, nb, t in covers if t[want - 1] <= budget and t[want - 1] > want), None)
    if chosen is None:
        c, b, nb, t = covers[-1]
        fits = int((t <= budget).sum())  # totals are non-decreasing: the largest k that fits
        if fits < 1:
            raise ValueError(
                f"a budget of {budget} tokens is too small for a mixed-resolution view of this {h}x{w}-token image: "
                f"the coarsest cover ({c}x{c} cells) alone needs {nb} tokens; raise the budget or use detail=None "
                "or 'thumbnail'"
            )
        chosen = (c, b, nb, fits)
    c, blocks, n_blocks, k = chosen

    def spent(fine: torch.Tensor) -> int:
        return int(fine.numel()) + n_blocks - int(blocks[fine].unique().numel())

    fine = select_k(k).cpu()
    while fine.numel() > 1 and spent(fine) > budget:  # word units touched more blocks than plain top-k
        k -= 1
        fine = select_k(k).cpu()
    fine = _fill(fine, order, blocks, n_blocks, budget - spent(fine))
    touched_blocks = set(blocks[fine].tolist())
    coarse = [b for b in range(n_blocks) if b not in touched_blocks]
    bounds = [block_bounds(merged_hw, c, b) for b in coarse]
    anchors = torch.tensor([anchor_of(bd, w) for bd in bounds], dtype=torch.long)
    return DetailPlan("mixed", fine, int(fine.numel()) + len(coarse), need, factor=c, anchors=anchors, blocks=bounds)


def _fill(fine: torch.Tensor, order: torch.Tensor, blocks: torch.Tensor, n_blocks: int, left: int) -> torch.Tensor:
    """Spend ``left`` more tokens on fine ones: first the most relevant tokens inside blocks that already hold a fine
    token (each costs one), then down the relevance order (a token in a coarse block costs nothing on its own: it
    replaces that block's coarse token, and the block's next tokens cost one each)."""
    if left <= 0:
        return fine
    is_fine = torch.zeros(order.numel(), dtype=torch.bool)
    is_fine[fine] = True
    touched = torch.zeros(n_blocks, dtype=torch.bool)
    touched[blocks[fine]] = True
    ranked = order.tolist()
    for first_pass in (True, False):
        for i in ranked:
            if left == 0:
                break
            if is_fine[i]:
                continue
            b = int(blocks[i])
            if touched[b]:
                is_fine[i] = True
                left -= 1
            elif not first_pass:
                is_fine[i] = True
                touched[b] = True
    return is_fine.nonzero().flatten()
