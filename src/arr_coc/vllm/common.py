"""What every family shares in the vLLM plugin: options, the question, the decision, positions, packing.

The plugin touches vLLM at four seams (vLLM 0.32), all in this package:

* the multimodal processor's ``apply`` (sees the prompt's token ids): reads the request's options, takes each
  image's question from its user turn, and folds both into the options, so vLLM's processor cache and encoder
  cache (keyed on the image and ``mm_processor_kwargs``) key on the question too;
* ``_apply_hf_processor_main`` (sees the processed pixels): decides which merged tokens of each image to keep, with
  the same :func:`arr_coc.realizing.score_visual_tokens` + budget selection as ``compress(..., foveate=True)``, and
  stores them in the item as one more field, ``arr_coc_keep``;
* ``_get_prompt_updates``: the number of placeholder tokens of an image is its kept count;
* the model's ``embed_multimodal`` (the vision tower runs on the kept patches only, family files) and
  ``get_mrope_input_positions`` (every kept token at its ORIGINAL (t, h, w) position: :func:`pruned_mrope_positions`).

A request without ``arr_coc`` options (and no server default) goes through vLLM's own code unchanged: no field is
added, so its items are batched apart from pruned ones and take the unmodified path.

Everything here is data in, data out; the classes that glue it to vLLM are :class:`ProcessorMixin` and
:class:`ModelMixin`, subclassed once per family (one file a family in this package). This module names no family:
what differs between families is asked of the family's ``compress`` adapter (its registry row's, found by the HF
config's ``model_type``): the tokens of its turn and image markers (``vllm_markers``), how a turn is read
(``turn_markers``) and how its processor lays an image's patches out (``patch_frames``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from arr_coc.integrations.contract import TurnMarkers

from .options import (  # noqa: F401  (re-exported: moved from this module)
    COUNT_FIELD,
    DEVICE_ENV,
    KEEP_FIELD,
    KEY,
    MAX_REALIZERS,
    OPTIONS,
    QUERIES,
    ArrCocOptionError,
    Options,
    _realizers,
    _realizers_lock,
    _text_options,
    decision_device,
    on_device,
    parse_options,
    plugin_budget,
    realizer_for,
    request_options,
)


# ----- the question ------------------------------------------------------------------------------------------------
def special_ids(tokenizer: Any, image_token_id: int, video_token_id: int, markers: Mapping[str, str]) -> dict[str, int]:
    """Token ids that delimit a user turn and its images (what ``compress``'s turn walk needs): the placeholders and,
    for each key of ``markers`` (``vision_start``, ``vision_end``, ``im_start``, ``im_end``, ``newline``), the id of
    the token it names in the tokenizer's vocabulary (the family adapter's ``vllm_markers``)."""
    vocab = tokenizer.get_vocab()
    return {"image": int(image_token_id), "video": int(video_token_id),
            **{key: int(vocab[token]) for key, token in markers.items()}}  # fmt: skip


def turn_questions(
    prompt: Sequence[int], ids: Mapping[str, int], tokenizer: Any, turn: TurnMarkers | None = None
) -> list[str]:
    """The question of each image of a prompt, in order: the text of the user turn that holds it.

    Exactly ``compress``'s rule (:func:`arr_coc.integrations.contract.turn_question_ids`: the turn's text without its
    role header, placeholders and vision markers), decoded with the model's tokenizer.

    Args:
        prompt: the request's token ids before vLLM expands the placeholders (one image token per image).
        ids: :func:`special_ids`.
        turn: the family's turn markers (its adapter's ``turn_markers(ids)``); default: ``im_start`` opens a turn,
            ``im_end`` closes it, ``newline`` ends its role header, placeholders and markers are skipped.
    """
    from arr_coc.integrations.contract import turn_question_ids

    if turn is None:
        keys = ("image", "video", "vision_start", "vision_end", "im_start", "im_end")
        turn = TurnMarkers(ids["im_start"], ids["im_end"], ids["newline"], frozenset(ids[k] for k in keys))
    row = list(prompt)
    mask = [1] * len(row)
    return [tokenizer.decode(turn_question_ids(row, mask, col, col, turn)) for col, tok in enumerate(row)
            if tok == ids["image"]]  # fmt: skip


# ----- the decision ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Geometry:
    """The vision tower's patch geometry and the processor's normalisation (to recover the pixels).

    Attributes:
        patch_frames: the family's patch layout undone, ``(pixel_values, (t, h, w), patch_size, merge_size,
            temporal_patch_size, image_mean, image_std) -> frames (t, 3, H, W)`` (its adapter's ``patch_frames``).
    """

    patch_size: int
    merge_size: int
    temporal_patch_size: int
    image_mean: tuple[float, ...]
    image_std: tuple[float, ...]
    patch_frames: Callable[..., torch.Tensor] | None = field(default=None, compare=False, repr=False)


def _frames(pixel_values: torch.Tensor, grid_thw: Sequence[int], geometry: Geometry) -> torch.Tensor:
    """One image's processed patches -> its frames (t, 3, H, W), floats in [0, 1] (``geometry.patch_frames``)."""
    if geometry.patch_frames is None:
        raise ValueError("arr_coc: Geometry.patch_frames is not set (the family adapter's patch_frames)")
    t, h, w = (int(v) for v in grid_thw)
    return geometry.patch_frames(
        pixel_values,
        (t, h, w),
        geometry.patch_size,
        geometry.merge_size,
        geometry.temporal_patch_size,
        geometry.image_mean,
        geometry.image_std,
    )  # (t, 3, H, W)


def decide(
    pixel_values: torch.Tensor, grid_thw: Sequence[int], geometry: Geometry, question: str | None, options: Options
) -> torch.Tensor:
    """Which merged tokens of one image to keep: ``compress(..., foveate=True)``'s decision (:func:`decide_all` for
    one image).

    Args:
        pixel_values (torch.Tensor of shape (t*h*w, C*temporal_patch_size*patch_size**2)): the image's patches.
        grid_thw: (t, h, w) patch grid.
        question: the question (None or empty: query-blind).

    Returns:
        torch.LongTensor of shape (k,): kept indices, strictly increasing, raster order over (t, h/m, w/m).
    """
    return decide_all(pixel_values, torch.tensor([list(grid_thw)]), geometry, replace(options, query=question or ""))[0]


def decide_all(
    pixel_values: torch.Tensor, grid_thw: torch.Tensor, geometry: Geometry, options: Options
) -> list[torch.Tensor]:
    """Which merged tokens of each image of one processed batch (their patches concatenated) to keep, in ONE
    :meth:`arr_coc.realizing.Realizer.decide` call (every image's texture and relevance in one pass per frame size).

    Each image is decided on its own pixels and question (``options.query``, else ``options.queries``: one per image,
    in order; no token features: they do not exist before the tower runs); the budget is resolved with the realizer's
    config (a checkpoint's adaptive tiers), words kept whole in text mode. The text prior runs for an image when the
    mode is ``"text"`` and it has a question. Everything runs on :func:`decision_device` (default the CPU).

    Returns:
        per image, torch.LongTensor of shape (k_i,): kept indices, strictly increasing, raster order over
        (t, h/m, w/m), on the CPU.
    """
    grids = [tuple(int(v) for v in g) for g in grid_thw.tolist()]
    if options.query is not None:
        questions: list[str | None] = [options.query or None] * len(grids)
    elif options.queries is not None and len(options.queries) == len(grids):
        questions = list(options.queries)
    else:
        questions = [None] * len(grids)
    if not grids:
        return []
    m = geometry.merge_size
    device = decision_device()
    if device is not None:
        pixel_values = pixel_values.to(device)  # one copy to the device for the whole request
    starts = np.cumsum([0] + [t * h * w for t, h, w in grids]).tolist()
    frames = [_frames(pixel_values[a:b], g, geometry) for a, b, g in zip(starts, starts[1:], grids, strict=False)]
    modes = ["text" if options.mode == "text" and q else "texture" for q in questions]
    text_options = dict(options.text_options) if options.text_options is not None else None
    realizer = realizer_for(options.relevance, device)
    decision = realizer.decide(
        frames, [(h // m, w // m) for _, h, w in grids], questions, options.budget, modes, text_options=text_options
    )
    if options.budget_scope == "prompt" and len(grids) > 1:  # one budget over the request's images (document.py)
        from .document import split_request

        return split_request(decision, questions, options.budget, realizer)
    return [decision[i].keep.long().cpu() for i in range(len(decision))]  # each (k_i,)


# ----- positions ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlacedItem:
    """One image / video in a prompt, for :func:`pruned_mrope_positions`.

    Attributes:
        offset: index of its first placeholder token in the (pruned) prompt.
        grid: (t, h/m, w/m) merged grid.
        t_factor: temporal position step (videos whose time axis is scaled: seconds per grid step * tokens per
            second; else 1).
        keep (torch.LongTensor of shape (k,) or None): kept indices (None: all tokens, vLLM's own layout).
    """

    offset: int
    grid: tuple[int, int, int]
    t_factor: float = 1.0
    keep: torch.Tensor | None = None


def pruned_mrope_positions(n_tokens: int, items: Iterable[PlacedItem]) -> tuple[torch.Tensor, int]:
    """M-RoPE positions of a prompt whose images keep only some tokens, each at its ORIGINAL position.

    The positions of the full sequence, computed as vLLM's M-RoPE models' ``get_mrope_input_positions`` do (text runs
    count on from the previous maximum + 1; an item's tokens sit at (t * t_factor, h, w) + start), then gathered at
    the kept tokens; text after an image continues from the FULL grid's maximum + 1, as in the unpruned sequence.
    With every ``keep`` None this is vLLM's layout exactly.

    Args:
        n_tokens: length of the pruned prompt.
        items: its images / videos.

    Returns:
        positions (torch.LongTensor of shape (3, n_tokens)) and ``mrope_position_delta`` (max + 1 - n_tokens).
    """
    parts: list[np.ndarray] = []
    st = 0
    next_pos = 0
    for item in sorted(items, key=lambda i: i.offset):
        text_len = item.offset - st
        parts.append(np.broadcast_to(np.arange(text_len), (3, text_len)) + next_pos)
        start = next_pos + text_len
        t, h, w = item.grid
        grid = np.indices((t, h, w)).reshape(3, -1)  # (3, t*h*w)
        if item.t_factor != 1.0:
            grid[0] = (grid[0] * item.t_factor).astype(np.int64)
        full = grid + start  # (3, N)
        kept = full if item.keep is None else full[:, item.keep.numpy()]  # (3, k)
        parts.append(kept)
        next_pos = int(full.max()) + 1
        st = item.offset + kept.shape[1]
    if st < n_tokens:
        parts.append(np.broadcast_to(np.arange(n_tokens - st), (3, n_tokens - st)) + next_pos)
    positions = np.concatenate(parts, axis=1).reshape(3, -1) if parts else np.zeros((3, 0), dtype=np.int64)
    if positions.shape[1] != n_tokens:
        raise ValueError(f"the prompt has {n_tokens} tokens but its items and text make {positions.shape[1]}")
    return torch.from_numpy(np.ascontiguousarray(positions)).long(), int(positions.max()) + 1 - n_tokens


# ----- the vLLM processor seam -------------------------------------------------------------------------------------
class ProcessorMixin:
    """Mixed in before a family's vLLM ``...MultiModalProcessor``: options, questions, decisions, placeholder counts.

    The family class supplies :meth:`geometry` (from its HF config and image processor).
    """

    def arr_coc_adapter(self) -> Any:
        """The family's ``compress`` adapter (its registry row's, by the HF config's ``model_type``): the token names
        of its markers (``vllm_markers``), its turn walk (``turn_markers``) and its patch layout (``patch_frames``)."""
        from arr_coc.families import load_object, model_class_for_type

        model_type = self.info.get_hf_config().model_type  # type: ignore[attr-defined]
        row = model_class_for_type(model_type)
        if row is None:
            raise ValueError(f"arr_coc: no registered family has the model type {model_type!r}")
        return load_object(row.adapter)

    # the ids kept tokens get in vLLM: "original" (M-RoPE families: get_mrope_input_positions), or "renumber" (1-D
    # families: vLLM numbers a prompt's tokens by index); a request asking for the other is refused in one line
    served_positions: str = "original"
    positions_reason: str = "its M-RoPE positions carry each image's (t, h, w) layout"

    def arr_coc_options(self, request_kwargs: Mapping[str, object]) -> Options | None:
        merged = self.info.ctx.get_merged_mm_kwargs(request_options(request_kwargs))  # type: ignore[attr-defined]
        options = parse_options(merged.get(KEY))
        if options is not None and options.positions not in (None, self.served_positions):
            raise ArrCocOptionError(
                f"arr_coc: positions={options.positions!r} cannot be served for this model in vLLM, only "
                f"positions={self.served_positions!r}: {self.positions_reason}"
            )
        return options

    def arr_coc_ids(self, tokenizer: Any, adapter: Any) -> dict[str, int]:
        """The placeholder and marker ids the turn walk needs (default: the adapter's ``vllm_markers`` in the
        tokenizer's vocabulary, :func:`special_ids`)."""
        cfg = self.info.get_hf_config()  # type: ignore[attr-defined]
        return special_ids(tokenizer, cfg.image_token_id, cfg.video_token_id, adapter.vllm_markers)

    def geometry(self) -> Geometry:
        info = self.info  # type: ignore[attr-defined]
        vc = info.get_hf_config().vision_config
        ip = info.get_image_processor()
        tps = vc.temporal_patch_size
        mean, std = tuple(float(v) for v in ip.image_mean), tuple(float(v) for v in ip.image_std)
        if getattr(info.ctx.get_mm_config(), "mm_device_do_normalize", False):
            # vLLM's default: the processor neither rescales nor normalises (the tower does it on the device), so
            # pixel_values hold raw levels: pixels in [0, 1] = raw * rescale_factor
            scale = float(ip.rescale_factor) if getattr(ip, "do_rescale", True) else 1.0
            mean, std = (0.0, 0.0, 0.0), (scale, scale, scale)
        return Geometry(
            patch_size=int(vc.patch_size),
            merge_size=int(vc.spatial_merge_size),
            temporal_patch_size=int(tps if isinstance(tps, int) else tps[0]),
            image_mean=mean,
            image_std=std,
            patch_frames=self.arr_coc_adapter().patch_frames,
        )

    def get_dummy_inputs(self, seq_len: int, mm_counts: Mapping[str, int], mm_options: Any) -> Any:
        """vLLM's profiling inputs, never pruned: start-up sizes memory, the encoder cache and the encoder budget on
        them, so they must be the unpruned worst case (a request can always opt out with ``enabled: false``)."""
        inputs = super().get_dummy_inputs(seq_len, mm_counts, mm_options)  # type: ignore[misc]
        return replace(inputs, hf_processor_mm_kwargs={**inputs.hf_processor_mm_kwargs, KEY: {"enabled": False}})

    def apply(self, inputs: Any, timing_ctx: Any) -> Any:
        own = request_options(inputs.hf_processor_mm_kwargs)
        options = self.arr_coc_options(own)
        if options is not None and inputs.mm_data_items.get_all_counts().get("video", 0):
            if own.get(KEY):  # the request asked for pruning itself
                raise ArrCocOptionError(
                    "arr_coc: prunes images only, and this request has a video; send it without arr_coc options "
                    '(the server\'s defaults leave videos to vLLM) or with {"enabled": false}'
                )
            # the server's defaults apply to images only: a request with videos is served as vLLM serves it, and
            # every later step (which merges the defaults again) must read it the same way
            own = {**own, KEY: {"enabled": False}}
            options = None
        if options is None:  # nothing to do
            return super().apply(replace(inputs, hf_processor_mm_kwargs=own), timing_ctx)  # type: ignore[misc]
        tokenizer = self.info.get_tokenizer()  # type: ignore[attr-defined]
        adapter = self.arr_coc_adapter()
        ids = self.arr_coc_ids(tokenizer, adapter)
        questions = turn_questions(inputs.prompt, ids, tokenizer, adapter.turn_markers(ids))
        request = dict(own.get(KEY) or {})
        if options.query is None:
            request[QUERIES] = questions  # the question becomes part of the item's cache key
        kwargs = {**own, KEY: request}
        if options.budget_scope == "prompt":  # one budget over the images: keyed and cached as one document
            from .document import whole_document

            inputs, kwargs = whole_document(self, inputs, kwargs)
        return super().apply(replace(inputs, hf_processor_mm_kwargs=kwargs), timing_ctx)  # type: ignore[misc]

    def _get_cache_missing_processor_kwargs(self, inputs: Any, mm_is_cached: Any) -> Mapping[str, object]:
        kwargs = super()._get_cache_missing_processor_kwargs(inputs, mm_is_cached)  # type: ignore[misc]
        request = kwargs.get(KEY)
        if isinstance(request, Mapping) and request.get(QUERIES) is not None:  # only the missing items' questions
            cached = mm_is_cached.get("image", [])
            missing = [q for q, hit in zip(request[QUERIES], cached, strict=False) if not hit]
            kwargs = {**kwargs, KEY: {**request, QUERIES: missing}}
        return kwargs

    def _apply_hf_processor_main(self, mm_items: Any, hf_kwargs: Mapping[str, object]) -> Any:
        options = self.arr_coc_options(hf_kwargs)
        hf_only = {k: v for k, v in hf_kwargs.items() if k != KEY}
        processed = super()._apply_hf_processor_main(mm_items, hf_only)  # type: ignore[misc]
        if options is None or "pixel_values" not in processed:
            return processed
        keeps = decide_all(processed["pixel_values"], processed["image_grid_thw"], self.geometry(), options)
        processed[KEEP_FIELD] = torch.cat(keeps)  # (sum k_i,)
        processed[COUNT_FIELD] = torch.tensor([int(k.numel()) for k in keeps])  # (num_images,)
        return processed

    def _get_mm_fields_config(self, hf_inputs: Any, hf_processor_mm_kwargs: Mapping[str, object]) -> Any:
        from vllm.multimodal.inputs import MultiModalFieldConfig

        hf_only = {k: v for k, v in hf_processor_mm_kwargs.items() if k != KEY}
        fields = dict(super()._get_mm_fields_config(hf_inputs, hf_only))  # type: ignore[misc]
        if KEEP_FIELD in hf_inputs:
            fields[KEEP_FIELD] = MultiModalFieldConfig.flat_from_sizes("image", hf_inputs[COUNT_FIELD])
            fields[COUNT_FIELD] = MultiModalFieldConfig.batched("image", keep_on_cpu=True)
        return fields

    def _get_prompt_updates(self, mm_items: Any, hf_processor_mm_kwargs: Any, out_mm_kwargs: Any) -> Any:
        hf_only = {k: v for k, v in hf_processor_mm_kwargs.items() if k != KEY}  # the HF processor never sees ours
        updates = super()._get_prompt_updates(mm_items, hf_only, out_mm_kwargs)  # type: ignore[misc]
        return [_with_kept_count(u, out_mm_kwargs) if u.modality == "image" else u for u in updates]


def _with_kept_count(update: Any, out_mm_kwargs: Any) -> Any:
    """An image prompt update whose replacement repeats the placeholder once per KEPT token (when pruned)."""
    return pruned_update(update, out_mm_kwargs, lambda full, item: _shrink(full, int(item[KEEP_FIELD].data.numel())))


def pruned_update(update: Any, out_mm_kwargs: Any, prune: Any) -> Any:
    """An image prompt update whose replacement is ``prune(full, item)`` for a pruned item (one carrying its kept
    indices) and vLLM's own ``full`` replacement for any other; every family's processor shapes its pruned layout
    through this one wrapper."""
    original = update.replacement

    def replacement(item_idx: int) -> Any:
        item = out_mm_kwargs["image"][item_idx]
        full = original(item_idx) if callable(original) else original
        return full if KEEP_FIELD not in item else prune(full, item)

    return replace(update, replacement=replacement)


def select_kept_items(selected: dict[str, Any], mm_kwargs: dict[str, Any], indices: list[int]) -> dict[str, Any]:
    """``selected`` (vLLM's encoder CUDA graph selection of ``indices``: pixels and grids only) with the kept
    indices and counts of those items carried along."""
    if KEEP_FIELD in mm_kwargs:
        keeps = split_keeps(mm_kwargs[KEEP_FIELD], mm_kwargs[COUNT_FIELD])
        chosen = [keeps[i] for i in indices]
        selected[KEEP_FIELD] = torch.cat(chosen) if chosen else torch.zeros(0, dtype=torch.long)
        selected[COUNT_FIELD] = torch.tensor([int(k.numel()) for k in chosen], dtype=torch.long)
    return selected


def _shrink(full: Any, k: int) -> Any:
    """The family's image replacement (a run of image tokens: a plain token list) cut to ``k``."""
    if not isinstance(full, list) or len(set(full)) != 1:
        raise TypeError(f"arr_coc expected a run of image placeholder tokens as the replacement, got {type(full)}")
    return full[:1] * k


# ----- the vLLM model seam -----------------------------------------------------------------------------------------
def split_keeps(keep: Any, counts: Any) -> list[torch.Tensor]:
    """The batched ``arr_coc_keep`` / ``arr_coc_kept`` fields -> one LongTensor (k_i,) of kept indices per image."""
    if isinstance(keep, (list, tuple)):
        return [torch.as_tensor(k).long().cpu() for k in keep]
    sizes = [int(c) for c in torch.as_tensor(counts).flatten().tolist()]
    return list(torch.as_tensor(keep).long().cpu().split(sizes))


# Reported to vLLM's encoder CUDA graph manager as a pruned item's token count on the graph path: larger than any
# captured budget, so the manager runs the item eagerly (``encoder_eager_forward``) in a batch of its own.
EAGER_ONLY_TOKENS = 1 << 62


def check_encoded(outputs: Sequence[torch.Tensor], keeps: Sequence[torch.Tensor], where: str) -> None:
    """The length check between a pruned batch's encoder outputs and its prompts: item ``i`` must have exactly
    ``len(keeps[i])`` rows, one per placeholder of its prompt (vLLM would otherwise take the first rows silently).

    Raises:
        RuntimeError: naming the item, the rows and the kept count.
    """
    if len(outputs) != len(keeps):
        raise RuntimeError(f"arr_coc: {where} returned {len(outputs)} encoder outputs for {len(keeps)} pruned images")
    for i, (out, keep) in enumerate(zip(outputs, keeps, strict=True)):
        if out.shape[0] != keep.numel():
            raise RuntimeError(
                f"arr_coc: {where} returned {out.shape[0]} rows for pruned image {i}, whose prompt has "
                f"{keep.numel()} placeholders; pruned images must be encoded on their kept patches only"
            )


def shard_items(sizes: Sequence[int], world_size: int) -> tuple[list[int], list[int]]:
    """vLLM's load balance for its data-parallel vision encoder (``get_load_balance_assignment``), on the KEPT
    patch counts: (item order by rank, items per rank)."""
    from vllm.model_executor.models.vision import get_load_balance_assignment

    order, counts, _ = get_load_balance_assignment(list(sizes), world_size)
    return list(order), list(counts)


def unshard_outputs(
    gathered: torch.Tensor, order: Sequence[int], counts: Sequence[int], rows: Sequence[int], max_rows: int
) -> list[torch.Tensor]:
    """The all-gathered encoder outputs of a data-parallel pruned batch -> one tensor per item, in item order.

    Args:
        gathered (torch.Tensor of shape (world_size * max_rows, D)): each rank's outputs (its items in ``order``),
            padded to ``max_rows``.
        order, counts: :func:`shard_items`' assignment.
        rows: each item's output rows (its kept count), in item order.
    """
    out: list[torch.Tensor | None] = [None] * len(rows)
    first = 0
    for rank, count in enumerate(counts):
        at = rank * max_rows
        for item in order[first : first + count]:
            out[item] = gathered[at : at + rows[item]]
            at += rows[item]
        first += count
    if any(o is None for o in out):
        raise RuntimeError("arr_coc: an item of the data-parallel pruned batch was assigned to no rank")
    return [o for o in out if o is not None]


class ModelMixin:
    """Mixed in before a family's vLLM ``...ForConditionalGeneration``: the foveated encoder and pruned positions.

    Each family class (one file a family in this package) defines
    ``encode_kept(pixel_values, grids, keeps)``: its tower run on the kept patches only, with that tower's metadata
    (rotary positions, windows, position embeddings) for the full grid.

    Every encoder mode of vLLM reaches the pruned path: the eager ``embed_multimodal``; torch.compile'd vision blocks
    (``compile_mm_encoder``: the blocks are compiled with the patch axis dynamic and are called with the kept
    patches); the encoder CUDA graphs (``cudagraph_mm_encoder``: vLLM's manager asks the model for each item's size
    and batch, and a pruned item reports a size no captured graph holds, so the manager runs it eagerly through
    ``encoder_eager_forward``; a pruned batch that reached a graph anyway fails loudly); and the data-parallel
    encoder (``--mm-encoder-tp-mode data``: the pruned items are split over the ranks by their kept patches, as vLLM
    splits full ones).
    """

    # ----- the eager encoder (vLLM's embed_multimodal) ------------------------------------------------------------
    def embed_multimodal(self, **kwargs: object) -> Any:
        if KEEP_FIELD not in kwargs:  # no item of this batch is pruned: vLLM's own path
            return super().embed_multimodal(**kwargs)  # type: ignore[misc]
        pixel_values, grids, keeps = self._pruned_batch(kwargs)
        if getattr(self, "use_data_parallel", False):
            outputs = self._encode_kept_data_parallel(pixel_values, grids, keeps)
        else:
            outputs = list(self.encode_kept(pixel_values, grids, keeps))  # type: ignore[attr-defined]
        check_encoded(outputs, keeps, "the foveated encoder")
        return tuple(outputs)

    @staticmethod
    def _pruned_batch(
        kwargs: Mapping[str, object],
    ) -> tuple[torch.Tensor, list[tuple[int, int, int]], list[torch.Tensor]]:
        """A pruned batch's full patches (sum t*h*w, C*tps*p*p), FULL grids and kept indices per image."""
        pixel_values = kwargs["pixel_values"]
        if isinstance(pixel_values, (list, tuple)):
            pixel_values = torch.cat(list(pixel_values))
        grid = torch.as_tensor(kwargs["image_grid_thw"]).reshape(-1, 3)
        grids = [(int(t), int(h), int(w)) for t, h, w in grid.tolist()]
        keeps = split_keeps(kwargs[KEEP_FIELD], kwargs[COUNT_FIELD])
        return pixel_values, grids, keeps  # type: ignore[return-value]

    def _encode_kept_data_parallel(
        self, pixel_values: torch.Tensor, grids: list[tuple[int, int, int]], keeps: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        """``--mm-encoder-tp-mode data``: each tensor-parallel rank encodes its share of the pruned images (balanced
        on their kept patches, with vLLM's own assignment) with a full copy of the tower, then all ranks gather."""
        from vllm.distributed import (
            get_tensor_model_parallel_rank,
            get_tensor_model_parallel_world_size,
            tensor_model_parallel_all_gather,
        )

        world = get_tensor_model_parallel_world_size()
        if world == 1:
            return list(self.encode_kept(pixel_values, grids, keeps))  # type: ignore[attr-defined]
        return encode_kept_sharded(
            self.encode_kept,  # type: ignore[attr-defined]
            pixel_values,
            grids,
            keeps,
            merge=int(self.visual.spatial_merge_size),  # type: ignore[attr-defined]
            out_dim=int(self.visual.out_hidden_size),  # type: ignore[attr-defined]
            dtype=self.visual.dtype,  # type: ignore[attr-defined]
            rank=get_tensor_model_parallel_rank(),
            world_size=world,
            all_gather=lambda x: tensor_model_parallel_all_gather(x, dim=0),
        )

    # ----- vLLM's encoder CUDA graph manager (cudagraph_mm_encoder): pruned items run eagerly ----------------------
    def get_encoder_cudagraph_item_specs(self, mm_kwargs: dict[str, Any]) -> Any:
        if KEEP_FIELD not in mm_kwargs:
            return super().get_encoder_cudagraph_item_specs(mm_kwargs)  # type: ignore[misc]
        from vllm.v1.worker.encoder_cudagraph_defs import EncoderItemSpec

        m = int(self.visual.spatial_merge_size)  # type: ignore[attr-defined]
        keeps = split_keeps(mm_kwargs[KEEP_FIELD], mm_kwargs[COUNT_FIELD])
        return [
            EncoderItemSpec(
                input_size=int(k.numel()) * m * m,  # the kept patches: what the encoder runs on (DP balancing)
                output_tokens=int(k.numel()),  # one row per placeholder: the manager splits the output by it
                path_output_tokens={"default": EAGER_ONLY_TOKENS},  # fits no captured graph: eager, alone
            )
            for k in keeps
        ]

    def select_encoder_cudagraph_items(self, mm_kwargs: dict[str, Any], indices: list[int]) -> dict[str, Any]:
        selected = super().select_encoder_cudagraph_items(mm_kwargs, indices)  # type: ignore[misc]
        return select_kept_items(selected, mm_kwargs, indices)  # vLLM selects pixels and grids: carry the keeps

    def prepare_encoder_cudagraph_replay_buffers(self, mm_kwargs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        if KEEP_FIELD in mm_kwargs:
            raise RuntimeError(
                "arr_coc: a pruned image batch reached vLLM's encoder CUDA graph, which is sized for full images; "
                "pruned images must run eagerly (this vLLM's encoder graph manager is not the one the plugin supports)"
            )
        return super().prepare_encoder_cudagraph_replay_buffers(mm_kwargs, *args, **kwargs)  # type: ignore[misc]

    def encoder_eager_forward(self, mm_kwargs: dict[str, Any], path: str = "default") -> torch.Tensor:
        if KEEP_FIELD not in mm_kwargs:
            return super().encoder_eager_forward(mm_kwargs, path=path)  # type: ignore[misc]
        pixel_values, grids, keeps = self._pruned_batch(mm_kwargs)
        outputs = list(self.encode_kept(pixel_values, grids, keeps))  # type: ignore[attr-defined]
        check_encoded(outputs, keeps, "the foveated encoder (encoder CUDA graph manager, eager)")
        return torch.cat(outputs)  # (sum k, D): the manager splits it by each item's output_tokens

    def postprocess_encoder_output(
        self,
        outputs: dict[str, torch.Tensor],
        indices: list[int],
        per_item_out_tokens: list[int],
        dest: Any,
        clone: bool = False,
        batch_mm_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if batch_mm_kwargs is not None and KEEP_FIELD in batch_mm_kwargs:
            keeps = split_keeps(batch_mm_kwargs[KEEP_FIELD], batch_mm_kwargs[COUNT_FIELD])
            rows = [per_item_out_tokens[i] for i in indices]
            if rows != [int(k.numel()) for k in keeps] or outputs["default"].shape[0] != sum(rows):
                raise RuntimeError(
                    f"arr_coc: the encoder graph manager split {outputs['default'].shape[0]} rows as {rows} for "
                    f"pruned images that keep {[int(k.numel()) for k in keeps]} tokens"
                )
        super().postprocess_encoder_output(  # type: ignore[misc]
            outputs, indices, per_item_out_tokens, dest, clone=clone, batch_mm_kwargs=batch_mm_kwargs
        )

    # ----- positions ----------------------------------------------------------------------------------------------
    def get_mrope_input_positions(self, input_tokens: list[int], mm_features: list[Any]) -> tuple[torch.Tensor, int]:
        if not any(KEEP_FIELD in (f.data or {}) for f in mm_features):
            return super().get_mrope_input_positions(input_tokens, mm_features)  # type: ignore[misc]
        merge = int(self.config.vision_config.spatial_merge_size)  # type: ignore[attr-defined]
        items = []
        for f in mm_features:
            if f.modality != "image":
                raise ValueError("arr_coc prunes images only")
            t, h, w = (int(v) for v in f.data["image_grid_thw"].data.tolist())
            keep = f.data[KEEP_FIELD].data.long().cpu() if KEEP_FIELD in f.data else None
            items.append(PlacedItem(f.mm_position.offset, (t, h // merge, w // merge), 1.0, keep))
        return pruned_mrope_positions(len(input_tokens), items)


def encode_kept_sharded(
    encode: Any,
    pixel_values: torch.Tensor,
    grids: list[tuple[int, int, int]],
    keeps: list[torch.Tensor],
    *,
    merge: int,
    out_dim: int,
    dtype: torch.dtype,
    rank: int,
    world_size: int,
    all_gather: Any,
) -> list[torch.Tensor]:
    """One rank's part of a data-parallel pruned encode: its items (:func:`shard_items` on the kept patches), their
    outputs padded to the largest rank's rows, ``all_gather`` along rows, :func:`unshard_outputs`.

    Args:
        encode: the family's ``encode_kept(pixel_values, grids, keeps) -> list of (k_i, D)``.
        pixel_values (torch.Tensor of shape (sum t*h*w, C*tps*p*p)): every image's full patches, in item order.
        out_dim, dtype: the encoder's output width (with any DeepStack levels) and dtype (a rank with no
            item sends an empty (0, D) block).
        all_gather: ``(rows, D) -> (world_size * rows, D)``, the ranks' tensors concatenated in rank order.
    """
    rows = [int(k.numel()) for k in keeps]
    order, counts = shard_items([r * merge * merge for r in rows], world_size)
    first = sum(counts[:rank])
    mine = order[first : first + counts[rank]]
    max_rows = max(sum(rows[i] for i in order[sum(counts[:r]) : sum(counts[: r + 1])]) for r in range(world_size))
    starts = np.cumsum([0] + [t * h * w for t, h, w in grids]).tolist()
    if mine:
        local_pixels = torch.cat([pixel_values[starts[i] : starts[i + 1]] for i in mine])
        local = torch.cat(list(encode(local_pixels, [grids[i] for i in mine], [keeps[i] for i in mine])))
    else:
        local = torch.zeros((0, out_dim), dtype=dtype, device=pixel_values.device)
    padded = torch.cat([local, local.new_zeros((max_rows - local.shape[0], local.shape[1]))])  # (max_rows, D)
    return unshard_outputs(all_gather(padded), order, counts, rows, max_rows)


__all__ = [
    "KEY",
    "KEEP_FIELD",
    "COUNT_FIELD",
    "OPTIONS",
    "ArrCocOptionError",
    "EAGER_ONLY_TOKENS",
    "Geometry",
    "ModelMixin",
    "Options",
    "PlacedItem",
    "ProcessorMixin",
    "decide",
    "check_encoded",
    "decide_all",
    "encode_kept_sharded",
    "parse_options",
    "plugin_budget",
    "request_options",
    "pruned_mrope_positions",
    "realizer_for",
    "shard_items",
    "split_keeps",
    "turn_questions",
    "unshard_outputs",
]
