"""The pruned sequence, step by step: pure functions from tensors to tensors, no model (``compress``'s corridor).

    input_ids ──► locate (which placeholder columns belong to which image / video) ──► the question of each item
              ──► (the model's seams: full positions, vision tower; the decision: ``Realizer.decide``)
              ──► kept columns ──► repack (each row shrinks by its own amount, re-padded; positions gathered)

``CompressedModel`` (``compress.py``) is these steps in order; each can be tested on hand-made tensors. Nothing here
knows a model family: the position rows (however many the family's positions have) are gathered as they come, the
question is read with the family's turn markers, and the family's own layouts (token ids, input names, what
``generate`` takes) live in its adapter (:mod:`.contract`, one file a family).

Host and device: the prompt's small integer metadata (ids, mask, token types, grids) is read to the host ONCE
(:func:`read_prompt`, one device-to-host copy); locating, the questions, the kept columns and the re-padding are
bookkeeping in NumPy on those copies; what the device needs back is sent in ONE host-to-device copy (:func:`upload`)
and applied with a few batched gathers (:func:`repack`). The decision comes back to the host in one read as well
(:func:`read_decision`, in ``compress``), so a forward makes two host syncs of its own, whatever the batch size. The
step functions also accept tensors (each is then read to the host on its own: fine for tests and one-off use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from arr_coc.reading.text import valid_text

Names = dict[str, tuple[str, str]]  # per modality, the model's keyword names of (pixels, grids)

_NUMPY = {torch.int64: np.int64, torch.int32: np.int32, torch.int16: np.int16, torch.int8: np.int8,
          torch.uint8: np.uint8, torch.bool: np.bool_}  # fmt: skip
_TORCH = {np.dtype(v): k for k, v in _NUMPY.items()}

# Inputs compress() computes itself; passing them would silently disagree with the pruned sequence.
REFUSED = {
    "inputs_embeds": "compress() builds the pruned sequence from input_ids (it must see the image placeholder "
    "tokens to know which tokens to drop); pass input_ids as the processor returns them, not inputs_embeds",
    "position_ids": "compress() computes the positions itself (the model's own positions of the full input, "
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
        position_ids (torch.LongTensor of shape (P, batch_size, pruned_length)): the full sequence's positions (P
            rows: the family's) gathered at the kept columns (0 on padding).
        index_map (torch.LongTensor of shape (batch_size, pruned_length)): column of the ORIGINAL input each pruned
            column came from, -1 for padding added by re-padding. Use it to map logits back.
        rope_deltas (torch.LongTensor of shape (batch_size, 1)): next position minus real pruned length per sample;
            the first generated token of sample ``b`` sits at ``max position of the unpruned sample + 1``.
        mm_encoder_outputs: the pruned encoder outputs handed to the model (``{"image": ..., "video": ...}``, as
            the family's adapter builds them: with its feature levels sliced, and zeroed per ``deepstack_tiers``).
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
        index: its row among its modality's items (the row of its grid).
        sample: the row of ``input_ids`` that holds its placeholder tokens.
        cols (numpy.ndarray of shape (N,), int64): columns of its placeholder tokens in that row, ascending, on the
            host (bookkeeping; nothing on the device needs them).
        grid_thw: (t, h, w) patch grid (NOT merged), as the family's processor describes the item.
        patch_start: first row of its pixels in its modality's pixel tensor.
        span: (first, last) of ``cols``, on the host (the question is read around them without a device read).
    """

    kind: str
    index: int
    sample: int
    cols: np.ndarray
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


Host = np.ndarray  # a host copy of a small integer tensor (ids, mask, token types, grids, kept indices)


def to_host(t: torch.Tensor) -> np.ndarray:
    """One device-to-host copy of ``t`` as a NumPy array (``t.cpu().numpy()``; on a CPU tensor just ``numpy()``, so
    the op counter counts the one copy a GPU makes, not two). Shares memory with ``t`` when ``t`` is on the CPU."""
    t = t.detach()
    return (t if t.device.type == "cpu" else t.cpu()).numpy()


def host(x: torch.Tensor | np.ndarray | None) -> np.ndarray | None:
    """``x`` on the host as a NumPy array of the same integer / bool dtype (arrays pass through; a tensor is read:
    one host sync if it lives on a device; the copy is the caller's own)."""
    if x is None or isinstance(x, np.ndarray):
        return x
    return to_host(x).copy()


@dataclass
class HostPrompt:
    """The prompt's integer metadata on the host (:func:`read_prompt`), same shapes and dtypes as the tensors.

    Attributes:
        input_ids (numpy.ndarray of shape (batch_size, sequence_length)).
        attention_mask (numpy.ndarray of shape (batch_size, sequence_length) or None).
        mm_token_type_ids (numpy.ndarray of shape (batch_size, sequence_length) or None).
        grids: ``{"image": (num_images, 3) or None, "video": (num_videos, 3) or None}``.
    """

    input_ids: np.ndarray
    attention_mask: np.ndarray | None
    mm_token_type_ids: np.ndarray | None
    grids: dict[str, np.ndarray | None]


def read_prompt(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    mm_token_type_ids: torch.Tensor | None,
    grids: dict[str, torch.Tensor | None],
) -> HostPrompt:
    """Every integer input the bookkeeping needs, read to the host in ONE copy (one host sync, one ``cat``).

    Args:
        input_ids (torch.LongTensor of shape (batch_size, sequence_length)).
        attention_mask, mm_token_type_ids (torch.Tensor of shape (batch_size, sequence_length) or None).
        grids: per modality, the items' grids or None, each (num_items, 3).
    """
    named = [("input_ids", input_ids), ("attention_mask", attention_mask), ("types", mm_token_type_ids)]
    named += [(kind, g) for kind, g in grids.items()]
    present = [(name, t) for name, t in named if t is not None]
    device = input_ids.device
    flat = torch.cat([t.reshape(-1).to(device=device, dtype=torch.long) for _, t in present])  # (sum numel,)
    values = to_host(flat)  # the one device-to-host read (int64)
    out: dict[str, np.ndarray | None] = {name: None for name, _ in named}
    start = 0
    for name, t in present:
        part = values[start : start + t.numel()].reshape(tuple(t.shape))
        out[name] = part.astype(_NUMPY.get(t.dtype, np.int64), copy=False)
        start += t.numel()
    return HostPrompt(
        out["input_ids"], out["attention_mask"], out["types"], {kind: out[kind] for kind, _ in grids.items()}
    )  # type: ignore[arg-type]


def upload(arrays: Sequence[np.ndarray], device: torch.device | str) -> list[torch.Tensor]:
    """Host integer arrays -> tensors on ``device`` in ONE host-to-device copy, returned as views of it (int64;
    a caller casts where it needs another dtype).

    The copy is made even on a CPU (``copy=True``), so the op counter sees on a CPU the one copy a GPU makes. On CUDA
    it is asynchronous: PyTorch's blocking host-to-device copy (``non_blocking=False``) ends with a synchronisation
    of the stream (``memcpy_and_sync`` in ``aten/src/ATen/native/cuda/Copy.cu``), so an upload made while the vision
    tower is queued would hold the host until the tower has run. The bytes go through pinned memory
    (``pin_memory``; the caching host allocator keeps the block until the copy is done) with ``non_blocking=True``:
    the host goes on launching (the decision overlaps the tower) and the copy keeps its place in the stream.
    """
    flat = np.concatenate([np.asarray(a, dtype=np.int64).reshape(-1) for a in arrays]) if arrays else np.zeros(0)
    host = torch.from_numpy(flat.astype(np.int64, copy=False))
    if torch.device(device).type == "cuda":
        buffer = host.pin_memory().to(device, non_blocking=True)  # the one upload, queued on the stream
    else:
        buffer = host.to(device, copy=True)  # the one upload
    out, start = [], 0
    for a in arrays:
        out.append(buffer[start : start + a.size].view(a.shape))
        start += a.size
    return out


def locate_items(
    input_ids: torch.Tensor | np.ndarray,
    attention_mask: torch.Tensor | np.ndarray | None,
    kind: str,
    token_id: int,
    grid_thw: torch.Tensor | np.ndarray,
    merge_size: int,
    grid_name: str | None = None,
) -> list[VisualItem]:
    """Assign the placeholder tokens of one modality to its items.

    The i-th block of N_i = t*h*w / merge_size**2 placeholder tokens, in row-major order over ``input_ids``, belongs
    to item i (the order in which the model scatters features), and must lie within one sample.

    Bookkeeping on the host (NumPy); tensors given are read first (:func:`read_prompt` reads them all at once).

    Args:
        input_ids (numpy.ndarray or torch.LongTensor of shape (batch_size, sequence_length)): the unpruned prompt.
        attention_mask (array or tensor of shape (batch_size, sequence_length), or None): 0 on padding.
        kind: ``"image"`` or ``"video"`` (for messages and :attr:`VisualItem.kind`).
        token_id: the placeholder token id of this modality.
        grid_thw (array or tensor of shape (num_items, 3)): patch grids, as the processor returns them.
        merge_size: patches merged per token side.
        grid_name: the model's name of the grids, for messages (default ``{kind}_grid_thw``).

    Returns:
        One :class:`VisualItem` per row of ``grid_thw``, in that order.

    Raises:
        ValueError: if the placeholders and the grids do not match, an item spans samples, or placeholders are
            masked out.
    """
    ids, mask, grid = host(input_ids), host(attention_mask), host(grid_thw)
    assert ids is not None and grid is not None
    grid_name = grid_name or f"{kind}_grid_thw"
    if grid.ndim != 2 or grid.shape[1] != 3:
        raise ValueError(f"{grid_name} must have shape (num_{kind}s, 3), got {tuple(grid.shape)}")
    grid_list = [tuple(int(v) for v in row) for row in grid.tolist()]
    sizes = [t * h * w // (merge_size * merge_size) for t, h, w in grid_list]
    where = np.argwhere(ids == token_id)  # (M, 2) rows (sample, column), row-major
    if where.shape[0] != sum(sizes):
        raise ValueError(
            f"input_ids holds {where.shape[0]} {kind} placeholder tokens but {grid_name} describes "
            f"{sum(sizes)} ({' + '.join(map(str, sizes))}); the prompt and the {kind}s do not match"
        )
    if mask is not None and where.shape[0]:
        if not bool(mask[where[:, 0], where[:, 1]].all()):
            raise ValueError(f"some {kind} placeholder tokens are masked out by attention_mask")
    items, start, patch = [], 0, 0
    for i, (n, thw) in enumerate(zip(sizes, grid_list, strict=True)):
        block = where[start : start + n]  # (n, 2)
        rows = np.unique(block[:, 0]).tolist()
        if len(rows) != 1:
            raise ValueError(
                f"the placeholder tokens of {kind} {i} span samples {rows}; input_ids and {grid_name} do not match"
            )
        cols = np.ascontiguousarray(block[:, 1], dtype=np.int64)
        span = (int(cols[0]), int(cols[-1])) if n else (-1, -1)
        items.append(VisualItem(kind, i, int(rows[0]), cols, thw, patch, span))  # type: ignore[arg-type]
        start += n
        patch += thw[0] * thw[1] * thw[2]
    return items


def kept_columns(
    input_ids: torch.Tensor | np.ndarray,
    attention_mask: torch.Tensor | np.ndarray | None,
    items: Sequence[VisualItem],
    keeps: Sequence[torch.Tensor | np.ndarray],
) -> torch.Tensor | np.ndarray:
    """The columns of ``input_ids`` that stay: every real token except the dropped placeholders.

    Bookkeeping on the host: with arrays in (``compress``: the host copies), an array out; with tensors in (each is
    read to the host), a tensor on the device of ``input_ids``.

    Args:
        input_ids (array or tensor of shape (batch_size, sequence_length)): the unpruned prompt.
        attention_mask (array or tensor of shape (batch_size, sequence_length), or None): 0 on padding (dropped).
        items: the located items.
        keeps: per item, its kept indices into its own placeholder columns (ascending), host arrays or tensors.

    Returns:
        bool array / tensor of shape (batch_size, sequence_length).
    """
    ids, mask = host(input_ids), host(attention_mask)
    assert ids is not None
    keep_col = np.ones(ids.shape, dtype=bool)  # (B, L)
    for item, keep in zip(items, keeps, strict=True):
        dropped = np.ones(item.cols.size, dtype=bool)  # (N,)
        dropped[host(keep)] = False
        keep_col[item.sample, item.cols[dropped]] = False
    if mask is not None:
        keep_col &= mask.astype(bool)
    if isinstance(input_ids, torch.Tensor):
        return torch.from_numpy(keep_col).to(input_ids.device)
    return keep_col


def padding_side(attention_mask: torch.Tensor | np.ndarray | None, override: str | None = None) -> str:
    """``override`` if given, else the side the input is padded on (``"left"`` when unpadded or unknown); the mask
    as a host array (or a tensor, then read)."""
    if override is not None:
        return override
    mask = host(attention_mask)
    if mask is None or mask.size == 0:
        return "left"
    left, right = bool((mask[:, 0] == 0).any()), bool((mask[:, -1] == 0).any())
    return "right" if right and not left else "left"


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
        extra: the ``extra`` host arrays of :func:`repack`, on the device (int64), sent in the same copy.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor | None
    mm_token_type_ids: torch.Tensor | None
    position_ids: torch.Tensor
    index_map: torch.Tensor
    rope_deltas: torch.Tensor
    labels: torch.Tensor | None = None
    extra: list[torch.Tensor] = field(default_factory=list)


def repack(
    input_ids: torch.Tensor | np.ndarray,
    attention_mask: torch.Tensor | np.ndarray | None,
    keep_col: torch.Tensor | np.ndarray,
    position_ids: torch.Tensor,
    rope_deltas: torch.Tensor,
    side: str,
    pad_id: int,
    mm_token_type_ids: torch.Tensor | np.ndarray | None = None,
    labels: torch.Tensor | None = None,
    always_mask: bool = False,
    extra: Sequence[np.ndarray] = (),
) -> Repacked:
    """Gather every per-token input at the kept columns; each row shrinks by its own amount and is re-padded.

    Old padding is dropped (``keep_col`` is False there) and laid anew on ``side``. The layout (which original
    column lands where) is computed on the host from ``keep_col``; the new ids, mask and token types are built there
    from their host copies; one host-to-device copy brings them, the gather index and ``extra`` to the device, where
    the positions (and labels) are gathered: 2 ops for the positions, 1 for the deltas, 2 for labels, no host sync
    when the integer inputs are host arrays.

    Args:
        input_ids (array or tensor of shape (batch_size, sequence_length)): the unpruned prompt.
        attention_mask (array or tensor of shape (batch_size, sequence_length), or None): 0 on padding.
        keep_col (bool array or tensor of shape (batch_size, sequence_length)): columns that stay (see
            :func:`kept_columns`).
        position_ids (torch.LongTensor of shape (P, batch_size, sequence_length)): positions of the full sequence
            (P: the family's rows), gathered row by row; the outputs go to its device.
        rope_deltas (torch.LongTensor of shape (batch_size, 1)): the full sequence's max position + 1 - real length.
        side: ``"left"`` or ``"right"``: where the new padding goes.
        pad_id: token id written on padding.
        mm_token_type_ids (array or tensor of shape (batch_size, sequence_length), or None): 0 text, 1 image, 2 video.
        labels (torch.LongTensor of shape (batch_size, sequence_length) or None): training labels (gathered on their
            device).
        always_mask: build an attention mask even when the input had none and no row needed padding.
        extra: other host integer arrays to send to the device in the same copy (:attr:`Repacked.extra`).

    Returns:
        :class:`Repacked`.
    """
    ids, mask, keep, types = host(input_ids), host(attention_mask), host(keep_col), host(mm_token_type_ids)
    assert ids is not None and keep is not None
    keep = keep.astype(bool)
    batch, length = ids.shape
    lengths = keep.sum(1)  # (B,) tokens left per row
    new_len = int(lengths.max()) if batch else 0
    rank = np.cumsum(keep, 1) - 1  # (B, L) destination of each kept column, before the padding offset
    offset = (new_len - lengths) if side == "left" else np.zeros_like(lengths)  # (B,)
    index_map = np.full((batch, new_len), -1, dtype=np.int64)  # (B, L') original column or -1
    rows, cols = np.nonzero(keep)
    index_map[rows, rank[rows, cols] + offset[rows]] = cols
    filled = index_map < 0  # (B, L')
    gather = np.maximum(index_map, 0)  # (B, L')

    def take(x: np.ndarray, fill: int) -> np.ndarray:  # (B, L) -> (B, L')
        return np.where(filled, fill, np.take_along_axis(x, gather, 1)).astype(x.dtype, copy=False)

    new_ids = take(ids, pad_id)
    if mask is None and not filled.any() and not always_mask:
        new_mask = None
    else:
        new_mask = take(mask if mask is not None else np.ones_like(ids), 0)
    new_types = take(types, 0) if types is not None else None
    real_full = mask.sum(1) if mask is not None else np.full(batch, length)
    real_new = new_mask.sum(1) if new_mask is not None else np.full(batch, new_len)
    # (B,) next position minus real pruned length = rope_deltas + real_full - real_new: the host part
    shift = (real_full - real_new).astype(np.int64)
    real = (~filled).astype(np.int64)  # (B, L') 1 on kept columns, 0 on padding
    host_out = [new_ids, index_map, gather, real, shift]
    host_out += [a for a in (new_mask, new_types) if a is not None]
    device = position_ids.device
    sent = upload([*host_out, *extra], device)  # the one host-to-device copy
    ids_t, index_t, gather_t, real_t, shift_t = sent[:5]
    rest = iter(sent[5 : len(host_out)])

    def typed(t: torch.Tensor, like: np.ndarray | None, original: Any) -> torch.Tensor:
        dtype = original.dtype if isinstance(original, torch.Tensor) else _TORCH.get(np.dtype(like.dtype), torch.long)  # type: ignore[union-attr]
        return t if t.dtype == dtype else t.to(dtype)

    new_ids_t = typed(ids_t, new_ids, input_ids)
    mask_t = typed(next(rest), new_mask, attention_mask) if new_mask is not None else None
    types_t = typed(next(rest), new_types, mm_token_type_ids) if new_types is not None else None
    pos_index = gather_t.unsqueeze(0).expand(position_ids.shape[0], -1, -1)  # (P, B, L')
    new_pos = position_ids.gather(2, pos_index) * real_t.to(position_ids.dtype)  # (P, B, L'), 0 on padding
    deltas = (rope_deltas.reshape(-1) + shift_t.to(rope_deltas.device)).view(-1, 1)  # (B, 1)
    new_labels = None
    if labels is not None:
        g = gather_t.to(labels.device)
        new_labels = labels.gather(1, g).masked_fill(real_t.to(labels.device) == 0, -100)
    return Repacked(new_ids_t, mask_t, types_t, new_pos, index_t, deltas, new_labels, list(sent[len(host_out) :]))


def check_inputs(
    input_ids: torch.Tensor | None, kwargs: dict[str, Any], token_ids: dict[str, int], names: Names
) -> bool:
    """Every check of a call's inputs that needs no model; True if there is anything to prune.

    Args:
        input_ids (torch.LongTensor of shape (batch_size, sequence_length) or None): the prompt.
        kwargs: the call's other inputs, as the processor returns them.
        token_ids: the family's placeholder id of each modality.
        names: per modality, the model's names of its (pixels, grids) inputs (the adapter's ``input_names``).

    Raises:
        ValueError: one message naming the input and what to pass instead.
    """
    for key, why in REFUSED.items():
        if kwargs.get(key) is not None:
            raise ValueError(f"{key} was passed: {why}")
    present = [kind for kind, (px, _) in names.items() if kwargs.get(px) is not None]
    for kind in present:
        px, grid = names[kind]
        if grid and kwargs.get(grid) is None:
            raise ValueError(f"{px} was passed without {grid}; pass both, as the processor returns them")
    prefill = past_length(kwargs) == 0
    if not present:
        if prefill and isinstance(input_ids, torch.Tensor):
            for kind, (key, _) in names.items():
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
    input_ids: torch.Tensor | np.ndarray,
    attention_mask: torch.Tensor | np.ndarray | None,
    visual: dict[str, tuple[torch.Tensor | None, torch.Tensor | np.ndarray | None]],
    ids: dict[str, int],
    merge_size: int,
    names: Names | None = None,
) -> list[VisualItem]:
    """Every image, then every video, of the batch (:func:`locate_items` per modality), on the host.

    Args:
        input_ids, attention_mask: the prompt (host arrays; tensors are read).
        visual: per modality, (pixels, the items' grids) (the grids as host arrays, or tensors).
        names: per modality, the model's names of (pixels, grids), for messages (default: the kind's).

    Raises:
        ValueError: placeholders of a modality whose pixels were not passed (and :func:`locate_items`'s).
    """
    items: list[VisualItem] = []
    prompt, mask = host(input_ids), host(attention_mask)
    assert prompt is not None
    for kind, (pixels, grid) in visual.items():
        key, grid_name = (names or {}).get(kind, (f"{kind} pixels", f"{kind} grids"))
        if pixels is not None and grid is not None:
            items += locate_items(prompt, mask, kind, ids[kind], grid, merge_size, grid_name)
        elif (prompt == ids[kind]).any():
            raise ValueError(f"input_ids holds {kind} placeholder tokens but no {key} were passed")
    return items


def questions(
    items: Sequence[VisualItem],
    input_ids: torch.Tensor | np.ndarray,
    attention_mask: torch.Tensor | np.ndarray | None,
    query: str | Sequence[str | None] | None,
    ids: dict[str, int],
    tokenizer: Any = None,
    question_ids: Any = None,
) -> list[tuple[list[int], str | None]]:
    """The question of each item, as token ids and text: ``query`` (one string, or one per sample; None = take it
    from the prompt) or the text of the turn that holds the item (``question_ids(row, mask, first, last, ids)``: the
    family's, e.g. :meth:`~arr_coc.integrations.contract.Adapter.question_ids`; default: the whole row without the
    ``ids``), decoded with ``tokenizer`` (text None without one).

    Raises:
        ValueError: a per-sample list of the wrong length, or a string query without a tokenizer.
    """
    batch = input_ids.shape[0]
    queries = list(query) if isinstance(query, (list, tuple)) else [query] * batch
    if len(queries) != batch:
        raise ValueError(f"query is a list of {len(queries)} for a batch of {batch} samples")
    if any(isinstance(q, str) for q in queries) and tokenizer is None:
        raise ValueError("a string query= needs a tokenizer: pass compress(..., processor=...) or tokenizer=...")
    prompt, mask = host(input_ids), host(attention_mask)  # host arrays (compress's copies) pass through
    assert prompt is not None
    if question_ids is None:
        question_ids = _whole_row
    rows = prompt.tolist()
    masks = mask.tolist() if mask is not None else [[1] * prompt.shape[1]] * batch
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
        q_ids = question_ids(rows[it.sample], masks[it.sample], first, last, ids)
        out.append((q_ids, tokenizer.decode(q_ids) if hasattr(tokenizer, "decode") else None))
    return out


def _whole_row(row: Sequence[int], mask: Sequence[int], first: int, last: int, ids: dict[str, int]) -> list[int]:
    from .contract import TurnMarkers, turn_question_ids  # here: contract.py names this module's types

    return turn_question_ids(row, mask, first, last, TurnMarkers(None, None, None, frozenset(ids.values())))


def __getattr__(name: str) -> Any:
    """``turn_query_ids``: ChatML's question walk, now the Qwen line's (:func:`.qwen_common.turn_query_ids`)."""
    if name == "turn_query_ids":
        from . import qwen_common

        return qwen_common.turn_query_ids
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def read_decision(keeps: Sequence[torch.Tensor], scores: Sequence[torch.Tensor]) -> tuple[list[np.ndarray], list[bool]]:
    """The decision on the host in ONE read (a forward's second host sync, after :func:`read_prompt`): every item's
    kept indices, for the bookkeeping of the pruned sequence, and whether its scores hold a finite number.

    The kept indices and the scores go back in one tensor (one ``cat``: indices below 2**24 are exact in float32);
    otherwise (huge items, integer scores) the finiteness flags are computed on the device and sent with the indices.

    Args:
        keeps: per item, (k_i,) kept indices (LongTensor, on one device).
        scores: per item, (N_i,) its scores (float, on the same device).

    Returns:
        Per item, the kept indices (int64 array), and per item whether at least one score is finite.
    """
    if not keeps:
        return [], []
    device = keeps[0].device
    exact = all(s.dtype in (torch.float32, torch.float64) for s in scores) and max(s.numel() for s in scores) < 2**24
    if exact:  # one cat: type promotion makes the indices floats, exact below 2**24
        flat = torch.cat([*(k.reshape(-1) for k in keeps), *(s.reshape(-1).to(device) for s in scores)])
    else:
        finite = torch.isfinite(torch.cat([s.reshape(-1).to(device) for s in scores]))
        flat = torch.cat([*(k.reshape(-1) for k in keeps), finite])  # (sum k + sum N,) long
    values = to_host(flat)  # the one device-to-host read of the decision
    out, flags, start = [], [], 0
    for k in keeps:
        out.append(values[start : start + k.numel()].astype(np.int64))
        start += k.numel()
    for s in scores:
        part = values[start : start + s.numel()]
        flags.append(bool(np.isfinite(part).any()) if exact else bool(part.any()))
        start += s.numel()
    return out, flags
