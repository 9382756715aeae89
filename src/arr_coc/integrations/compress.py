"""``arr_coc.compress``: drop-in visual-token pruning for vision-language models, as a wrapper (never a patch).

``cm = compress(model, budget=0.25)`` returns a :class:`CompressedModel`. ``cm(**inputs)`` and
``cm.generate(**inputs, **gen_kwargs)`` take exactly what the model's processor returns and return what the model
returns; every other attribute (``cm.config``, ``cm.device``, ...) is the model's. Nothing of ``transformers`` is
patched and nothing is assigned onto the model or its modules: the unwrapped model keeps working unchanged.

Every family goes through the same steps (:meth:`CompressedModel._plan`, one method a step); what a family decides
is asked of its adapter (:mod:`.contract`; the Qwen line's: :mod:`.qwen_common`), and the pure bookkeeping is in
:mod:`.sequence`:

1. **find items**: split the family's visual inputs from the call, read the prompt to the host, locate every image /
   video and its question, and the model's own positions of the FULL, unpruned sequence (:meth:`Adapter.positions`);
2. **encode**: the vision tower once on the full pixels, unless foveated;
3. **decide** which tokens of each item to keep, by the path the options declare: :meth:`Realizer.decide` on the
   items' frames (``scorer="auto"``: relevance, the budget resolved with the realizer's config, words whole, the
   level-of-detail split), or a custom scorer's scores per item and :meth:`~arr_coc.realizing.Realizer.choose`;
4. **level of detail** (``detail=...``) prepares the inputs: the coarse view joins the pixels, thumbnails the prompt;
5. **encode the kept tokens**: foveated, the tower only on the kept tokens' patches (:mod:`.foveation`); otherwise
   the kept rows of the whole tower's output;
6. **repack and build the inputs**: drop the other placeholder tokens (each sample shrinks by its own amount; rows
   are re-padded and ``attention_mask`` rebuilt), gather the full positions at the kept columns, and let the adapter
   build the model's inputs (the pruned encoder outputs and explicit ``position_ids``).

So kept tokens keep their original positions, text after an image keeps its positions, and decoding continues at
max position + 1 of the UNPRUNED sequence: ``generate`` gets the family's generation positions (its
:class:`~arr_coc.integrations.contract.PositionLayout`) and extends them by one per new token; a hand-written cached
decoding loop through ``cm(...)`` gets positions from :attr:`CompressedModel.rope_deltas`.

Example:
    >>> cm = compress(model, budget=0.25, processor=processor)  # doctest: +SKIP
    >>> out = cm.generate(**processor(text=[prompt], images=[image], return_tensors="pt"), max_new_tokens=32)
    >>> cm.last_allocation[0][0].budget  # tokens kept of the first image of the first sample
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from arr_coc.attending import Budget, TokenScores
from arr_coc.deciding import Choice, allocate_tokens  # noqa: F401  (allocate_tokens: as before the split)
from arr_coc.families import supported_classes
from arr_coc.tensors import joined

from .base import EncodedVisual, ImageContext, Scorer, VisualAllocation
from .contract import Adapter, View, Visual, VisualInputs, pruned_positions
from .document_budget import spend_per_prompt
from .options import CompressOptions, normalisation
from .own_coarse import keep_own_coarse
from .sequence import (
    HostPrompt,
    PrunedInputs,
    check_inputs,
    kept_columns,
    padding_side,
    past_length,
    questions,
    read_decision,
    read_prompt,
    repack,
    upload,
)
from .steps import (  # noqa: F401  (re-exported: moved from this module)
    Batch,
    Kept,
    KeptFeatures,
    PerItem,
    Question,
    _check_finite,
    _counted,
    _rows,
    _share,
    _view_budget,
    find_adapter,
    unsupported_message,
)
from .tile_choice import concentrate_tiles

SUPPORTED_CLASSES: tuple[str, ...] = supported_classes()  # the built-in families' classes (arr_coc.families)


class CompressedModel:
    """A ``...ForConditionalGeneration`` model of a registered family that keeps only the relevant visual tokens.

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

    Threads: one wrapper may serve several threads. ``last_allocation``, ``last_inputs`` and ``rope_deltas`` are per
    calling thread (``threading.local``): each thread reads what its own last call decided, never another thread's.
    The wrapped model and the realizer are shared (their caches are thread-safe); what one call returns depends only
    on its own inputs.
    """

    def __init__(
        self,
        model: Any,
        adapter: Adapter,
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
        self._calls = threading.local()  # last_allocation, last_inputs, rope_deltas: each calling thread its own

    # ----- per calling thread: a wrapper shared by threads gives each thread what ITS last call decided ----------
    last_allocation = property(
        lambda self: getattr(self._calls, "last_allocation", []),
        lambda self, value: setattr(self._calls, "last_allocation", value),
        doc="Per sample, per image/video, what the calling thread's last call kept (``VisualAllocation``).",
    )
    last_inputs = property(
        lambda self: getattr(self._calls, "last_inputs", None),
        lambda self, value: setattr(self._calls, "last_inputs", value),
        doc="``PrunedInputs`` of the calling thread's last call with visual inputs.",
    )
    rope_deltas = property(
        lambda self: getattr(self._calls, "rope_deltas", None),
        lambda self, value: setattr(self._calls, "rope_deltas", value),
        doc="(batch_size, 1) positions offset of the calling thread's pruned prompt (its cached decoding steps).",
    )

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
            **kwargs: ``attention_mask``, the family's visual inputs (pixels and grids, as its processor returns
                them: the adapter's ``input_names``), ``labels`` (pruned alongside),
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
        return {**kwargs, "position_ids": self.adapter.decode_position_ids(pos)}  # the family's layout

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

    # ----- the steps: find items -> decide -> (level of detail) -> encode -> repack -> the model's inputs ---------
    def _plan(
        self, input_ids: torch.Tensor | None, kwargs: dict[str, Any], generation: bool
    ) -> tuple[dict[str, Any], torch.Tensor] | None:
        """Prune one batch. Returns (kwargs for the model call, original input_ids) or None if there is no image.

        One line a step (each a method below): find the items (validate, read the prompt to the host: sync 1,
        locate, full positions) -> the whole tower, unless foveated -> decide -> read the decision (sync 2) -> level
        of detail prepares the inputs (the coarse view) -> encode the kept tokens (or gather them) -> repack.
        """
        batch = self._find_items(input_ids, kwargs)
        if batch is None:
            return None
        encoded = {} if self.foveate else self._encode(batch.visual)
        decided = self._decide(batch, encoded)
        kept = self._read_decision(batch, decided)
        if self.options.inserted is not None and batch.visual["image"][0] is not None:
            batch, kept = self._prepare_detail(batch, kept, decided)
        features = self._kept_features(batch, kept, encoded)
        return self._build_inputs(batch, kept, features, generation), batch.original_ids

    def _find_items(self, input_ids: torch.Tensor | None, kwargs: dict[str, Any]) -> Batch | None:
        """Step 1: check the call, split off the family's visual inputs (and what ``compress`` computes itself), read
        the prompt to the host in one copy (host sync 1), locate every visual item, and the model's own positions of
        the full sequence. None when the call holds nothing to prune."""
        names = self.adapter.input_names
        if not check_inputs(input_ids, kwargs, self.adapter.token_ids(self.model), names):
            return None
        assert input_ids is not None
        original_ids, kwargs = input_ids, dict(kwargs)
        mask, types, labels = (kwargs.pop(k, None) for k in ("attention_mask", "mm_token_type_ids", "labels"))
        inputs = self.adapter.split_inputs(kwargs)
        if mask is not None and mask.shape != input_ids.shape:
            raise ValueError(f"attention_mask has shape {tuple(mask.shape)}, input_ids {tuple(input_ids.shape)}")
        if types is not None and types.shape != input_ids.shape:
            raise ValueError(f"mm_token_type_ids has shape {tuple(types.shape)}, input_ids {tuple(input_ids.shape)}")
        ids = self.adapter.special_ids(self.model, self.tokenizer)
        grids = {k: g for k, (px, g) in inputs.visual.items() if px is not None}
        prompt = read_prompt(input_ids, mask, types, grids)  # host sync 1
        if prompt.mm_token_type_ids is None:
            prompt.mm_token_type_ids = self.adapter.token_types(prompt.input_ids, ids)
        items = self.adapter.locate(prompt, inputs.visual, ids, self.model)
        if types is None:
            types = self.adapter.token_types(input_ids, ids)  # (B, L) on the device, for the model's positions
        batch = Batch(
            input_ids=input_ids, attention_mask=mask, types=types, labels=labels, inputs=inputs, kwargs=kwargs,
            ids=ids, prompt=prompt, items=items, original_ids=original_ids,
            budgets=self.options.budgets(input_ids.shape[0]),
        )  # fmt: skip
        return self._position(batch)

    def _position(self, batch: Batch) -> Batch:
        """The model's own positions of ``batch``'s full sequence (:class:`~arr_coc.integrations.contract.Positions`:
        P rows, the deltas, the family's layout)."""
        batch.positions = self.adapter.positions(
            self.model, batch.input_ids, batch.attention_mask, batch.types, batch.inputs
        )
        return batch

    def _decide(self, batch: Batch, encoded: dict[str, EncodedVisual]) -> list[tuple[Choice, torch.Tensor]]:
        """Step 2: per item, what to keep and the scores (N,), by the path the options declare
        (:attr:`~arr_coc.integrations.options.CompressOptions.path`): ``"decide"`` runs
        :meth:`Realizer.decide` once per modality; ``"per_item"`` calls the scorer on each item's
        :class:`ImageContext` and :meth:`~arr_coc.realizing.Realizer.choose`. The realizer's config resolves every
        budget either way.

        Batched, with no host sync: the questions come from the host copy of the prompt; their ids and the patch
        rows of items that share a grid go to the device in one copy; one embedding call for every distinct
        question; one ``frames_from_patches`` per grid (the items of a grid side by side, as the frames of one
        video). The scores' finiteness is checked with the kept indices (:func:`read_decision`).
        """
        o, items, visual = self.options, batch.items, batch.visual
        _, merge, _ = self.adapter.geometry(self.model)
        prompt = batch.prompt
        asked = questions(
            items, prompt.input_ids, prompt.attention_mask, o.query, batch.ids, self.tokenizer,
            self.adapter.question_ids,
        )  # fmt: skip
        distinct = list(dict.fromkeys(tuple(q) for q, _ in asked))  # each distinct question once
        by_realizer = o.path == "decide"
        plan = self.adapter.frame_plan(items) if by_realizer else ({}, {})  # how the frames are batched
        arrays = [np.asarray(q, dtype=np.int64) for q in distinct]
        arrays += [r for r in plan[1].values() if r is not None]
        device = batch.input_ids.device if batch.positions is None else batch.positions.ids.device
        sent = iter(upload(arrays, device)) if arrays else iter(())  # the one host-to-device copy
        q_of = {q: next(sent) for q in distinct}  # each (Q,)
        embed = self.model.get_input_embeddings()
        with torch.no_grad():
            nonempty = [q for q in distinct if q]
            together = joined([q_of[q] for q in nonempty]) if nonempty else None  # adjacent in the upload: a view
            embedded = embed(together.to(embed.weight.device)) if together is not None else None  # (sum Q, D)
            by_text: dict[tuple[int, ...], torch.Tensor | None] = {q: None for q in distinct}
            if embedded is not None:
                by_text.update(zip(nonempty, embedded.split([len(q) for q in nonempty]), strict=True))  # (Q, D)
        asks = [
            Question(q_of[tuple(q)], by_text[tuple(q)], text) for q, text in asked
        ]  # each item's question: ids (Q,), embeddings (Q, D) or None, text
        pixels = [self.adapter.item_pixels(visual, it) for it in items]
        feats = [encoded[it.kind].features[it.index].detach() if encoded else None for it in items]  # (N, D) or None
        n = [math.prod(it.merged_grid(merge)) for it in items]
        redund = [
            (f if f is not None else px.reshape(k, -1)).detach() if o.redundancy > 0 else None
            for f, px, k in zip(feats, pixels, n, strict=True)
        ]  # near-duplicates by the tower's features, or (foveated) by the tokens' pixels
        per_item = PerItem(asks, pixels, feats, n, redund)
        if by_realizer:
            decided = self._decide_by_realizer(batch, per_item, plan, sent)
        else:
            decided = self._decide_per_item(batch, per_item)
        if o.own_coarse:  # detail on InternVL / OneVision: their own coarse view kept whole
            decided = keep_own_coarse(self.adapter, items, decided)
        if o.tile_choice == "concentrate":  # the kept tokens in the fewest tiles (tile_choice.py)
            decided = concentrate_tiles(self.adapter, items, decided)
        if o.budget_scope == "prompt":  # one budget over each row's images (document_budget.py)
            decided = spend_per_prompt(
                decided, [it.sample for it in items], [it.kind for it in items], batch.budgets,
                [a.text for a in asks], batch.scorings, self.realizer,
            )  # fmt: skip
        return decided

    def _decide_by_realizer(
        self,
        batch: Batch,
        per: PerItem,
        plan: tuple[dict[Any, list[int]], dict[Any, np.ndarray | None]],
        sent: Any,
    ) -> list[tuple[Choice, torch.Tensor]]:
        """The ``"decide"`` path: every item's frames (the family's :meth:`Adapter.frames`, batched as its
        :meth:`Adapter.frame_plan` says), then :meth:`Realizer.decide` once per modality."""
        o, items = self.options, batch.items
        patch, merge, _ = self.adapter.geometry(self.model)
        frames = self.adapter.frames(self.model, batch.visual, items, plan, sent, self.image_mean, self.image_std)
        views = self.adapter.views(self.model, items, frames, merge)  # the rasters scored (one an item but tiled)
        parts: list[list[Any]] = [[] for _ in items]
        scorings: list[list[Any]] = [[] for _ in items]
        for kind in ("image", "video"):
            at = [v for v in views if items[v.item].kind == kind]
            if not at:
                continue
            texts = [per.asks[v.item].text for v in at]
            modes = ["text" if o.text_prior and t else "texture" for t in texts]
            decision = self.realizer.decide(
                [v.frames for v in at], [v.grid for v in at], texts, [_view_budget(v, views, items, batch) for v in at],
                modes, token_feats=[_rows(per.feats[v.item], v.tokens) for v in at],
                query_embeds=[per.asks[v.item].embeds for v in at],
                features=[_rows(per.redund[v.item], v.tokens) for v in at], redundancy=o.redundancy,
                detail=o.inserted if kind == "image" else None, patch=patch, merge=merge, text_options=o.text_options,
            )  # fmt: skip
            for v, d in zip(at, decision.items, strict=True):
                cells = v.frames.shape[0] * v.grid[0] * v.grid[1]
                parts[v.item].append((v, d.choice, _counted(d.scores.detach().float().flatten(), cells)))
                scorings[v.item].append(d.scoring)
        out: list[Any] = []
        for i, it in enumerate(items):
            choice, scores = self.adapter.join_views(it, parts[i], per.n[i])
            out.append((choice, _counted(scores, per.n[i])))
        # the realizer's reading of each item, for budget_scope="prompt" (an item scored as several views: None)
        batch.scorings = [sc[0] if len(sc) == 1 else None for sc in scorings]
        return out

    def _decide_per_item(self, batch: Batch, per: PerItem) -> list[tuple[Choice, torch.Tensor]]:
        """The ``"per_item"`` path: the scorer on each item's :class:`ImageContext`, then
        :meth:`~arr_coc.realizing.Realizer.choose` (the budget resolved with the realizer's config)."""
        o = self.options
        patch, merge, tps = self.adapter.geometry(self.model)
        out: list[tuple[Choice, torch.Tensor]] = []
        for i, it in enumerate(batch.items):
            assert batch.positions is not None
            pos = batch.positions.ids
            cols = torch.from_numpy(it.cols).to(pos.device)
            ask = per.asks[i]
            ctx = ImageContext(
                kind=it.kind, sample=it.sample, index=it.index, pixel_values=per.pixels[i], grid_thw=it.grid_thw,
                merged_grid=it.merged_grid(merge), patch_size=patch, merge_size=merge, temporal_patch_size=tps,
                token_feats=per.feats[i], positions=pos[:, it.sample, cols], query_ids=ask.ids,
                query_embeds=ask.embeds, query_text=ask.text, config=self.model.config,
                scorer_config=o.scorer_config, image_mean=self.image_mean, image_std=self.image_std,
                realizer=self.realizer, text_prior=bool(o.text_prior and ask.text), text_options=o.text_options,
            )  # fmt: skip
            answer = o.scorer(ctx)
            units = answer.units if isinstance(answer, TokenScores) else ()
            raw = answer.scores if isinstance(answer, TokenScores) else answer
            scores = _counted(torch.as_tensor(raw).detach().float().flatten(), per.n[i])  # (N,)
            views = self.adapter.token_views(it)  # a tiled family's rasters (None: the item is one)
            if views is None:
                choice = self.realizer.choose(
                    scores, batch.budgets[it.sample], units=units, features=per.redund[i], redundancy=o.redundancy,
                    detail=o.inserted if it.kind == "image" else None, grid=it.merged_grid(merge)[1:], patch=patch,
                    merge=merge,
                )  # fmt: skip
            else:  # each raster chosen on its own share of the budget, as the decide path does, then joined
                parts = []
                cells = [int(tokens.size) for _, tokens in views]
                for (grid, tokens), n_cells in zip(views, cells, strict=True):
                    at = torch.from_numpy(tokens).to(scores.device)
                    part = self.realizer.choose(
                        scores[at], _share(batch.budgets[it.sample], n_cells, cells), features=_rows(per.redund[i],
                        tokens), redundancy=o.redundancy, grid=grid, patch=patch, merge=merge,
                    )  # fmt: skip
                    parts.append((View(i, scores, grid, tokens), part, scores[at]))
                choice, scores = self.adapter.join_views(it, parts, per.n[i])
            out.append((choice, scores))
        return out

    def _read_decision(self, batch: Batch, decided: list[tuple[Choice, torch.Tensor]]) -> Kept:
        """Step 3: the decision on the host in one read (host sync 2: every item's kept indices, for the bookkeeping,
        and whether its scores are finite), the DeepStack levels, and what :attr:`last_allocation` records."""
        host_keeps, finite = read_decision([c.keep for c, _ in decided], [s for _, s in decided])
        _check_finite(finite, [s.numel() for _, s in decided])
        _, merge, _ = self.adapter.geometry(self.model)
        tiers = self.options.deepstack_tiers
        allocation: list[list[VisualAllocation]] = [[] for _ in range(batch.input_ids.shape[0])]
        levels: list[torch.Tensor | None] = []
        for item, (choice, scores) in zip(batch.items, decided, strict=True):
            lv = self.adapter.token_levels(scores[choice.keep], self.model, tiers) if tiers is not None else None
            merged = item.merged_grid(merge)
            levels.append(lv)
            allocation[item.sample].append(
                VisualAllocation(item.kind, merged, choice.keep, scores.view(merged), choice.budget, item.index, lv,
                                 detail=choice.plan)
            )  # fmt: skip
        return Kept([c.keep for c, _ in decided], host_keeps, levels, allocation)

    def _prepare_detail(
        self, batch: Batch, kept: Kept, decided: list[tuple[Choice, torch.Tensor]]
    ) -> tuple[Batch, Kept]:
        """Level of detail, a step that prepares the inputs: each image's coarse view joins the pixels (the coarse
        cells or a thumbnail); thumbnails go before their images in a longer prompt, whose positions the model
        computes anew. Every thumbnail token is kept; the images keep what was decided."""
        from .detail import coarse_view, thumbnail_inserts, thumbnail_layout, thumbnails_to_device

        patch, merge, tps = self.adapter.geometry(self.model)
        items, prompt, ids = batch.items, batch.prompt, batch.ids
        plans = {it.index: c.plan for it, (c, _) in zip(items, decided, strict=True) if it.kind == "image"}
        by_index = {it.index: it for it in items if it.kind == "image"}
        image_px, image_grid = batch.visual["image"]
        px, grid, roles = coarse_view(items, plans, image_px, image_grid, patch, merge, tps)  # type: ignore[arg-type]
        batch.inputs = VisualInputs({**batch.visual, "image": (px, grid)}, batch.inputs.extras)
        inserts = thumbnail_inserts(prompt.input_ids, items, plans, ids)
        if not inserts:
            return batch, kept
        # thumbnails before their images: a longer prompt, and the model's positions of it
        pad_id = getattr(self.model.config.get_text_config(), "pad_token_id", None)
        layout = thumbnail_layout(
            prompt.input_ids, prompt.attention_mask, prompt.mm_token_type_ids, inserts, ids, int(pad_id or 0)
        )  # the augmented prompt, on the host (no device read)
        aug = thumbnails_to_device(layout, batch.input_ids, batch.attention_mask, batch.types, batch.labels)
        batch.input_ids, batch.attention_mask, batch.types, batch.labels, batch.origin = aug
        batch = self._position(batch)
        grid_rows = [
            [1, *plans[i].thumb_grid] if role == "thumb" else list(by_index[i].grid_thw)  # type: ignore[misc]
            for role, i in roles
        ]  # the augmented batch's image grids (what coarse_view sent to the device), on the host
        batch.prompt = HostPrompt(
            layout[0], layout[1], layout[2], {**prompt.grids, "image": np.asarray(grid_rows, dtype=np.int64)}
        )
        by_item = {(it.kind, it.index): (k, h) for it, k, h in zip(items, kept.keeps, kept.host_keeps, strict=True)}
        batch.items = self.adapter.locate(batch.prompt, batch.visual, ids, self.model)
        thumb = [it.kind == "image" and roles[it.index][0] == "thumb" for it in batch.items]
        source = [(it.kind, roles[it.index][1] if it.kind == "image" else it.index) for it in batch.items]
        keeps = [
            torch.arange(it.n_patches // merge**2) if is_thumb else by_item[key][0]
            for it, is_thumb, key in zip(batch.items, thumb, source, strict=True)
        ]  # fmt: skip
        host_keeps = [
            np.arange(it.n_patches // merge**2) if is_thumb else by_item[key][1]
            for it, is_thumb, key in zip(batch.items, thumb, source, strict=True)
        ]  # fmt: skip
        return batch, Kept(keeps, host_keeps, [None] * len(batch.items), kept.allocation)

    def _kept_features(self, batch: Batch, kept: Kept, encoded: dict[str, EncodedVisual]) -> KeptFeatures:
        """Step 4, encode: foveated, the tower on the kept patches only (its outputs are the kept tokens, in order);
        otherwise one host index per modality into its items' features stacked (one gather for all items, sent with
        the repacking's upload)."""
        kinds = [kind for kind, (px, _) in batch.visual.items() if px is not None]
        items = batch.items
        per_kind = {k: [kp for it, kp in zip(items, kept.keeps, strict=True) if it.kind == k] for k in kinds}
        per_levels = {k: [lv for it, lv in zip(items, kept.levels, strict=True) if it.kind == k] for k in kinds}
        flat: dict[str, np.ndarray | None] = {}
        if self.foveate:
            on_host = {
                k: [
                    torch.from_numpy(np.asarray(h))
                    for it, h in zip(items, kept.host_keeps, strict=True)
                    if it.kind == k
                ]  # noqa: E501
                for k in kinds
            }  # the decision's host copies (read above): the tower's inputs are built from them on the host
            encoded = self._encode_kept(batch.visual, on_host, batch.prompt.grids)
            per_kind = {k: [None] * len(encoded[k].features) for k in kinds}
            flat = {k: None for k in kinds}
        else:
            for k in kinds:
                sizes = [int(f.shape[0]) for f in encoded[k].features]
                offsets = np.cumsum([0, *sizes[:-1]])
                mine = [h for it, h in zip(items, kept.host_keeps, strict=True) if it.kind == k]
                flat[k] = np.concatenate([h + o for h, o in zip(mine, offsets, strict=True)]) if mine else None
        return KeptFeatures(kinds, encoded, per_kind, per_levels, flat)

    def _build_inputs(self, batch: Batch, kept: Kept, feats: KeptFeatures, generation: bool) -> dict[str, Any]:
        """Step 5, repack and build the model's inputs: every row shrinks by its own amount (old padding dropped,
        laid anew on one side), the positions are gathered at the kept columns, the kept features taken (one
        upload, a few gathers), and the adapter turns them into the model's keyword arguments."""
        prompt = batch.prompt
        keep_col = kept_columns(prompt.input_ids, prompt.attention_mask, batch.items, kept.host_keeps)  # (B, L) host
        side = "left" if generation else padding_side(prompt.attention_mask, self.options.padding_side)
        pad_id = getattr(self.model.config.get_text_config(), "pad_token_id", None)
        to_send = [k for k in feats.kinds if feats.flat.get(k) is not None]
        assert batch.positions is not None
        packed = repack(
            prompt.input_ids, prompt.attention_mask, keep_col, batch.positions.ids, batch.positions.deltas, side,
            0 if pad_id is None else int(pad_id), mm_token_type_ids=prompt.mm_token_type_ids, labels=batch.labels,
            always_mask=generation, extra=[feats.flat[k] for k in to_send],  # type: ignore[misc]
        )  # fmt: skip
        packed.position_ids, packed.rope_deltas = pruned_positions(
            self.options.positions, packed.position_ids, packed.rope_deltas, packed.attention_mask
        )  # 1-D families: the original ids with gaps, or renumbered
        sent = dict(zip(to_send, packed.extra, strict=True))
        mm_outputs = {
            k: self.adapter.pruned_output(feats.encoded[k], feats.per_kind[k], feats.per_levels[k], flat=sent.get(k))
            for k in feats.kinds
        }
        index_map = packed.index_map
        if batch.origin is not None:  # columns of the augmented prompt -> the caller's (-1: padding or thumbnail)
            index_map = torch.where(index_map >= 0, batch.origin.gather(1, index_map.clamp_min(0)), index_map)
        self.rope_deltas = packed.rope_deltas
        self.last_allocation = kept.allocation
        self.last_inputs = PrunedInputs(
            packed.input_ids, packed.attention_mask, packed.position_ids, index_map, packed.rope_deltas, mm_outputs
        )
        return self.adapter.model_inputs(batch.kwargs, packed, mm_outputs, generation)


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
    positions: str = "original",
    options: CompressOptions | None = None,
    budget_scope: str = "item",
    tile_choice: str = "spread",
) -> CompressedModel:
    """Wrap a vision-language model so that only the visual tokens relevant to the question reach the language model.

    The keywords build one :class:`~arr_coc.integrations.options.CompressOptions` (or pass ``options=``, and the
    option keywords are ignored).

    Args:
        model: a ``...ForConditionalGeneration`` of a registered family (:func:`arr_coc.families.supported_classes`).
        budget: tokens to keep PER IMAGE / VIDEO: an int count, a fraction in (0, 1], ``"adaptive"`` (the realizer's
            tiers; see :mod:`arr_coc.attending`), or a list with one such budget per sample of the batch.
        scorer: ``"auto"`` (the realizer's relevance: texture scorers, query cues, the model's token / question
            coupling, the balancer), ``"cosine"`` (:func:`~arr_coc.integrations.base.cosine_scorer`), or a callable
            ``f(ImageContext) -> Tensor (N,)`` or ``TokenScores(scores, units)``; higher = more relevant.
        query: the question for every sample (a string) or one per sample (``None`` = the text of the user turn that
            holds the image, the default). A string needs ``processor`` or ``tokenizer``.
        processor, tokenizer: the model's processor (its tokenizer and normalisation are used) or a tokenizer.
        redundancy: in [0, 1]; > 0 skips near-duplicate tokens (``arr_coc.attending.select``).
        deepstack_tiers: families with feature levels (DeepStack) only: fractions of the kept tokens, most relevant
            first, forming tiers; the top tier receives every level, the lowest none (the adapter's ``token_levels``;
            zeroes DeepStack rows: a level-of-detail knob, no speed-up).
        padding_side: ``"left"`` / ``"right"`` for re-padding forward calls (default: the input's side, else left).
        text_prior: the default scorer also runs OCR on each image's own resized pixels and adds ``allocate``'s
            text-aware prior (the ``[ocr]`` extra; costs the OCR time per image); ``text_options``: its switches.
        scorer_config: anything a custom scorer reads (``ImageContext.scorer_config``).
        realizer: the relevance model (an ``arr_coc.Realizer``; default: the shared default one): it scores
            and its config resolves every budget. Pass the one given to ``allocate`` and both keep the same tokens
            in texture mode (with ``text_prior``, ``allocate``'s OCR reads the page at its own size, this the
            processor's resized pixels, so their text priors may differ).
        foveate: decide BEFORE the vision tower and run it only on the kept tokens' patches, each at its place in
            the full grid (:mod:`arr_coc.integrations.foveation`); the scorer sees no vision features
            (``scorer="cosine"`` is refused). The language model gets the same pruned sequence and positions.
        detail: ``None`` drops what is not kept; ``"thumbnail"`` / ``"mixed"`` spend part of each image's budget on
            a coarse view (:mod:`arr_coc.integrations.detail`; always foveated; images only; coarse + fine = the
            budget; a too-small image is pruned drop-only and its ``VisualAllocation.detail.note`` says why).
            InternVL / LLaVA-OneVision: ``"thumbnail"`` keeps their own thumbnail / base view whole, the rest of the
            budget on tile cells (:mod:`.own_coarse`; not foveated unless ``foveate``); ``"mixed"`` is refused.
        positions: families with 1-D positions only: ``"original"`` (default: kept tokens keep their ids in the
            full sequence, with gaps, and decoding continues after the full sequence) or ``"renumber"`` (the pruned
            sequence numbered 0, 1, ...; decoding continues right after it). M-RoPE families refuse ``"renumber"``
            (:data:`~arr_coc.integrations.contract.POSITION_CHOICES`; the default is argued in docs/families.md).
        budget_scope: ``"item"`` (each image / video its own ``budget``) or ``"prompt"``: a row with several images
            (a document's pages) spends ONE ``budget`` over them by relevance, as ``allocate_pages`` does; a page may
            keep zero tokens (its vision markers stay; :mod:`arr_coc.integrations.document_budget`).
        tile_choice: ``"spread"`` (default: the decision as it is) or ``"concentrate"`` (InternVL, OneVision: as many
            kept tokens in the fewest tiles, so ``foveate=True`` encodes fewer; :mod:`.tile_choice`).

    Returns:
        A :class:`CompressedModel`.

    Raises:
        ValueError: unsupported model class, bad budget, bad ``redundancy`` / ``deepstack_tiers`` / ``padding_side`` /
            ``positions``, a processor setting the family cannot map.
    """
    adapter = find_adapter(model)
    if options is None:
        options = CompressOptions.build(
            budget, scorer=scorer, query=query, redundancy=redundancy, deepstack_tiers=deepstack_tiers,
            padding_side=padding_side, text_prior=text_prior, scorer_config=scorer_config, realizer=realizer,
            foveate=foveate, detail=detail, text_options=text_options, adapter=adapter, positions=positions,
            budget_scope=budget_scope, tile_choice=tile_choice,
        )  # fmt: skip
    if processor is not None:
        adapter.check_processor(model, processor)  # a setting the family's grid cannot map: one line naming it
    if tokenizer is None and processor is not None:
        tokenizer = getattr(processor, "tokenizer", processor)
    q = options.query
    if (isinstance(q, str) or (isinstance(q, tuple) and any(isinstance(x, str) for x in q))) and tokenizer is None:
        raise ValueError("a string query= needs a tokenizer: pass compress(..., processor=...) or tokenizer=...")
    mean, std = normalisation(getattr(processor, "image_processor", None))
    return CompressedModel(model, adapter, options, tokenizer, mean, std)
