"""The pruned sequence, step by step: pure functions from tensors to tensors, no model (``compress``'s corridor).

    input_ids ──► locate (which placeholder columns belong to which image / video) ──► the question of each item
              ──► (the model's seams: full M-RoPE positions, vision tower; the decision: ``Realizer.decide``)
              ──► kept columns ──► repack (each row shrinks by its own amount, re-padded; positions gathered)

``CompressedModel`` (``compress.py``) is these steps in order; each can be tested on hand-made tensors. Nothing here
knows a model family: the position rows (3 M-RoPE rows, or whatever the model's ``get_rope_index`` returns) are
gathered as they come, and the family's own layouts (token ids, the 4-row ``generate`` positions) live in its adapter
(``base.py`` and the family files). The steps work on whole batches with tensor ops (no Python loop per token).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from arr_coc.reading.text import valid_text

# Inputs compress() computes itself; passing them would silently disagree with the pruned sequence.
REFUSED = {
    "inputs_embeds": "compress() builds the pruned sequence from input_ids (it must see the image placeholder "
    "tokens to know which tokens to drop); pass input_ids as the processor returns them, not inputs_embeds",
    "position_ids": "compress() computes the M-RoPE positions itself (the model's get_rope_index on the full input, "
    "gathered at the kept tokens); do not pass position_ids",
    "mm_encoder_outputs": "compress() runs the vision tower itself; pass pixel_values / pixel_values_videos",
}


def past_length(kwargs: dict[str, Any]) -> int:
    """Number of tokens already in ``kwargs["past_key_values"]`` (0 without a cache)."""
    cache = kwargs.get("past_key_values")
    return int(cache.get_seq_length()) if cache is not None and hasattr(cache, "get_seq_length") else 0


@dataclass
class PrunedInputs:
    """The pruned sequence of the last call (for inspection and tests).

    Attributes:
        input_ids (torch.LongTensor of shape (batch_size, pruned_length)): prompt without the dropped placeholders.
        attention_mask (torch.LongTensor of shape (batch_size, pruned_length) or None): 0 on padding.
        position_ids (torch.LongTensor of shape (3, batch_size, pruned_length)): the full sequence's M-RoPE
            positions gathered at the kept columns (0 on padding).
        index_map (torch.LongTensor of shape (batch_size, pruned_length)): column of the ORIGINAL input each pruned
            column came from, -1 for padding added by re-padding. Use it to map logits back.
        rope_deltas (torch.LongTensor of shape (batch_size, 1)): next position minus real pruned length per sample;
            the first generated token of sample ``b`` sits at ``max position of the unpruned sample + 1``.
        mm_encoder_outputs: the pruned encoder outputs handed to the model (``{"image": ..., "video": ...}``; for
            Qwen3-VL with ``deepstack_features`` sliced, and zeroed per ``deepstack_tiers``).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor | None
    position_ids: torch.Tensor
    index_map: torch.Tensor
    rope_deltas: torch.Tensor
    mm_encoder_outputs: dict[str, Any]


@dataclass
class VisualItem:
    """One image or video of a batch, located in the prompt.

    Attributes:
        kind: ``"image"`` or ``"video"``.
        index: its row in ``image_grid_thw`` / ``video_grid_thw``.
        sample: the row of ``input_ids`` that holds its placeholder tokens.
        cols (torch.LongTensor of shape (N,)): columns of its placeholder tokens in that row, ascending.
        grid_thw: (t, h, w) patch grid (NOT merged).
        patch_start: first row of its patches in ``pixel_values`` / ``pixel_values_videos``.
        span: (first, last) of ``cols``, on the host (the question is read around them without a device read).
    """

    kind: str
    index: int
    sample: int
    cols: torch.Tensor
    grid_thw: tuple[int, int, int]
    patch_start: int
    span: tuple[int, int] = (-1, -1)

    @property
    def n_patches(self) -> int:
        """Rows of ``pixel_values`` this item owns (t * h * w)."""
        t, h, w = self.grid_thw
        return t * h * w

    def merged_grid(self, merge_size: int) -> tuple[int, int, int]:
        """(t, h // merge_size, w // merge_size): its grid of visual tokens."""
        t, h, w = self.grid_thw
        return t, h // merge_size, w // merge_size


def locate_items(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    kind: str,
    token_id: int,
    grid_thw: torch.Tensor,
    merge_size: int,
) -> list[VisualItem]:
    """Assign the placeholder tokens of one modality to its items.

    The i-th block of N_i = t*h*w / merge_size**2 placeholder tokens, in row-major order over ``input_ids``, belongs
    to item i (the order in which the model scatters features), and must lie within one sample.

    Args:
        input_ids (torch.LongTensor of shape (batch_size, sequence_length)): the unpruned prompt.
        attention_mask (torch.LongTensor of shape (batch_size, sequence_length) or None): 0 on padding.
        kind: ``"image"`` or ``"video"`` (for messages and :attr:`VisualItem.kind`).
        token_id: the placeholder token id of this modality.
        grid_thw (torch.LongTensor of shape (num_items, 3)): patch grids, as the processor returns them.
        merge_size: patches merged per token side.

    Returns:
        One :class:`VisualItem` per row of ``grid_thw``, in that order.

    Raises:
        ValueError: if the placeholders and the grids do not match, an item spans samples, or placeholders are
            masked out.
    """
    if grid_thw.dim() != 2 or grid_thw.shape[1] != 3:
        raise ValueError(f"{kind}_grid_thw must have shape (num_{kind}s, 3), got {tuple(grid_thw.shape)}")
    grid_list = [tuple(int(v) for v in row) for row in grid_thw.tolist()]
    sizes = [t * h * w // (merge_size * merge_size) for t, h, w in grid_list]
    where = (input_ids == token_id).nonzero()  # (M, 2) rows (sample, column), row-major
    if where.shape[0] != sum(sizes):
        raise ValueError(
            f"input_ids holds {where.shape[0]} {kind} placeholder tokens but {kind}_grid_thw describes "
            f"{sum(sizes)} ({' + '.join(map(str, sizes))}); the prompt and the {kind}s do not match"
        )
    if attention_mask is not None and where.shape[0]:
        if not bool(attention_mask[where[:, 0], where[:, 1]].all()):
            raise ValueError(f"some {kind} placeholder tokens are masked out by attention_mask")
    items, start, patch = [], 0, 0
    host = where.tolist()  # [(sample, column)]: one read of the placeholders' places for every item below
    for i, (n, thw) in enumerate(zip(sizes, grid_list, strict=True)):
        block = where[start : start + n]  # (n, 2)
        rows = sorted({r for r, _ in host[start : start + n]})
        if len(rows) != 1:
            raise ValueError(
                f"the placeholder tokens of {kind} {i} span samples {rows}; input_ids and {kind}_grid_thw do not match"
            )
        span = (host[start][1], host[start + n - 1][1]) if n else (-1, -1)
        items.append(VisualItem(kind, i, rows[0], block[:, 1], thw, patch, span))  # type: ignore[arg-type]
        start += n
        patch += thw[0] * thw[1] * thw[2]
    return items


def turn_query_ids(
    row: Sequence[int], row_mask: Sequence[int], first: int, last: int, ids: dict[str, int]
) -> list[int]:
    """Token ids of the question around a visual item: the text of the user turn that holds it.

    That is the turn's text before the item and after it, without the role header (``user\\n``), placeholders,
    vision markers, padding, and anything between ``first`` and ``last`` (e.g. the timestamps between a Qwen3-VL
    video's frames).

    Args:
        row: one row of ``input_ids``.
        row_mask: its attention mask (1 = real token).
        first, last: columns of the item's first and last placeholder token.
        ids: special token ids: ``image``, ``video``, ``vision_start``, ``vision_end``, ``im_start``, ``im_end``,
            ``newline``.
    """
    start = first - 1
    while start >= 0 and row[start] != ids["im_start"]:
        start -= 1
    end = last + 1
    while end < len(row) and row[end] != ids["im_end"]:
        end += 1
    begin = start + 1
    if start >= 0:  # skip the role header "user\n"
        for j in range(begin, min(begin + 3, end)):
            if row[j] == ids["newline"]:
                begin = j + 1
                break
    skip = {ids["image"], ids["video"], ids["vision_start"], ids["vision_end"], ids["im_start"], ids["im_end"]}
    return [row[j] for j in range(begin, end) if row_mask[j] and row[j] not in skip and not first <= j <= last]


def kept_columns(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    items: Sequence[VisualItem],
    keeps: Sequence[torch.Tensor],
) -> torch.Tensor:
    """The columns of ``input_ids`` that stay: every real token except the dropped placeholders.

    Args:
        input_ids (torch.LongTensor of shape (batch_size, sequence_length)): the unpruned prompt.
        attention_mask (torch.LongTensor of shape (batch_size, sequence_length) or None): 0 on padding (dropped).
        items: the located items.
        keeps: per item, its kept indices into its own placeholder columns (ascending).

    Returns:
        torch.BoolTensor of shape (batch_size, sequence_length) on the device of ``input_ids``.
    """
    device = input_ids.device
    keep_col = torch.ones(input_ids.shape, dtype=torch.bool, device=device)  # (B, L)
    for item, keep in zip(items, keeps, strict=True):
        cols = item.cols.to(device)  # (N,)
        dropped = torch.ones(cols.numel(), dtype=torch.bool, device=device)  # (N,)
        dropped[keep.to(device)] = False
        keep_col[item.sample, cols[dropped]] = False
    if attention_mask is not None:
        keep_col &= attention_mask.to(device).bool()
    return keep_col


def padding_side(attention_mask: torch.Tensor | None, override: str | None = None) -> str:
    """``override`` if given, else the side the input is padded on (``"left"`` when unpadded or unknown)."""
    if override is not None:
        return override
    if attention_mask is None:
        return "left"
    left, right = torch.stack([(attention_mask[:, 0] == 0).any(), (attention_mask[:, -1] == 0).any()]).tolist()
    return "right" if right and not left else "left"  # one read of both flags


@dataclass
class Repacked:
    """Output of :func:`repack`: the pruned, re-padded sequence.

    Attributes:
        input_ids (torch.LongTensor of shape (batch_size, pruned_length)): kept tokens, ``pad_id`` on padding.
        attention_mask (torch.LongTensor of shape (batch_size, pruned_length) or None): 0 on padding; None when
            the input had none, nothing had to be padded, and ``always_mask`` was False.
        mm_token_type_ids (torch.LongTensor of shape (batch_size, pruned_length) or None): gathered, 0 on padding.
        position_ids (torch.LongTensor of shape (P, batch_size, pruned_length)): full positions gathered at the
            kept columns, 0 on padding.
        index_map (torch.LongTensor of shape (batch_size, pruned_length)): original column, -1 on padding.
        rope_deltas (torch.LongTensor of shape (batch_size, 1)): next position minus real pruned length.
        labels (torch.LongTensor of shape (batch_size, pruned_length) or None): gathered, -100 on padding.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor | None
    mm_token_type_ids: torch.Tensor | None
    position_ids: torch.Tensor
    index_map: torch.Tensor
    rope_deltas: torch.Tensor
    labels: torch.Tensor | None = None


def repack(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    keep_col: torch.Tensor,
    position_ids: torch.Tensor,
    rope_deltas: torch.Tensor,
    side: str,
    pad_id: int,
    mm_token_type_ids: torch.Tensor | None = None,
    labels: torch.Tensor | None = None,
    always_mask: bool = False,
) -> Repacked:
    """Gather every per-token input at the kept columns; each row shrinks by its own amount and is re-padded.

    Old padding is dropped (``keep_col`` is False there) and laid anew on ``side``.

    Args:
        input_ids (torch.LongTensor of shape (batch_size, sequence_length)): the unpruned prompt.
        attention_mask (torch.LongTensor of shape (batch_size, sequence_length) or None): 0 on padding.
        keep_col (torch.BoolTensor of shape (batch_size, sequence_length)): columns that stay (see
            :func:`kept_columns`).
        position_ids (torch.LongTensor of shape (P, batch_size, sequence_length)): positions of the full sequence
            (P = 3 M-RoPE rows for Qwen-VL), gathered row by row.
        rope_deltas (torch.LongTensor of shape (batch_size, 1)): the full sequence's max position + 1 - real length.
        side: ``"left"`` or ``"right"``: where the new padding goes.
        pad_id: token id written on padding.
        mm_token_type_ids (torch.LongTensor of shape (batch_size, sequence_length) or None): 0 text, 1 image, 2 video.
        labels (torch.LongTensor of shape (batch_size, sequence_length) or None): training labels.
        always_mask: build an attention mask even when the input had none and no row needed padding.

    Returns:
        :class:`Repacked`.
    """
    batch, length = input_ids.shape
    device = input_ids.device
    keep_col = keep_col.to(device)
    lengths = keep_col.sum(1)  # (B,) tokens left per row
    new_len = int(lengths.max())
    # destination column of each kept column; dropped ones go to a spare column new_len, cut off below
    rank = keep_col.long().cumsum(1) - 1  # (B, L)
    offset = (new_len - lengths) if side == "left" else torch.zeros_like(lengths)  # (B,)
    dest = torch.where(keep_col, rank + offset.view(-1, 1), torch.full_like(rank, new_len))  # (B, L)
    source = torch.arange(length, device=device).expand(batch, length)  # (B, L)
    index_map = torch.full((batch, new_len + 1), -1, dtype=torch.long, device=device)
    index_map = index_map.scatter(1, dest, source)[:, :new_len]  # (B, L') original column or -1
    filled = index_map < 0  # (B, L')
    gather = index_map.clamp_min(0)  # (B, L')

    def take(x: torch.Tensor, fill: int) -> torch.Tensor:  # (B, L) -> (B, L')
        return x.gather(1, gather.to(x.device)).masked_fill(filled.to(x.device), fill)

    new_ids = take(input_ids, pad_id)  # (B, L')
    if attention_mask is None and not bool(filled.any()) and not always_mask:
        new_mask = None
    else:
        new_mask = take(attention_mask if attention_mask is not None else torch.ones_like(input_ids), 0)  # (B, L')
    new_types = take(mm_token_type_ids, 0) if mm_token_type_ids is not None else None  # (B, L')
    pos_index = gather.to(position_ids.device).unsqueeze(0).expand(position_ids.shape[0], -1, -1)  # (P, B, L')
    new_pos = position_ids.gather(2, pos_index).masked_fill(filled.to(position_ids.device).unsqueeze(0), 0)
    real_full = attention_mask.sum(1) if attention_mask is not None else torch.full((batch,), length, device=device)
    real_new = new_mask.sum(1) if new_mask is not None else torch.full((batch,), new_len, device=device)  # (B,)
    next_pos = rope_deltas.view(-1).to(device) + real_full.to(device)  # (B,) max position + 1, unpruned
    deltas = (next_pos - real_new.to(device)).view(-1, 1)  # (B, 1)
    new_labels = take(labels, -100) if labels is not None else None
    return Repacked(new_ids, new_mask, new_types, new_pos, index_map, deltas, new_labels)


def check_inputs(input_ids: torch.Tensor | None, kwargs: dict[str, Any], token_ids: dict[str, int]) -> bool:
    """Every check of a call's inputs that needs no model; True if there is anything to prune.

    Args:
        input_ids (torch.LongTensor of shape (batch_size, sequence_length) or None): the prompt.
        kwargs: the call's other inputs, as the processor returns them.
        token_ids: the family's ``image`` / ``video`` placeholder ids.

    Raises:
        ValueError: one message naming the input and what to pass instead.
    """
    for key, why in REFUSED.items():
        if kwargs.get(key) is not None:
            raise ValueError(f"{key} was passed: {why}")
    has_images = kwargs.get("pixel_values") is not None
    has_videos = kwargs.get("pixel_values_videos") is not None
    if has_images and kwargs.get("image_grid_thw") is None:
        raise ValueError("pixel_values was passed without image_grid_thw; pass both, as the processor returns them")
    if has_videos and kwargs.get("video_grid_thw") is None:
        raise ValueError(
            "pixel_values_videos was passed without video_grid_thw; pass both, as the processor returns them"
        )
    prefill = past_length(kwargs) == 0
    if not (has_images or has_videos):
        if prefill and isinstance(input_ids, torch.Tensor):
            for kind, key in (("image", "pixel_values"), ("video", "pixel_values_videos")):
                if bool((input_ids == token_ids[kind]).any()):
                    raise ValueError(f"input_ids holds {kind} placeholder tokens but no {key} were passed")
        return False
    if input_ids is None:
        raise ValueError("compress() needs input_ids (with the image/video placeholder tokens)")
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must have shape (batch_size, sequence_length), got {tuple(input_ids.shape)}")
    if not prefill:
        raise ValueError("compress() prunes whole prompts; new images on top of a non-empty cache are not supported")
    return True


def locate(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    visual: dict[str, tuple[torch.Tensor | None, torch.Tensor | None]],
    ids: dict[str, int],
    merge_size: int,
) -> list[VisualItem]:
    """Every image, then every video, of the batch (:func:`locate_items` per modality).

    Args:
        visual: ``{"image": (pixel_values, image_grid_thw), "video": (pixel_values_videos, video_grid_thw)}``.

    Raises:
        ValueError: placeholders of a modality whose pixels were not passed (and :func:`locate_items`'s).
    """
    items: list[VisualItem] = []
    for kind, key in (("image", "pixel_values"), ("video", "pixel_values_videos")):
        pixels, grid = visual[kind]
        if pixels is not None and grid is not None:
            items += locate_items(input_ids, attention_mask, kind, ids[kind], grid, merge_size)
        elif (input_ids == ids[kind]).any():
            raise ValueError(f"input_ids holds {kind} placeholder tokens but no {key} were passed")
    return items


def questions(
    items: Sequence[VisualItem],
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    query: str | Sequence[str | None] | None,
    ids: dict[str, int],
    tokenizer: Any = None,
) -> list[tuple[list[int], str | None]]:
    """The question of each item, as token ids and text: ``query`` (one string, or one per sample; None = take it
    from the prompt) or the text of the user turn that holds the item (:func:`turn_query_ids`), decoded with
    ``tokenizer`` (text None without one).

    Raises:
        ValueError: a per-sample list of the wrong length, or a string query without a tokenizer.
    """
    batch = input_ids.shape[0]
    queries = list(query) if isinstance(query, (list, tuple)) else [query] * batch
    if len(queries) != batch:
        raise ValueError(f"query is a list of {len(queries)} for a batch of {batch} samples")
    if any(isinstance(q, str) for q in queries) and tokenizer is None:
        raise ValueError("a string query= needs a tokenizer: pass compress(..., processor=...) or tokenizer=...")
    rows = input_ids.tolist()
    masks = attention_mask.tolist() if attention_mask is not None else [[1] * input_ids.shape[1]] * batch
    out: list[tuple[list[int], str | None]] = []
    for it in items:
        q = queries[it.sample]
        if isinstance(q, str):
            q = valid_text(q)  # a lone surrogate (undecodable terminal byte, JSON escape) is not text
            try:
                encoded = tokenizer.encode(q, add_special_tokens=False)
            except TypeError:
                encoded = tokenizer.encode(q)
            out.append(([int(i) for i in encoded], q))
            continue
        first, last = it.span if it.span[0] >= 0 else (int(it.cols[0]), int(it.cols[-1]))
        q_ids = turn_query_ids(rows[it.sample], masks[it.sample], first, last, ids)
        out.append((q_ids, tokenizer.decode(q_ids) if hasattr(tokenizer, "decode") else None))
    return out
