"""``arr_coc.compress``: drop-in visual-token pruning for Qwen-VL models, as a wrapper (never a patch).

``cm = compress(model, budget=0.25)`` returns a :class:`CompressedModel`. ``cm(**inputs)`` and
``cm.generate(**inputs, **gen_kwargs)`` take exactly what the model's processor returns and return what the model
returns; every other attribute (``cm.config``, ``cm.device``, ...) is the model's. Nothing of ``transformers`` is
patched and nothing is assigned onto the model or its modules: the unwrapped model keeps working unchanged.

What a call does, for a batch that holds images or videos:

1. runs the vision tower once (``model.model.get_image_features`` / ``get_video_features``) on the full pixels;
2. computes the M-RoPE positions of the FULL, unpruned sequence with the model's own ``get_rope_index``;
3. scores every merged visual token against the question (see :mod:`arr_coc.integrations.base`), turns the budget
   into a count per image/video (``arr_coc.attending.resolve_budget``) and keeps the top ones
   (``arr_coc.attending.select``);
4. drops the other placeholder tokens from ``input_ids`` (each sample shrinks by its own amount; rows are re-padded
   and ``attention_mask`` rebuilt), gathers the full positions at the kept columns, and calls the model with the
   pruned ``mm_encoder_outputs`` (Qwen3-VL: DeepStack levels sliced with the same indices) and explicit
   ``position_ids``.

With ``foveate=True`` steps 1 and 3 swap: tokens are scored from the processor's pixels first, and the vision tower
then runs only on the kept tokens' patches (:mod:`arr_coc.integrations.foveation`), so it does less work too.

So kept tokens keep their original (t, h, w) positions, text after an image keeps its positions, and decoding
continues at max position + 1 of the UNPRUNED sequence: ``generate`` gets 4-row position ids (text row + 3 M-RoPE
rows, the layout the model's own ``generate`` uses) and extends them by one per new token; a hand-written cached
decoding loop through ``cm(...)`` gets positions from :attr:`CompressedModel.rope_deltas`.

Example:
    >>> cm = compress(model, budget=0.25, processor=processor)  # doctest: +SKIP
    >>> out = cm.generate(**processor(text=[prompt], images=[image], return_tensors="pt"), max_new_tokens=32)
    >>> cm.last_allocation[0][0].budget  # tokens kept of the first image of the first sample
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from arr_coc.attending import Budget, TokenScores, parse_budget, resolve_budget, select
from arr_coc.families import check_transformers, get_family, load_object, match_model, supported_classes
from arr_coc.reading.text import valid_text

from .base import (
    EncodedVisual,
    FamilyAdapter,
    ImageContext,
    Scorer,
    VisualAllocation,
    cosine_scorer,
    resolve_scorer,
)

SUPPORTED_CLASSES: tuple[str, ...] = supported_classes()  # the built-in families' classes (arr_coc.families)
# Inputs compress() computes itself; passing them would silently disagree with the pruned sequence.
_REFUSED = {
    "inputs_embeds": "compress() builds the pruned sequence from input_ids (it must see the image placeholder "
    "tokens to know which tokens to drop); pass input_ids as the processor returns them, not inputs_embeds",
    "position_ids": "compress() computes the M-RoPE positions itself (the model's get_rope_index on the full input, "
    "gathered at the kept tokens); do not pass position_ids",
    "mm_encoder_outputs": "compress() runs the vision tower itself; pass pixel_values / pixel_values_videos",
}


def _past_length(kwargs: dict[str, Any]) -> int:
    """Number of tokens already in ``kwargs["past_key_values"]`` (0 without a cache)."""
    cache = kwargs.get("past_key_values")
    return int(cache.get_seq_length()) if cache is not None and hasattr(cache, "get_seq_length") else 0


def _normalisation(image_processor: Any) -> tuple[tuple[float, ...] | None, tuple[float, ...] | None]:
    """The image processor's ``image_mean`` / ``image_std`` as 3-tuples, or (None, None) when it has none."""
    mean, std = getattr(image_processor, "image_mean", None), getattr(image_processor, "image_std", None)
    if mean is None or std is None:
        return None, None
    as3 = [(float(v),) * 3 if isinstance(v, (int, float)) else tuple(float(x) for x in v) for v in (mean, std)]
    return as3[0], as3[1]


def find_adapter(model: Any) -> FamilyAdapter:
    """The adapter for ``model``'s class, from the family registry (:mod:`arr_coc.families`), after checking that
    the installed ``transformers`` is one the family gives exact answers with.

    Raises:
        ValueError: if the class is not supported; the message lists the supported classes.
        RuntimeError: if ``transformers`` is older than the family's floor; the message names both versions.
    """
    found = match_model(model)
    if found is None:
        raise ValueError(
            f"compress() does not support {type(model).__name__}; supported model classes: "
            f"{', '.join(supported_classes())} (wrap the ...ForConditionalGeneration model, not its inner .model)"
        )
    family, entry = found
    check_transformers(family)
    return load_object(entry.adapter)


def _check_tiers(tiers: Sequence[float] | None) -> tuple[float, ...] | None:
    if tiers is None:
        return None
    try:
        values = tuple(float(t) for t in tiers)
    except (TypeError, ValueError):
        raise ValueError(f"deepstack_tiers must be None or a sequence of fractions, got {tiers!r}") from None
    if not values or any(not (0.0 < v <= 1.0) for v in values) or sum(values) > 1.0 + 1e-6:
        raise ValueError(f"deepstack_tiers must be fractions in (0, 1] that add up to at most 1, got {tiers!r}")
    return values


def tier_levels(scores: torch.Tensor, n_levels: int, tiers: Sequence[float]) -> torch.Tensor:
    """How many DeepStack levels each kept token receives, from relevance tiers.

    Kept tokens are ranked by score (ties to the lower index); the first ``tiers[0]`` share of them forms the top
    tier, the next ``tiers[1]`` share the second, ...; if the fractions add up to less than 1 the rest forms one more,
    lowest tier. With ``m`` tiers, tier ``i`` (0 = top) receives the first ``round(n_levels * (m-1-i) / (m-1))``
    levels: the top tier all of them, the lowest none. A single tier covering everything receives all levels.

    Args:
        scores (torch.Tensor of shape (k,)): relevance of the kept tokens, in kept (ascending index) order.
        n_levels: number of DeepStack levels of the model.
        tiers: fractions, see above.

    Returns:
        torch.LongTensor of shape (k,): levels received per kept token.
    """
    k = scores.numel()
    fractions = list(tiers)
    if sum(fractions) < 1.0 - 1e-6:
        fractions.append(1.0 - sum(fractions))
    m = len(fractions)
    order = torch.sort(torch.nan_to_num(scores.float(), nan=-torch.inf), descending=True, stable=True).indices
    bounds = [round(k * c) for c in torch.cumsum(torch.tensor(fractions, dtype=torch.float64), 0).tolist()]
    bounds[-1] = k
    levels = torch.zeros(k, dtype=torch.long, device=scores.device)
    start = 0
    for i, end in enumerate(bounds):
        n = n_levels if m == 1 else round(n_levels * (m - 1 - i) / (m - 1))
        levels[order[start:end]] = n
        start = max(start, end)
    return levels


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


# ----- pure steps: data in, data out, no model ------------------------------------------------------------------
# ``CompressedModel._plan`` is these steps in order: locate the items -> (the model's seams: positions, vision
# tower) -> score -> allocate -> kept columns -> repack. Each can be tested on hand-made tensors.


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
    """

    kind: str
    index: int
    sample: int
    cols: torch.Tensor
    grid_thw: tuple[int, int, int]
    patch_start: int

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
    for i, (n, thw) in enumerate(zip(sizes, grid_list, strict=True)):
        block = where[start : start + n]  # (n, 2)
        rows = block[:, 0].unique()
        if rows.numel() != 1:
            raise ValueError(
                f"the placeholder tokens of {kind} {i} span samples {rows.tolist()}; input_ids and "
                f"{kind}_grid_thw do not match"
            )
        items.append(VisualItem(kind, i, int(rows[0]), block[:, 1], thw, patch))  # type: ignore[arg-type]
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


def allocate_tokens(
    scores: torch.Tensor,
    budget: Budget,
    features: torch.Tensor | None = None,
    redundancy: float = 0.0,
    units: Sequence[torch.Tensor | np.ndarray] = (),
    config: Any = None,
) -> torch.Tensor:
    """Which tokens of one item to keep: the budget resolved against its scores, then top-K selection.

    Args:
        scores (torch.Tensor of shape (N,)): relevance, higher = more relevant.
        budget: see :func:`arr_coc.attending.resolve_budget` (count, fraction or ``"adaptive"``).
        features (torch.Tensor of shape (N, D) or None): token features, used only when ``redundancy > 0``.
        redundancy: in [0, 1], see :func:`arr_coc.attending.select`.
        units: cell sets kept whole (the scorer's ``TokenScores.units``: the cells of each recognised word).
        config: the realizer's ``RelevanceConfig`` (its adaptive-budget settings); ``None``: the default config.

    Returns:
        torch.LongTensor of shape (k,): kept indices, strictly increasing, on the device of ``scores``.
    """
    k = resolve_budget(budget, scores.numel(), scores, config)
    return select(scores, k, features if redundancy > 0 else None, redundancy, units)


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
    if attention_mask is not None and bool((attention_mask[:, 0] == 0).any()):
        return "left"
    if attention_mask is not None and bool((attention_mask[:, -1] == 0).any()):
        return "right"
    return "left"


@dataclass
class Repacked:
    """Output of :func:`repack`: the pruned, re-padded sequence.

    Attributes:
        input_ids (torch.LongTensor of shape (batch_size, pruned_length)): kept tokens, ``pad_id`` on padding.
        attention_mask (torch.LongTensor of shape (batch_size, pruned_length) or None): 0 on padding; None when
            the input had none, nothing had to be padded, and ``always_mask`` was False.
        mm_token_type_ids (torch.LongTensor of shape (batch_size, pruned_length) or None): gathered, 0 on padding.
        position_ids (torch.LongTensor of shape (3, batch_size, pruned_length)): full positions gathered at the
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
        position_ids (torch.LongTensor of shape (3, batch_size, sequence_length)): M-RoPE positions of the full
            sequence.
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
    pos_index = gather.to(position_ids.device).unsqueeze(0).expand(3, -1, -1)  # (3, B, L')
    new_pos = position_ids.gather(2, pos_index).masked_fill(filled.to(position_ids.device).unsqueeze(0), 0)
    real_full = attention_mask.sum(1) if attention_mask is not None else torch.full((batch,), length, device=device)
    real_new = new_mask.sum(1) if new_mask is not None else torch.full((batch,), new_len, device=device)  # (B,)
    next_pos = rope_deltas.view(-1).to(device) + real_full.to(device)  # (B,) max position + 1, unpruned
    deltas = (next_pos - real_new.to(device)).view(-1, 1)  # (B, 1)
    new_labels = take(labels, -100) if labels is not None else None
    return Repacked(new_ids, new_mask, new_types, new_pos, index_map, deltas, new_labels)


def generation_position_ids(attention_mask: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
    """The 4-row position ids ``generate`` takes: a text row (0, 1, ... over real tokens) above the 3 M-RoPE rows.

    Args:
        attention_mask (torch.LongTensor of shape (batch_size, length)): 0 on padding.
        position_ids (torch.LongTensor of shape (3, batch_size, length)).

    Returns:
        torch.LongTensor of shape (4, batch_size, length).
    """
    text = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)  # (B, L)
    return torch.cat([text.unsqueeze(0).to(position_ids.device), position_ids], dim=0)  # (4, B, L)


class CompressedModel:
    """A Qwen-VL ``...ForConditionalGeneration`` model that keeps only the relevant visual tokens.

    Built by :func:`compress`. Calls take the processor's outputs and return the model's outputs:

    * ``cm(**inputs)`` -> the model's ``forward`` output over the PRUNED sequence (``logits`` has shape
      (batch_size, pruned_length, vocab_size); :attr:`last_inputs` ``.index_map`` maps columns back);
    * ``cm.generate(**inputs, **gen_kwargs)`` -> what ``model.generate`` returns, with the ORIGINAL ``input_ids`` as
      the prompt part of the sequences (so ``out[:, inputs["input_ids"].shape[1]:]`` are the new tokens, as usual).

    Any other attribute is looked up on the wrapped model (``cm.config``, ``cm.device``, ``cm.eval()``...).

    Attributes:
        model: the wrapped model (unchanged).
        adapter: the family adapter in use.
        last_allocation: per sample, per image/video (in prompt order: images first, then videos), a
            :class:`~arr_coc.integrations.base.VisualAllocation` with ``kind``, ``grid``, ``keep``, ``scores``,
            ``budget``.
        last_inputs: :class:`PrunedInputs` of the last call with visual inputs.
        rope_deltas (torch.LongTensor of shape (batch_size, 1) or None): used to position new tokens when a
            cached decoding step goes through ``cm(...)`` (no pixels, non-empty ``past_key_values``).
    """

    def __init__(
        self,
        model: Any,
        adapter: FamilyAdapter,
        budget: Budget | Sequence[Budget],
        scorer: Scorer,
        query: str | Sequence[str | None] | None,
        tokenizer: Any,
        redundancy: float,
        deepstack_tiers: tuple[float, ...] | None,
        padding_side: str | None,
        scorer_config: Any,
        image_mean: tuple[float, ...] | None = None,
        image_std: tuple[float, ...] | None = None,
        foveate: bool = False,
        detail: str | None = None,
    ) -> None:
        self.model = model
        self.adapter = adapter
        self.budget = budget
        self.scorer = scorer
        self.query = query
        self.tokenizer = tokenizer
        self.redundancy = redundancy
        self.deepstack_tiers = deepstack_tiers
        self.padding_side = padding_side
        self.scorer_config = scorer_config
        self.image_mean = image_mean if image_mean is not None else adapter.image_mean
        self.image_std = image_std if image_std is not None else adapter.image_std
        self.foveate = foveate or detail is not None  # level of detail always runs foveated
        self.detail = detail
        self.last_allocation: list[list[VisualAllocation]] = []
        self.last_inputs: PrunedInputs | None = None
        self.rope_deltas: torch.Tensor | None = None

    # ----- forwarding -------------------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name == "model":  # not yet set (e.g. during unpickling): do not recurse
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        fovea = ", foveate=True" if self.foveate else ""
        fovea += f", detail={self.detail!r}" if self.detail else ""
        return (
            f"CompressedModel({type(self.model).__name__}, budget={self.budget!r}, family={self.adapter.name!r}{fovea})"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def to(self, *args: Any, **kwargs: Any) -> CompressedModel:
        """``model.to(...)``, returning the wrapper (so ``cm = cm.to("cuda")`` keeps pruning)."""
        self.model.to(*args, **kwargs)
        return self

    def eval(self) -> CompressedModel:
        """``model.eval()``, returning the wrapper."""
        self.model.eval()
        return self

    def train(self, mode: bool = True) -> CompressedModel:
        """``model.train(mode)``, returning the wrapper."""
        self.model.train(mode)
        return self

    # ----- public API -------------------------------------------------------------------------------------------
    def forward(self, input_ids: torch.Tensor | None = None, **kwargs: Any) -> Any:
        """The model's forward on the pruned sequence; same arguments and return type as ``model.forward``.

        Args:
            input_ids (torch.LongTensor of shape (batch_size, sequence_length)): as the processor returns it.
            **kwargs: ``attention_mask``, ``pixel_values``, ``image_grid_thw``, ``pixel_values_videos``,
                ``video_grid_thw``, ``mm_token_type_ids``, ``second_per_grid_ts``, ``labels`` (pruned alongside),
                ``past_key_values``, ``use_cache``, ... (passed on).

        Returns:
            The model's output; sequence-length dimensions are the pruned length.
        """
        plan = self._plan(input_ids, kwargs, generation=False)
        if plan is None:
            if _past_length(kwargs) == 0:  # a text-only prompt: the model positions it and what follows
                self.rope_deltas = None
            return self.model(input_ids=input_ids, **self._decode_kwargs(input_ids, kwargs))
        model_kwargs, _ = plan
        return self.model(**model_kwargs)

    def generate(self, input_ids: torch.Tensor | None = None, **kwargs: Any) -> Any:
        """``model.generate`` on the pruned prompt; same arguments and return type.

        The prompt is re-padded on the left (what cached decoding needs), positions continue from the unpruned
        sequence, and the returned sequences start with the ORIGINAL ``input_ids``. An explicit ``max_length`` is
        lowered by the number of dropped tokens so the number of new tokens is what it would have been.
        """
        plan = self._plan(input_ids, kwargs, generation=True)
        if plan is None:
            return self.model.generate(input_ids=input_ids, **kwargs)
        model_kwargs, original_ids = plan
        pruned_len = model_kwargs["input_ids"].shape[1]
        if model_kwargs.get("max_length") is not None:
            model_kwargs["max_length"] = int(model_kwargs["max_length"]) - (original_ids.shape[1] - pruned_len)
        out = self.model.generate(**model_kwargs)
        sequences = out if isinstance(out, torch.Tensor) else out.sequences
        repeat = sequences.shape[0] // original_ids.shape[0]
        prompt = original_ids.to(sequences.device).repeat_interleave(repeat, dim=0)  # (B * repeat, L)
        full = torch.cat([prompt, sequences[:, pruned_len:]], dim=1)  # (B * repeat, L + new)
        if isinstance(out, torch.Tensor):
            return full
        out.sequences = full
        return out

    # ----- planning ---------------------------------------------------------------------------------------------
    def _decode_kwargs(self, input_ids: torch.Tensor | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Kwargs for a call without pixels: a cached decoding step gets positions continuing the pruned prompt."""
        past = _past_length(kwargs)
        if (
            past == 0
            or self.rope_deltas is None
            or input_ids is None
            or kwargs.get("position_ids") is not None
            or input_ids.shape[0] != self.rope_deltas.shape[0]
        ):
            return kwargs
        n_new = input_ids.shape[1]
        mask = kwargs.get("attention_mask")
        if mask is not None and mask.dim() == 2:
            text = (mask.long().cumsum(-1) - 1)[:, -n_new:]  # (B, n_new): real tokens so far - 1
        else:
            text = torch.arange(past, past + n_new, device=input_ids.device).expand(input_ids.shape[0], -1)
        pos = text + self.rope_deltas.to(text.device)  # (B, n_new)
        return {**kwargs, "position_ids": pos.unsqueeze(0).expand(3, -1, -1)}  # (3, B, n_new)

    def _validate(self, input_ids: torch.Tensor | None, kwargs: dict[str, Any]) -> bool:
        """All input checks that can be made before touching the model; True if there is anything to prune."""
        for key, why in _REFUSED.items():
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
        prefill = _past_length(kwargs) == 0
        if not (has_images or has_videos):
            if prefill and isinstance(input_ids, torch.Tensor):
                ids = self.adapter.token_ids(self.model)
                for kind, key in (("image", "pixel_values"), ("video", "pixel_values_videos")):
                    if bool((input_ids == ids[kind]).any()):
                        raise ValueError(f"input_ids holds {kind} placeholder tokens but no {key} were passed")
            return False
        if input_ids is None:
            raise ValueError("compress() needs input_ids (with the image/video placeholder tokens)")
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch_size, sequence_length), got {tuple(input_ids.shape)}")
        if not prefill:
            raise ValueError(
                "compress() prunes whole prompts; new images on top of a non-empty cache are not supported"
            )
        return True

    def _budgets(self, batch_size: int) -> list[Budget]:
        budget = self.budget
        if isinstance(budget, (list, tuple)):
            if len(budget) != batch_size:
                raise ValueError(f"budget is a list of {len(budget)} budgets for a batch of {batch_size} samples")
            return list(budget)
        return [budget] * batch_size

    def _special_ids(self) -> dict[str, int]:
        ids = dict(self.adapter.token_ids(self.model))
        defaults = get_family(self.adapter.name).token_ids  # the family's ids, used when no tokenizer is given
        ids.update(im_start=defaults["im_start"], im_end=defaults["im_end"], newline=defaults["newline"])
        tok = self.tokenizer
        if tok is not None and hasattr(tok, "convert_tokens_to_ids"):
            for key, text in (("im_start", "<|im_start|>"), ("im_end", "<|im_end|>"), ("newline", "Ċ")):
                value = tok.convert_tokens_to_ids(text)
                if isinstance(value, int) and value >= 0 and value != getattr(tok, "unk_token_id", None):
                    ids[key] = value
        return ids

    def _encode_text(self, text: str) -> list[int]:
        tok = self.tokenizer
        if tok is None:
            raise ValueError("a string query= needs a tokenizer: pass compress(..., processor=...) or tokenizer=...")
        try:
            ids = tok.encode(text, add_special_tokens=False)
        except TypeError:
            ids = tok.encode(text)
        return [int(i) for i in ids]

    def _decode_text(self, ids: list[int]) -> str | None:
        if self.tokenizer is None or not hasattr(self.tokenizer, "decode"):
            return None
        return self.tokenizer.decode(ids)

    def _locate(
        self,
        input_ids: torch.Tensor,
        mask: torch.Tensor | None,
        visual: dict[str, tuple[torch.Tensor | None, torch.Tensor | None]],
        ids: dict[str, int],
    ) -> list[VisualItem]:
        """Step 1: every image, then every video, of the batch (see :func:`locate_items`)."""
        _, merge, _ = self.adapter.geometry(self.model)
        items: list[VisualItem] = []
        for kind, key in (("image", "pixel_values"), ("video", "pixel_values_videos")):
            pixels, grid = visual[kind]
            if pixels is not None:
                items += locate_items(input_ids, mask, kind, ids[kind], grid, merge)
            elif (input_ids == ids[kind]).any():
                raise ValueError(f"input_ids holds {kind} placeholder tokens but no {key} were passed")
        return items

    def _queries(self, batch: int) -> list[str | None]:
        """The ``query=`` option, one entry per sample (``None``: take the question from the prompt)."""
        queries = self.query
        if isinstance(queries, (list, tuple)):
            if len(queries) != batch:
                raise ValueError(f"query is a list of {len(queries)} for a batch of {batch} samples")
        else:
            queries = [queries] * batch
        if any(isinstance(q, str) for q in queries) and self.tokenizer is None:
            raise ValueError("a string query= needs a tokenizer: pass compress(..., processor=...) or tokenizer=...")
        return list(queries)

    def _encode(self, visual: dict[str, tuple[torch.Tensor | None, torch.Tensor | None]]) -> dict[str, EncodedVisual]:
        """The vision-tower seam: run the tower + merger once per modality on the full pixels.

        Args:
            visual: ``{"image": (pixel_values, image_grid_thw), "video": (pixel_values_videos, video_grid_thw)}``;
                a modality whose pixels are None is skipped.

        Returns:
            ``{kind: EncodedVisual}`` for each modality present.
        """
        return {
            kind: self.adapter.encode(self.model, kind, pixels, grid)
            for kind, (pixels, grid) in visual.items()
            if pixels is not None
        }

    def _encode_kept(
        self,
        visual: dict[str, tuple[torch.Tensor | None, torch.Tensor | None]],
        keeps: dict[str, list[torch.Tensor]],
    ) -> dict[str, EncodedVisual]:
        """The foveated vision-tower seam: run the tower once per modality on the KEPT tokens' patches only.

        Args:
            visual: as for :meth:`_encode`.
            keeps: per modality, one LongTensor (k_i,) of kept merged-token indices per item, in item order.

        Returns:
            ``{kind: EncodedVisual}`` whose ``features[i]`` has shape (k_i, D), in kept order.
        """
        return {
            kind: self.adapter.encode_kept(self.model, kind, pixels, grid, keeps[kind])
            for kind, (pixels, grid) in visual.items()
            if pixels is not None
        }

    def _question(
        self, item: VisualItem, query: str | None, row: list[int], row_mask: list[int], ids: dict[str, int]
    ) -> tuple[list[int], str | None]:
        """Token ids and text of the question for ``item``: ``query=`` if given, else its user turn's text."""
        if isinstance(query, str):
            query = valid_text(query)  # a lone surrogate (undecodable terminal byte, JSON escape) is not text
            return self._encode_text(query), query
        q_ids = turn_query_ids(row, row_mask, int(item.cols[0]), int(item.cols[-1]), ids)
        return q_ids, self._decode_text(q_ids)

    def _score_item(
        self,
        item: VisualItem,
        pixels: torch.Tensor,
        token_feats: torch.Tensor | None,
        positions: torch.Tensor,
        q_ids: list[int],
        q_text: str | None,
    ) -> tuple[torch.Tensor, Sequence[torch.Tensor | np.ndarray]]:
        """Step 3: the scorer's relevance of every visual token of one item, and the units to keep whole.

        Args:
            item: the item.
            pixels (torch.Tensor of shape (t*h*w, C*temporal_patch_size*patch_size**2)): its patches.
            token_feats (torch.Tensor of shape (N, D) or None): its merged visual tokens (None before the tower).
            positions (torch.LongTensor of shape (3, N)): their M-RoPE positions in the full sequence.
            q_ids: the question's token ids; q_text: its text (or None).

        Returns:
            torch.Tensor of shape (N,), float32, on the device the scorer returned it on; and the scorer's units
            (``TokenScores.units``; empty for a scorer that returns a tensor).
        """
        patch, merge, tps = self.adapter.geometry(self.model)
        embed = self.model.get_input_embeddings()
        q_tensor = torch.tensor(q_ids, dtype=torch.long, device=positions.device)  # (Q,)
        with torch.no_grad():
            q_embeds = embed(q_tensor.to(embed.weight.device)) if q_ids else None  # (Q, D)
        ctx = ImageContext(
            kind=item.kind,
            sample=item.sample,
            index=item.index,
            pixel_values=pixels,
            grid_thw=item.grid_thw,
            merged_grid=item.merged_grid(merge),
            patch_size=patch,
            merge_size=merge,
            temporal_patch_size=tps,
            token_feats=token_feats.detach() if token_feats is not None else None,  # type: ignore[arg-type]
            positions=positions,
            query_ids=q_tensor,
            query_embeds=q_embeds,
            query_text=q_text,
            config=self.model.config,
            scorer_config=self.scorer_config,
            image_mean=self.image_mean,
            image_std=self.image_std,
        )
        out = self.scorer(ctx)
        units = out.units if isinstance(out, TokenScores) else ()
        scores = torch.as_tensor(out.scores if isinstance(out, TokenScores) else out).detach().float().flatten()  # (N,)
        n = math.prod(item.merged_grid(merge))
        if scores.numel() != n:
            raise ValueError(f"the scorer returned {scores.numel()} scores for {n} visual tokens")
        if not bool(torch.isfinite(scores).any()):  # one host sync; nothing to rank would keep the top-left tokens
            raise ValueError(
                f"the scorer returned no finite score for the {n} visual tokens (all NaN or infinite), so there is "
                "nothing to rank; a scorer must return a number per token (NaN marks a single token least relevant)"
            )
        return scores, units

    def realizer_of_scorer(self) -> Any:
        """The realizer whose config resolves an ``"adaptive"`` budget, as ``allocate`` does with its realizer:
        ``scorer_config["realizer"]`` (``compress(realizer=...)``), else the default one (``None``)."""
        if isinstance(self.scorer_config, dict):
            return self.scorer_config.get("realizer")
        return None

    def _plan(
        self, input_ids: torch.Tensor | None, kwargs: dict[str, Any], generation: bool
    ) -> tuple[dict[str, Any], torch.Tensor] | None:
        """Prune one batch. Returns (kwargs for the model call, original input_ids) or None if there is no image.

        The steps: validate -> locate items -> the model's seams (full positions, vision tower) -> per item: score,
        allocate -> kept columns -> repack.
        """
        if not self._validate(input_ids, kwargs):
            return None
        assert input_ids is not None
        kwargs = dict(kwargs)
        mask = kwargs.pop("attention_mask", None)
        visual = {
            "image": (kwargs.pop("pixel_values", None), kwargs.pop("image_grid_thw", None)),
            "video": (kwargs.pop("pixel_values_videos", None), kwargs.pop("video_grid_thw", None)),
        }
        mm_types = kwargs.pop("mm_token_type_ids", None)
        labels = kwargs.pop("labels", None)
        extras = {"second_per_grid_ts": kwargs.pop("second_per_grid_ts", None)}
        batch, length = input_ids.shape
        budgets = self._budgets(batch)
        for b in budgets:
            parse_budget(b)
        ids = self._special_ids()
        if mask is not None and mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask has shape {tuple(mask.shape)}, input_ids {tuple(input_ids.shape)}")
        items = self._locate(input_ids, mask, visual, ids)
        queries = self._queries(batch)

        # ---- the model's seams: positions of the full sequence, vision features ----
        if mm_types is None:
            mm_types = (input_ids == ids["image"]).int() + 2 * (input_ids == ids["video"]).int()  # (B, L)
        full_pos, full_deltas = self.adapter.rope_index(
            self.model, input_ids, mm_types, visual["image"][1], visual["video"][1], mask, extras
        )  # (3, B, L), (B, 1)
        if self.detail is not None:
            return self._plan_detail(
                input_ids, mask, visual, mm_types, labels, extras, kwargs, items, full_pos, full_deltas, budgets,
                queries, ids, generation,
            )  # fmt: skip
        kinds = [kind for kind, (pixels, _) in visual.items() if pixels is not None]
        # foveation encodes after selection, only the kept patches; otherwise the whole tower runs first
        encoded = {} if self.foveate else self._encode(visual)

        # ---- per item: score, allocate ----
        rows = input_ids.tolist()
        row_masks = mask.tolist() if mask is not None else [[1] * length for _ in range(batch)]
        _, merge, _ = self.adapter.geometry(self.model)
        allocation: list[list[VisualAllocation]] = [[] for _ in range(batch)]
        keeps: dict[str, list[torch.Tensor]] = {k: [] for k in kinds}
        levels: dict[str, list[torch.Tensor | None]] = {k: [] for k in kinds}
        n_levels = self.adapter.n_deepstack_levels(self.model)
        item_keeps = []
        for item in items:
            feats = None if self.foveate else encoded[item.kind].features[item.index]  # (N, D) or None
            q_ids, q_text = self._question(item, queries[item.sample], rows[item.sample], row_masks[item.sample], ids)
            pixels = visual[item.kind][0][item.patch_start : item.patch_start + item.n_patches]  # type: ignore[index]
            positions = full_pos[:, item.sample, item.cols.to(full_pos.device)]  # (3, N)
            scores, units = self._score_item(item, pixels, feats, positions, q_ids, q_text)  # (N,), word cells
            features = None
            if self.redundancy > 0:  # near-duplicates by the tower's features, or (foveate) by the tokens' pixels
                features = (feats if feats is not None else pixels.reshape(scores.numel(), -1)).detach()
            config = getattr(self.realizer_of_scorer(), "config", None)  # the adaptive budget's settings
            keep = allocate_tokens(scores, budgets[item.sample], features, self.redundancy, units, config)  # (k,)
            lv = None
            if self.deepstack_tiers is not None and n_levels > 0:
                lv = tier_levels(scores[keep], n_levels, self.deepstack_tiers)  # (k,)
            keeps[item.kind].append(keep)
            levels[item.kind].append(lv)
            item_keeps.append(keep)
            merged = item.merged_grid(merge)
            allocation[item.sample].append(
                VisualAllocation(item.kind, merged, keep, scores.view(merged), int(keep.numel()), item.index, lv)
            )
        if self.foveate:
            encoded = self._encode_kept(visual, keeps)
            keeps = {kind: [torch.arange(f.shape[0]) for f in encoded[kind].features] for kind in kinds}
        mm_outputs = {kind: self.adapter.pruned_output(encoded[kind], keeps[kind], levels[kind]) for kind in kinds}

        # ---- repack: every row shrinks by its own amount; old padding is dropped and laid anew on one side ----
        keep_col = kept_columns(input_ids, mask, items, item_keeps)  # (B, L)
        side = "left" if generation else padding_side(mask, self.padding_side)
        pad_id = getattr(self.model.config.get_text_config(), "pad_token_id", None)
        packed = repack(
            input_ids,
            mask,
            keep_col,
            full_pos,
            full_deltas,
            side,
            0 if pad_id is None else int(pad_id),
            mm_token_type_ids=mm_types,
            labels=labels,
            always_mask=generation,
        )
        self.rope_deltas = packed.rope_deltas
        self.last_allocation = allocation
        self.last_inputs = PrunedInputs(
            packed.input_ids, packed.attention_mask, packed.position_ids, packed.index_map, packed.rope_deltas,
            mm_outputs,
        )  # fmt: skip

        return model_inputs(kwargs, packed, mm_outputs, generation), input_ids

    def _plan_detail(
        self,
        input_ids: torch.Tensor,
        mask: torch.Tensor | None,
        visual: dict[str, tuple[torch.Tensor | None, torch.Tensor | None]],
        mm_types: torch.Tensor,
        labels: torch.Tensor | None,
        extras: dict[str, Any],
        kwargs: dict[str, Any],
        items: list[VisualItem],
        full_pos: torch.Tensor,
        full_deltas: torch.Tensor,
        budgets: list[Budget],
        queries: list[str | None],
        ids: dict[str, int],
        generation: bool,
    ) -> tuple[dict[str, Any], torch.Tensor]:
        """``_plan`` for ``detail="thumbnail" | "mixed"`` (:mod:`arr_coc.integrations.detail`), always foveated.

        Steps: score every item on the ORIGINAL sequence -> split each image's budget (:func:`plan_detail`) ->
        mixed: anchor cells get their block's downsampled pixels; thumbnail: insert the thumbnails into the prompt,
        ``pixel_values`` and ``image_grid_thw`` and take the model's positions of that augmented prompt -> one
        foveated tower run per modality on what is kept -> repack. Videos are pruned drop-only.
        """
        from .detail import DetailPlan, coarse_rows, insert_thumbnails, plan_detail, thumbnail_rows

        patch, merge, tps = self.adapter.geometry(self.model)
        original_ids = input_ids
        length = input_ids.shape[1]
        rows = input_ids.tolist()
        row_masks = mask.tolist() if mask is not None else [[1] * length for _ in range(len(rows))]
        allocation: list[list[VisualAllocation]] = [[] for _ in range(len(rows))]
        plans: dict[tuple[str, int], Any] = {}
        keeps: dict[tuple[str, int], torch.Tensor] = {}
        for item in items:
            q_ids, q_text = self._question(item, queries[item.sample], rows[item.sample], row_masks[item.sample], ids)
            pixels = visual[item.kind][0][item.patch_start : item.patch_start + item.n_patches]  # type: ignore[index]
            positions = full_pos[:, item.sample, item.cols.to(full_pos.device)]  # (3, N)
            scores, units = self._score_item(item, pixels, None, positions, q_ids, q_text)  # (N,)
            features = pixels.reshape(scores.numel(), -1).detach() if self.redundancy > 0 else None
            merged = item.merged_grid(merge)
            plan = None
            if item.kind == "image":
                total = resolve_budget(budgets[item.sample], scores.numel(), scores)

                def select_k(k: int, scores=scores, features=features, units=units) -> torch.Tensor:
                    return allocate_tokens(scores, k, features, self.redundancy, units)

                try:
                    plan = plan_detail(self.detail, scores, merged[1:], total, select_k, patch=patch, merge=merge)  # type: ignore[arg-type]
                except ValueError as err:  # a small image: its budget holds no coarse view (documented clamp)
                    plan = DetailPlan("drop", select_k(total), total, total, note=str(err))
                keep = plan.kept if plan.mode != "thumbnail" else plan.fine
                plans[(item.kind, item.index)] = plan
                spent = plan.budget
            else:
                keep = allocate_tokens(scores, budgets[item.sample], features, self.redundancy, units)
                spent = int(keep.numel())
            keep = keep.to(scores.device)
            keeps[(item.kind, item.index)] = keep
            allocation[item.sample].append(
                VisualAllocation(item.kind, merged, keep, scores.view(merged), spent, item.index, None, detail=plan)
            )

        # ---- the coarse view: mixed -> anchor rows hold their block; thumbnail -> extra images in the prompt ----
        image_px, image_grid = visual["image"]
        thumbs = [it for it in items if it.kind == "image" and plans[("image", it.index)].mode == "thumbnail"]
        if image_px is not None:
            parts, grid_rows, roles = [], [], []
            for it in (i for i in items if i.kind == "image"):
                plan = plans[("image", it.index)]
                rows_i = image_px[it.patch_start : it.patch_start + it.n_patches]  # (t*h*w, D)
                grid_hw = it.grid_thw[1:]
                if plan.mode == "mixed":
                    rows_i = coarse_rows(rows_i, grid_hw, plan, patch, merge, tps)
                if plan.mode == "thumbnail":
                    parts.append(thumbnail_rows(rows_i, grid_hw, plan.thumb_grid, patch, merge, tps))
                    grid_rows.append([1, *plan.thumb_grid])
                    roles.append(("thumb", it.index))
                parts.append(rows_i)
                grid_rows.append(list(it.grid_thw))
                roles.append(("image", it.index))
            visual = dict(visual)
            visual["image"] = (torch.cat(parts), image_grid.new_tensor(grid_rows))  # type: ignore[union-attr]
        else:
            roles = []
        origin = None
        if thumbs:
            inserts: dict[int, list[tuple[int, int]]] = {}
            for it in thumbs:
                first = int(it.cols[0])
                at = first - 1 if first > 0 and rows[it.sample][first - 1] == ids["vision_start"] else first
                inserts.setdefault(it.sample, []).append((at, plans[("image", it.index)].n_thumb))
            pad_id = getattr(self.model.config.get_text_config(), "pad_token_id", None)
            aug = insert_thumbnails(
                input_ids, mask, mm_types, labels, inserts, ids, 0 if pad_id is None else int(pad_id)
            )
            input_ids, mask, mm_types, labels, origin = aug
            items = self._locate(input_ids, mask, visual, ids)
            full_pos, full_deltas = self.adapter.rope_index(
                self.model, input_ids, mm_types, visual["image"][1], visual["video"][1], mask, extras
            )  # (3, B, L2), (B, 1): the model's own positions of the augmented prompt
        # kept tokens per item of the (possibly augmented) prompt, in item order
        item_keeps = []
        for it in items:
            if it.kind == "image" and roles and roles[it.index][0] == "thumb":
                item_keeps.append(torch.arange(it.n_patches // (merge * merge)))
            else:
                original = roles[it.index][1] if it.kind == "image" and roles else it.index
                item_keeps.append(keeps[(it.kind, original)])
        kinds = [kind for kind, (pixels, _) in visual.items() if pixels is not None]
        per_kind = {k: [kp for it, kp in zip(items, item_keeps, strict=True) if it.kind == k] for k in kinds}
        encoded = self._encode_kept(visual, per_kind)
        mm_outputs = {
            kind: self.adapter.pruned_output(
                encoded[kind], [torch.arange(f.shape[0]) for f in encoded[kind].features], [None] * len(per_kind[kind])
            )
            for kind in kinds
        }
        keep_col = kept_columns(input_ids, mask, items, item_keeps)  # (B, L2)
        side = "left" if generation else padding_side(mask, self.padding_side)
        pad_id = getattr(self.model.config.get_text_config(), "pad_token_id", None)
        packed = repack(
            input_ids, mask, keep_col, full_pos, full_deltas, side, 0 if pad_id is None else int(pad_id),
            mm_token_type_ids=mm_types, labels=labels, always_mask=generation,
        )  # fmt: skip
        index_map = packed.index_map
        if origin is not None:  # columns of the augmented prompt -> the caller's columns (-1: padding or thumbnail)
            index_map = torch.where(index_map >= 0, origin.gather(1, index_map.clamp_min(0)), index_map)
        self.rope_deltas = packed.rope_deltas
        self.last_allocation = allocation
        self.last_inputs = PrunedInputs(
            packed.input_ids, packed.attention_mask, packed.position_ids, index_map, packed.rope_deltas, mm_outputs
        )
        return model_inputs(kwargs, packed, mm_outputs, generation), original_ids


def model_inputs(kwargs: dict[str, Any], packed: Any, mm_outputs: Any, generation: bool) -> dict[str, Any]:
    """The model's keyword arguments for a packed (pruned) batch: the caller's others, the shorter ids, mask, labels
    and token types, the pruned ``mm_encoder_outputs`` and the packed M-RoPE positions (for generation in the
    ``(4, B, L')`` form that decoding continues from)."""
    out = dict(kwargs)
    out.update(input_ids=packed.input_ids, mm_encoder_outputs=mm_outputs)
    out["mm_token_type_ids"] = packed.mm_token_type_ids
    if packed.attention_mask is not None:
        out["attention_mask"] = packed.attention_mask
    if packed.labels is not None:
        out["labels"] = packed.labels
    if generation:
        assert packed.attention_mask is not None  # the packing always builds a mask for generation
        out["position_ids"] = generation_position_ids(packed.attention_mask, packed.position_ids)  # (4, B, L')
    else:
        out["position_ids"] = packed.position_ids
    return out


def compress(
    model: Any,
    budget: Budget | Sequence[Budget] = "adaptive",
    *,
    scorer: str | Scorer | None = "auto",
    query: str | Sequence[str | None] | None = None,
    processor: Any = None,
    tokenizer: Any = None,
    redundancy: float = 0.0,
    deepstack_tiers: Sequence[float] | None = None,
    padding_side: str | None = None,
    text_prior: bool = False,
    scorer_config: Any = None,
    realizer: Any = None,
    foveate: bool = False,
    detail: str | None = None,
) -> CompressedModel:
    """Wrap a Qwen-VL model so that only the visual tokens relevant to the question reach the language model.

    Args:
        model: a ``Qwen2VLForConditionalGeneration``, ``Qwen2_5_VLForConditionalGeneration``,
            ``Qwen3VLForConditionalGeneration`` or ``Qwen3VLMoeForConditionalGeneration``.
        budget: tokens to keep PER IMAGE / VIDEO: an int count, a fraction in (0, 1], ``"adaptive"`` (see
            :mod:`arr_coc.attending`), or a list with one such budget per sample of the batch.
        scorer: ``"auto"`` (the full relevance pipeline, ``arr_coc.realizing.score_visual_tokens``: texture scorers,
            query-embedding coupling, balancer), ``"cosine"`` (:func:`~arr_coc.integrations.base.cosine_scorer`),
            or a callable ``f(ImageContext) -> Tensor (N,)``; higher = more relevant.
        query: override the question used for scoring: a string for every sample or a list (one per sample,
            ``None`` = take it from the prompt). By default the question is the text of the user turn that holds the
            image (before and after it). A string needs ``processor`` or ``tokenizer``.
        processor: the model's processor (its tokenizer is used for ``query`` strings and special tokens).
        tokenizer: a tokenizer, if no processor is given.
        redundancy: in [0, 1]; > 0 skips near-duplicate tokens (``arr_coc.attending.select``).
        deepstack_tiers: Qwen3-VL only. Fractions of the kept tokens, most relevant first, forming relevance tiers;
            the top tier receives every DeepStack level, the lowest none (see :func:`tier_levels`). Implemented by
            zeroing DeepStack rows, so it changes what the model sees but saves NO compute; it is a level-of-detail
            knob, not a speed-up. ``None``: every kept token receives every level.
        padding_side: ``"left"`` / ``"right"`` for re-padding forward calls (default: the input's side, else
            left). ``generate`` always pads left.
        text_prior: also run OCR on each image's own resized pixels and add ``allocate``'s text-aware prior (the
            ``[ocr]`` extra; costs the OCR time per image). Shorthand for ``scorer_config={"text_prior": True}``.
        scorer_config: passed to the scorer as ``ImageContext.scorer_config``.
        realizer: the relevance model of the default scorer (an ``arr_coc.Realizer``, e.g.
            ``Realizer(RelevanceConfig(...))``; default: the shared training-free one). Pass the one given to
            ``allocate`` and both keep the same tokens. Shorthand for ``scorer_config={"realizer": realizer}``.
        foveate: decide BEFORE the vision tower and run it only on the kept tokens' patches, each at its place in
            the full grid (:mod:`arr_coc.integrations.foveation`). The scorer then sees pixels, positions and the
            query but no vision features (``ImageContext.token_feats`` is ``None``; ``scorer="cosine"`` is refused;
            the default scorer drops its embedding-coupling term and keeps texture, query cues and, with
            ``text_prior=True``, the OCR prior); ``redundancy`` compares the tokens' pixels. The language model gets
            the same pruned sequence and positions as without ``foveate``, but the kept features differ from the
            unpruned run's: each kept patch saw only the kept patches.
        detail: level of detail (:mod:`arr_coc.integrations.detail`): ``None`` drops what is not kept;
            ``"thumbnail"`` spends part of each image's budget on a low-resolution copy of the whole image inserted
            as an extra image before it, ``"mixed"`` on coarse cells (one token per 2x2, 4x4 or 8x8 block, from the
            downsampled block, at the block's anchor cell) in the image's own grid. The split follows how
            concentrated relevance is (``adaptive_k``); coarse + fine tokens = the budget; at a full budget the
            output is the unwrapped model's. Always foveated; images only (videos are pruned drop-only);
            ``deepstack_tiers`` is not combined with it. An int budget too small for any coarse view is refused
            here; an image whose resolved budget turns out too small (a tiny image) is pruned drop-only, its
            ``VisualAllocation.detail.mode`` is ``"drop"`` and ``.note`` says why (one small image never stops a
            batch).

    Returns:
        A :class:`CompressedModel`.

    Raises:
        ValueError: unsupported model class, bad budget, bad ``redundancy`` / ``deepstack_tiers`` / ``padding_side``.
    """
    adapter = find_adapter(model)
    for b in budget if isinstance(budget, (list, tuple)) else [budget]:
        parse_budget(b)
    if isinstance(budget, (list, tuple)) and not budget:
        raise ValueError("budget is an empty list; give one budget per sample")
    if isinstance(redundancy, bool) or not isinstance(redundancy, (int, float)) or not 0.0 <= redundancy <= 1.0:
        raise ValueError(f"redundancy must be a number in [0, 1], got {redundancy!r}")
    tiers = _check_tiers(deepstack_tiers)
    if tiers is not None and not adapter.supports_deepstack():
        raise ValueError(f"deepstack_tiers only applies to Qwen3-VL models (DeepStack); {adapter.name} has none")
    if not isinstance(foveate, bool):
        raise ValueError(f"foveate must be True or False, got {foveate!r}")
    if foveate and (scorer == "cosine" or scorer is cosine_scorer):
        raise ValueError(
            "scorer='cosine' needs the vision tower's features, but foveate=True scores before the tower runs; "
            "use scorer='auto' (pixels + query cues, text_prior=True for OCR) or a callable that reads pixel_values"
        )
    from .detail import MIN_THUMBNAIL_TOKENS, parse_detail

    detail = parse_detail(detail)
    smallest = {"thumbnail": MIN_THUMBNAIL_TOKENS + 1, "mixed": 2}.get(detail or "", 1)
    for b in budget if isinstance(budget, (list, tuple)) else [budget]:
        if isinstance(parse_budget(b), int) and parse_budget(b) < smallest:
            raise ValueError(
                f"budget {b!r} is too small for detail={detail!r}: the coarse view and one full-resolution token need "
                f"at least {smallest} tokens per image"
            )
    if detail is not None and tiers is not None:
        raise ValueError("deepstack_tiers cannot be combined with detail=...; choose one level-of-detail knob")
    if detail is not None and (scorer == "cosine" or scorer is cosine_scorer):
        raise ValueError(
            "scorer='cosine' needs the vision tower's features, but detail=... scores before the tower runs (it is "
            "always foveated); use scorer='auto' or a callable that reads pixel_values"
        )
    if padding_side not in (None, "left", "right"):
        raise ValueError(f"padding_side must be None, 'left' or 'right', got {padding_side!r}")
    if tokenizer is None and processor is not None:
        tokenizer = getattr(processor, "tokenizer", processor)
    mean, std = _normalisation(getattr(processor, "image_processor", None))
    if text_prior:
        if scorer_config is not None and not isinstance(scorer_config, dict):
            raise ValueError("text_prior=True needs scorer_config to be a dict (or None)")
        scorer_config = {**(scorer_config or {}), "text_prior": True}
    if realizer is not None:
        if scorer_config is not None and not isinstance(scorer_config, dict):
            raise ValueError("realizer= needs scorer_config to be a dict (or None)")
        scorer_config = {**(scorer_config or {}), "realizer": realizer}
    if isinstance(query, str) or (isinstance(query, (list, tuple)) and any(isinstance(q, str) for q in query)):
        if tokenizer is None:
            raise ValueError("a string query= needs a tokenizer: pass compress(..., processor=...) or tokenizer=...")
    return CompressedModel(
        model,
        adapter,
        budget,
        resolve_scorer(scorer),
        query,
        tokenizer,
        float(redundancy),
        tiers,
        padding_side,
        scorer_config,
        mean,
        std,
        foveate,
        detail,
    )
