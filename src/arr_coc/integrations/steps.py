"""The state :class:`~arr_coc.integrations.compress.CompressedModel`'s steps pass on (:class:`Batch`, :class:`Question`,
:class:`PerItem`, :class:`Kept`, :class:`KeptFeatures`), the adapter of a model (:func:`find_adapter`, the family's
``transformers`` floor checked; :func:`unsupported_message`) and the checks of a scorer's output. Moved from
:mod:`.compress` unchanged; :mod:`.compress` re-exports every name."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from arr_coc.attending import TokenBudget
from arr_coc.families import check_transformers, load_object, match_model, supported_classes

from .base import EncodedVisual, VisualAllocation
from .contract import Adapter, Positions, Visual, VisualInputs
from .sequence import HostPrompt, VisualItem


@dataclass
class Batch:
    """One call's inputs as the steps of :meth:`CompressedModel._plan` use them (built by ``_find_items``; the
    level-of-detail step may lengthen the prompt and update it).

    Attributes:
        input_ids (torch.LongTensor of shape (batch_size, sequence_length)): the prompt, on the device.
        attention_mask, labels (torch.Tensor of shape (batch_size, sequence_length) or None).
        types: the per-token modality types the family's model reads (:meth:`Adapter.token_types`), or None.
        inputs: the family's visual inputs (:meth:`Adapter.split_inputs`).
        kwargs: the caller's other keyword arguments (passed on to the model).
        ids: the special token ids (:meth:`Adapter.special_ids`).
        prompt: the prompt's integers on the host (one read).
        items: every visual item of the batch, located in the prompt.
        original_ids: the caller's ``input_ids``.
        budgets: one budget per sample.
        positions: the model's own positions of the full sequence (:meth:`Adapter.positions`).
        origin (torch.LongTensor of shape (batch_size, sequence_length) or None): with thumbnails, the caller's column
            of each column of the longer prompt (-1 on a thumbnail).
        scorings: per item, the realizer's ``Scoring`` (the ``"decide"`` path: scores, word units, text prior, OCR
            boxes), or None; what ``budget_scope="prompt"`` reads (:mod:`.document_budget`).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor | None
    types: torch.Tensor | None
    labels: torch.Tensor | None
    inputs: VisualInputs
    kwargs: dict[str, Any]
    ids: dict[str, int]
    prompt: HostPrompt
    items: list[VisualItem]
    original_ids: torch.Tensor
    budgets: list[TokenBudget]
    positions: Positions | None = None
    origin: torch.Tensor | None = None
    scorings: list[Any] | None = None

    @property
    def visual(self) -> Visual:
        """Per modality, (pixels, the items' grids)."""
        return self.inputs.visual


@dataclass
class Question:
    """One item's question: its ids (Q,) on the device, their input embeddings (Q, D) or None, its text or None."""

    ids: torch.Tensor
    embeds: torch.Tensor | None
    text: str | None


@dataclass
class PerItem:
    """What the decision reads of each item (lists in item order): its question, its pixel rows, the tower's
    features (N, D) or None (foveated), its token count N, and the features near-duplicates are judged by."""

    asks: list[Question]
    pixels: list[torch.Tensor]
    feats: list[torch.Tensor | None]
    n: list[int]
    redund: list[torch.Tensor | None]


@dataclass
class Kept:
    """The decision, read: per item the kept indices on the device and on the host, the DeepStack levels (or None),
    and per sample the :class:`VisualAllocation` records."""

    keeps: list[torch.Tensor]
    host_keeps: list[np.ndarray]
    levels: list[torch.Tensor | None]
    allocation: list[list[VisualAllocation]]


@dataclass
class KeptFeatures:
    """The encode step's result: the modalities present, their encoder outputs (whole, or the kept tokens when
    foveated), per modality the kept indices per item (None: all rows) and levels, and the one host index per
    modality into its items' features stacked (None when foveated)."""

    kinds: list[str]
    encoded: dict[str, EncodedVisual]
    per_kind: dict[str, list[torch.Tensor | None]]
    per_levels: dict[str, list[torch.Tensor | None]]
    flat: dict[str, np.ndarray | None]


def find_adapter(model: Any) -> Adapter:
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


# ----- an item scored as several views (tiled families: Adapter.views) -------------------------------------------
def _view_budget(view: Any, views: Sequence[Any], items: Sequence[Any], batch: Batch) -> Any:
    """A view's budget: its item's; a count is shared by an item's views in proportion to their cells."""
    mine = [v for v in views if v.item == view.item]
    cells = [v.frames.shape[0] * v.grid[0] * v.grid[1] for v in mine]
    at = next(j for j, v in enumerate(mine) if v is view)
    return _share(batch.budgets[items[view.item].sample], cells[at], cells)


def _share(budget: Any, n_cells: int, cells: Sequence[int]) -> Any:
    """One raster's share of an item's budget: a fraction or ``"adaptive"`` as it is; a count in proportion to the
    raster's cells (the item's one raster: all of it)."""
    value = getattr(budget, "value", budget)
    if len(cells) == 1 or not isinstance(value, int) or isinstance(value, bool):
        return budget
    return max(1, round(value * n_cells / sum(cells)))


def _rows(x: torch.Tensor | None, tokens: np.ndarray | None) -> torch.Tensor | None:
    """``x``'s rows at a view's ``tokens`` (None: all rows, as they are)."""
    if x is None or tokens is None:
        return x
    return x[torch.from_numpy(tokens).to(x.device)]
