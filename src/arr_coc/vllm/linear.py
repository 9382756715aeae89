"""What the 1-D families (Mistral3 / Pixtral, Gemma 3) share in the vLLM plugin: the decision on each image's pixels,
the pruned prompt layout (only the image placeholders dropped, every structure token kept), the kept rows of the
full tower's output, and the ``positions`` option.

These families differ from the M-RoPE ones (:mod:`.common`) in three ways, handled here without touching
:mod:`.common`:

* **pixels**: ``pixel_values`` is one (3, H, W) image an item (no patch rows, no ``image_grid_thw``); the token grid
  is (H / cell, W / cell), ``cell = patch * merge`` (the family adapter's ``geometry``);
* **the tower runs on the whole image**: Pixtral's and SigLIP's attention spans all of an image's patches (as in
  ``compress``, which refuses ``foveate=True`` for both), so a pruned item is encoded in full and its KEPT rows are
  handed to vLLM (:func:`kept_rows`);
* **positions**: vLLM 0.32's runner numbers a non-M-RoPE model's tokens by their index in the prompt (it calls
  ``get_mrope_input_positions`` only for configs with an ``mrope_section``), so a pruned prompt is served with
  renumbered positions, ``compress(positions="renumber")``. A request asking for ``"original"`` is refused in one line
  (HTTP 400): giving kept tokens their original ids would need a change to vLLM's runner, not a plugin class.

The decision is the plugin's (before the tower, on the pixels and the question: :meth:`Realizer.decide`, as
``compress(foveate=True)`` decides); ``compress``'s drop mode on these families also couples the tower's token
features with the question, which the plugin cannot (the prompt's layout depends on the kept set, so it is decided
in the processor, before any tower runs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import torch

from .common import ProcessorMixin, check_encoded, pruned_update, split_keeps, turn_questions
from .options import COUNT_FIELD, KEEP_FIELD, KEY, QUERIES, ArrCocOptionError, Options, parse_options, request_options

POSITIONS = "positions"  # the request option this module reads (and strips before the shared parser)


def check_positions(raw: Any, family: str) -> Any:
    """The request's ``arr_coc`` options without ``positions``, after checking it: ``"renumber"`` (or absent) is what
    vLLM serves; ``"original"`` is refused in one line.

    Raises:
        ArrCocOptionError: ``positions`` is ``"original"`` or not a known choice.
    """
    if not isinstance(raw, Mapping) or POSITIONS not in raw:
        return raw
    value = raw[POSITIONS]
    if value == "original":
        raise ArrCocOptionError(
            f"arr_coc: positions 'original' is not served for {family} in vLLM 0.32: its runner numbers 1-D positions "
            "by token index, so a pruned prompt is renumbered; send positions 'renumber' (what is served), or use "
            "compress(positions='original') in transformers"
        )
    if value not in (None, "renumber"):
        raise ArrCocOptionError(f"arr_coc: positions {value!r} is not one of 'renumber' (served), 'original'")
    return {k: v for k, v in raw.items() if k != POSITIONS}


def unit_frames(pixel_values: Any, mean: Sequence[float], std: Sequence[float]) -> list[torch.Tensor]:
    """Each image of a processed batch as (1, 3, H, W) floats in [0, 1]: ``pixel_values * std + mean``.

    Args:
        pixel_values: (n, 3, H, W) or a list of (3, H_i, W_i) (the processor's pixels, normalised by ``mean`` /
            ``std``; raw levels with ``mean`` 0 and ``std`` the rescale factor).
    """
    out = []
    for px in pixel_values:
        px = torch.as_tensor(px).float()
        m, s = px.new_tensor(mean).view(3, 1, 1), px.new_tensor(std).view(3, 1, 1)
        out.append((px * s + m).clamp(0, 1)[None])
    return out


def drop_placeholders(tokens: Sequence[int], image_id: int, keep: torch.Tensor) -> list[int]:
    """An image's prompt tokens with the placeholders not in ``keep`` removed (``keep``: indices into the image's
    placeholders in order); every other token (row breaks, image start / end, newlines) stays where it was."""
    kept = set(int(i) for i in keep.tolist())
    out, n = [], 0
    for tok in tokens:
        if tok == image_id:
            if n in kept:
                out.append(tok)
            n += 1
        else:
            out.append(tok)
    if n <= (max(kept) if kept else -1):
        raise ValueError(f"arr_coc: the image has {n} placeholders but a kept index is {max(kept)}")
    return out


def kept_rows(outputs: Sequence[torch.Tensor], keeps: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Each image's full tower output (N_i, D) at its kept tokens: (k_i, D), checked against the kept counts."""
    out = [o[k.to(o.device)] for o, k in zip(outputs, keeps, strict=True)]
    check_encoded(out, list(keeps), "the 1-D family's kept rows")
    return out


class LinearProcessorMixin(ProcessorMixin):
    """Mixed in before a 1-D family's vLLM ``...MultiModalProcessor`` (see the module docstring).

    A family class supplies :meth:`prompt_image_id` (the token that stands for an image in the prompt before vLLM
    expands it), :meth:`token_grid` and :meth:`check_processed`.
    """

    family: str = ""

    def prompt_image_id(self) -> int:
        raise NotImplementedError

    def token_grid(self, frame: torch.Tensor) -> tuple[int, int]:
        """(rows, cols) of visual tokens of one image, from its (1, 3, H, W) frame."""
        raise NotImplementedError

    def check_processed(self, processed: Any) -> None:
        """Refuse a processed batch the grid cannot map (one line naming the setting)."""

    def arr_coc_options(self, request_kwargs: Mapping[str, object]) -> Options | None:
        merged = self.info.ctx.get_merged_mm_kwargs(request_options(request_kwargs))  # type: ignore[attr-defined]
        return parse_options(check_positions(merged.get(KEY), self.family))

    def arr_coc_ids(self) -> dict[str, int]:
        """The adapter's special ids (its family row, then the tokenizer's), the image key set to the prompt's
        image token."""

        class Holder:
            config = self.info.get_hf_config()  # type: ignore[attr-defined]

        ids = self.arr_coc_adapter().special_ids(Holder(), self.info.get_tokenizer())  # type: ignore[attr-defined]
        return {**ids, "image": self.prompt_image_id()}

    def apply(self, inputs: Any, timing_ctx: Any) -> Any:
        own = request_options(inputs.hf_processor_mm_kwargs)
        options = self.arr_coc_options(own)
        if options is None:
            return super(ProcessorMixin, self).apply(replace(inputs, hf_processor_mm_kwargs=own), timing_ctx)  # type: ignore[misc]
        tokenizer = self.info.get_tokenizer()  # type: ignore[attr-defined]
        ids = self.arr_coc_ids()
        questions = turn_questions(inputs.prompt, ids, tokenizer, self.arr_coc_adapter().turn_markers(ids))
        request = check_positions(dict(own.get(KEY) or {}), self.family)
        if options.query is None:
            request[QUERIES] = questions  # the question becomes part of the item's cache key
        kwargs = {**own, KEY: request}
        if options.budget_scope == "prompt":
            from .document import whole_document

            inputs, kwargs = whole_document(self, inputs, kwargs)
        return super(ProcessorMixin, self).apply(replace(inputs, hf_processor_mm_kwargs=kwargs), timing_ctx)  # type: ignore[misc]

    def unit_frames(self, pixel_values: Any) -> list[torch.Tensor]:
        g = self.geometry_1d()
        return unit_frames(pixel_values, g[0], g[1])

    def geometry_1d(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(mean, std) that undo the processor's normalisation (raw levels when vLLM normalises on the device)."""
        info = self.info  # type: ignore[attr-defined]
        ip = info.get_hf_processor().image_processor
        mean, std = tuple(float(v) for v in ip.image_mean), tuple(float(v) for v in ip.image_std)
        if getattr(info.ctx.get_mm_config(), "mm_device_do_normalize", False):
            scale = float(ip.rescale_factor) if getattr(ip, "do_rescale", True) else 1.0
            mean, std = (0.0, 0.0, 0.0), (scale, scale, scale)
        return mean, std

    def _apply_hf_processor_main(self, mm_items: Any, hf_kwargs: Mapping[str, object]) -> Any:
        options = self.arr_coc_options(hf_kwargs)
        hf_only = {k: v for k, v in hf_kwargs.items() if k != KEY}
        processed = super(ProcessorMixin, self)._apply_hf_processor_main(mm_items, hf_only)  # type: ignore[misc]
        if options is None or "pixel_values" not in processed:
            return processed
        self.check_processed(processed)
        keeps = decide_frames(self.unit_frames(processed["pixel_values"]), self.token_grid, options)
        processed[KEEP_FIELD] = torch.cat(keeps)  # (sum k_i,)
        processed[COUNT_FIELD] = torch.tensor([int(k.numel()) for k in keeps])  # (num_images,)
        return processed

    def _get_prompt_updates(self, mm_items: Any, hf_processor_mm_kwargs: Any, out_mm_kwargs: Any) -> Any:
        hf_only = {k: v for k, v in hf_processor_mm_kwargs.items() if k != KEY}
        updates = super(ProcessorMixin, self)._get_prompt_updates(mm_items, hf_only, out_mm_kwargs)  # type: ignore[misc]
        image_id = int(self.info.get_hf_config().image_token_id)  # type: ignore[attr-defined]
        return [_pruned_layout(u, out_mm_kwargs, image_id) if u.modality == "image" else u for u in updates]


def _pruned_layout(update: Any, out_mm_kwargs: Any, image_id: int) -> Any:
    """An image prompt update whose replacement drops the placeholders not kept (when pruned)."""
    from vllm.multimodal.processing import PromptUpdateDetails

    def prune(full: Any, item: Any) -> Any:
        tokens = full.full if isinstance(full, PromptUpdateDetails) else full
        pruned = drop_placeholders(list(tokens), image_id, item[KEEP_FIELD].data.long().cpu())
        return PromptUpdateDetails.select_token_id(pruned, image_id)

    return pruned_update(update, out_mm_kwargs, prune)


def decide_frames(frames: list[torch.Tensor], token_grid: Any, options: Options) -> list[torch.Tensor]:
    """Which tokens of each image to keep: ONE :meth:`Realizer.decide` over the request's images (their frames in
    [0, 1], grids from ``token_grid``), each with its question (``options.query``, else ``options.queries``), as
    :func:`arr_coc.vllm.common.decide_all` decides for the M-RoPE families; ``budget_scope="prompt"`` splits one
    budget over them (:func:`arr_coc.vllm.document.split_request`).

    Returns:
        per image, torch.LongTensor of shape (k_i,): kept indices, ascending, raster order, on the CPU.
    """
    from .options import decision_device, realizer_for

    if not frames:
        return []
    if options.query is not None:
        questions: list[str | None] = [options.query or None] * len(frames)
    elif options.queries is not None and len(options.queries) == len(frames):
        questions = list(options.queries)
    else:
        questions = [None] * len(frames)
    grids = [token_grid(f) for f in frames]
    device = decision_device()
    if device is not None:
        frames = [f.to(device) for f in frames]
    modes = ["text" if options.mode == "text" and q else "texture" for q in questions]
    text_options = dict(options.text_options) if options.text_options is not None else None
    realizer = realizer_for(options.relevance, device)
    decision = realizer.decide(frames, grids, questions, options.budget, modes, text_options=text_options)
    if options.budget_scope == "prompt" and len(frames) > 1:
        from .document import split_request

        return split_request(decision, questions, options.budget, realizer)
    return [decision[i].keep.long().cpu() for i in range(len(decision))]


class LinearModelMixin:
    """Mixed in before a 1-D family's vLLM ``...ForConditionalGeneration``: a pruned batch is encoded by the family's
    own ``embed_multimodal`` on the whole images, then each image's kept rows are returned."""

    def embed_multimodal(self, **kwargs: object) -> Any:
        if KEEP_FIELD not in kwargs:
            return super().embed_multimodal(**kwargs)  # type: ignore[misc]
        keeps = split_keeps(kwargs.pop(KEEP_FIELD), kwargs.pop(COUNT_FIELD))
        full = list(super().embed_multimodal(**kwargs))  # type: ignore[misc]
        return tuple(kept_rows(full, keeps))


__all__ = [
    "POSITIONS",
    "LinearModelMixin",
    "LinearProcessorMixin",
    "check_positions",
    "decide_frames",
    "drop_placeholders",
    "kept_rows",
    "unit_frames",
]
