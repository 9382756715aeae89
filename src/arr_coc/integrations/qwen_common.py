"""What the Qwen line shares: the family contract (:mod:`.contract`) filled in for Qwen2-VL, Qwen2.5-VL and Qwen3-VL.

Everything here is a Qwen fact that the family-neutral steps (``compress.py``, :mod:`.sequence`) no longer know:

* the inputs' names (``pixel_values`` / ``image_grid_thw``, ``pixel_values_videos`` / ``video_grid_thw``,
  ``second_per_grid_ts``, ``mm_token_type_ids``) and the ``mm_encoder_outputs`` the model takes pruned features by;
* ChatML's turn markers (``<|im_start|>`` role ``\\n`` ... ``<|im_end|>``) and the vision markers
  (``<|vision_start|>`` / ``<|vision_end|>``) around the question (:func:`chatml_markers`, :func:`turn_query_ids`);
* M-RoPE: 3 rows (t, h, w) from the model's ``get_rope_index``; ``generate`` takes a 4th, a text row on top
  (:class:`MRopeLayout`, :func:`generation_position_ids`); text decoded after the prompt has 3 equal rows;
* the patch order of the processor (undone by :func:`.qwen_patches.frames_from_patches`, the adapter's
  :meth:`QwenAdapter.patch_frames`) and the tower's seams
  (``get_image_features``, ``model.model.visual``, ``get_vision_position_ids``), whole and on kept patches;
* the token names vLLM's tokenizer gives those markers (:data:`VLLM_MARKERS`).

The model's seams used (never patched): ``model.model.get_image_features`` / ``get_video_features`` (the tower and
merger once on the full pixels), ``model.model.visual(kept_patch_rows, grid_thw=..., position_ids=...,
cu_seqlens=...)`` (foveation: the tower on the kept tokens' patches, see ``foveation.py``),
``model.model.get_rope_index`` (the FULL sequence's M-RoPE positions, gathered at the kept tokens) and
``model(..., mm_encoder_outputs=..., position_ids=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from .base import EncodedVisual, Kind, take_rows
from .contract import Adapter, PositionLayout, Positions, TurnMarkers, Visual, VisualInputs, turn_question_ids

if TYPE_CHECKING:
    from .sequence import VisualItem

INPUT_NAMES: dict[str, tuple[str, str]] = {
    "image": ("pixel_values", "image_grid_thw"),
    "video": ("pixel_values_videos", "video_grid_thw"),
}
VLLM_MARKERS: dict[str, str] = {
    "vision_start": "<|vision_start|>",
    "vision_end": "<|vision_end|>",
    "im_start": "<|im_start|>",
    "im_end": "<|im_end|>",
    "newline": "Ċ",  # byte-level BPE's "\n", as compress looks it up
}  # the token each marker id is looked up by in a tokenizer's vocabulary


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


@dataclass(frozen=True)
class MRopeLayout:
    """M-RoPE as Qwen-VL's models take it: (3, B, L) for a forward, (4, B, L) for ``generate`` (a text row on top);
    decoded text tokens get 3 equal rows."""

    rows: int = 3

    def for_model(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, generation: bool) -> torch.Tensor:
        """(3, B, L) -> (3, B, L), or (4, B, L) for ``generate`` (needs the mask)."""
        if not generation:
            return ids
        assert attention_mask is not None
        return generation_position_ids(attention_mask, ids)

    def next(self, positions: torch.Tensor) -> torch.Tensor:
        """(B, n) -> (3, B, n): all three rows equal for text."""
        return positions.unsqueeze(0).expand(3, -1, -1)


MROPE = MRopeLayout()


def chatml_markers(ids: dict[str, int]) -> TurnMarkers:
    """ChatML's turn markers from the ids of :meth:`QwenAdapter.special_ids` (``im_start``, ``im_end``, ``newline``;
    the placeholders and vision markers skipped)."""
    keys = ("image", "video", "vision_start", "vision_end", "im_start", "im_end")
    return TurnMarkers(ids["im_start"], ids["im_end"], ids["newline"], frozenset(ids[k] for k in keys))


def turn_query_ids(
    row: Sequence[int], row_mask: Sequence[int], first: int, last: int, ids: dict[str, int]
) -> list[int]:
    """Token ids of the question around a visual item in a ChatML prompt: the text of the user turn that holds it,
    without the role header (``user\\n``), placeholders, vision markers, padding, and anything between ``first`` and
    ``last`` (e.g. the timestamps between a Qwen3-VL video's frames).

    Args:
        row: one row of ``input_ids``; ``row_mask``: its attention mask (1 = real token).
        first, last: columns of the item's first and last placeholder token.
        ids: ``image``, ``video``, ``vision_start``, ``vision_end``, ``im_start``, ``im_end``, ``newline``.
    """
    return turn_question_ids(row, row_mask, first, last, chatml_markers(ids))


def vllm_special_ids(tokenizer: Any, image_token_id: int, video_token_id: int) -> dict[str, int]:
    """The ids :func:`turn_query_ids` needs, from a vLLM tokenizer's vocabulary (:data:`VLLM_MARKERS`)."""
    vocab = tokenizer.get_vocab()
    return {"image": int(image_token_id), "video": int(video_token_id),
            **{key: int(vocab[token]) for key, token in VLLM_MARKERS.items()}}  # fmt: skip


def _patch_rows(items: Sequence[VisualItem], members: Sequence[int]) -> np.ndarray | None:
    """The patch rows of ``members`` (same grid), in order, as one host index; None when they are one contiguous
    run of rows (a slice, nothing to gather)."""
    first = items[members[0]]
    starts = [items[i].patch_start for i in members]
    if starts == [first.patch_start + j * first.n_patches for j in range(len(members))]:
        return None
    return np.concatenate([np.arange(s, s + first.n_patches, dtype=np.int64) for s in starts])


@dataclass
class QwenAdapter(Adapter):
    """The contract (:class:`~arr_coc.integrations.contract.Adapter`) filled in for the Qwen line: what Qwen2-VL and
    Qwen2.5-VL share, which the other Qwen-like families subclass (Qwen3-VL adds DeepStack). Which ``transformers``
    classes an adapter drives, and the family's other facts, are the family's row in :mod:`arr_coc.families` (whose
    ``ModelClass.adapter`` names this object). ``arr_coc.integrations.base.FamilyAdapter`` is this class.

    Attributes:
        name: the family (or family variant) name, a spelling :func:`arr_coc.families.get_family` knows, e.g.
            ``"qwen2.5-vl"`` or ``"qwen3-vl-moe"``.
        extra_rope_keys: inputs forwarded to ``get_rope_index`` besides the grids.
    """

    name: str
    extra_rope_keys: tuple[str, ...] = field(default=())
    vllm_markers: ClassVar[Mapping[str, str]] = VLLM_MARKERS  # the vLLM plugin's turn / vision marker tokens
    layout: PositionLayout = field(default=MROPE, repr=False)
    input_names: Mapping[str, tuple[str, str]] = field(default_factory=lambda: dict(INPUT_NAMES), repr=False)

    # ----- where the visual tokens are ----------------------------------------------------------------------------
    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        """Pop ``pixel_values`` / ``image_grid_thw`` / ``pixel_values_videos`` / ``video_grid_thw`` (and
        ``second_per_grid_ts``, which Qwen2.5-VL's positions read) from ``kwargs``.

        Raises:
            ValueError: a grid that is not (num_items, 3).
        """
        inputs = super().split_inputs(kwargs)
        inputs.extras = {"second_per_grid_ts": kwargs.pop("second_per_grid_ts", None)}
        for kind in ("image", "video"):
            grid = inputs.visual[kind][1]
            if grid is not None and grid.dim() != 2:
                raise ValueError(f"{kind}_grid_thw must have shape (num_{kind}s, 3), got {tuple(grid.shape)}")
        return inputs

    def supports_foveation(self) -> bool:
        """The Qwen towers run on kept patches (:meth:`kept_item`, ``foveation.py``)."""
        return True

    def supports_detail(self) -> bool:
        """Qwen's patches take a coarse view (``detail.py``)."""
        return True

    def turn_markers(self, ids: dict[str, int]) -> TurnMarkers:
        """ChatML's markers: ``<|im_start|>`` role ``\\n`` ... ``<|im_end|>``; placeholders and vision markers
        skipped."""
        return chatml_markers(ids)

    def token_types(self, input_ids: Any, ids: dict[str, int]) -> Any:
        """``mm_token_type_ids`` (:meth:`mm_token_type_ids`)."""
        return self.mm_token_type_ids(input_ids, ids)

    @staticmethod
    def patch_frames(
        pixel_values: torch.Tensor,
        grid_thw: tuple[int, int, int],
        patch_size: int,
        merge_size: int,
        temporal_patch_size: int,
        image_mean: Sequence[float] | None = None,
        image_std: Sequence[float] | None = None,
    ) -> torch.Tensor:
        """One item's processed patches -> its frames (t, 3, H, W) in [0, 1]: the processor's patch order and
        normalisation undone (:func:`~.qwen_patches.frames_from_patches`; the vLLM plugin's decision reads it)."""
        from .qwen_patches import frames_from_patches

        return frames_from_patches(
            pixel_values, grid_thw, patch_size, merge_size, temporal_patch_size, image_mean, image_std
        )

    def frame_plan(self, items: Sequence[VisualItem]) -> tuple[dict[Any, list[int]], dict[Any, np.ndarray | None]]:
        """Items of one modality with one patch grid form a group (their frames are undone in one call); a group
        whose patch rows are not one contiguous run gets a host index of them."""
        groups: dict[Any, list[int]] = {}
        for i, it in enumerate(items):
            groups.setdefault((it.kind, tuple(it.grid_thw)), []).append(i)
        return groups, {key: _patch_rows(items, members) for key, members in groups.items()}

    def frames(
        self,
        model: Any,
        visual: Visual,
        items: Sequence[VisualItem],
        plan: tuple[dict[Any, list[int]], dict[Any, np.ndarray | None]],
        sent: Any,
        mean: Sequence[float],
        std: Sequence[float],
    ) -> list[torch.Tensor]:
        """One :func:`~.qwen_patches.frames_from_patches` per group of :meth:`frame_plan` (the items of a grid side
        by side, as the frames of one video): exactly each item's frames, (t, 3, H, W)."""
        from .qwen_patches import frames_from_patches

        patch, merge, tps = self.geometry(model)
        groups, rows = plan
        frames: list[Any] = [None] * len(items)
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
                block, (t * len(members), thw[1], thw[2]), patch, merge, tps, mean, std
            )  # (G * t, 3, H, W): exactly each item's frames, side by side
            for j, i in enumerate(members):
                frames[i] = together[j * t : (j + 1) * t]  # (t, 3, H, W)
        return frames

    def positions(
        self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, types: Any, inputs: VisualInputs
    ) -> Positions:
        """The model's own M-RoPE positions of the full sequence (:meth:`rope_index`): 3 rows."""
        grids = (inputs.visual["image"][1], inputs.visual["video"][1])
        ids, deltas = self.rope_index(model, input_ids, types, *grids, attention_mask, inputs.extras)
        return Positions(ids, deltas, self.layout)

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

    generation_position_ids = staticmethod(generation_position_ids)

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
        out["position_ids"] = self.layout.for_model(packed.position_ids, packed.attention_mask, generation)
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
