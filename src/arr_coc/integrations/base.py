"""Family-independent pieces of the ``compress`` integration: what a scorer sees, what gets recorded, and the
adapter interface each Qwen-VL family implements.

The wrapper in ``compress.py`` never reaches into a model directly. Everything it needs from a
``transformers`` model goes through a :class:`FamilyAdapter`, which only uses the model's public seams:

* ``model.model.get_image_features`` / ``get_video_features``: the vision tower and merger, run once on the full
  pixels; their ``pooler_output`` (one tensor per image/video) lives in the language model's embedding space;
* ``model.model.visual(kept_patch_rows, grid_thw=..., position_ids=..., cu_seqlens=..., ...)``: foveation only
  (``compress(..., foveate=True)``): the tower on the kept tokens' patches, with the data-dependent tensors it accepts
  as keyword arguments computed for the full grid (see ``foveation.py`` and :meth:`FamilyAdapter.kept_item`);
* ``model.model.get_rope_index``: the model's own M-RoPE positions of the FULL (unpruned) sequence, which the
  wrapper then gathers at the kept tokens;
* ``model(..., mm_encoder_outputs=..., position_ids=...)``: the forward pass with pre-encoded (pruned) visual
  features and explicit positions.

The family files (``qwen2_vl.py``, ``qwen2_5_vl.py``, ``qwen3_vl.py``) subclass :class:`FamilyAdapter` with the few
things that differ: which classes they accept, extra arguments of ``get_rope_index`` (Qwen2.5-VL's
``second_per_grid_ts``) and Qwen3-VL's DeepStack features. The defaults here carry what every Qwen-VL family shares
and the family-independent sequence steps (``sequence.py``) must not know: the chat template's token ids, the
token-type ids, the 3-row M-RoPE positions of decoded text and the 4-row positions ``generate`` takes.

This module also defines the scorers (:func:`default_scorer`: the realizer's relevance; :func:`cosine_scorer`:
query-embedding similarity alone) and the :class:`ImageContext` every scorer receives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from arr_coc.attending import TokenScores
from arr_coc.tensors import joined

if TYPE_CHECKING:
    from arr_coc.realizing import Realizer

Kind = str  # "image" or "video"


@dataclass
class ImageContext:
    """Everything a relevance scorer may use for ONE image or video of one sample.

    Attributes:
        kind: ``"image"`` or ``"video"``.
        sample: index of the sample (row of ``input_ids``) that holds this image/video.
        index: index of the image among the batch's images (or of the video among its videos), i.e. its row in
            ``image_grid_thw`` / ``video_grid_thw``.
        pixel_values (torch.Tensor of shape (t*h*w, C*temporal_patch_size*patch_size**2)): this item's patches,
            exactly the rows of the processor's ``pixel_values`` (or ``pixel_values_videos``) that belong to it.
        grid_thw: (t, h, w) patch grid, as in ``image_grid_thw`` (NOT merged).
        merged_grid: (t, h // merge_size, w // merge_size), the grid of visual tokens.
        patch_size: vision patch side in pixels (14 or 16).
        merge_size: patches merged per token side (2).
        temporal_patch_size: frames per temporal patch (2).
        token_feats (torch.Tensor of shape (N, D) or None): merged visual tokens (the merger's output, in the
            language model's embedding space), N = t*h*w / merge_size**2, raster order over (t, h/merge, w/merge).
            ``None`` under ``compress(..., foveate=True)``: the tokens are scored BEFORE the vision tower runs, so a
            scorer has only ``pixel_values``, the positions and the query; scorers must cope with ``None``.
        positions (torch.LongTensor of shape (3, N)): the tokens' M-RoPE (t, h, w) positions in the full sequence.
        query_ids (torch.LongTensor of shape (Q,)): token ids of the query (empty if none was found).
        query_embeds (torch.Tensor of shape (Q, D) or None): the language model's input embeddings of ``query_ids``.
        query_text: the query as text, when a tokenizer or an explicit ``query=`` was given; else ``None``.
        config: the model's config (``model.config``).
        scorer_config: ``compress(..., scorer_config=...)``, for a custom scorer to use as it likes (the default
            scorer reads the typed fields below, never this).
        image_mean, image_std: the processor's per-channel normalisation of ``pixel_values`` (from
            ``compress(processor=...)``, else the family's default), so a scorer can recover the exact pixels.
        realizer: the relevance model ``compress`` decides with (``compress(realizer=...)``, else the default one):
            the default scorer scores with it, and its config resolves the budget whatever the scorer.
        text_prior: whether the default scorer adds the OCR text prior (``compress(text_prior=True)`` and a question).
        text_options: the text prior's ablation switches (``ReadingConfig.with_switches``), or None.
    """

    kind: Kind
    sample: int
    index: int
    pixel_values: torch.Tensor
    grid_thw: tuple[int, int, int]
    merged_grid: tuple[int, int, int]
    patch_size: int
    merge_size: int
    temporal_patch_size: int
    token_feats: torch.Tensor | None
    positions: torch.Tensor
    query_ids: torch.Tensor
    query_embeds: torch.Tensor | None
    query_text: str | None
    config: Any
    scorer_config: Any = None
    image_mean: tuple[float, ...] | None = None
    image_std: tuple[float, ...] | None = None
    realizer: Realizer | None = None
    text_prior: bool = False
    text_options: dict[str, Any] | None = None

    @property
    def n_tokens(self) -> int:
        """Number of visual tokens N of this image/video."""
        t, h, w = self.merged_grid
        return t * h * w


Scorer = Callable[[ImageContext], torch.Tensor | TokenScores]
"""A scorer: (N,) relevance of an item's tokens, or ``TokenScores(scores, units)`` whose units (cell sets, e.g. the
cells of one recognised word) the selection keeps whole (``arr_coc.attending.select``)."""


@dataclass
class VisualAllocation:
    """What ``compress`` kept of one image or video (one entry of ``CompressedModel.last_allocation``).

    Attributes:
        kind: ``"image"`` or ``"video"``.
        grid: (t, h, w) in MERGED tokens (``h``, ``w`` already divided by the merge size).
        keep (torch.LongTensor of shape (budget,)): kept indices into this item's visual-token sequence (raster order
            over (t, h, w)), strictly increasing.
        scores (torch.Tensor of shape (t, h, w)): the relevance the scorer gave every token.
        budget: number of tokens kept (``len(keep)``).
        index: row of this item in ``image_grid_thw`` / ``video_grid_thw``.
        deepstack_levels (torch.LongTensor of shape (budget,) or None): Qwen3-VL only, with ``deepstack_tiers``: how
            many DeepStack levels each kept token receives (the first ``n`` levels); ``None`` means all levels.
        detail: with ``compress(..., detail=...)``, the image's ``arr_coc.integrations.detail.DetailPlan`` (fine
            tokens, coarse cells or thumbnail); then ``budget`` counts every token the image costs (fine + coarse)
            and ``keep`` holds the kept placeholder positions of the image (fine tokens and mixed-mode anchors).
    """

    kind: Kind
    grid: tuple[int, int, int]
    keep: torch.Tensor
    scores: torch.Tensor
    budget: int
    index: int = 0
    deepstack_levels: torch.Tensor | None = None
    detail: Any = None

    @property
    def mask(self) -> torch.Tensor:
        """Bool tensor of shape (t, h, w): True where the token was kept."""
        m = torch.zeros(math.prod(self.grid), dtype=torch.bool, device=self.keep.device)
        m[self.keep] = True
        return m.view(self.grid)


@dataclass
class EncodedVisual:
    """Output of the vision tower for all images (or all videos) of a batch, split per item.

    Attributes:
        raw: the ``ModelOutput`` returned by ``get_image_features`` / ``get_video_features``.
        features: one tensor per item, each of shape (N_i, D) (the ``pooler_output``).
        deepstack: Qwen3-VL only: one list per DeepStack level, each with one (N_i, D) tensor per item.
    """

    raw: Any
    features: list[torch.Tensor]
    deepstack: list[list[torch.Tensor]] | None = None


@dataclass
class FamilyAdapter:
    """How the wrapper talks to one model family. Subclasses override the family-specific hooks; the defaults below
    are what Qwen2-VL and Qwen2.5-VL share. Which ``transformers`` classes an adapter drives, and the family's other
    facts, are the family's row in :mod:`arr_coc.families` (whose ``ModelClass.adapter`` names this object).

    Attributes:
        name: the family (or family variant) name, a spelling :func:`arr_coc.families.get_family` knows, e.g.
            ``"qwen2.5-vl"`` or ``"qwen3-vl-moe"``.
        extra_rope_keys: inputs forwarded to ``get_rope_index`` besides the grids.
    """

    name: str
    extra_rope_keys: tuple[str, ...] = field(default=())

    @property
    def image_mean(self) -> tuple[float, float, float]:
        """The family's image processor's default mean (used to undo it when ``compress`` is given no processor)."""
        from arr_coc.families import get_family

        return get_family(self.name).image_mean

    @property
    def image_std(self) -> tuple[float, float, float]:
        """The family's image processor's default standard deviation."""
        from arr_coc.families import get_family

        return get_family(self.name).image_std

    # ----- geometry ---------------------------------------------------------------------------------------------
    def geometry(self, model: Any) -> tuple[int, int, int]:
        """(patch_size, merge_size, temporal_patch_size) of the vision tower."""
        vc = model.config.vision_config
        patch = vc.patch_size if isinstance(vc.patch_size, int) else int(vc.patch_size[0])
        tps = vc.temporal_patch_size if isinstance(vc.temporal_patch_size, int) else int(vc.temporal_patch_size[0])
        return int(patch), int(vc.spatial_merge_size), int(tps)

    def token_ids(self, model: Any) -> dict[str, int]:
        """Ids of the image / video placeholder and the vision start / end markers, from the model config."""
        cfg = model.config
        return {
            "image": int(cfg.image_token_id),
            "video": int(cfg.video_token_id),
            "vision_start": int(cfg.vision_start_token_id),
            "vision_end": int(cfg.vision_end_token_id),
        }

    def special_ids(self, model: Any, tokenizer: Any = None) -> dict[str, int]:
        """Every token id the sequence steps need: placeholders and vision markers (:meth:`token_ids`) and the chat
        template's turn markers (``im_start``, ``im_end``, ``newline``: from ``tokenizer`` when it knows them, else
        the family's row in :mod:`arr_coc.families`)."""
        from arr_coc.families import get_family

        defaults = get_family(self.name).token_ids
        ids = {**self.token_ids(model), **{k: defaults[k] for k in ("im_start", "im_end", "newline")}}
        if tokenizer is not None and hasattr(tokenizer, "convert_tokens_to_ids"):
            for key, text in (("im_start", "<|im_start|>"), ("im_end", "<|im_end|>"), ("newline", "Ċ")):
                value = tokenizer.convert_tokens_to_ids(text)
                if isinstance(value, int) and value >= 0 and value != getattr(tokenizer, "unk_token_id", None):
                    ids[key] = value
        return ids

    # ----- positions --------------------------------------------------------------------------------------------
    def mm_token_type_ids(self, input_ids: Any, ids: dict[str, int]) -> Any:
        """(batch_size, sequence_length) int32: 0 text, 1 image placeholder, 2 video placeholder (what the processor
        returns as ``mm_token_type_ids``), a tensor for a tensor, a host array for a host array."""
        if isinstance(input_ids, np.ndarray):
            return (input_ids == ids["image"]).astype(np.int32) + 2 * (input_ids == ids["video"]).astype(np.int32)
        return (input_ids == ids["image"]).int() + 2 * (input_ids == ids["video"]).int()

    @staticmethod
    def generation_position_ids(attention_mask: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        """The 4-row position ids Qwen-VL's ``generate`` takes: a text row (0, 1, ... over real tokens) above the 3
        M-RoPE rows.

        Args:
            attention_mask (torch.LongTensor of shape (batch_size, length)): 0 on padding.
            position_ids (torch.LongTensor of shape (3, batch_size, length)).

        Returns:
            torch.LongTensor of shape (4, batch_size, length).
        """
        text = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)  # (B, L)
        return torch.cat([text.unsqueeze(0).to(position_ids.device), position_ids], dim=0)  # (4, B, L)

    def decode_position_ids(self, positions: torch.Tensor) -> torch.Tensor:
        """Position ids of text tokens decoded after the prompt: (B, n) -> the model's (3, B, n) (all three M-RoPE
        rows equal for text)."""
        return positions.unsqueeze(0).expand(3, -1, -1)

    def model_inputs(self, kwargs: dict[str, Any], packed: Any, mm_outputs: Any, generation: bool) -> dict[str, Any]:
        """The model's keyword arguments for a packed (pruned) batch (``arr_coc.integrations.sequence.Repacked``): the
        caller's others, the shorter ids, mask, labels and token types, the pruned ``mm_encoder_outputs`` and the
        packed positions (for generation in the ``(4, B, L')`` form that decoding continues from)."""
        out = dict(kwargs)
        out.update(input_ids=packed.input_ids, mm_encoder_outputs=mm_outputs)
        out["mm_token_type_ids"] = packed.mm_token_type_ids
        if packed.attention_mask is not None:
            out["attention_mask"] = packed.attention_mask
        if packed.labels is not None:
            out["labels"] = packed.labels
        if generation:
            assert packed.attention_mask is not None  # the packing always builds a mask for generation
            out["position_ids"] = self.generation_position_ids(packed.attention_mask, packed.position_ids)
        else:
            out["position_ids"] = packed.position_ids
        return out

    def rope_index(
        self,
        model: Any,
        input_ids: torch.Tensor,
        mm_token_type_ids: torch.Tensor,
        image_grid_thw: torch.Tensor | None,
        video_grid_thw: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        extras: dict[str, Any],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The model's own M-RoPE positions of the full sequence.

        Args:
            input_ids (torch.LongTensor of shape (batch_size, sequence_length)): the unpruned prompt.
            mm_token_type_ids (torch.IntTensor of shape (batch_size, sequence_length)): 0 text, 1 image, 2 video.
            image_grid_thw (torch.LongTensor of shape (num_images, 3) or None): patch grids of the images.
            video_grid_thw (torch.LongTensor of shape (num_videos, 3) or None): patch grids of the videos.
            attention_mask (torch.LongTensor of shape (batch_size, sequence_length) or None): 0 on padding.
            extras: the caller's other inputs; keys in :attr:`extra_rope_keys` are forwarded.

        Returns:
            position_ids (torch.LongTensor of shape (3, batch_size, sequence_length)) and
            rope_deltas (torch.LongTensor of shape (batch_size, 1)) = max position + 1 - real length, per sample.
        """
        kwargs = {k: extras[k] for k in self.extra_rope_keys if extras.get(k) is not None}
        position_ids, deltas = model.model.get_rope_index(
            input_ids,
            mm_token_type_ids=mm_token_type_ids,
            image_grid_thw=image_grid_thw,
            video_grid_thw=video_grid_thw,
            attention_mask=attention_mask,
            **kwargs,
        )
        return position_ids, deltas.reshape(-1, 1)

    # ----- vision -----------------------------------------------------------------------------------------------
    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> EncodedVisual:
        """Run the vision tower + merger once on all items of one modality.

        Args:
            pixel_values (torch.Tensor of shape (sum(t*h*w), C*temporal_patch_size*patch_size**2)): the patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): their patch grids.
        """
        fn = model.model.get_image_features if kind == "image" else model.model.get_video_features
        raw = fn(pixel_values, grid_thw, return_dict=True)
        return EncodedVisual(raw=raw, features=list(raw.pooler_output), deepstack=self._deepstack(raw))

    def _deepstack(self, raw: Any) -> list[list[torch.Tensor]] | None:
        return None

    # ----- foveation: encode only the kept tokens' patches (see foveation.py) ----------------------------------
    def kept_item(self, model: Any, grid_thw: tuple[int, int, int], keep: torch.Tensor) -> Any:
        """Tower inputs for the kept patches of ONE item: rotary position ids of the full grid gathered at the kept
        patches, and one full-attention segment per frame (Qwen2-VL; the other families add their own pieces).

        Args:
            grid_thw: the item's FULL patch grid (t, h, w).
            keep (torch.LongTensor of shape (k,)): kept merged-token indices, strictly increasing.

        Returns:
            A :class:`~arr_coc.integrations.foveation.KeptItem`.
        """
        from transformers.vision_utils import get_vision_position_ids

        from .foveation import KeptItem, gather_rows, kept_cu_seqlens, kept_patch_rows

        _, merge, _ = self.geometry(model)
        t, h, w = grid_thw
        grid = keep.new_tensor([[t, h, w]])  # (1, 3)
        full_pos = get_vision_position_ids(grid, merge)  # (t*h*w, 2)
        kwargs = {
            "position_ids": gather_rows(full_pos, keep, merge),  # (k*m*m, 2)
            "cu_seqlens": kept_cu_seqlens(keep, (t, h // merge, w // merge), merge),  # (frames + 1,)
        }
        return KeptItem(rows=kept_patch_rows(keep, merge), n_tokens=int(keep.numel()), kwargs=kwargs)

    def run_tower(self, model: Any, hidden: torch.Tensor, grid_thw: torch.Tensor, kwargs: dict[str, Any]) -> Any:
        """The vision tower on the kept patches of all items of one modality (foveation), given their tensors.

        The default is the model's own tower, ``model.model.visual(hidden, grid_thw=..., **kwargs)``; a family whose
        tower can be run with fewer calls overrides it (Qwen2.5-VL: one attention call per block for all windows).

        Args:
            hidden (torch.Tensor of shape (P, C*temporal_patch_size*patch_size**2)): the kept patches, in the dtype
                of the tower.
            grid_thw (torch.LongTensor of shape (num_items, 3)): the items' FULL patch grids.
            kwargs: the packed tower keyword arguments of :func:`~arr_coc.integrations.foveation.concat_items`.

        Returns:
            The tower's output (``pooler_output`` of shape (P / merge_size**2, D), in kept order).
        """
        return model.model.visual(hidden, grid_thw=grid_thw, return_dict=True, **kwargs)

    def run_full_tower(self, model: Any, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> Any:
        """The vision tower on ALL patches of one modality (foveation keeping every token): the model's own tower
        by default; Qwen2.5-VL on SDPA overrides it with the same computation in fewer attention calls.

        Args:
            pixel_values (torch.Tensor of shape (sum(t*h*w), C*temporal_patch_size*patch_size**2)): the patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): their patch grids.
        """
        visual = model.model.visual
        return visual(pixel_values.type(visual.dtype), grid_thw=grid_thw, return_dict=True)

    def encode_full(self, model: Any, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> EncodedVisual:
        """:meth:`run_full_tower` split per item as ``get_image_features`` / ``get_video_features`` split it (main
        tokens and DeepStack levels), with the items' token counts read BEFORE the tower is queued (those methods
        read them after it, which holds the host until the tower has run): the decision is launched while the tower
        runs. What a family's :meth:`encode` returns where it runs the whole tower itself.

        Args:
            pixel_values (torch.Tensor of shape (sum(t*h*w), C*temporal_patch_size*patch_size**2)): the patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): their patch grids.
        """
        sizes = (grid_thw.prod(-1) // int(model.model.visual.spatial_merge_size) ** 2).tolist()
        raw = self.run_full_tower(model, pixel_values, grid_thw)
        raw.pooler_output = raw.pooler_output.split(sizes)
        deep = getattr(raw, "deepstack_features", None)
        if deep:
            raw.deepstack_features = [level.split(sizes) for level in deep]
        return EncodedVisual(raw=raw, features=list(raw.pooler_output), deepstack=self._deepstack(raw))

    def encode_kept(
        self,
        model: Any,
        kind: Kind,
        pixel_values: torch.Tensor,
        grid_thw: torch.Tensor,
        keeps: Sequence[torch.Tensor],
        host_grids: Any = None,
    ) -> EncodedVisual:
        """Run the vision tower + merger once on the KEPT patches of all items of one modality (foveation).

        Args:
            kind: ``"image"`` or ``"video"`` (both go through ``model.model.visual``).
            pixel_values (torch.Tensor of shape (sum(t*h*w), C*temporal_patch_size*patch_size**2)): all patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): the FULL patch grids.
            keeps: per item, LongTensor (k_i,) of kept merged-token indices, strictly increasing.
            host_grids: ``grid_thw`` on the host; with it and host ``keeps``, the tower's inputs are built on the
                host and uploaded once (:func:`~arr_coc.integrations.foveation.encode_kept`).

        Returns:
            An :class:`EncodedVisual` whose ``features[i]`` has shape (k_i, D): the kept tokens, in kept order.
        """
        from .foveation import encode_kept

        raw, sizes = encode_kept(model, self, pixel_values, grid_thw, keeps, host_grids)
        features = list(torch.split(raw.pooler_output, sizes))
        deep = getattr(raw, "deepstack_features", None)
        deepstack = [list(torch.split(level, sizes)) for level in deep] if deep else None
        return EncodedVisual(raw=raw, features=features, deepstack=deepstack)

    def pruned_output(
        self,
        encoded: EncodedVisual,
        keeps: Sequence[torch.Tensor | None],
        levels: Sequence[torch.Tensor | None],
        flat: torch.Tensor | None = None,
    ) -> Any:
        """A fresh encoder output holding only the kept tokens of each item (the original is not modified).

        Args:
            encoded: output of :meth:`encode`.
            keeps: one LongTensor of kept indices per item, ascending; ``None``: every row (a foveated item, whose
                features are already the kept tokens).
            levels: per item, how many DeepStack levels each kept token receives (ignored by families without
                DeepStack); ``None`` = all levels.
            flat (torch.LongTensor of shape (sum k_i,) or None): the same rows as one index into the items'
                features stacked (see :func:`take_rows`): one gather for every item.
        """
        pooled = take_rows(encoded.features, keeps, flat)  # each (k_i, D)
        return type(encoded.raw)(pooler_output=pooled)

    def gated_output(self, encoded: EncodedVisual, gates: Sequence[torch.Tensor]) -> Any:
        """A fresh encoder output with every token of each item scaled by its gate (the differentiable keep-mask of
        ``arr_coc.integrations.gating``); nothing is dropped, so every token keeps its place and M-RoPE position.

        Args:
            encoded: output of :meth:`encode`.
            gates: per item, a (N_i,) tensor (any float dtype, may require grad); 1 passes a token unchanged, 0
                blanks it.
        """
        pooled = tuple(f * g.to(f.device, f.dtype).unsqueeze(1) for f, g in zip(encoded.features, gates, strict=True))
        return type(encoded.raw)(pooler_output=pooled)  # each (N_i, D)

    def supports_deepstack(self) -> bool:
        """Whether this family injects DeepStack features (Qwen3-VL)."""
        return False

    def n_deepstack_levels(self, model: Any) -> int:
        """Number of DeepStack levels the model injects (0 for families without DeepStack)."""
        return 0


def take_rows(
    tensors: Sequence[torch.Tensor], keeps: Sequence[torch.Tensor | None], flat: torch.Tensor | None = None
) -> tuple[torch.Tensor, ...]:
    """The kept rows of each item's tensor: ``tensors[i][keeps[i]]`` (``None``: all rows).

    With ``flat`` (the kept rows of every item as ONE index into the items' rows stacked in order), one gather for
    all items instead of one per item (plus a copy to stack the items, unless they already lie side by side, as the
    splits of the tower's one output do); the result is the same rows, split per item.

    Args:
        tensors: per item, (N_i, D).
        keeps: per item, (k_i,) kept row indices, or None (all N_i rows).
        flat (torch.LongTensor of shape (sum k_i,) or None): ``keeps[i] + sum(N_j for j < i)``, concatenated.

    Returns:
        Per item, (k_i, D).
    """
    if flat is None:
        return tuple(f if k is None else f[k.to(f.device)] for f, k in zip(tensors, keeps, strict=True))
    sizes = [int(f.shape[0]) if k is None else int(k.numel()) for f, k in zip(tensors, keeps, strict=True)]
    stacked = joined(list(tensors))  # (sum N_i, D): a view when the items are the parts of one output, as the tower's
    return tuple(stacked.index_select(0, flat.to(stacked.device)).split(sizes))  # each (k_i, D)


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x.detach().float(), dim=-1)


def cosine_scorer(ctx: ImageContext) -> torch.Tensor:
    """Training-free relevance: cosine similarity between each merged visual token and the query's LM embeddings.

    The merger projects visual tokens into the language model's input-embedding space, so a token that "looks
    like" a query word scores high. Per token we take the mean of its top-3 similarities over the query tokens
    (max would let one stop-word dominate; mean over all dilutes the few words that matter).

    Without a query (no text in the turn and no ``query=``) the score is distinctiveness: one minus the cosine
    similarity to the item's mean token, which favours tokens that differ from the background.

    Returns:
        torch.Tensor of shape (N,), float32, on the device of the token features.
    """
    if ctx.token_feats is None:
        raise ValueError(
            "the cosine scorer compares the vision tower's features with the query, but under foveate=True tokens are "
            "scored before the tower runs (ImageContext.token_feats is None); use scorer='auto' or a pixel-based scorer"
        )
    feats = _normalize(ctx.token_feats)  # (N, D)
    if ctx.query_embeds is None or ctx.query_embeds.shape[0] == 0:
        mean = _normalize(feats.mean(0, keepdim=True))  # (1, D)
        return (1.0 - feats @ mean.T).squeeze(1)  # (N,)
    query = _normalize(ctx.query_embeds.to(feats.device))  # (Q, D)
    sim = feats @ query.T  # (N, Q)
    top = sim.topk(min(3, sim.shape[1]), dim=1).values  # (N, min(3, Q))
    return top.mean(1)  # (N,)


def default_scorer(ctx: ImageContext) -> TokenScores:
    """The default scorer (``scorer="auto"``): ``ctx.realizer``'s :meth:`~arr_coc.realizing.Realizer.score` on the
    item's own pixels (``arr_coc.realizing.score_visual_tokens``: texture scorers, query cues, the model's
    token / question coupling when the features exist, the OCR text prior with ``ctx.text_prior``), with the words'
    units. ``compress`` runs it through :meth:`~arr_coc.realizing.Realizer.decide` directly; a wrapper of it (e.g. a
    timer) gets it per item through this function, with the same result.
    """
    from arr_coc.realizing import score_visual_tokens

    out = score_visual_tokens(
        ctx.pixel_values,
        ctx.grid_thw,
        ctx.patch_size,
        ctx.merge_size,
        ctx.temporal_patch_size,
        token_feats=ctx.token_feats,
        query_embeds=ctx.query_embeds,
        query_text=ctx.query_text,
        text_prior=ctx.text_prior,
        text_options=ctx.text_options,
        realizer=ctx.realizer,
        image_mean=ctx.image_mean,
        image_std=ctx.image_std,
        return_units=True,
    )
    assert isinstance(out, TokenScores)
    return out


def realizing_scorer() -> Scorer:
    """The default scorer (:func:`default_scorer`), as ``resolve_scorer("auto")`` returns it."""
    return default_scorer


def resolve_scorer(scorer: str | Scorer | None) -> Scorer:
    """Turn the ``scorer=`` option into a callable.

    ``"auto"`` / ``None`` / ``"realizing"``: :func:`default_scorer` (the realizer's relevance; ``compress`` then
    decides with ``Realizer.decide``);
    ``"cosine"``: :func:`cosine_scorer` (query-embedding similarity alone); a callable
    ``f(ImageContext) -> Tensor (N,)`` is used as is.
    """
    if callable(scorer):
        return scorer
    if scorer is None or scorer in ("auto", "realizing"):
        return default_scorer
    if scorer == "cosine":
        return cosine_scorer
    raise ValueError(
        f"scorer must be 'auto', 'cosine', 'realizing' or a callable(ImageContext) -> Tensor, got {scorer!r}"
    )
