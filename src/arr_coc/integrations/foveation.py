"""Foveation: run the vision tower only on the patches of the kept visual tokens, each at its place in the full grid.

``compress(model, ..., foveate=True)`` decides which merged visual tokens to keep BEFORE the vision tower (the
scorer sees the processor's pixels, not the tower's features) and then encodes only those tokens' patches. The
vision towers of Qwen2-VL, Qwen2.5-VL and Qwen3-VL take their data-dependent tensors as keyword arguments
(``transformers.vision_utils``: ``position_ids``, ``cu_seqlens``, ``window_index`` / ``cu_window_seqlens``,
``interp_indices`` / ``interp_weights``); this module computes those tensors for the FULL grid with the library's
own helpers and keeps the rows of the kept patches, so each kept patch is encoded

* with the rotary (h, w) angles of its place in the full grid (all families);
* attending to the other kept patches of its image, or of its frame for videos (the towers' own segments);
* Qwen2.5-VL: in the window of the ORIGINAL grid it belongs to (each window keeps its kept members), full-attention
  blocks covering all kept patches of the image / frame;
* Qwen3-VL: with the learned position embedding interpolated for the full grid (gathered at the kept patch), and the
  DeepStack features taken from the same reduced run.

What the tower returns is one merged token per kept token, in kept order; the language model then gets exactly what
post-encoder pruning would give it (kept tokens at their original M-RoPE positions). The features differ from the
unpruned run's because each kept patch saw only the kept patches: that is the price of the saved compute.

Layout facts used (from the Qwen processors and ``vision_utils.get_vision_position_ids``): an item's patch rows come
in merge-block order, so merged token ``j`` (raster over (t, h/m, w/m)) owns patch rows ``j*m*m ... j*m*m + m*m-1``.

The per-item pieces are pure index arithmetic (:func:`kept_patch_rows`, :func:`gather_rows`, :func:`kept_cu_seqlens`,
:func:`kept_windows`); :func:`concat_items` packs several items into one tower call; :func:`encode_kept` runs it.

One attention call per block (:class:`PaddedSegments`): on SDPA, transformers' towers attend segment by segment
(``torch.split(..., lengths.tolist())`` and a Python loop over windows / images in the vision attention), so a
foveated Qwen2.5-VL tower whose kept patches stay spread over ~80 windows of a page pays ~80 small attention calls per
window block. :class:`PaddedSegments` lays the packed segments out as a padded batch (segments x longest segment) with
a key mask, so one ``scaled_dot_product_attention`` call covers them all; the family file runs the blocks with it
(``qwen2_5_vl.py``). With flash-attn (``attn_implementation="flash_attention_2"``) the towers already make one varlen
call per block (``flash_attn_varlen_func`` on ``cu_seqlens``), and the model's own tower is used unchanged.

The full tower too (``compress`` without foveation, Qwen2.5-VL on SDPA): a whole page's windows come in a few lengths,
and :class:`GroupedSegments` attends to each length's windows in one call, bit for bit the per-window calls, so the
full budget stays the unmodified model's output while the ~80 calls per window block of a page become two or three.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

# Keyword arguments of the towers that hold cumulative boundaries (offset by the patches of earlier items when
# items are packed), token indices (offset by the kept tokens of earlier items), or per-patch rows (concatenated).
CUMULATIVE_KEYS = ("cu_seqlens", "cu_window_seqlens")
TOKEN_INDEX_KEYS = ("window_index",)


def _check_keep(keep: torch.Tensor, n_tokens: int) -> torch.Tensor:
    keep = torch.as_tensor(keep).long().flatten()
    if keep.numel() == 0:  # an item that keeps nothing (budget_scope="prompt"): the tower skips it
        return keep
    if bool((keep[1:] <= keep[:-1]).any()) or int(keep[0]) < 0 or int(keep[-1]) >= n_tokens:
        raise ValueError(f"kept indices must be strictly increasing and in [0, {n_tokens}), got {keep.tolist()}")
    return keep


def kept_patch_rows(keep: torch.Tensor, merge_size: int) -> torch.Tensor:
    """Patch rows (of one item) that make up the kept merged tokens, in the order the tower expects.

    Args:
        keep (torch.LongTensor of shape (k,)): kept merged-token indices, strictly increasing.
        merge_size: patches merged per token side ``m``.

    Returns:
        torch.LongTensor of shape (k * m * m,): ``keep[i] * m*m + r`` for ``r`` in ``0 .. m*m-1``, token-major.
    """
    unit = merge_size * merge_size
    offsets = torch.arange(unit, device=keep.device)  # (m*m,)
    return (keep.long().unsqueeze(1) * unit + offsets).flatten()  # (k * m*m,)


def gather_rows(full: torch.Tensor, keep: torch.Tensor, merge_size: int) -> torch.Tensor:
    """Rows of a full-grid per-patch tensor (position ids, interpolation taps...) at the kept tokens' patches.

    Args:
        full (torch.Tensor of shape (t*h*w, ...)): one row per patch of the item, in the tower's patch order.
        keep (torch.LongTensor of shape (k,)): kept merged-token indices.

    Returns:
        torch.Tensor of shape (k * m * m, ...).
    """
    return full[kept_patch_rows(keep, merge_size).to(full.device)]


def kept_cu_seqlens(keep: torch.Tensor, merged_grid: tuple[int, int, int], merge_size: int) -> torch.Tensor:
    """Full-attention segments of the kept patches: one per frame (as the towers do), empty frames left out.

    Args:
        keep (torch.LongTensor of shape (k,)): kept merged-token indices of one item.
        merged_grid: (t, h/m, w/m).

    Returns:
        torch.IntTensor of shape (n_frames_with_kept + 1,): cumulative patch counts starting at 0.
    """
    t, h, w = merged_grid
    per_frame = torch.bincount(keep.long().cpu() // (h * w), minlength=t)  # (t,)
    counts = per_frame[per_frame > 0] * merge_size * merge_size  # (t',)
    return torch.nn.functional.pad(counts.cumsum(0), (1, 0)).to(dtype=torch.int32, device=keep.device)


def kept_windows(
    keep: torch.Tensor, full_window_index: torch.Tensor, full_cu_window_seqlens: torch.Tensor, merge_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Qwen2.5-VL window attention restricted to the kept tokens, windows of the ORIGINAL grid.

    ``full_window_index`` / ``full_cu_window_seqlens`` are the tower's own partition of the full grid
    (``transformers.vision_utils.get_vision_window_index``): the order in which it visits merged tokens and the
    cumulative patch count at each window's end. Each window keeps its kept members, in the same order; windows left
    empty disappear.

    Args:
        keep (torch.LongTensor of shape (k,)): kept merged-token indices of one item.
        full_window_index (torch.LongTensor of shape (N,)): permutation of 0..N-1 (window-major token order).
        full_cu_window_seqlens (torch.IntTensor of shape (n_windows + 1,)): window boundaries in PATCHES.

    Returns:
        window_index (torch.LongTensor of shape (k,)): permutation of 0..k-1 (positions in ``keep``) in window order;
        cu_window_seqlens (torch.IntTensor of shape (n_nonempty_windows + 1,)): boundaries in patches.
    """
    device = keep.device
    unit = merge_size * merge_size
    order = full_window_index.long().cpu()  # (N,) token visited at each window-order position
    bounds = full_cu_window_seqlens.long().cpu() // unit  # (W+1,) boundaries in tokens
    window_of_position = torch.bucketize(torch.arange(order.numel()), bounds[1:], right=True)  # (N,)
    local = torch.full((order.numel(),), -1, dtype=torch.long)  # token -> position in keep, -1 if dropped
    local[keep.long().cpu()] = torch.arange(keep.numel())
    visited = local[order]  # (N,) kept-local index in window order, -1 where dropped
    kept_here = visited >= 0
    window_index = visited[kept_here]  # (k,)
    counts = torch.bincount(window_of_position[kept_here], minlength=bounds.numel() - 1)  # (W,)
    counts = counts[counts > 0] * unit  # (W',)
    cu = torch.nn.functional.pad(counts.cumsum(0), (1, 0)).to(torch.int32)  # (W'+1,)
    return window_index.to(device), cu.to(device)


@dataclass
class KeptItem:
    """What the tower needs for one item's kept patches.

    Attributes:
        rows (torch.LongTensor of shape (k * m * m,)): patch rows of this item (0-based within the item).
        n_tokens: ``k``, the number of kept merged tokens.
        kwargs: tower keyword arguments for this item alone (``position_ids``, ``cu_seqlens``, ...); see
            :data:`CUMULATIVE_KEYS` / :data:`TOKEN_INDEX_KEYS` for how they are packed.
    """

    rows: torch.Tensor
    n_tokens: int
    kwargs: dict[str, torch.Tensor] = field(default_factory=dict)


def concat_items(items: Sequence[KeptItem], patch_starts: Sequence[int]) -> tuple[torch.Tensor, dict[str, Any]]:
    """Pack several items into one tower call.

    Args:
        items: per item, its :class:`KeptItem`.
        patch_starts: per item, its first row in the modality's ``pixel_values``.

    Returns:
        rows (torch.LongTensor of shape (sum k_i * m * m,)): rows of ``pixel_values`` to encode;
        kwargs: the packed tower keyword arguments (cumulative boundaries shifted, token indices shifted).
    """
    if not items:
        raise ValueError("concat_items needs at least one item")
    rows = torch.cat([it.rows + int(s) for it, s in zip(items, patch_starts, strict=True)])  # (P,)
    packed: dict[str, Any] = {}
    for key in items[0].kwargs:
        parts = []
        patch_offset = token_offset = 0
        for i, it in enumerate(items):
            v = it.kwargs[key]
            if key in CUMULATIVE_KEYS:
                parts.append(v + patch_offset if i == 0 else v[1:] + patch_offset)
            elif key in TOKEN_INDEX_KEYS:
                parts.append(v + token_offset)
            else:
                parts.append(v)
            patch_offset += it.rows.numel()
            token_offset += it.n_tokens
        packed[key] = torch.cat(parts)
    return rows, packed


def _packed_shape(query: torch.Tensor, n_rows: int) -> tuple[int, int]:
    """(heads, head dim) of packed rows (P, H, d), refused when P is not the layout's ``n_rows``."""
    rows, heads, dim = query.shape
    if rows != n_rows:
        raise ValueError(f"the layout has {n_rows} rows, the query {rows}")
    return heads, dim


@dataclass(frozen=True)
class PaddedSegments:
    """Packed variable-length attention segments laid out as one padded batch: ONE attention call for all of them.

    Segment ``s`` holds packed rows ``cu[s] .. cu[s+1]-1``; in the padded layout it is batch row ``s``, its rows at
    slots ``0 .. len_s-1`` and padding after them. Padded keys are masked out (``key_mask``); padded query slots
    attend to their segment's real keys (finite values) and are dropped when the rows are scattered back. When every
    segment has the same length there is no padding: no mask, no gather, a plain reshape.

    Attributes:
        n_segments: ``S``.
        length: ``L``, the longest segment.
        n_rows: ``P``, the packed rows (``cu[-1]``).
        index (torch.LongTensor of shape (S, L) or None): packed row at each slot (padding repeats the segment's
            first row); ``None`` when all segments have length ``L``.
        slots (torch.LongTensor of shape (P,) or None): flat slot ``s * L + j`` of each packed row; ``None`` likewise.
        key_mask (torch.BoolTensor of shape (S, 1, 1, L) or None): True on real keys; ``None`` likewise.
    """

    n_segments: int
    length: int
    n_rows: int
    index: torch.Tensor | None = None
    slots: torch.Tensor | None = None
    key_mask: torch.Tensor | None = None

    @classmethod
    def from_cu_seqlens(cls, cu_seqlens: torch.Tensor) -> PaddedSegments:
        """The layout of the segments ``cu_seqlens`` delimits.

        Reads the boundaries to the host once (they size the padded batch): one sync per layout and tower call,
        none per block.

        Args:
            cu_seqlens (torch.IntTensor of shape (S + 1,)): cumulative segment lengths starting at 0, non-decreasing.
        """
        bounds = [int(b) for b in cu_seqlens.tolist()]  # the one host read
        lengths = [b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
        if not lengths or bounds[0] != 0 or any(b < a for a, b in zip(bounds[:-1], bounds[1:], strict=True)):
            raise ValueError(f"cu_seqlens must start at 0, be non-decreasing and hold a non-empty segment: {bounds}")
        n_segments, length, n_rows = len(lengths), max(lengths), bounds[-1]
        if all(n == length for n in lengths):
            return cls(n_segments, length, n_rows)
        device = cu_seqlens.device
        lens = torch.tensor(lengths, device=device)  # (S,)
        starts = lens.cumsum(0) - lens  # (S,)
        offset = torch.arange(length, device=device)  # (L,)
        real = offset.unsqueeze(0) < lens.unsqueeze(1)  # (S, L)
        index = starts.unsqueeze(1) + torch.where(real, offset.unsqueeze(0), 0)  # (S, L)
        segment = torch.repeat_interleave(torch.arange(n_segments, device=device), lens, output_size=n_rows)  # (P,)
        slots = segment * length + torch.arange(n_rows, device=device) - starts[segment]  # (P,)
        return cls(n_segments, length, n_rows, index, slots, real.view(n_segments, 1, 1, length))

    def attend(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scale: float) -> torch.Tensor:
        """Bidirectional attention within each segment, all segments in one ``scaled_dot_product_attention`` call.

        Equal to attending segment by segment up to the order of float sums: exactly equal (same kernel on the
        same (L, d) blocks) when all segments have the same length; otherwise the padded keys add exact zeros but
        the kernel may sum the real terms in another order (see ``tests/test_foveation.py`` for the bound).

        Args:
            query, key, value (torch.Tensor of shape (P, H, d)): packed rows, heads, head dim.
            scale: the softmax scale (the attention module's ``scaling``).

        Returns:
            torch.Tensor of shape (P, H, d).
        """
        heads, dim = _packed_shape(query, self.n_rows)

        def padded(x: torch.Tensor) -> torch.Tensor:  # (P, H, d) -> (S, H, L, d)
            x = x if self.index is None else x[self.index]  # (S, L, H, d) after the gather
            return x.reshape(self.n_segments, self.length, heads, dim).transpose(1, 2)

        out = torch.nn.functional.scaled_dot_product_attention(
            padded(query), padded(key), padded(value), attn_mask=self.key_mask, scale=scale
        )  # (S, H, L, d)
        out = out.transpose(1, 2).reshape(self.n_segments * self.length, heads, dim)  # (S*L, H, d)
        return out if self.slots is None else out[self.slots]  # (P, H, d)


@dataclass(frozen=True)
class GroupedSegments:
    """Packed attention segments grouped by length: ONE attention call per distinct length, bit for bit the
    per-segment calls.

    Every group is a batch of segments of one length ``L`` (no padding, no mask), so each (segment, head) block goes
    through the same kernel on the same (L, d) values, laid out as the library's per-segment calls lay them out (row
    stride ``H * d``, head stride ``d``): the result equals attending segment by segment EXACTLY (on a CPU, tested in
    ``tests/test_foveation.py``; on a GPU as long as the kernel computes each (batch, head) block on its own, which
    SDPA's flash and memory-efficient kernels do). A whole page's windows come in a few lengths (whole windows, and
    the cut windows of the last row and column): a few calls per block instead of one per window. A group whose
    segments are adjacent (a page whose width is a whole number of windows: the whole windows, then the cut last
    row) is a slice of the packed rows, neither gathered nor scattered back.
    :class:`PaddedSegments` is one call whatever the lengths, exact only when they are all equal; the foveated tower
    (many lengths) uses it, the full tower this.

    Attributes:
        n_rows: ``P``, the packed rows (``cu[-1]``).
        groups: per distinct length ``L``, by first row: ``(L, first, S_L, rows)``; ``rows`` (torch.LongTensor of
            shape (S_L * L,)) the packed rows of its ``S_L`` segments, segment after segment, or ``None`` when they are
            the adjacent rows ``first .. first + S_L * L - 1``.
    """

    n_rows: int
    groups: tuple[tuple[int, int, int, torch.Tensor | None], ...]

    @classmethod
    def from_cu_seqlens(cls, cu_seqlens: torch.Tensor) -> GroupedSegments:
        """The groups of the segments ``cu_seqlens`` delimits (empty segments skipped). Reads the boundaries to the
        host once (one sync per layout and tower call, none per block); the gathered groups' row indices go to the
        device in one copy.

        Args:
            cu_seqlens (torch.IntTensor of shape (S + 1,)): cumulative segment lengths starting at 0, non-decreasing.
        """
        bounds = [int(b) for b in cu_seqlens.tolist()]  # the one host read
        if not bounds or bounds[0] != 0 or any(b < a for a, b in zip(bounds[:-1], bounds[1:], strict=True)):
            raise ValueError(f"cu_seqlens must start at 0 and be non-decreasing: {bounds}")
        starts: dict[int, list[int]] = {}
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            if b > a:
                starts.setdefault(b - a, []).append(a)
        if not starts:
            raise ValueError(f"cu_seqlens holds no non-empty segment: {bounds}")
        order = sorted(starts, key=lambda n: starts[n][0])  # lengths by first row
        adjacent = {n: starts[n][-1] - starts[n][0] == (len(starts[n]) - 1) * n for n in order}
        gathered = [n for n in order if not adjacent[n]]
        rows: dict[int, torch.Tensor] = {}
        if gathered:
            index = [(np.asarray(starts[n])[:, None] + np.arange(n)).ravel() for n in gathered]
            on_device = torch.from_numpy(np.concatenate(index)).to(cu_seqlens.device)  # one upload
            rows = dict(zip(gathered, on_device.split([len(i) for i in index]), strict=True))
        return cls(bounds[-1], tuple((n, starts[n][0], len(starts[n]), rows.get(n)) for n in order))

    def attend(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scale: float) -> torch.Tensor:
        """As :meth:`PaddedSegments.attend` ((P, H, d) in and out), with one ``scaled_dot_product_attention`` call
        per segment length."""
        heads, dim = _packed_shape(query, self.n_rows)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        outs = []
        for length, first, count, rows in self.groups:

            def batch(x: torch.Tensor, length: int = length, first: int = first, count: int = count,
                      rows: torch.Tensor | None = rows) -> torch.Tensor:  # fmt: skip
                x = x[first : first + count * length] if rows is None else x[rows]  # (S_L * L, H, d)
                return x.view(count, length, heads, dim).transpose(1, 2)  # (S_L, H, L, d)

            got = sdpa(batch(query), batch(key), batch(value), scale=scale)  # (S_L, H, L, d)
            outs.append(got.transpose(1, 2).reshape(count * length, heads, dim))  # (S_L * L, H, d)
        if all(rows is None for *_, rows in self.groups):  # adjacent groups tile the rows in order
            return outs[0] if len(outs) == 1 else torch.cat(outs)
        out = query.new_empty(query.shape)
        for (_, first, _, rows), got in zip(self.groups, outs, strict=True):
            if rows is None:
                out[first : first + got.shape[0]] = got
            else:
                out[rows] = got
        return out


def encode_kept(
    model: Any,
    adapter: Any,
    pixel_values: torch.Tensor,
    grid_thw: torch.Tensor,
    keeps: Sequence[torch.Tensor],
    host_grids: Any = None,
) -> tuple[Any, list[int]]:
    """Run ``model.model.visual`` once on the kept patches of all items of one modality.

    With ``host_grids`` (the grids already read to the host) and ``keeps`` on the CPU (host copies of the decision),
    the tower's inputs (patch rows, rotary positions, segments, windows, interpolation taps) are built on the host
    and uploaded once: on a GPU no launch and no sync per item (``profiling.on_host``). Otherwise they are built on
    the device of ``grid_thw``, item by item.

    Args:
        model: the ``...ForConditionalGeneration`` model.
        adapter: its :class:`~arr_coc.integrations.base.FamilyAdapter` (supplies :meth:`kept_item`).
        pixel_values (torch.Tensor of shape (sum t*h*w, C*temporal_patch_size*patch_size**2)): all items' patches.
        grid_thw (torch.LongTensor of shape (num_items, 3)): their FULL patch grids.
        keeps: per item, LongTensor (k_i,) of kept merged-token indices, strictly increasing; an item may keep
            nothing (k_i = 0: a page that gets no tokens of a prompt's budget): the tower does not see it at all
            (neither its patches nor its grid), but at least one item must keep a token.
        host_grids (array-like of shape (num_items, 3) or None): ``grid_thw`` on the host.

    Returns:
        The tower's raw output (``pooler_output`` of shape (sum k_i, D), in kept order; Qwen3-VL also
        ``deepstack_features``) and the split sizes ``[k_i]``.
    """
    from arr_coc.profiling import on_host

    on_the_host = host_grids is not None and all(k.device.type == "cpu" for k in keeps)
    grid_rows = host_grids if on_the_host else grid_thw.tolist()
    grids = [tuple(int(v) for v in g) for g in grid_rows]
    if len(keeps) != len(grids):
        raise ValueError(f"{len(keeps)} keep lists for {len(grids)} items")
    _, merge, _ = adapter.geometry(model)
    # on the host: every tensor of this region is made from ``keeps`` (host copies) and the host grids
    with on_host() if on_the_host else contextlib.nullcontext():
        items, starts, start, sizes, seen = [], [], 0, [], []
        for i, (grid, keep) in enumerate(zip(grids, keeps, strict=True)):
            n_tokens = grid[0] * grid[1] * grid[2] // (merge * merge)
            keep = _check_keep(keep if on_the_host else keep.to(grid_thw.device), n_tokens)
            sizes.append(int(keep.numel()))
            if keep.numel():  # an item that keeps nothing is not encoded
                items.append(adapter.kept_item(model, grid, keep))
                starts.append(start)
                seen.append(i)
            start += grid[0] * grid[1] * grid[2]
        if start != pixel_values.shape[0]:
            raise ValueError(f"pixel_values has {pixel_values.shape[0]} patch rows, the grids make {start}")
        if not items:
            raise ValueError("foveation needs at least one kept token over the images / videos it encodes")
        rows, kwargs = concat_items(items, starts)
    visual = model.model.visual
    if rows.numel() == start:  # every token kept: the foveated tower IS the full tower
        raw = adapter.run_full_tower(model, pixel_values, grid_thw)
    else:
        if on_the_host:  # one upload per tensor, no wait
            kwargs = {key: v.to(grid_thw.device) for key, v in kwargs.items()}
        hidden = pixel_values[rows.to(pixel_values.device)].type(visual.dtype)  # (P, patch_dim)
        encoded = grid_thw if len(seen) == len(grids) else grid_thw[torch.tensor(seen, device=grid_thw.device)]
        raw = adapter.run_tower(model, hidden, encoded, kwargs)
    return raw, sizes
