"""What every Qwen-VL family shares in the vLLM plugin: options, the question, the decision, positions, packing.

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
:class:`ModelMixin`, subclassed once per family (``qwen2_vl.py``, ``qwen2_5_vl.py``, ``qwen3_vl.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from arr_coc.attending import Budget, parse_budget

KEY = "arr_coc"  # the key in mm_processor_kwargs
KEEP_FIELD = "arr_coc_keep"  # the field added to each pruned image item: its kept merged-token indices
COUNT_FIELD = "arr_coc_kept"  # and its kept count (to split the batched indices per image)
QUERIES = "_queries"  # internal: the per-image questions, filled in by ProcessorMixin.apply (part of the cache key)
OPTIONS = {
    "budget": "tokens to keep per image: a fraction in (0, 1], a count >= 1, or 'adaptive' (default 'adaptive')",
    "mode": "'text' (OCR-aware, needs the [ocr] extra), 'texture' (no OCR) or 'auto' (text if [ocr] is installed)",
    "query": "the question to score against (default: the text of the user turn that holds the image)",
    "text_options": "mode 'text' only: the matcher's switches, e.g. {'semantic': false}",
    "relevance": "a learned relevance checkpoint folder (Realizer.from_pretrained); default the training-free one",
    "enabled": "false: this request is served unpruned even when the server has defaults",
}


class ArrCocOptionError(ValueError):
    """A request's ``arr_coc`` options are invalid (vLLM answers such a ValueError with HTTP 400)."""


@dataclass(frozen=True)
class Options:
    """One request's pruning options (server defaults merged under the request's own).

    Attributes:
        budget: tokens to keep per image (``arr_coc.attending``: fraction, count or ``"adaptive"``).
        mode: ``"text"`` or ``"texture"`` (``"auto"`` resolved when the options are parsed).
        query: the question for every image, or None (each image's user turn).
        text_options: the text path's switches (mode ``"text"``), or None.
        relevance: a relevance checkpoint folder, or None (the default training-free realizer).
        queries: filled in by the processor: one question per image of the request, in prompt order.
    """

    budget: Budget = "adaptive"
    mode: str = "texture"
    query: str | None = None
    text_options: Mapping[str, Any] | None = None
    relevance: str | None = None
    queries: tuple[str, ...] | None = None


def parse_options(raw: Any) -> Options | None:
    """The request's ``mm_processor_kwargs["arr_coc"]`` (already merged with the server's) -> :class:`Options`.

    Returns None when there is nothing to do (no options, or ``enabled: false``): vLLM's own behaviour.

    Raises:
        ArrCocOptionError: one clear message for an unknown option or a bad value.
    """
    from arr_coc.realizing import resolve_mode

    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ArrCocOptionError(f"arr_coc: options must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(OPTIONS) - {QUERIES})
    if unknown:
        allowed = ", ".join(OPTIONS)
        raise ArrCocOptionError(f"arr_coc: unknown option {unknown[0]!r}; allowed: {allowed}")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ArrCocOptionError(f"arr_coc: enabled must be true or false, got {enabled!r}")
    if not enabled:
        return None
    budget = raw.get("budget", "adaptive")
    try:
        parse_budget(budget)
        mode = resolve_mode(raw.get("mode", "auto"))
    except (ValueError, ImportError) as exc:
        raise ArrCocOptionError(f"arr_coc: {exc}") from None
    query = raw.get("query")
    if query is not None and not isinstance(query, str):
        raise ArrCocOptionError(f"arr_coc: query must be a string, got {type(query).__name__}")
    text_options = raw.get("text_options")
    if text_options is not None and not isinstance(text_options, Mapping):
        raise ArrCocOptionError(f"arr_coc: text_options must be an object, got {type(text_options).__name__}")
    relevance = raw.get("relevance")
    if relevance is not None:
        if not isinstance(relevance, str) or not Path(relevance).is_dir():
            raise ArrCocOptionError(f"arr_coc: relevance must be a checkpoint folder on the server, got {relevance!r}")
        realizer_for(relevance)  # a clear error now, not inside the engine
    queries = raw.get(QUERIES)
    return Options(
        budget=budget,
        mode=mode,
        query=query,
        text_options=dict(text_options) if text_options is not None else None,
        relevance=relevance,
        queries=tuple(queries) if queries is not None else None,
    )


# ----- the relevance model: one Realizer per checkpoint folder, shared, bounded -----------------------------------
_realizers: OrderedDict[str, Any] = OrderedDict()
_realizers_lock = threading.Lock()
MAX_REALIZERS = 4  # distinct relevance checkpoints held at once (least recently used dropped first)


def realizer_for(relevance: str | None) -> Any:
    """The :class:`~arr_coc.realizing.Realizer` for a relevance folder (None: the default training-free one).

    A folder is loaded once with ``Realizer.from_pretrained`` (the same object and config ``allocate`` and
    ``compress`` use when given that folder) and kept in a small LRU table.
    """
    from arr_coc.realizing import Realizer, default_realizer

    if relevance is None:
        return default_realizer()
    key = str(Path(relevance).resolve())
    with _realizers_lock:
        if key in _realizers:
            _realizers.move_to_end(key)
            return _realizers[key]
        if not hasattr(Realizer, "from_pretrained"):
            raise ArrCocOptionError(
                "arr_coc: relevance checkpoints need Realizer.from_pretrained, which this arr-coc-vis lacks; "
                "upgrade arr-coc-vis or leave 'relevance' out"
            )
        try:
            realizer = Realizer.from_pretrained(key).eval().requires_grad_(False)
        except Exception as exc:  # a bad folder is the request's problem: one clear message
            raise ArrCocOptionError(f"arr_coc: could not load the relevance checkpoint {relevance!r}: {exc}") from None
        _realizers[key] = realizer
        while len(_realizers) > MAX_REALIZERS:
            _realizers.popitem(last=False)
        return realizer


# ----- the question ------------------------------------------------------------------------------------------------
def special_ids(tokenizer: Any, image_token_id: int, video_token_id: int) -> dict[str, int]:
    """Token ids that delimit a user turn and its images (what ``compress``'s ``turn_query_ids`` needs)."""
    vocab = tokenizer.get_vocab()
    return {
        "image": int(image_token_id),
        "video": int(video_token_id),
        "vision_start": int(vocab["<|vision_start|>"]),
        "vision_end": int(vocab["<|vision_end|>"]),
        "im_start": int(vocab["<|im_start|>"]),
        "im_end": int(vocab["<|im_end|>"]),
        "newline": int(vocab["Ċ"]),  # byte-level BPE's "\n", as compress looks it up
    }


def turn_questions(prompt: Sequence[int], ids: Mapping[str, int], tokenizer: Any) -> list[str]:
    """The question of each image of a prompt, in order: the text of the user turn that holds it.

    Exactly ``compress``'s rule (:func:`arr_coc.integrations.sequence.turn_query_ids`: the turn's text without its
    role header, placeholders and vision markers), decoded with the model's tokenizer.

    Args:
        prompt: the request's token ids before vLLM expands the placeholders (one image token per image).
    """
    from arr_coc.integrations.sequence import turn_query_ids

    row = list(prompt)
    mask = [1] * len(row)
    out = []
    for col, tok in enumerate(row):
        if tok == ids["image"]:
            out.append(tokenizer.decode(turn_query_ids(row, mask, col, col, dict(ids))))
    return out


# ----- the decision ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Geometry:
    """The vision tower's patch geometry and the processor's normalisation (to recover the pixels)."""

    patch_size: int
    merge_size: int
    temporal_patch_size: int
    image_mean: tuple[float, ...]
    image_std: tuple[float, ...]


def decide(
    pixel_values: torch.Tensor, grid_thw: Sequence[int], geometry: Geometry, question: str | None, options: Options
) -> torch.Tensor:
    """Which merged tokens of one image to keep: ``compress(..., foveate=True)``'s decision.

    :meth:`arr_coc.realizing.Realizer.decide` on the image's own pixels and the question (no token features: they do
    not exist before the tower runs): the budget resolved with the realizer's config (a checkpoint's adaptive tiers),
    words kept whole in text mode. The text prior runs when the mode is ``"text"`` and there is a question.

    Args:
        pixel_values (torch.Tensor of shape (t*h*w, C*temporal_patch_size*patch_size**2)): the image's patches.
        grid_thw: (t, h, w) patch grid.
        question: the question (None or empty: query-blind).

    Returns:
        torch.LongTensor of shape (k,): kept indices, strictly increasing, raster order over (t, h/m, w/m).
    """
    from arr_coc.texture import frames_from_patches

    realizer = realizer_for(options.relevance)
    t, h, w = (int(v) for v in grid_thw)
    m = geometry.merge_size
    frames = frames_from_patches(
        pixel_values,
        (t, h, w),
        geometry.patch_size,
        m,
        geometry.temporal_patch_size,
        geometry.image_mean,
        geometry.image_std,
    )  # (t, 3, H, W)
    mode = "text" if options.mode == "text" and question else "texture"
    text_options = dict(options.text_options) if options.text_options is not None else None
    decision = realizer.decide(
        [frames], [(h // m, w // m)], [question], options.budget, mode, text_options=text_options
    )
    return decision[0].keep.long().cpu()  # (k,)


def decide_all(
    pixel_values: torch.Tensor, grid_thw: torch.Tensor, geometry: Geometry, options: Options
) -> list[torch.Tensor]:
    """:func:`decide` for every image of one processed batch (their patches concatenated), questions from
    ``options.query`` or ``options.queries`` (one per image, in order)."""
    grids = [tuple(int(v) for v in g) for g in grid_thw.tolist()]
    if options.query is not None:
        questions: list[str | None] = [options.query] * len(grids)
    elif options.queries is not None and len(options.queries) == len(grids):
        questions = list(options.queries)
    else:
        questions = [None] * len(grids)
    keeps, start = [], 0
    for grid, question in zip(grids, questions, strict=True):
        n = grid[0] * grid[1] * grid[2]
        keeps.append(decide(pixel_values[start : start + n], grid, geometry, question, options))
        start += n
    return keeps


# ----- positions ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlacedItem:
    """One image / video in a prompt, for :func:`pruned_mrope_positions`.

    Attributes:
        offset: index of its first placeholder token in the (pruned) prompt.
        grid: (t, h/m, w/m) merged grid.
        t_factor: temporal position step (Qwen2.5-VL videos: seconds per grid step * tokens per second; else 1).
        keep (torch.LongTensor of shape (k,) or None): kept indices (None: all tokens, vLLM's own layout).
    """

    offset: int
    grid: tuple[int, int, int]
    t_factor: float = 1.0
    keep: torch.Tensor | None = None


def pruned_mrope_positions(n_tokens: int, items: Iterable[PlacedItem]) -> tuple[torch.Tensor, int]:
    """M-RoPE positions of a prompt whose images keep only some tokens, each at its ORIGINAL position.

    The positions of the full sequence, computed as vLLM's Qwen2-VL ``get_mrope_input_positions`` does (text runs
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

    def arr_coc_options(self, request_kwargs: Mapping[str, object]) -> Options | None:
        merged = self.info.ctx.get_merged_mm_kwargs(request_kwargs)  # type: ignore[attr-defined]
        return parse_options(merged.get(KEY))

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
        )

    def apply(self, inputs: Any, timing_ctx: Any) -> Any:
        options = self.arr_coc_options(inputs.hf_processor_mm_kwargs)
        if options is None:  # nothing to do (or enabled: false, which every later step reads the same way)
            return super().apply(inputs, timing_ctx)  # type: ignore[misc]
        if inputs.mm_data_items.get_all_counts().get("video", 0):
            raise ArrCocOptionError("arr_coc: prunes images only; send videos without arr_coc options")
        tokenizer = self.info.get_tokenizer()  # type: ignore[attr-defined]
        cfg = self.info.get_hf_config()  # type: ignore[attr-defined]
        ids = special_ids(tokenizer, cfg.image_token_id, cfg.video_token_id)
        questions = turn_questions(inputs.prompt, ids, tokenizer)
        request = dict(inputs.hf_processor_mm_kwargs.get(KEY) or {})
        if options.query is None:
            request[QUERIES] = questions  # the question becomes part of the item's cache key
        kwargs = {**inputs.hf_processor_mm_kwargs, KEY: request}
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
    original = update.replacement

    def replacement(item_idx: int) -> Any:
        item = out_mm_kwargs["image"][item_idx]
        full = original(item_idx) if callable(original) else original
        if KEEP_FIELD not in item:
            return full
        return _shrink(full, int(item[KEEP_FIELD].data.numel()))

    return replace(update, replacement=replacement)


def _shrink(full: Any, k: int) -> Any:
    """The family's image replacement (a run of image tokens; Qwen-VL's are plain token lists) cut to ``k``."""
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


class ModelMixin:
    """Mixed in before a family's vLLM ``...ForConditionalGeneration``: the foveated encoder and pruned positions.

    Each family class (``qwen2_vl.py``, ``qwen2_5_vl.py``, ``qwen3_vl.py``) defines
    ``encode_kept(pixel_values, grids, keeps)``: its tower run on the kept patches only, with that tower's metadata
    (rotary positions, windows, position embeddings) for the full grid.
    """

    def embed_multimodal(self, **kwargs: object) -> Any:
        keep = kwargs.pop(KEEP_FIELD, None)
        if keep is None:  # no item of this batch is pruned: vLLM's own path
            return super().embed_multimodal(**kwargs)  # type: ignore[misc]
        pixel_values = kwargs["pixel_values"]
        grid_thw = kwargs["image_grid_thw"]
        if isinstance(pixel_values, (list, tuple)):
            pixel_values = torch.cat(list(pixel_values))
        grid = torch.as_tensor(grid_thw).reshape(-1, 3)
        grids = [tuple(int(v) for v in g) for g in grid.tolist()]
        keeps = split_keeps(keep, kwargs.pop(COUNT_FIELD))
        return tuple(self.encode_kept(pixel_values, grids, keeps))

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


__all__ = [
    "KEY",
    "KEEP_FIELD",
    "COUNT_FIELD",
    "OPTIONS",
    "ArrCocOptionError",
    "Geometry",
    "ModelMixin",
    "Options",
    "PlacedItem",
    "ProcessorMixin",
    "decide",
    "decide_all",
    "parse_options",
    "pruned_mrope_positions",
    "realizer_for",
    "split_keeps",
    "turn_questions",
]
