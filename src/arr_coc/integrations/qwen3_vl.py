"""Qwen3-VL (and Qwen3-VL-MoE) adapter for ``compress``: DeepStack-aware pruning.

Qwen3-VL adds, besides the merged visual tokens, one "DeepStack" feature per visual token for each of a few ViT
levels (``config.vision_config.deepstack_visual_indexes``); level ``l`` is ADDED to the hidden state of the visual
tokens after decoder layer ``l``. The model builds those from ``mm_encoder_outputs[kind].deepstack_features`` (one
list per level, one (N_i, D) tensor per image/video) and places them with the same placeholder mask as the main
tokens, so pruning must slice every level with exactly the indices kept for the main tokens. That is what
:meth:`Qwen3Adapter.pruned_output` does.

DeepStack tiers (``compress(..., deepstack_tiers=...)``) decide how many levels a kept token receives by zeroing
the rows of the levels it does not receive: adding zero to a hidden state is the same as not receiving the level.
This is a level-of-detail knob only; it saves no compute (the zeros are still added).

Video prompts of Qwen3-VL carry a timestamp per frame (``<0.5 seconds><|vision_start|>frame<|vision_end|>...``), so
one video's tokens are split over several runs in ``input_ids``; ``get_rope_index`` handles that itself and the
wrapper maps tokens to videos by order, so nothing here depends on it.

Under foveation with several images (or video frames) in one tower call, the library's SDPA vision attention loops
over them (one call per image / frame and block); :func:`frame_batched_tower` runs the tower's own modules with
all of them in ONE attention call per block (:class:`~arr_coc.integrations.foveation.PaddedSegments`, the blocks
through :func:`~arr_coc.integrations.qwen2_5_vl.block_forward`, whose structure Qwen3-VL's vision blocks share).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .base import EncodedVisual, take_rows
from .foveation import PaddedSegments
from .options import check_tiers  # noqa: F401  (its old home)
from .qwen2_5_vl import block_forward
from .qwen2_vl import Qwen2Adapter

# what frame_batched_tower reads of the tower (checked before use; a release without them is refused)
_TOWER_ATTRS = (
    "patch_embed", "pos_embed", "rotary_pos_emb", "blocks", "merger", "deepstack_visual_indexes",
    "deepstack_merger_list", "num_grid_per_side", "interpolation_mode", "interpolation_align_corners",
)  # fmt: skip


def frame_batched_tower(
    visual: Any, hidden: torch.Tensor, kwargs: dict[str, torch.Tensor], layout: type = PaddedSegments
) -> Any:
    """The Qwen3-VL vision tower on packed kept patches with ONE attention call per block for all images / frames.

    What ``Qwen3VLVisionModel.forward`` computes from precomputed tensors (:meth:`Qwen3Adapter.kept_item`, packed):
    patch embedding plus the learned position embedding interpolated with the given taps, rotary embedding, the
    blocks (segments: one per image / frame, ``cu_seqlens``), the DeepStack mergers after their blocks, the merger.
    One host read (the segment layout), none per block.

    Args:
        visual: ``model.model.visual``.
        hidden (torch.Tensor of shape (P, C*temporal_patch_size*patch_size**2)): kept patches, in the tower's dtype.
        kwargs: ``position_ids`` (P, 2), ``cu_seqlens`` (segments + 1,), ``interp_indices`` / ``interp_weights``
            (P, taps).
        layout: how the segments are attended: ``PaddedSegments`` (foveation: one call) or ``GroupedSegments`` (the
            whole tower: one call per segment length, the model's own result bit for bit).

    Returns:
        ``BaseModelOutputWithDeepstackFeatures`` as the model's tower returns it: ``last_hidden_state`` (P, D),
        ``pooler_output`` (P / merge**2, out), ``deepstack_features`` (one (P / merge**2, out) tensor a level).
    """
    import importlib

    module = importlib.import_module(type(visual).__module__)  # the tower's own modeling file
    rotary = getattr(module, "apply_rotary_pos_emb_vision", None)
    output_cls = getattr(module, "BaseModelOutputWithDeepstackFeatures", None)
    if rotary is None or output_cls is None:
        raise RuntimeError(
            f"{module.__name__} lacks apply_rotary_pos_emb_vision or BaseModelOutputWithDeepstackFeatures; the "
            "foveated tower needs both (tested with transformers 5.24)"
        )
    segments = layout.from_cu_seqlens(kwargs["cu_seqlens"])
    hidden = visual.patch_embed(hidden)  # (P, D)
    weights = kwargs["interp_weights"]  # (P, taps)
    pos = (visual.pos_embed(kwargs["interp_indices"]) * weights[:, :, None]).sum(1)  # (P, D)
    hidden = hidden + pos.to(hidden.dtype)
    position_embeddings = visual.rotary_pos_emb(hidden, kwargs["position_ids"])  # (cos, sin), each (P, head_dim)
    levels = list(visual.deepstack_visual_indexes)
    deepstack = []
    for layer, block in enumerate(visual.blocks):
        hidden = block_forward(block, hidden, position_embeddings, segments.attend, rotary)
        if layer in levels:
            deepstack.append(visual.deepstack_merger_list[levels.index(layer)](hidden))  # (P / merge**2, out)
    merged = visual.merger(hidden)  # (P / merge**2, out)
    return output_cls(last_hidden_state=hidden, pooler_output=merged, deepstack_features=deepstack)


@dataclass
class Qwen3Adapter(Qwen2Adapter):
    """Adapter for Qwen3-VL-style models with DeepStack features (the tower's run as Qwen2-VL's:
    :meth:`Qwen2Adapter.run_tower`, with :func:`frame_batched_tower`)."""

    def batched_tower(self) -> tuple[Any, tuple[str, ...], str]:
        return frame_batched_tower, _TOWER_ATTRS, "Qwen3-VL"

    def full_tower_kwargs(self, visual: Any, grid_thw: torch.Tensor) -> dict[str, torch.Tensor]:
        """Qwen2-VL's whole-tower inputs plus the learned position embeddings' interpolation taps, from the helper the
        tower's ``forward`` calls."""
        from transformers.vision_utils import get_vision_interpolation_indices_and_weights

        kwargs = super().full_tower_kwargs(visual, grid_thw)
        kwargs["interp_indices"], kwargs["interp_weights"] = get_vision_interpolation_indices_and_weights(
            grid_thw,
            num_grid_per_side=visual.num_grid_per_side,
            mode=visual.interpolation_mode,
            align_corners=visual.interpolation_align_corners,
            spatial_merge_size=visual.config.spatial_merge_size,
            kwargs={},
        )
        return kwargs

    def supports_deepstack(self) -> bool:
        return True

    def n_deepstack_levels(self, model: Any) -> int:
        return len(getattr(model.config.vision_config, "deepstack_visual_indexes", None) or ())

    def token_levels(self, scores: torch.Tensor, model: Any, tiers: Sequence[float] | None) -> torch.Tensor | None:
        """With ``deepstack_tiers``, how many DeepStack levels each kept token receives (:func:`tier_levels`)."""
        n_levels = self.n_deepstack_levels(model)
        return tier_levels(scores, n_levels, tiers) if tiers is not None and n_levels > 0 else None

    def _deepstack(self, raw: Any) -> list[list[torch.Tensor]] | None:
        feats = getattr(raw, "deepstack_features", None)
        if not feats:
            return None
        return [list(level) for level in feats]

    def kept_item(self, model: Any, grid_thw: tuple[int, int, int], keep: torch.Tensor) -> Any:
        """Qwen2-VL's pieces plus the learned position embeddings' interpolation taps for the FULL grid, gathered at
        the kept patches (``interp_indices`` / ``interp_weights``), so each kept patch gets the position embedding it
        has in the full run. The DeepStack features come out of the same reduced run (:meth:`encode_kept`).

        Args:
            grid_thw: the item's FULL patch grid (t, h, w).
            keep (torch.LongTensor of shape (k,)): kept merged-token indices, strictly increasing.
        """
        from transformers.vision_utils import get_vision_interpolation_indices_and_weights

        from .foveation import gather_rows

        item = super().kept_item(model, grid_thw, keep)
        visual = model.model.visual
        _, merge, _ = self.geometry(model)
        indices, weights = get_vision_interpolation_indices_and_weights(
            keep.new_tensor([list(grid_thw)]),
            num_grid_per_side=int(visual.num_grid_per_side),
            mode=visual.interpolation_mode,
            align_corners=visual.interpolation_align_corners,
            spatial_merge_size=merge,
        )  # (t*h*w, taps) each
        item.kwargs.update(
            interp_indices=gather_rows(indices, keep, merge), interp_weights=gather_rows(weights, keep, merge)
        )
        return item

    def pruned_output(
        self,
        encoded: EncodedVisual,
        keeps: Sequence[torch.Tensor | None],
        levels: Sequence[torch.Tensor | None],
        flat: torch.Tensor | None = None,
    ) -> Any:
        """Kept main tokens AND kept DeepStack rows (same indices); rows of levels a token does not receive are zero.

        Args:
            encoded: output of :meth:`encode`.
            keeps: per item, LongTensor (k_i,) of kept indices, ascending (``None``: every row, foveated).
            levels: per item, LongTensor (k_i,) with the number of DeepStack levels each kept token receives (the
                first ``n`` levels), or ``None`` for all levels.
            flat: the same rows as one index into the items' rows stacked (:func:`~.base.take_rows`), or None.
        """
        pooled = take_rows(encoded.features, keeps, flat)  # each (k_i, D)
        if encoded.deepstack is None:
            return type(encoded.raw)(pooler_output=pooled)
        deepstack = []
        for level_idx, level in enumerate(encoded.deepstack):
            rows = list(take_rows(level, keeps, flat))  # each (k_i, D)
            for i, n_levels in enumerate(levels):
                if n_levels is not None:
                    receives = (n_levels.to(rows[i].device) > level_idx).unsqueeze(1)  # (k_i, 1)
                    rows[i] = rows[i] * receives.to(rows[i].dtype)
            deepstack.append(tuple(rows))
        return type(encoded.raw)(pooler_output=pooled, deepstack_features=deepstack)

    def gated_output(self, encoded: EncodedVisual, gates: Sequence[torch.Tensor]) -> Any:
        """Main tokens AND every DeepStack level scaled by the same gate per token (the differentiable keep-mask):
        a blanked token receives no DeepStack feature either, as a pruned one does.

        Args:
            encoded: output of :meth:`encode`.
            gates: per item, a (N_i,) tensor (may require grad).
        """

        def scale(feats: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
            return tuple(f * g.to(f.device, f.dtype).unsqueeze(1) for f, g in zip(feats, gates, strict=True))

        pooled = scale(encoded.features)  # each (N_i, D)
        if encoded.deepstack is None:
            return type(encoded.raw)(pooler_output=pooled)
        deepstack = [scale(level) for level in encoded.deepstack]  # per level, each (N_i, D)
        return type(encoded.raw)(pooler_output=pooled, deepstack_features=deepstack)


# The dense and the MoE model: two classes of the "qwen3-vl" row of arr_coc.families.
ADAPTER = Qwen3Adapter(name="qwen3-vl")
MOE_ADAPTER = Qwen3Adapter(name="qwen3-vl-moe")


# ----- DeepStack tiers (compress(deepstack_tiers=...)) ---------------------------------------------------------
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
