"""Qwen2.5-VL adapter for ``compress``.

Same seams as Qwen2-VL; two differences:

* video temporal positions are spaced by ``tokens_per_second * second_per_grid_ts`` (absolute time), so
  ``second_per_grid_ts`` from the processor must reach ``get_rope_index`` when the full sequence's positions are
  computed;
* the vision tower uses window attention in all blocks but ``fullatt_block_indexes``. Under foveation
  (:meth:`Qwen25Adapter.kept_item`) the windows are those of the ORIGINAL grid, each restricted to its kept
  members, so a kept patch attends in the window blocks to exactly the kept patches of its own window.

One attention call per block (:meth:`Qwen25Adapter.run_tower`): on SDPA the library's vision attention loops over the
windows (``torch.split(..., lengths.tolist())``, one ``scaled_dot_product_attention`` per window), and a foveated
page keeps patches in about as many windows as the full page has. :func:`window_batched_tower` runs the tower's own
modules (patch embedding, rotary embedding, each block's norms / ``qkv`` / ``proj`` / MLP, the merger) with the
library's ``apply_rotary_pos_emb_vision``, and attends with
:class:`~arr_coc.integrations.foveation.PaddedSegments`: all windows of a block (or all images of a full-attention
block) in one call. With flash-attn the model's own tower already makes one ``flash_attn_varlen_func`` call per block,
and with eager attention the user asked for the reference path: both run the model's tower unchanged.

The full tower too (:meth:`Qwen25Adapter.encode`, what ``compress`` runs without foveation): on SDPA the model's tower
makes one attention call per window in 28 of the 32 blocks of the 7B config (~80 windows for a 1,248-token page, one
host read of the window lengths per block). :func:`full_tower` runs the same modules with
:class:`~arr_coc.integrations.foveation.GroupedSegments`: a page's windows come in a few lengths (whole windows, and
the cut ones of the last row and column), each length in one call, bit for bit the per-window calls (tested against
the model's tower), so a ``compress`` forward keeps the unmodified model's output at full budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .base import EncodedVisual, Kind
from .foveation import GroupedSegments, PaddedSegments
from .qwen_common import QwenAdapter

# what window_batched_tower reads of the tower and its blocks (checked before use; a release without them is refused)
_TOWER_ATTRS = ("patch_embed", "rotary_pos_emb", "blocks", "merger", "fullatt_block_indexes", "spatial_merge_unit")
_FULL_TOWER_ATTRS = (*_TOWER_ATTRS, "spatial_merge_size", "window_size", "patch_size", "config", "dtype")
_BLOCK_ATTRS = ("norm1", "norm2", "attn", "mlp")
_ATTN_ATTRS = ("qkv", "proj", "num_heads", "scaling")


def block_forward(
    block: Any,
    hidden: torch.Tensor,
    position_embeddings: tuple[torch.Tensor, torch.Tensor],
    attend: Any,
    apply_rotary: Any = None,
) -> torch.Tensor:
    """One ``Qwen2_5_VLVisionBlock`` with its own modules and weights, attention done by ``attend``.

    The same operations, in the same order, as the block's ``forward`` (pre-norm attention with the vision rotary
    embedding, residual, pre-norm MLP, residual); only the grouping of the attention into segments is ``attend``'s.
    Qwen3-VL's vision blocks have the same structure (``qwen3_vl.py`` passes its module's rotary function).

    Args:
        block: a vision block of the model (``model.model.visual.blocks[i]``).
        hidden (torch.Tensor of shape (P, D)): packed patch states, in the tower's window order.
        position_embeddings: (cos, sin), each of shape (P, head_dim), in the same order.
        attend: ``attend(query, key, value, scale) -> (P, H, d)`` with inputs of shape (P, H, d), e.g.
            :meth:`PaddedSegments.attend`.
        apply_rotary: the block's modeling module's ``apply_rotary_pos_emb_vision`` (default Qwen2.5-VL's).

    Returns:
        torch.Tensor of shape (P, D).
    """
    if apply_rotary is None:
        from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import apply_rotary_pos_emb_vision as apply_rotary

    attn = block.attn
    n_rows = hidden.shape[0]
    qkv = attn.qkv(block.norm1(hidden)).reshape(n_rows, 3, attn.num_heads, -1)  # (P, 3, H, d)
    query, key, value = qkv.permute(1, 0, 2, 3).unbind(0)  # each (P, H, d)
    cos, sin = position_embeddings
    query, key = apply_rotary(query, key, cos, sin)
    out = attend(query, key, value, attn.scaling)  # (P, H, d)
    hidden = hidden + attn.proj(out.reshape(n_rows, -1).contiguous())  # (P, D)
    return hidden + block.mlp(block.norm2(hidden))  # (P, D)


def window_batched_tower(
    visual: Any, hidden: torch.Tensor, kwargs: dict[str, torch.Tensor], layout: type = PaddedSegments
) -> Any:
    """The Qwen2.5-VL vision tower on packed kept patches with ONE attention call per block (``layout``
    :class:`PaddedSegments`), or one per distinct segment length (:class:`GroupedSegments`: exactly the model's own
    per-window calls).

    What ``Qwen2_5_VisionTransformerPretrainedModel.forward`` computes from precomputed tensors (the keyword
    arguments of :meth:`Qwen25Adapter.kept_item`, packed by ``concat_items``): patch embedding, window permutation,
    rotary embedding, the blocks (window segments, or per-image / per-frame segments in ``fullatt_block_indexes``),
    merger, inverse permutation. Two host reads in all (the segment layouts), none per block.

    Args:
        visual: ``model.model.visual``.
        hidden (torch.Tensor of shape (P, C*temporal_patch_size*patch_size**2)): kept patches, in the tower's dtype.
        kwargs: ``position_ids`` (P, 2), ``cu_seqlens`` (segments + 1,), ``window_index`` (P / merge**2,),
            ``cu_window_seqlens`` (windows + 1,).
        layout: how a block's segments are attended (``from_cu_seqlens`` and ``attend``).

    Returns:
        ``BaseModelOutputWithPooling`` with ``last_hidden_state`` (P, D) in window order and ``pooler_output``
        (P / merge**2, out_hidden_size) in kept order, as the model's tower returns them.
    """
    return _embedded_tower(visual, visual.patch_embed(hidden), kwargs, layout)


def _embedded_tower(visual: Any, hidden: torch.Tensor, kwargs: dict[str, torch.Tensor], layout: type) -> Any:
    """:func:`window_batched_tower` after the patch embedding (``hidden`` (P, D)). Everything from the patch
    embedding to the merger runs between the tower's own modules, so ``arr_coc.loading.tower_hooks`` (which
    counts a tower run from ``patch_embed`` to ``merger``) sees the layouts' host reads inside the tower."""
    from transformers.modeling_outputs import BaseModelOutputWithPooling

    window_index = kwargs["window_index"]
    full = layout.from_cu_seqlens(kwargs["cu_seqlens"])
    windows = layout.from_cu_seqlens(kwargs["cu_window_seqlens"])
    n_rows = hidden.shape[0]
    hidden = visual.permute_input_for_window_attn(hidden, window_index, seq_len=n_rows)  # (P, D) window order
    cos, sin = visual.rotary_pos_emb(hidden, kwargs["position_ids"])  # each (P, head_dim), kept order
    position_embeddings = tuple(
        visual.permute_input_for_window_attn(f, window_index, seq_len=n_rows) for f in (cos, sin)
    )
    for layer, block in enumerate(visual.blocks):
        layout = full if layer in visual.fullatt_block_indexes else windows
        hidden = block_forward(block, hidden, position_embeddings, layout.attend)
    reverse = torch.argsort(window_index)  # (P / merge**2,)
    merged = visual.merger(hidden)[reverse]  # (P / merge**2, out) kept order
    return BaseModelOutputWithPooling(last_hidden_state=hidden, pooler_output=merged)


def full_tower(visual: Any, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> Any:
    """The Qwen2.5-VL vision tower on ALL patches, each length of window attended in one call: the model's own
    ``visual(pixel_values, grid_thw=grid_thw)`` bit for bit (:class:`GroupedSegments`), a few attention calls per
    block instead of one per window, and two host reads (the layouts) instead of one per block.

    The tower's data-dependent inputs (rotary position ids, per-image / per-frame segments, the window permutation
    and boundaries) come from the same ``transformers.vision_utils`` helpers the tower's ``forward`` calls.

    Args:
        visual: ``model.model.visual``.
        pixel_values (torch.Tensor of shape (sum t*h*w, C*temporal_patch_size*patch_size**2)): all items' patches.
        grid_thw (torch.LongTensor of shape (num_items, 3)): their patch grids.

    Returns:
        ``BaseModelOutputWithPooling`` as the model's tower returns it (``pooler_output`` (sum t*h*w / merge**2, D)).
    """
    from transformers.vision_utils import (
        get_vision_attention_seqlens,
        get_vision_position_ids,
        get_vision_window_index,
    )

    hidden = visual.patch_embed(pixel_values.type(visual.dtype))  # (P, D)
    merge = int(visual.spatial_merge_size)
    cu_seqlens, _ = get_vision_attention_seqlens(grid_thw, visual.config, kwargs={})
    window_index, cu_window = get_vision_window_index(
        grid_thw, spatial_merge_size=merge, window_size=int(visual.window_size), patch_size=int(visual.patch_size)
    )
    kwargs = {
        "position_ids": get_vision_position_ids(grid_thw, merge, kwargs={}),
        "cu_seqlens": cu_seqlens,
        "window_index": window_index.to(grid_thw.device),
        "cu_window_seqlens": cu_window.to(grid_thw.device),
    }
    return _embedded_tower(visual, hidden, kwargs, GroupedSegments)


def groups_windows(visual: Any) -> bool:
    """Whether the full tower runs with each window length in one call (:func:`full_tower`): on SDPA. With flash-attn
    the model's tower already makes one varlen call per block; eager attention is the reference path the user chose.
    """
    return getattr(visual.config, "_attn_implementation", None) == "sdpa"


def check_tower(visual: Any, tower_attrs: Sequence[str] = _TOWER_ATTRS, family: str = "Qwen2.5-VL") -> None:
    """Refuse (``RuntimeError``) a vision tower without the modules :func:`block_forward` and the batched towers use.

    Args:
        visual: ``model.model.visual``.
        tower_attrs: the tower's attributes the family's batched tower reads.
        family: the family's name, for the message.
    """
    missing = [a for a in tower_attrs if not hasattr(visual, a)]
    for block in visual.blocks if hasattr(visual, "blocks") else ():
        missing += [f"blocks[i].{a}" for a in _BLOCK_ATTRS if not hasattr(block, a)]
        missing += [f"blocks[i].attn.{a}" for a in _ATTN_ATTRS if not hasattr(getattr(block, "attn", None), a)]
    if missing:
        import transformers

        raise RuntimeError(
            f"this transformers release ({transformers.__version__}) has a {family} vision tower without "
            f"{sorted(set(missing))}; the foveated tower needs them (tested with transformers 5.24)"
        )


@dataclass
class Qwen25Adapter(QwenAdapter):
    """Adapter for Qwen2.5-VL (window attention in the vision tower)."""

    def kept_item(self, model: Any, grid_thw: tuple[int, int, int], keep: torch.Tensor) -> Any:
        """Qwen2-VL's pieces plus ``window_index`` / ``cu_window_seqlens`` of the original grid's windows.

        Args:
            grid_thw: the item's FULL patch grid (t, h, w).
            keep (torch.LongTensor of shape (k,)): kept merged-token indices, strictly increasing.
        """
        from transformers.vision_utils import get_vision_window_index

        from .foveation import kept_windows

        item = super().kept_item(model, grid_thw, keep)
        vc = model.config.vision_config
        full_index, full_cu = get_vision_window_index(
            keep.new_tensor([list(grid_thw)]),
            spatial_merge_size=int(vc.spatial_merge_size),
            window_size=int(vc.window_size),
            patch_size=int(vc.patch_size),
        )  # (N,), (W+1,)
        window_index, cu_window = kept_windows(keep, full_index, full_cu, int(vc.spatial_merge_size))
        item.kwargs.update(window_index=window_index, cu_window_seqlens=cu_window)
        return item

    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> EncodedVisual:
        """The tower on all patches: on SDPA (:func:`groups_windows`) :func:`full_tower` (each window length in one
        call, the model's own output bit for bit), otherwise ``get_image_features`` / ``get_video_features``.

        Args:
            pixel_values (torch.Tensor of shape (sum(t*h*w), C*temporal_patch_size*patch_size**2)): the patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): their patch grids.
        """
        if not groups_windows(model.model.visual):
            return super().encode(model, kind, pixel_values, grid_thw)
        return self.encode_full(model, pixel_values, grid_thw)

    def run_full_tower(self, model: Any, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> Any:
        """Where :func:`groups_windows`, :func:`full_tower` (the model's own output, each window length in one
        call); otherwise the model's own tower."""
        visual = model.model.visual
        if not groups_windows(visual):
            return super().run_full_tower(model, pixel_values, grid_thw)
        check_tower(visual, _FULL_TOWER_ATTRS)
        return full_tower(visual, pixel_values, grid_thw)

    def run_tower(self, model: Any, hidden: torch.Tensor, grid_thw: torch.Tensor, kwargs: dict[str, Any]) -> Any:
        """On SDPA, :func:`window_batched_tower` (one attention call per block); otherwise the model's own tower
        (flash-attn: already one varlen call per block; eager: the reference path the user chose).

        Args:
            hidden (torch.Tensor of shape (P, C*temporal_patch_size*patch_size**2)): kept patches.
            grid_thw (torch.LongTensor of shape (num_items, 3)): the FULL patch grids.
            kwargs: the packed keyword arguments of :meth:`kept_item`.
        """
        visual = model.model.visual
        if getattr(visual.config, "_attn_implementation", None) != "sdpa":
            return super().run_tower(model, hidden, grid_thw, kwargs)
        check_tower(visual)
        return window_batched_tower(visual, hidden, kwargs)


ADAPTER = Qwen25Adapter(name="qwen2.5-vl", extra_rope_keys=("second_per_grid_ts",))  # row: arr_coc.families
