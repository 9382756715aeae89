"""``arr_coc.compress``: drop-in visual-token pruning for Qwen-VL models, as a wrapper (never a patch).

``cm = compress(model, budget=0.25)`` returns a :class:`CompressedModel`. ``cm(**inputs)`` and
``cm.generate(**inputs, **gen_kwargs)`` take exactly what the model's processor returns and return what the model
returns; every other attribute (``cm.config``, ``cm.device``, ...) is the model's. Nothing of ``transformers`` is
patched and nothing is assigned onto the model or its modules: the unwrapped model keeps working unchanged.

What a call does, for a batch that holds images or videos (the pure steps are in :mod:`.sequence`):

1. locates every image / video in the prompt and its question (``locate_items``, ``turn_query_ids``);
2. computes the M-RoPE positions of the FULL, unpruned sequence with the model's own ``get_rope_index``;
3. runs the vision tower once on the full pixels (``get_image_features`` / ``get_video_features``), unless foveated;
4. decides which merged tokens of each item to keep: :meth:`arr_coc.realizing.Realizer.decide` (the default scorer:
   relevance, the budget resolved with the realizer's config, words whole, the level-of-detail split), or a custom
   scorer's scores and :meth:`~arr_coc.realizing.Realizer.choose`;
5. foveated (``foveate=True`` or ``detail=...``): runs the tower only on the kept tokens' patches
   (:mod:`.foveation`; level of detail first adds the coarse view, :mod:`.detail`);
6. drops the other placeholder tokens from ``input_ids`` (each sample shrinks by its own amount; rows are re-padded
   and ``attention_mask`` rebuilt), gathers the full positions at the kept columns (``kept_columns``, ``repack``),
   and calls the model with the pruned ``mm_encoder_outputs`` and explicit ``position_ids``.

So kept tokens keep their original (t, h, w) positions, text after an image keeps its positions, and decoding
continues at max position + 1 of the UNPRUNED sequence: ``generate`` gets the family's generation positions (Qwen-VL:
a text row above the 3 M-RoPE rows) and extends them by one per new token; a hand-written cached decoding loop
through ``cm(...)`` gets positions from :attr:`CompressedModel.rope_deltas`.

Example:
    >>> cm = compress(model, budget=0.25, processor=processor)  # doctest: +SKIP
    >>> out = cm.generate(**processor(text=[prompt], images=[image], return_tensors="pt"), max_new_tokens=32)
    >>> cm.last_allocation[0][0].budget  # tokens kept of the first image of the first sample
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from arr_coc.attending import Budget, TokenBudget, TokenScores
from arr_coc.deciding import Choice, allocate_tokens  # noqa: F401  (allocate_tokens: as before the split)
from arr_coc.families import check_transformers, load_object, match_model, supported_classes
from arr_coc.tensors import joined

from .base import EncodedVisual, FamilyAdapter, ImageContext, Scorer, VisualAllocation, default_scorer
from .options import CompressOptions, normalisation
from .qwen3_vl import tier_levels
from .sequence import (
    HostPrompt,
    PrunedInputs,
    VisualItem,
    check_inputs,
    kept_columns,
    locate,
    padding_side,
    past_length,
    questions,
    read_decision,
    read_prompt,
    repack,
    upload,
)

SUPPORTED_CLASSES: tuple[str, ...] = supported_classes()  # the built-in families' classes (arr_coc.families)
generation_position_ids = FamilyAdapter.generation_position_ids  # Qwen-VL's 4-row generate positions (the adapter's)

Visual = dict[str, tuple[torch.Tensor | None, torch.Tensor | None]]  # kind -> (pixel rows, grid_thw)


def find_adapter(model: Any) -> FamilyAdapter:
    """The adapter for ``model``'s class, from the family registry (:mod:`arr_coc.families`), after checking that
    the installed ``transformers`` is one the family gives exact answers with.

    Raises:
        ValueError: if the class is not supported; the message lists the supported classes.
        RuntimeError: if ``transformers`` is older than the family's floor; the message names both versions.
    """
    found = match_model(model)
    if found is None:
        raise ValueError(unsupported_message(model))
    family, entry = found
    check_transformers(family)
    return load_object(entry.adapter)


def unsupported_message(model: Any) -> str:
    """One line for a model class the registry does not know: the class, the supported classes and their families, and
    how to register one."""
    from arr_coc.families import family_names

    return (
        f"compress() does not support {type(model).__name__}; supported model classes: {', '.join(supported_classes())}"
        f" (families: {', '.join(family_names())}). Wrap the ...ForConditionalGeneration model, not its inner .model; "
        "to add a model, register its family: arr_coc.families.register(Family(..., classes=(ModelClass(model_type, "
        "class_name, module, 'pkg.mod:ADAPTER'),))) with a FamilyAdapter (see arr_coc/families.py)"
    )


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
        options: the :class:`~arr_coc.integrations.options.CompressOptions`.
        realizer: the relevance model that decides (``options.realizer`` or the shared default one).
        last_allocation: per sample, per image/video (in prompt order: images first, then videos), a
            :class:`~arr_coc.integrations.base.VisualAllocation` with ``kind``, ``grid``, ``keep``, ``scores``,
            ``budget``.
        last_inputs: :class:`~arr_coc.integrations.sequence.PrunedInputs` of the last call with visual inputs.
        rope_deltas (torch.LongTensor of shape (batch_size, 1) or None): used to position new tokens when a
            cached decoding step goes through ``cm(...)`` (no pixels, non-empty ``past_key_values``).
    """

    def __init__(
        self,
        model: Any,
        adapter: FamilyAdapter,
        options: CompressOptions,
        tokenizer: Any = None,
        image_mean: tuple[float, ...] | None = None,
        image_std: tuple[float, ...] | None = None,
    ) -> None:
        from arr_coc.realizing import default_realizer

        self.model = model
        self.adapter = adapter
        self.options = options
        self.realizer = options.realizer if options.realizer is not None else default_realizer()
        self.tokenizer = tokenizer
        self.image_mean = image_mean if image_mean is not None else adapter.image_mean
        self.image_std = image_std if image_std is not None else adapter.image_std
        self.last_allocation: list[list[VisualAllocation]] = []
        self.last_inputs: PrunedInputs | None = None
        self.rope_deltas: torch.Tensor | None = None

    @property
    def foveate(self) -> bool:
        """Whether the tower runs on the kept patches only (``foveate=True``, and always with ``detail``)."""
        return self.options.foveated

    # ----- forwarding -------------------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name == "model":  # not yet set (e.g. during unpickling): do not recurse
            raise AttributeError(name)
        return getattr(self.model, name)

    def __repr__(self) -> str:
        o = self.options
        extra = (", foveate=True" if self.foveate else "") + (f", detail={o.detail!r}" if o.detail else "")
        budget = [b.value for b in o.budget] if isinstance(o.budget, tuple) else o.budget.value
        return f"CompressedModel({type(self.model).__name__}, budget={budget!r}, family={self.adapter.name!r}{extra})"

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
            if past_length(kwargs) == 0:  # a text-only prompt: the model positions it and what follows
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
        past = past_length(kwargs)
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
        return {**kwargs, "position_ids": self.adapter.decode_position_ids(pos)}  # (3, B, n_new) for Qwen-VL

    def _encode(self, visual: Visual) -> dict[str, EncodedVisual]:
        """The vision-tower seam: the tower + merger once per modality on the full pixels (``{kind: EncodedVisual}``
        for each modality present)."""
        return {k: self.adapter.encode(self.model, k, px, grid) for k, (px, grid) in visual.items() if px is not None}

    def _encode_kept(
        self, visual: Visual, keeps: dict[str, list[torch.Tensor]], host_grids: dict[str, np.ndarray | None]
    ) -> dict[str, EncodedVisual]:
        """The foveated seam: the tower once per modality on the KEPT tokens' patches only (``keeps``: per modality,
        (k_i,) kept merged-token indices per item, host copies, so the tower's inputs are built on the host and
        uploaded once; ``host_grids``: the grids read with the prompt); ``features[i]`` has shape (k_i, D), in kept
        order."""
        return {
            k: self.adapter.encode_kept(self.model, k, px, grid, keeps[k], host_grids.get(k))
            for k, (px, grid) in visual.items()
            if px is not None
        }

    def _decide(
        self,
        items: list[VisualItem],
        visual: Visual,
        encoded: dict[str, EncodedVisual],
        positions: torch.Tensor,
        prompt: HostPrompt,
        budgets: list[TokenBudget],
        ids: dict[str, int],
    ) -> list[tuple[Choice, torch.Tensor]]:
        """Step 4: per item, what to keep and the scores (N,): :meth:`Realizer.decide` for the default scorer (one
        call per modality), else the scorer's scores and :meth:`Realizer.choose`; the realizer's config resolves
        every budget either way.

        Batched, with no host sync: the questions come from the host copy of the prompt; their ids and the patch
        rows of items that share a grid go to the device in one copy; one embedding call for every distinct
        question; one ``frames_from_patches`` per grid (the items of a grid side by side, as the frames of one
        video). The scores' finiteness is checked with the kept indices (:func:`read_decision`).
        """
        o, (patch, merge, tps) = self.options, self.adapter.geometry(self.model)
        asked = questions(items, prompt.input_ids, prompt.attention_mask, o.query, ids, self.tokenizer)  # [(ids, text)]
        device = positions.device
        distinct = list(dict.fromkeys(tuple(q) for q, _ in asked))  # each distinct question once
        default = o.scorer is default_scorer
        groups = _grid_groups(items) if default else {}  # (kind, grid_thw) -> item indices
        rows = {key: _patch_rows(items, members) for key, members in groups.items()}  # None: a contiguous run
        arrays = [np.asarray(q, dtype=np.int64) for q in distinct]
        arrays += [r for r in rows.values() if r is not None]
        sent = iter(upload(arrays, device)) if arrays else iter(())  # the one host-to-device copy of this step
        q_of = {q: next(sent) for q in distinct}  # each (Q,)
        q_ids = [q_of[tuple(q)] for q, _ in asked]
        embed = self.model.get_input_embeddings()
        with torch.no_grad():
            nonempty = [q for q in distinct if q]
            together = joined([q_of[q] for q in nonempty]) if nonempty else None  # adjacent in the upload: a view
            embedded = embed(together.to(embed.weight.device)) if together is not None else None  # (sum Q, D)
            by_text: dict[tuple[int, ...], torch.Tensor | None] = {q: None for q in distinct}
            if embedded is not None:
                by_text.update(zip(nonempty, embedded.split([len(q) for q in nonempty]), strict=True))  # (Q, D)
            embeds = [by_text[tuple(q)] for q, _ in asked]  # each (Q, D) or None
        pixels = [visual[it.kind][0][it.patch_start : it.patch_start + it.n_patches] for it in items]  # type: ignore[index]
        feats = [encoded[it.kind].features[it.index].detach() if encoded else None for it in items]  # (N, D) or None
        n = [math.prod(it.merged_grid(merge)) for it in items]
        redund = [
            (f if f is not None else px.reshape(k, -1)).detach() if o.redundancy > 0 else None
            for f, px, k in zip(feats, pixels, n, strict=True)
        ]  # near-duplicates by the tower's features, or (foveated) by the tokens' pixels
        grids = [it.merged_grid(merge)[1:] for it in items]
        out: list[Any] = [None] * len(items)
        if default:
            from arr_coc.texture import frames_from_patches

            frames: list[torch.Tensor | None] = [None] * len(items)
            for (kind, thw), members in groups.items():
                px = visual[kind][0]
                assert px is not None
                first = items[members[0]]
                run = rows[(kind, thw)]
                block = (
                    px[first.patch_start : first.patch_start + first.n_patches * len(members)]
                    if run is None
                    else (px.index_select(0, next(sent).to(px.device)))
                )  # (G * t*h*w, D): the group's patch rows, in order
                t = thw[0]
                together = frames_from_patches(
                    block, (t * len(members), thw[1], thw[2]), patch, merge, tps, self.image_mean, self.image_std
                )  # (G * t, 3, H, W): exactly each item's frames, side by side
                for j, i in enumerate(members):
                    frames[i] = together[j * t : (j + 1) * t]  # (t, 3, H, W)
            for kind in ("image", "video"):
                at = [i for i, it in enumerate(items) if it.kind == kind]
                if not at:
                    continue
                modes = ["text" if o.text_prior and asked[i][1] else "texture" for i in at]
                decision = self.realizer.decide(
                    [frames[i] for i in at], [grids[i] for i in at], [asked[i][1] for i in at],  # type: ignore[misc]
                    [budgets[items[i].sample] for i in at], modes, token_feats=[feats[i] for i in at],
                    query_embeds=[embeds[i] for i in at], features=[redund[i] for i in at], redundancy=o.redundancy,
                    detail=o.detail if kind == "image" else None, patch=patch, merge=merge, text_options=o.text_options,
                )  # fmt: skip
                for i, d in zip(at, decision.items, strict=True):
                    out[i] = (d.choice, _counted(d.scores.detach().float().flatten(), n[i]))
            return out
        for i, it in enumerate(items):
            cols = torch.from_numpy(it.cols).to(positions.device)
            ctx = ImageContext(
                it.kind, it.sample, it.index, pixels[i], it.grid_thw, it.merged_grid(merge), patch, merge, tps,
                feats[i], positions[:, it.sample, cols], q_ids[i], embeds[i], asked[i][1],
                self.model.config, o.scorer_config, self.image_mean, self.image_std, self.realizer,
                bool(o.text_prior and asked[i][1]), o.text_options,
            )  # fmt: skip
            answer = o.scorer(ctx)
            units = answer.units if isinstance(answer, TokenScores) else ()
            raw = answer.scores if isinstance(answer, TokenScores) else answer
            scores = _counted(torch.as_tensor(raw).detach().float().flatten(), n[i])  # (N,)
            choice = self.realizer.choose(
                scores, budgets[it.sample], units=units, features=redund[i], redundancy=o.redundancy,
                detail=o.detail if it.kind == "image" else None, grid=grids[i], patch=patch, merge=merge,
            )  # fmt: skip
            out[i] = (choice, scores)
        return out

    def _plan(
        self, input_ids: torch.Tensor | None, kwargs: dict[str, Any], generation: bool
    ) -> tuple[dict[str, Any], torch.Tensor] | None:
        """Prune one batch. Returns (kwargs for the model call, original input_ids) or None if there is no image.

        The steps: validate -> read the prompt to the host (sync 1) -> locate -> full positions (and the tower,
        unless foveated) -> decide -> read the decision to the host (sync 2) -> level of detail: the coarse view ->
        foveated: the tower on the kept patches -> kept columns -> repack (one upload, a few gathers).
        """
        from .detail import coarse_view, thumbnail_inserts, thumbnail_layout, thumbnails_to_device

        if not check_inputs(input_ids, kwargs, self.adapter.token_ids(self.model)):
            return None
        assert input_ids is not None
        original_ids, kwargs = input_ids, dict(kwargs)
        mask, mm_types, labels = (kwargs.pop(k, None) for k in ("attention_mask", "mm_token_type_ids", "labels"))
        visual: Visual = {
            "image": (kwargs.pop("pixel_values", None), kwargs.pop("image_grid_thw", None)),
            "video": (kwargs.pop("pixel_values_videos", None), kwargs.pop("video_grid_thw", None)),
        }
        extras = {"second_per_grid_ts": kwargs.pop("second_per_grid_ts", None)}
        if mask is not None and mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask has shape {tuple(mask.shape)}, input_ids {tuple(input_ids.shape)}")
        if mm_types is not None and mm_types.shape != input_ids.shape:
            raise ValueError(f"mm_token_type_ids has shape {tuple(mm_types.shape)}, input_ids {tuple(input_ids.shape)}")
        budgets = self.options.budgets(input_ids.shape[0])
        ids = self.adapter.special_ids(self.model, self.tokenizer)
        patch, merge, tps = self.adapter.geometry(self.model)

        def read(ids_t: torch.Tensor, mask_t: torch.Tensor | None, types_t: torch.Tensor | None) -> HostPrompt:
            """The prompt's integers on the host in one read; the token types computed there when none came."""
            for kind in ("image", "video"):
                grid = visual[kind][1]
                if grid is not None and grid.dim() != 2:
                    raise ValueError(f"{kind}_grid_thw must have shape (num_{kind}s, 3), got {tuple(grid.shape)}")
            prompt = read_prompt(ids_t, mask_t, types_t, {k: g for k, (px, g) in visual.items() if px is not None})
            if prompt.mm_token_type_ids is None:
                prompt.mm_token_type_ids = self.adapter.mm_token_type_ids(prompt.input_ids, ids)
            return prompt

        prompt = read(input_ids, mask, mm_types)  # host sync 1
        host_visual = {k: (px, prompt.grids.get(k)) for k, (px, _) in visual.items()}
        items = locate(prompt.input_ids, prompt.attention_mask, host_visual, ids, merge)
        if mm_types is None:
            mm_types = self.adapter.mm_token_type_ids(input_ids, ids)  # (B, L) on the device, for the model's positions

        def positions() -> tuple[torch.Tensor, torch.Tensor]:  # the model's own: (3, B, L), (B, 1)
            grids = (visual["image"][1], visual["video"][1])
            return self.adapter.rope_index(self.model, input_ids, mm_types, *grids, mask, extras)

        full_pos, full_deltas = positions()
        encoded = {} if self.foveate else self._encode(visual)
        decided = self._decide(items, visual, encoded, full_pos, prompt, budgets, ids)
        # host sync 2: every item's kept indices (the bookkeeping below) and whether its scores are finite
        host_keeps, finite = read_decision([c.keep for c, _ in decided], [s for _, s in decided])
        _check_finite(finite, [s.numel() for _, s in decided])
        n_levels, tiers = self.adapter.n_deepstack_levels(self.model), self.options.deepstack_tiers
        allocation: list[list[VisualAllocation]] = [[] for _ in range(input_ids.shape[0])]
        keeps: list[torch.Tensor | None] = []
        levels: list[torch.Tensor | None] = []
        for item, (choice, scores) in zip(items, decided, strict=True):
            lv = tier_levels(scores[choice.keep], n_levels, tiers) if tiers is not None and n_levels > 0 else None
            merged = item.merged_grid(merge)
            keeps.append(choice.keep)
            levels.append(lv)
            allocation[item.sample].append(
                VisualAllocation(item.kind, merged, choice.keep, scores.view(merged), choice.budget, item.index, lv,
                                 detail=choice.plan)
            )  # fmt: skip
        origin = None
        if self.options.detail is not None and visual["image"][0] is not None:  # level of detail: the coarse view
            plans = {it.index: c.plan for it, (c, _) in zip(items, decided, strict=True) if it.kind == "image"}
            by_index = {it.index: it for it in items if it.kind == "image"}
            image_px, image_grid = visual["image"]
            px, grid, roles = coarse_view(items, plans, image_px, image_grid, patch, merge, tps)  # type: ignore[arg-type]
            visual = {**visual, "image": (px, grid)}
            inserts = thumbnail_inserts(prompt.input_ids, items, plans, ids)
            if inserts:  # thumbnails before their images: a longer prompt, and the model's positions of it
                pad_id = getattr(self.model.config.get_text_config(), "pad_token_id", None)
                layout = thumbnail_layout(
                    prompt.input_ids, prompt.attention_mask, prompt.mm_token_type_ids, inserts, ids, int(pad_id or 0)
                )  # the augmented prompt, on the host (no device read)
                aug = thumbnails_to_device(layout, input_ids, mask, mm_types, labels)
                input_ids, mask, mm_types, labels, origin = aug
                full_pos, full_deltas = positions()
                grid_rows = [
                    [1, *plans[i].thumb_grid] if role == "thumb" else list(by_index[i].grid_thw)  # type: ignore[misc]
                    for role, i in roles
                ]  # the augmented batch's image grids (what coarse_view sent to the device), on the host
                prompt = HostPrompt(
                    layout[0], layout[1], layout[2], {**prompt.grids, "image": np.asarray(grid_rows, dtype=np.int64)}
                )
                by_item = {(it.kind, it.index): (k, h) for it, k, h in zip(items, keeps, host_keeps, strict=True)}
                host_visual = {k: (pv, prompt.grids.get(k)) for k, (pv, _) in visual.items()}
                items = locate(prompt.input_ids, prompt.attention_mask, host_visual, ids, merge)
                thumb = [it.kind == "image" and roles[it.index][0] == "thumb" for it in items]
                source = [(it.kind, roles[it.index][1] if it.kind == "image" else it.index) for it in items]
                keeps = [
                    torch.arange(it.n_patches // merge**2) if is_thumb else by_item[key][0]
                    for it, is_thumb, key in zip(items, thumb, source, strict=True)
                ]  # fmt: skip
                host_keeps = [
                    np.arange(it.n_patches // merge**2) if is_thumb else by_item[key][1]
                    for it, is_thumb, key in zip(items, thumb, source, strict=True)
                ]  # fmt: skip
                levels = [None] * len(items)
        kinds = [kind for kind, (px, _) in visual.items() if px is not None]
        per_kind = {k: [kp for it, kp in zip(items, keeps, strict=True) if it.kind == k] for k in kinds}
        per_levels = {k: [lv for it, lv in zip(items, levels, strict=True) if it.kind == k] for k in kinds}
        flat: dict[str, np.ndarray | None] = {}
        if self.foveate:  # the tower on the kept patches only; its outputs are the kept tokens, in order
            on_host = {
                k: [torch.from_numpy(np.asarray(h)) for it, h in zip(items, host_keeps, strict=True) if it.kind == k]
                for k in kinds
            }  # the decision's host copies (read above): the tower's inputs are built from them on the host
            encoded = self._encode_kept(visual, on_host, prompt.grids)
            per_kind = {k: [None] * len(encoded[k].features) for k in kinds}
            flat = {k: None for k in kinds}
        else:  # one index per modality into its items' features stacked: one gather for all items
            for k in kinds:
                sizes = [int(f.shape[0]) for f in encoded[k].features]
                offsets = np.cumsum([0, *sizes[:-1]])
                mine = [h for it, h in zip(items, host_keeps, strict=True) if it.kind == k]
                flat[k] = np.concatenate([h + o for h, o in zip(mine, offsets, strict=True)]) if mine else None

        # ---- repack: every row shrinks by its own amount; old padding is dropped and laid anew on one side ----
        keep_col = kept_columns(prompt.input_ids, prompt.attention_mask, items, host_keeps)  # (B, L) host
        side = "left" if generation else padding_side(prompt.attention_mask, self.options.padding_side)
        pad_id = getattr(self.model.config.get_text_config(), "pad_token_id", None)
        to_send = [k for k in kinds if flat.get(k) is not None]
        packed = repack(
            prompt.input_ids, prompt.attention_mask, keep_col, full_pos, full_deltas, side,
            0 if pad_id is None else int(pad_id), mm_token_type_ids=prompt.mm_token_type_ids, labels=labels,
            always_mask=generation, extra=[flat[k] for k in to_send],  # type: ignore[misc]
        )  # fmt: skip
        sent = dict(zip(to_send, packed.extra, strict=True))
        mm_outputs = {
            k: self.adapter.pruned_output(encoded[k], per_kind[k], per_levels[k], flat=sent.get(k)) for k in kinds
        }
        index_map = packed.index_map
        if origin is not None:  # columns of the augmented prompt -> the caller's columns (-1: padding or thumbnail)
            index_map = torch.where(index_map >= 0, origin.gather(1, index_map.clamp_min(0)), index_map)
        self.rope_deltas = packed.rope_deltas
        self.last_allocation = allocation
        self.last_inputs = PrunedInputs(
            packed.input_ids, packed.attention_mask, packed.position_ids, index_map, packed.rope_deltas, mm_outputs
        )
        return self.adapter.model_inputs(kwargs, packed, mm_outputs, generation), original_ids


def _counted(scores: torch.Tensor, n: int) -> torch.Tensor:
    """``scores`` (N,) when they hold N numbers, else a clear error (a host check: no sync)."""
    if scores.numel() != n:
        raise ValueError(f"the scorer returned {scores.numel()} scores for {n} visual tokens")
    return scores


def _check_finite(finite: Sequence[bool], sizes: Sequence[int]) -> None:
    """A clear error for an item whose scores hold no finite number (``finite`` from :func:`read_decision`)."""
    for ok, n in zip(finite, sizes, strict=True):
        if not ok:  # nothing to rank would keep the top-left tokens
            raise ValueError(
                f"the scorer returned no finite score for the {n} visual tokens (all NaN or infinite), so there is "
                "nothing to rank; a scorer must return a number per token (NaN marks a single token least relevant)"
            )


def _grid_groups(items: Sequence[VisualItem]) -> dict[tuple[str, tuple[int, int, int]], list[int]]:
    """Items of one modality with the same patch grid, in order: ``(kind, grid_thw) -> item indices``."""
    groups: dict[tuple[str, tuple[int, int, int]], list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault((it.kind, tuple(it.grid_thw)), []).append(i)  # type: ignore[arg-type]
    return groups


def _patch_rows(items: Sequence[VisualItem], members: Sequence[int]) -> np.ndarray | None:
    """The patch rows of ``members`` (same grid), in order, as one host index; None when they are one contiguous
    run of rows (a slice, nothing to gather)."""
    first = items[members[0]]
    starts = [items[i].patch_start for i in members]
    if starts == [first.patch_start + j * first.n_patches for j in range(len(members))]:
        return None
    return np.concatenate([np.arange(s, s + first.n_patches, dtype=np.int64) for s in starts])


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
    text_options: dict[str, Any] | None = None,
    options: CompressOptions | None = None,
) -> CompressedModel:
    """Wrap a Qwen-VL model so that only the visual tokens relevant to the question reach the language model.

    The keywords build one :class:`~arr_coc.integrations.options.CompressOptions` (or pass ``options=``, and the
    option keywords are ignored).

    Args:
        model: a ``Qwen2VLForConditionalGeneration``, ``Qwen2_5_VLForConditionalGeneration``,
            ``Qwen3VLForConditionalGeneration`` or ``Qwen3VLMoeForConditionalGeneration``.
        budget: tokens to keep PER IMAGE / VIDEO: an int count, a fraction in (0, 1], ``"adaptive"`` (the realizer's
            tiers; see :mod:`arr_coc.attending`), or a list with one such budget per sample of the batch.
        scorer: ``"auto"`` (the realizer's relevance: texture scorers, query cues, the model's token / question
            coupling, the balancer), ``"cosine"`` (:func:`~arr_coc.integrations.base.cosine_scorer`), or a callable
            ``f(ImageContext) -> Tensor (N,)`` or ``TokenScores(scores, units)``; higher = more relevant.
        query: the question for every sample (a string) or one per sample (``None`` = the text of the user turn that
            holds the image, the default). A string needs ``processor`` or ``tokenizer``.
        processor, tokenizer: the model's processor (its tokenizer and normalisation are used) or a tokenizer.
        redundancy: in [0, 1]; > 0 skips near-duplicate tokens (``arr_coc.attending.select``).
        deepstack_tiers: Qwen3-VL only: fractions of the kept tokens, most relevant first, forming tiers; the top
            tier receives every DeepStack level, the lowest none (:func:`~arr_coc.integrations.qwen3_vl.tier_levels`;
            zeroes DeepStack rows: a level-of-detail knob, no speed-up).
        padding_side: ``"left"`` / ``"right"`` for re-padding forward calls (default: the input's side, else left).
        text_prior: the default scorer also runs OCR on each image's own resized pixels and adds ``allocate``'s
            text-aware prior (the ``[ocr]`` extra; costs the OCR time per image); ``text_options``: its switches.
        scorer_config: anything a custom scorer reads (``ImageContext.scorer_config``).
        realizer: the relevance model (an ``arr_coc.Realizer``; default: the shared training-free one): it scores
            and its config resolves every budget. Pass the one given to ``allocate`` and both keep the same tokens.
        foveate: decide BEFORE the vision tower and run it only on the kept tokens' patches, each at its place in
            the full grid (:mod:`arr_coc.integrations.foveation`); the scorer sees no vision features
            (``scorer="cosine"`` is refused). The language model gets the same pruned sequence and positions.
        detail: ``None`` drops what is not kept; ``"thumbnail"`` / ``"mixed"`` spend part of each image's budget on
            a coarse view (:mod:`arr_coc.integrations.detail`; always foveated; images only; coarse + fine = the
            budget; a too-small image is pruned drop-only and its ``VisualAllocation.detail.note`` says why).

    Returns:
        A :class:`CompressedModel`.

    Raises:
        ValueError: unsupported model class, bad budget, bad ``redundancy`` / ``deepstack_tiers`` / ``padding_side``.
    """
    adapter = find_adapter(model)
    if options is None:
        options = CompressOptions.build(
            budget, scorer=scorer, query=query, redundancy=redundancy, deepstack_tiers=deepstack_tiers,
            padding_side=padding_side, text_prior=text_prior, scorer_config=scorer_config, realizer=realizer,
            foveate=foveate, detail=detail, text_options=text_options, adapter=adapter,
        )  # fmt: skip
    if tokenizer is None and processor is not None:
        tokenizer = getattr(processor, "tokenizer", processor)
    q = options.query
    if (isinstance(q, str) or (isinstance(q, tuple) and any(isinstance(x, str) for x in q))) and tokenizer is None:
        raise ValueError("a string query= needs a tokenizer: pass compress(..., processor=...) or tokenizer=...")
    mean, std = normalisation(getattr(processor, "image_processor", None))
    return CompressedModel(model, adapter, options, tokenizer, mean, std)
