"""Qwen2-VL adapter for ``compress``.

Qwen2-VL needs nothing beyond the shared seams in :class:`~arr_coc.integrations.base.FamilyAdapter` to compute the
right thing: videos get temporal positions ``0, 1, 2, ...`` per temporal patch and ``get_rope_index`` takes no extra
argument. Under foveation (:meth:`~arr_coc.integrations.base.FamilyAdapter.kept_item`) the kept patches of an image
(of a frame, for videos) attend to each other with full attention, with the rotary (h, w) angles of their place in
the full grid.

One attention call per block (:meth:`Qwen2Adapter.run_tower`): on SDPA the library's vision attention loops over the
images and frames of a batch (``torch.split(..., lengths.tolist())``, one ``scaled_dot_product_attention`` each).
:func:`image_batched_tower` runs the tower's own modules (patch embedding, rotary embedding, each block's norms /
``qkv`` / ``proj`` / MLP, the merger) with the modeling file's ``apply_rotary_pos_emb_vision`` and attends with
:class:`~arr_coc.integrations.foveation.PaddedSegments`: all images and frames of a block in one call.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import torch

from .base import EncodedVisual, Kind
from .foveation import GroupedSegments, PaddedSegments
from .qwen2_5_vl import block_forward, check_tower
from .qwen_common import QwenAdapter

# what image_batched_tower reads of the tower (checked before use; a release without them is refused)
_TOWER_ATTRS = ("patch_embed", "rotary_pos_emb", "blocks", "merger")
_FULL_TOWER_ATTRS = ("config", "dtype", "spatial_merge_size")  # and what the whole tower's inputs read


def image_batched_tower(
    visual: Any, hidden: torch.Tensor, kwargs: dict[str, torch.Tensor], layout: type = PaddedSegments
) -> Any:
    """The Qwen2-VL vision tower on packed kept patches with ONE attention call per block for all images / frames.

    What ``Qwen2VisionTransformerPretrainedModel.forward`` computes from precomputed tensors (the keyword arguments
    of :meth:`FamilyAdapter.kept_item`, packed by ``concat_items``): patch embedding, rotary embedding, the blocks
    (one segment per image / frame, ``cu_seqlens``), the merger. One host read (the segment layout), none per block.

    Args:
        visual: ``model.model.visual``.
        hidden (torch.Tensor of shape (P, C*temporal_patch_size*patch_size**2)): kept patches, in the tower's dtype.
        kwargs: ``position_ids`` (P, 2) and ``cu_seqlens`` (segments + 1,).
        layout: how the segments are attended: ``PaddedSegments`` (foveation: one call) or ``GroupedSegments`` (the
            whole tower: one call per segment length, the model's own result bit for bit).

    Returns:
        ``BaseModelOutputWithPooling`` with ``last_hidden_state`` (P, D) and ``pooler_output`` (P / merge**2, out),
        in kept order, as the model's tower returns them.
    """
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    module = importlib.import_module(type(visual).__module__)  # the tower's own modeling file
    rotary = getattr(module, "apply_rotary_pos_emb_vision", None)
    if rotary is None:
        raise RuntimeError(
            f"{module.__name__} lacks apply_rotary_pos_emb_vision; the foveated tower needs it (tested with "
            "transformers 5.18 and 5.24)"
        )
    segments = layout.from_cu_seqlens(kwargs["cu_seqlens"])
    hidden = visual.patch_embed(hidden)  # (P, D)
    position_embeddings = visual.rotary_pos_emb(hidden, kwargs["position_ids"])  # (cos, sin), each (P, head_dim)
    for block in visual.blocks:
        hidden = block_forward(block, hidden, position_embeddings, segments.attend, rotary)
    return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=visual.merger(hidden))


@dataclass
class Qwen2Adapter(QwenAdapter):
    """Adapter for Qwen2-VL (full attention per image / frame in the vision tower)."""

    def batched_tower(self) -> tuple[Any, tuple[str, ...], str]:
        """The family's one-call-per-block tower, the tower attributes it reads, and the family's name (messages)."""
        return image_batched_tower, _TOWER_ATTRS, "Qwen2-VL"

    def full_tower_kwargs(self, visual: Any, grid_thw: torch.Tensor) -> dict[str, torch.Tensor]:
        """The tower's data-dependent inputs for ALL patches of the items ``grid_thw`` (N, 3), from the same
        ``transformers.vision_utils`` helpers the tower's ``forward`` calls: rotary position ids and the segments."""
        from transformers.vision_utils import get_vision_attention_seqlens, get_vision_position_ids

        cu_seqlens, _ = get_vision_attention_seqlens(grid_thw, visual.config, kwargs={})
        return {"position_ids": get_vision_position_ids(grid_thw, visual.spatial_merge_size, kwargs={}),
                "cu_seqlens": cu_seqlens}  # fmt: skip

    def run_full_tower(self, model: Any, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> Any:
        """On SDPA, :meth:`batched_tower` on all patches with each segment length (image / frame size) attended in
        one call (:class:`~arr_coc.integrations.foveation.GroupedSegments`): the model's own tower bit for bit, with
        one host read of the segments instead of one per block (the library's SDPA path reads ``lengths.tolist()``
        in every block) and one attention call per block for a batch of same-size images instead of one per image.
        Otherwise the model's own tower.

        Args:
            pixel_values (torch.Tensor of shape (sum(t*h*w), C*temporal_patch_size*patch_size**2)): the patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): their patch grids.
        """
        visual = model.model.visual
        if getattr(visual.config, "_attn_implementation", None) != "sdpa":
            return super().run_full_tower(model, pixel_values, grid_thw)
        tower, attrs, family = self.batched_tower()
        check_tower(visual, (*attrs, *_FULL_TOWER_ATTRS), family)
        kwargs = self.full_tower_kwargs(visual, grid_thw)
        return tower(visual, pixel_values.type(visual.dtype), kwargs, layout=GroupedSegments)

    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> EncodedVisual:
        """The tower on all patches: on SDPA :meth:`run_full_tower` (:meth:`encode_full`), otherwise
        ``get_image_features`` / ``get_video_features``.

        Args:
            pixel_values (torch.Tensor of shape (sum(t*h*w), C*temporal_patch_size*patch_size**2)): the patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): their patch grids.
        """
        if getattr(model.model.visual.config, "_attn_implementation", None) != "sdpa":
            return super().encode(model, kind, pixel_values, grid_thw)
        return self.encode_full(model, pixel_values, grid_thw)

    def run_tower(self, model: Any, hidden: torch.Tensor, grid_thw: torch.Tensor, kwargs: dict[str, Any]) -> Any:
        """On SDPA with several images / frames, :meth:`batched_tower` (one attention call per block);
        otherwise the model's own tower (one segment: already one call; flash-attn: one varlen call per block; eager:
        the reference path the user chose).

        Args:
            hidden (torch.Tensor of shape (P, C*temporal_patch_size*patch_size**2)): kept patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): the FULL patch grids.
            kwargs: the packed keyword arguments of :meth:`kept_item`.
        """
        visual = model.model.visual
        one_segment = kwargs["cu_seqlens"].numel() <= 2
        if one_segment or getattr(visual.config, "_attn_implementation", None) != "sdpa":
            return super().run_tower(model, hidden, grid_thw, kwargs)
        tower, attrs, family = self.batched_tower()
        check_tower(visual, attrs, family)
        return tower(visual, hidden, kwargs)


ADAPTER = Qwen2Adapter(name="qwen2-vl")  # its classes and other facts: the "qwen2-vl" row of arr_coc.families
