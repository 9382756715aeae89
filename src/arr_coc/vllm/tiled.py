"""What the plugin's 1-D tiled families share (InternVL, LLaVA-OneVision): their decision on tile rasters, the ids of
their turn walk, and their positions.

* **The decision** is ``compress(..., foveate=True)``'s on the same processed pixels: each image's rasters (its
  :class:`Raster` list: InternVL's tiles as one raster of frames, OneVision's base view and anyres raster) scored in
  ONE :meth:`arr_coc.realizing.Realizer.decide` call, a count budget shared by an image's rasters in proportion to
  their cells (``steps._share``, as compress shares it), then joined by the family.
* **The ids** of the turn walk are the ``compress`` adapter's own (:meth:`LinearAdapter.special_ids` with the
  checkpoint's tokenizer), so the question read is compress's exactly.
* **Positions: "renumber".** vLLM gives a model without M-RoPE the index of each token in its (pruned) prompt as its
  position; only a checkpoint whose config names an ``mrope_section`` makes vLLM's runner and scheduler ask the model
  class for positions (``model_config.uses_mrope``, read from the HF config before the class is built), so a plugin
  class cannot give kept tokens their original ids without changing the checkpoint's config or vLLM's runner. The
  plugin therefore serves ``compress(..., positions="renumber")`` for these families and refuses ``"original"`` in
  one line (HTTP 400).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from .options import ArrCocOptionError, Options, decision_device, realizer_for

RENUMBER_REASON = (
    "vLLM numbers a 1-D model's tokens by their index in the pruned prompt (only a checkpoint whose config has an "
    "M-RoPE mrope_section gets positions from the model class), so kept tokens are renumbered"
)


@dataclass(frozen=True)
class Raster:
    """One raster the decision scores: ``frames`` (T, 3, H, W) in [0, 1] over ``grid`` (rows, cols) of tokens; its
    cells are the image's tokens ``tokens`` (None: the image's tokens 0 .. T*rows*cols - 1, in order)."""

    image: int
    frames: torch.Tensor
    grid: tuple[int, int]
    tokens: np.ndarray | None = None


def unnormalize(pixels: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """Processed tiles (n, 3, H, W) -> floats in [0, 1], as the ``compress`` adapters' ``frames`` undo them."""
    px = pixels.float()
    m, s = px.new_tensor(list(mean)).view(1, 3, 1, 1), px.new_tensor(list(std)).view(1, 3, 1, 1)
    return (px * s + m).clamp(0, 1)


def image_questions(options: Options, n_images: int) -> list[str | None]:
    """Each image's question: the request's ``query``, else the turn's (``options.queries``), else none."""
    if options.query is not None:
        return [options.query or None] * n_images
    if options.queries is not None and len(options.queries) == n_images:
        return [q or None for q in options.queries]
    return [None] * n_images


def decide_rasters(rasters: Sequence[Raster], n_images: int, options: Options) -> list[Any]:
    """Every raster of one request's images decided in one ``Realizer.decide`` call; per raster its
    :class:`~arr_coc.deciding.ItemDecision` (``.choice.keep``: the raster's kept cells).

    Raises:
        ArrCocOptionError: ``budget_scope="prompt"`` (not served for the tiled families yet).
    """
    from arr_coc.integrations.steps import _share

    if options.budget_scope == "prompt":
        raise ArrCocOptionError(
            "arr_coc: budget_scope='prompt' is not served for the tiled families (InternVL, LLaVA-OneVision) in vLLM "
            "yet; send budget_scope='item'"
        )
    if not rasters:
        return []
    questions = image_questions(options, n_images)
    device = decision_device()
    frames = [r.frames if device is None else r.frames.to(device) for r in rasters]
    cells = [r.frames.shape[0] * r.grid[0] * r.grid[1] for r in rasters]
    budgets = [
        _share(options.budget, c, [cells[j] for j, o in enumerate(rasters) if o.image == r.image])
        for r, c in zip(rasters, cells, strict=True)
    ]
    texts = [questions[r.image] for r in rasters]
    modes = ["text" if options.mode == "text" and q else "texture" for q in texts]
    text_options = dict(options.text_options) if options.text_options is not None else None
    realizer = realizer_for(options.relevance, device)
    decision = realizer.decide(frames, [r.grid for r in rasters], texts, budgets, modes, text_options=text_options)
    return list(decision.items)


def compress_ids(adapter: Any, hf_config: Any, tokenizer: Any) -> dict[str, int]:
    """The ids ``compress``'s turn walk uses for this checkpoint: the adapter's ``special_ids`` (the family row's
    markers, replaced by what the tokenizer knows them as; the placeholder from the config)."""
    return adapter.special_ids(SimpleNamespace(config=hf_config), tokenizer)


class TiledProcessorMixin:
    """Mixed in before :class:`~arr_coc.vllm.common.ProcessorMixin`: the 1-D families' ids and positions."""

    served_positions = "renumber"
    positions_reason = RENUMBER_REASON

    def arr_coc_ids(self, tokenizer: Any, adapter: Any) -> dict[str, int]:
        return compress_ids(adapter, self.info.get_hf_config(), tokenizer)  # type: ignore[attr-defined]


__all__ = ["RENUMBER_REASON", "Raster", "TiledProcessorMixin", "compress_ids", "decide_rasters", "unnormalize"]
