"""Attending: turn a relevance map into a token budget and the set of tokens to keep.

Budgets (``resolve_budget``):
    * ``int >= 1``      keep that many tokens (clamped to the image's token count; documented clamp).
    * ``float in (0, 1]`` keep that fraction of the image's tokens, rounded, at least one.
    * a whole number above 1 written as a float (``256.0``, ``"1e9"``): that count, as an ``int`` (so the API and
      the command line agree: ``--budget 1e9`` and ``budget=10**9`` both keep every token).
    * ``"adaptive"``    choose K in [64, 400] from how concentrated relevance is, snapped up to a tier.
    * strings like ``"256"``, ``"0.22"`` or ``"22%"`` are parsed as the above (the CLI passes strings).
Anything else (0, negatives, NaN, inf, bools, fractions above 1, junk strings) raises ``ValueError``
naming what is allowed.

Selection (``select``) is top-K with ties broken towards the lower token index, optionally with a
redundancy penalty that skips near-duplicate tokens, or with *units* (the cells of one word): a unit is kept
whole or not at all, so no character is cut at a cell edge. Kept indices always come back in raster order.

Example:
    >>> import torch
    >>> select(torch.tensor([0.1, 0.9, 0.5, 0.9]), 2).tolist()
    [1, 3]
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple, overload

import numpy as np
import torch

from .config import RelevanceConfig
from .tensors import CONSTANTS

TIERS: tuple[int, ...] = RelevanceConfig().adaptive_tiers  # budget tiers of the seed design (the config's default)

Budget = int | float | str


class TokenScores(NamedTuple):
    """A scorer's answer when some tokens belong together: the scores and the units to keep whole.

    Attributes:
        scores (torch.Tensor of shape (N,)): relevance of each token.
        units: cell sets (each a LongTensor or int array of token indices) that are kept whole or not at all: the
            cells each recognised word touches (``arr_coc.reading.QueryMatcher.units``). Empty: plain top-K.
    """

    scores: torch.Tensor
    units: Sequence[torch.Tensor | np.ndarray] = ()


def snap_to_tier(k: int, tiers: Sequence[int] = TIERS) -> int:
    """Smallest tier >= ``k`` (the largest tier if ``k`` is above all of them)."""
    for tier in tiers:
        if k <= tier:
            return tier
    return tiers[-1]


def adaptive_k(scores: torch.Tensor, config: RelevanceConfig | None = None) -> int:
    """K in [64, 400] from how concentrated ``scores`` (N,) are, snapped up to a budget tier.

    Relevance above the map's median is the signal; K is the number of top tokens that hold
    ``config.adaptive_mass`` of it. A map with a few sharp peaks gets the lowest tier (64); a flat or scattered one
    the highest (400). The result is never above N. Runs on the scores' device (one number comes back:
    :func:`adaptive_ks` gives the counts of a batch with none).
    """
    return int(adaptive_ks(scores.detach().flatten()[None], config)[0].item())


def adaptive_ks(scores: torch.Tensor, config: RelevanceConfig | None = None) -> torch.Tensor:
    """:func:`adaptive_k` of every row of ``scores`` (B, N) at once, on the device, with no host sync.

    Args:
        scores (torch.Tensor of shape (B, N)): relevance maps of B images of N tokens each.
        config: whose ``adaptive_mass`` and ``adaptive_tiers`` (None: the default config).

    Returns:
        torch.LongTensor of shape (B,): each row's K, in [1, N].
    """
    cfg = config or RelevanceConfig()
    tiers = tuple(int(t) for t in cfg.adaptive_tiers)
    s = torch.nan_to_num(scores.detach().float(), nan=0.0)  # (B, N)
    n = s.shape[1]
    excess = (s - s.median(dim=1, keepdim=True).values).clamp_min(0)  # (B, N)
    total = excess.sum(1, keepdim=True)  # (B, 1)
    cum = torch.cumsum(torch.sort(excess, dim=1, descending=True).values, 1) / total  # (B, N)
    mass = cum.new_full((s.shape[0], 1), float(cfg.adaptive_mass))  # (B, 1)
    k = torch.searchsorted(cum, mass)[:, 0] + 1  # (B,)
    tier = CONSTANTS.get(("attending.tiers", tiers, s.device), lambda: torch.tensor(tiers).to(s.device))  # (L,)
    k = tier[torch.searchsorted(tier, k.clamp(tiers[0], tiers[-1]))]  # the smallest tier >= k
    k = torch.where(total[:, 0] > 0, k, tiers[-1])  # a flat map: nothing stands out, spend the largest tier
    return k.clamp(1, n)


def top_k_mask(scores: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Which tokens of each row are among its ``k`` most relevant, ties broken towards the lower index (the rule of
    :func:`select`), for a batch, on the device, with no host sync.

    Args:
        scores (torch.Tensor of shape (B, N)): relevance; NaN counts as least relevant.
        k (torch.LongTensor of shape (B,)): tokens to keep per row, in [1, N].

    Returns:
        torch.BoolTensor of shape (B, N): row b has exactly k[b] True entries; ``mask[b].nonzero()`` are the indices
        :func:`select` returns for ``scores[b]`` and ``k[b]`` (no units, no redundancy).
    """
    s = torch.nan_to_num(scores.detach().float(), nan=-math.inf)  # (B, N)
    order = torch.sort(s, dim=1, descending=True, stable=True).indices  # (B, N)
    ranks = CONSTANTS.get(
        ("attending.ranks", s.shape[1], s.device), lambda: torch.arange(s.shape[1], device=s.device)[None]
    )  # (1, N)
    return torch.zeros_like(s, dtype=torch.bool).scatter_(1, order, ranks < k.view(-1, 1))  # (B, N)


def top_k_indices(scores: torch.Tensor, k: int) -> torch.Tensor:
    """:func:`select` (no units, no redundancy) of every row of ``scores`` at once, for one count ``k``: each row's
    ``k`` most relevant tokens, ties to the lower index, NaN least relevant, in ascending order. 3 ops for the batch
    (the same sorts :func:`select` makes for one row, along the rows), no host sync.

    Args:
        scores (torch.Tensor of shape (B, N)): relevance.
        k: tokens to keep per row, clamped to [1, N].

    Returns:
        torch.LongTensor of shape (B, k): row b equals ``select(scores[b], k)``.
    """
    k = max(1, min(int(k), scores.shape[1]))
    s = torch.nan_to_num(scores.detach().float(), nan=-math.inf)  # (B, N)
    order = torch.sort(s, dim=1, descending=True, stable=True).indices  # (B, N)
    return order[:, :k].sort(dim=1).values  # (B, k)


def parse_budget(budget: Budget) -> Budget:
    """Validate a budget and turn strings into ``int``, ``float`` or ``"adaptive"``.

    Raises:
        ValueError: naming the bad value and the allowed forms.
    """
    allowed = "an integer token count >= 1, a fraction in (0, 1] (e.g. 0.22 or '22%'), or 'adaptive'"
    if isinstance(budget, TokenBudget):
        return budget.value
    if isinstance(budget, str):
        text = budget.strip().lower()
        if text == "adaptive":
            return "adaptive"
        try:
            if text.endswith("%"):
                value: Budget = float(text[:-1]) / 100.0
            elif text.lstrip("+-").isdigit():
                value = int(text)
            else:
                value = float(text)
        except ValueError:
            raise ValueError(f"budget {budget!r} is not {allowed}") from None
        return parse_budget(value)
    if isinstance(budget, bool) or not isinstance(budget, Real):
        raise ValueError(f"budget {budget!r} is not {allowed}")
    if isinstance(budget, Integral):
        if budget < 1:
            raise ValueError(f"budget {budget} keeps no token; use {allowed}")
        return int(budget)
    value = float(budget)
    if math.isfinite(value) and value > 1 and value.is_integer():
        return int(value)  # a whole number written as a float (1e9, 256.0): a count, as on the command line
    if not math.isfinite(value) or value <= 0 or value > 1:
        raise ValueError(f"budget {budget!r} is not {allowed}")
    return value


@dataclass(frozen=True)
class TokenBudget:
    """A budget parsed once (:meth:`parse`) and resolved per image (:meth:`resolve`) with a realizer's config.

    Attributes:
        value: an ``int`` count >= 1, a ``float`` fraction in (0, 1], or ``"adaptive"`` (what :func:`parse_budget`
            returns).

    Example:
        >>> b = TokenBudget.parse("22%")
        >>> b.value, b.resolve(100)
        (0.22, 22)
    """

    value: int | float | str

    @classmethod
    def parse(cls, budget: Budget | TokenBudget) -> TokenBudget:
        """The budget of a user's value (see the module doc); a :class:`TokenBudget` is returned as it is.

        Raises:
            ValueError: naming the bad value and the allowed forms.
        """
        return budget if isinstance(budget, TokenBudget) else cls(parse_budget(budget))

    @property
    def adaptive(self) -> bool:
        """Whether the count depends on the scores (``"adaptive"``)."""
        return self.value == "adaptive"

    def resolve(self, n_tokens: int, scores: torch.Tensor | None = None, config: RelevanceConfig | None = None) -> int:
        """Number of tokens to keep out of ``n_tokens``, always in [1, n_tokens].

        Args:
            n_tokens: the image's visual tokens N.
            scores (torch.Tensor of shape (N,) or None): needed only for ``"adaptive"``.
            config: whose adaptive settings (``adaptive_mass``, ``adaptive_tiers``); None: the default config.
        """
        if n_tokens < 1:
            raise ValueError(f"an image needs at least one visual token, got {n_tokens}")
        if self.value == "adaptive":
            if scores is None:
                raise ValueError("an 'adaptive' budget needs the relevance scores")
            return adaptive_k(scores, config)
        if isinstance(self.value, int):
            return min(self.value, n_tokens)
        return max(1, min(n_tokens, round(float(self.value) * n_tokens)))


def resolve_budget(
    budget: Budget | TokenBudget,
    n_tokens: int,
    scores: torch.Tensor | None = None,
    config: RelevanceConfig | None = None,
) -> int:
    """Number of tokens to keep out of ``n_tokens`` for ``budget`` (see module doc). Always in [1, n_tokens].

    ``scores`` (N,) is needed only for ``"adaptive"`` (with ``config``'s adaptive settings). Shorthand for
    ``TokenBudget.parse(budget).resolve(n_tokens, scores, config)``.
    """
    return TokenBudget.parse(budget).resolve(n_tokens, scores, config)


def select(
    scores: torch.Tensor,
    k: int,
    features: torch.Tensor | None = None,
    redundancy: float = 0.0,
    units: Sequence[torch.Tensor | np.ndarray] = (),
) -> torch.Tensor:
    """Indices of the ``k`` most relevant tokens, in raster (ascending) order.

    Args:
        scores: relevance of each token, shape (N,); higher is more relevant. NaN counts as least relevant.
        k: how many to keep; clamped to [1, N].
        features: optional token features (N, D) used to skip near-duplicates.
        redundancy: in [0, 1]; with ``features``, a candidate's score is lowered by ``redundancy`` times its
            highest cosine similarity to a token already kept (greedy, scores rescaled to [0, 1] first).
        units: cell sets kept whole (``select_units``); ignored when ``redundancy`` > 0.

    Returns:
        LongTensor of shape (k,), strictly increasing, on the device of ``scores``.
    """
    if scores.dim() != 1 or scores.numel() == 0:
        raise ValueError(f"scores must be a non-empty 1-D tensor, got shape {tuple(scores.shape)}")
    n = scores.numel()
    k = max(1, min(int(k), n))
    s = torch.nan_to_num(scores.detach().float(), nan=-math.inf)
    if features is None or redundancy <= 0 or k == n:
        order = torch.sort(s, descending=True, stable=True).indices
        if len(units) and k < n:
            return select_units(order, k, units)
        return order[:k].sort().values
    if features.shape[0] != n:
        raise ValueError(f"features has {features.shape[0]} rows for {n} scores")
    finite = torch.isfinite(s)
    lo, hi = s[finite].min(), s[finite].max()
    base = torch.where(finite, (s - lo) / (hi - lo).clamp_min(1e-12), torch.full_like(s, -1.0))
    f = torch.nn.functional.normalize(features.detach().float(), dim=-1)
    f = f.to(s.device)
    max_sim = torch.zeros_like(s)  # (N,)
    taken = torch.zeros_like(s, dtype=torch.bool)  # (N,)
    keep = []
    for _ in range(k):
        gain = base - redundancy * max_sim
        gain[taken] = -math.inf
        i = int(torch.argmax(gain))  # argmax returns the first maximum: ties go to the lower index
        keep.append(i)
        taken[i] = True
        max_sim = torch.maximum(max_sim, f @ f[i])
    return torch.tensor(sorted(keep), dtype=torch.long, device=s.device)


_TABLES_LOCK = threading.Lock()  # around the eviction and insertion of WordUnits' tables


class WordUnits(Sequence[np.ndarray]):
    """Cell sets kept whole by :func:`select_units` (one per recognised word): a read-only sequence of ascending int64
    arrays of token indices, with the tables the selection walks built once per token count and budget.

    A page's units serve every question asked of it (``QueryMatcher.units`` caches them per page), so a second
    question pays only for the walk: which units hold each token, and every cell of those units (:meth:`table`),
    are built on the first selection at a budget and kept (at most ``MAX_TABLES`` budgets; the oldest goes first).
    Building the same table twice from two threads at once is harmless (the same value; the second assignment
    wins; eviction and insertion hold a lock).

    Args:
        units: cell sets (LongTensors, int arrays or lists of token indices); each is copied, flattened, and made
            sorted with every cell once.

    Example:
        >>> units = WordUnits([[3, 2], [5]])
        >>> len(units), units[0].tolist()
        (2, [2, 3])
    """

    MAX_TABLES = 8

    def __init__(self, units: Iterable[torch.Tensor | np.ndarray | Sequence[int]]) -> None:
        cells = [
            np.asarray(u.detach().cpu().numpy() if isinstance(u, torch.Tensor) else u).astype(np.int64).ravel()
            for u in units
        ]  # copies
        if cells:
            flat = np.concatenate(cells)  # (M,) every unit's cells, unit after unit
            rising = np.diff(flat) > 0  # (M - 1,) strictly increasing within each unit (word_units' are)?
            starts = np.cumsum([c.size for c in cells])[:-1]  # where each next unit starts in flat
            rising[starts[(starts > 0) & (starts < flat.size)] - 1] = True  # a unit's last cell -> the next one's first
            if not rising.all():
                cells = [np.unique(c) if c.size > 1 and not (c[1:] > c[:-1]).all() else c for c in cells]
        for c in cells:
            c.setflags(write=False)
        self._cells: tuple[np.ndarray, ...] = tuple(cells)
        self._tables: dict[tuple[int, int], UnitTable] = {}

    @classmethod
    def of(cls, units: Sequence[torch.Tensor | np.ndarray] | WordUnits) -> WordUnits:
        """``units`` themselves when they are ``WordUnits`` already, else a ``WordUnits`` of them."""
        return units if isinstance(units, WordUnits) else cls(units)

    @classmethod
    def join(cls, parts: Sequence[WordUnits], offsets: Sequence[int]) -> WordUnits:
        """The units of several pictures in one raster: ``parts[i]``'s cells plus ``offsets[i]`` (one part with
        offset 0: that part itself, its tables included)."""
        if len(parts) == 1 and offsets[0] == 0:
            return parts[0]
        return cls(u + off for part, off in zip(parts, offsets, strict=True) for u in part)

    def __len__(self) -> int:
        return len(self._cells)

    @overload
    def __getitem__(self, i: int) -> np.ndarray: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[np.ndarray, ...]: ...
    def __getitem__(self, i: int | slice) -> np.ndarray | tuple[np.ndarray, ...]:
        return self._cells[i]

    def __repr__(self) -> str:
        return f"WordUnits({len(self)} units, {sum(c.size for c in self._cells)} cells)"

    def table(self, n: int, k: int) -> UnitTable:
        """The walk's table for ``n`` tokens and a budget of ``k`` (built once, then kept): each token of ``[0, n)``
        in a unit of at most ``k`` cells has a group, every cell of the units that hold it.

        Raises:
            ValueError: for a unit cell outside ``[0, n)``.
        """
        table = self._tables.get((n, k))
        if table is not None:
            return table
        if self._cells:
            flat = np.concatenate(self._cells)  # (M,)
            if flat.size and (flat.min() < 0 or flat.max() >= n):
                raise ValueError(f"a unit holds token {int(flat[(flat < 0) | (flat >= n)][0])}, outside [0, {n})")
        owners: dict[int, list[tuple[int, ...]]] = {}  # token -> the units (of at most k cells) that hold it
        for cells in self._cells:
            if cells.size <= k:  # a unit larger than the budget cannot be kept whole: its cells are free tokens
                unit = tuple(cells.tolist())
                for c in unit:
                    owners.setdefault(c, []).append(unit)
        ids: dict[tuple[int, ...], int] = {}  # a group's sorted cells -> its id
        group_of = [-1] * n
        for c, us in owners.items():
            group = us[0] if len(us) == 1 else tuple(sorted(set().union(*us)))
            group_of[c] = ids.setdefault(group, len(ids))
        groups = tuple(ids)
        # each group's cells as one C call that reads their flags from the walk's ``taken`` (a tuple of 0 / 1)
        flags = tuple(operator.itemgetter(*g) if len(g) > 1 else (lambda taken, c=g[0]: (taken[c],)) for g in groups)
        table = UnitTable(group_of, groups, flags)
        with _TABLES_LOCK:  # two threads evicting at once must not pop the same key
            while len(self._tables) >= self.MAX_TABLES:
                self._tables.pop(next(iter(self._tables)))
            self._tables[(n, k)] = table
        return table


class UnitTable(NamedTuple):
    """What :func:`select_units` walks, for one token count and budget (:meth:`WordUnits.table`): ``group_of[c]``
    is the group of token ``c`` (every cell of the units that hold it) or -1 for a token in no unit (of at most the
    budget's cells), ``groups[g]`` the cells of group ``g``, ascending, and ``flags[g](taken)`` their entries of a
    bytearray ``taken``, as a tuple."""

    group_of: list[int]
    groups: tuple[tuple[int, ...], ...]
    flags: tuple[Callable[[bytearray], tuple[int, ...]], ...]


def select_units(order: torch.Tensor, k: int, units: Sequence[torch.Tensor | np.ndarray] | WordUnits) -> torch.Tensor:
    """``k`` tokens taken in ``order`` (most relevant first), each unit whole or not at all.

    A unit larger than ``k`` can never be kept whole, so its cells count as free tokens. Going down ``order``, a
    token that belongs to no unit is taken; a token in one or more units brings every cell
    of those units with it when they all fit in what is left of the budget, and is skipped (for now) otherwise.
    When the budget cannot be filled that way (only units too large for the rest are left), the rest is filled in
    ``order``: the best of those units is cut rather than the budget spent on lower-ranked tokens. So exactly ``k``
    tokens come back, and every unit is whole unless that last fill had to cut one (a word wider than the whole
    budget left). Units are cell sets of one image (they may overlap).

    The walk is plain Python over the table of :meth:`WordUnits.table` (built once per page and budget when
    ``units`` are the page's ``WordUnits``): a page's few hundred words touch a few cells each, and NumPy calls on
    arrays that small cost more than the work. A group that does not fit in what is left never fits later (each
    of its cells taken since cost the budget one token too: what it needs and what is left fall by at least as much),
    so the walk looks at each group's cells at most once and passes over a group that did not fit (most of those it
    meets once the budget is nearly spent) in one look-up.

    Args:
        order (torch.LongTensor of shape (N,)): every token index once, most relevant first.
        k: how many to keep, in [1, N].
        units: cell sets (``WordUnits``, or LongTensors or int arrays of indices into ``order``'s tokens).

    Returns:
        LongTensor of shape (k,), strictly increasing, on the device of ``order``.

    Example:
        >>> select_units(torch.tensor([2, 0, 1, 3]), 2, [torch.tensor([2, 3])]).tolist()
        [2, 3]
    """
    n = order.numel()
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}], got {k}")
    group_of, groups, flags = WordUnits.of(units).table(n, k)
    passed = bytearray(len(groups))  # groups that did not fit once: they never will (see above)
    rank = order.detach().cpu().tolist()  # (N,) the one host copy: the greedy walks on the CPU
    taken = bytearray(n)
    left = k
    for c in rank:
        if left == 0:
            break
        if taken[c]:
            continue
        g = group_of[c]
        if g < 0:  # in no unit
            taken[c] = 1
            left -= 1
        elif not passed[g]:
            cells = groups[g]
            need = len(cells) - sum(flags[g](taken))  # its cells not taken yet
            if need <= left:
                for x in cells:
                    taken[x] = 1
                left -= need
            else:
                passed[g] = 1
    for c in rank:  # only units too large for the rest remain: cut the best of them
        if left == 0:
            break
        if not taken[c]:
            taken[c] = 1
            left -= 1
    return torch.from_numpy(np.flatnonzero(np.frombuffer(taken, dtype=np.uint8))).to(order.device)
