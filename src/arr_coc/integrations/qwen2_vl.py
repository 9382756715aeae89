"""Qwen2-VL adapter for ``compress``.

Qwen2-VL needs nothing beyond the shared seams in :class:`~arr_coc.integrations.base.FamilyAdapter`: videos get
temporal positions ``0, 1, 2, ...`` per temporal patch and ``get_rope_index`` takes no extra argument. Under
foveation (:meth:`~arr_coc.integrations.base.FamilyAdapter.kept_item`) the kept patches of an image (of a frame, for
videos) attend to each other with full attention, with the rotary (h, w) angles of their place in the full grid.
"""

from __future__ import annotations

from .base import FamilyAdapter

ADAPTER = FamilyAdapter(name="qwen2-vl")  # its classes and other facts: the "qwen2-vl" row of arr_coc.families
