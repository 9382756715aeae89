"""Qwen2.5-VL adapter for ``compress``.

Same seams as Qwen2-VL; two differences:

* video temporal positions are spaced by ``tokens_per_second * second_per_grid_ts`` (absolute time), so
  ``second_per_grid_ts`` from the processor must reach ``get_rope_index`` when the full sequence's positions are
  computed;
* the vision tower uses window attention in all blocks but ``fullatt_block_indexes``. Under foveation
  (:meth:`Qwen25Adapter.kept_item`) the windows are those of the ORIGINAL grid, each restricted to its kept
  members, so a kept patch attends in the window blocks to exactly the kept patches of its own window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .base import FamilyAdapter


@dataclass
class Qwen25Adapter(FamilyAdapter):
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


ADAPTER = Qwen25Adapter(name="qwen2.5-vl", extra_rope_keys=("second_per_grid_ts",))  # row: arr_coc.families
