"""The family contract: what ``compress`` asks of a model family, in the family's own terms.

``compress`` (``compress.py``) runs the same steps for every family: find the visual items of a prompt, decide
which of their tokens to keep, encode, repack the sequence, build the model's inputs. What differs between
families is answered by one :class:`Adapter` a family (one file a family, one row in :mod:`arr_coc.families`):

* **where an item's visual tokens sit in the prompt** (:meth:`Adapter.split_inputs`, :meth:`Adapter.locate`:
  the placeholder runs of each image / video, in the order the model scatters features) and **its question**
  (:meth:`Adapter.question_ids`: the text of the turn that holds it, without the family's markers);
* **the frames relevance sees** (:meth:`Adapter.frames`: the item's pixels as the processor resized them, (t, 3, H, W)
  in [0, 1]) and **the token grid** (:meth:`Adapter.geometry`, :attr:`VisualItem.merged_grid
  <arr_coc.integrations.sequence.VisualItem.merged_grid>`: visual token ``i`` of an item covers cell ``i`` of a
  raster over (t, h, w) cells of ``patch * merge`` pixels);
* **the positions**, as an object (:meth:`Adapter.positions` -> :class:`Positions`: the model's own positions of the
  FULL sequence, P rows; the family's :class:`PositionLayout` says what the model takes for a forward and for
  ``generate``, and how decoded tokens continue): M-RoPE rows (the Qwen line, :mod:`.qwen_common`) or 1-D ids
  (:class:`LinearLayout`);
* **the encoder call**, whole (:meth:`Adapter.encode`) and kept-only (:meth:`Adapter.encode_kept`, foveation, where
  the tower allows it), and the kept rows of its output (:meth:`Adapter.pruned_output`);
* **the model's inputs** for the pruned sequence (:meth:`Adapter.model_inputs`).

Everything family-independent (reading the prompt to the host, repacking, the decision) lives in
:mod:`.sequence` and ``compress.py`` and names no family. Nothing here imports ``transformers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch

if TYPE_CHECKING:
    from .base import EncodedVisual, Kind
    from .sequence import HostPrompt, VisualItem

Visual = dict[str, tuple[torch.Tensor | None, torch.Tensor | None]]  # kind -> (pixels, the items' grids)


@dataclass
class VisualInputs:
    """A call's visual inputs, split from the rest by :meth:`Adapter.split_inputs`.

    Attributes:
        visual: per modality (``"image"``, ``"video"``), the pixels and the per-item grids, as the family's
            processor returns them (``None`` when the modality is absent).
        extras: the family's other inputs that its positions read (e.g. a video's seconds per grid step).
    """

    visual: Visual
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class View:
    """One raster the decision scores (:meth:`Adapter.views`): frames, their grid, and which of the item's tokens
    its cells are.

    Attributes:
        item: index of the item (in ``compress``'s list) the view belongs to.
        frames (torch.Tensor of shape (T, 3, rows * cell, cols * cell)): what relevance sees, in [0, 1].
        grid: (rows, cols) of cells a frame.
        tokens (numpy.ndarray of shape (T * rows * cols,) or None): the item's token index of each cell (raster over
            T x rows x cols); None: the view IS the item (cell i = token i).
    """

    item: int
    frames: torch.Tensor
    grid: tuple[int, int]
    tokens: np.ndarray | None = None


class PositionLayout(Protocol):
    """How a family's positions look to its model: P rows of ids per token, what a forward and ``generate`` take,
    and the positions of decoded tokens."""

    rows: int

    def for_model(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, generation: bool) -> torch.Tensor:
        """(P, B, L) ids (0 on padding) -> the ``position_ids`` the model takes."""
        ...

    def next(self, positions: torch.Tensor) -> torch.Tensor:
        """(B, n) positions of decoded text tokens -> the ``position_ids`` the model takes for them."""
        ...


@dataclass(frozen=True)
class LinearLayout:
    """1-D positions (one id per token, ``position_ids`` of shape (B, L)): what most language models take."""

    rows: int = 1

    def for_model(self, ids: torch.Tensor, attention_mask: torch.Tensor | None, generation: bool) -> torch.Tensor:
        """(1, B, L) -> (B, L), for a forward and for ``generate`` alike."""
        return ids[0]

    def next(self, positions: torch.Tensor) -> torch.Tensor:
        """(B, n) -> (B, n)."""
        return positions


@dataclass
class Positions:
    """The positions of a sequence: P rows of ids per token and where decoding continues.

    Kept tokens keep the ids they have in the FULL sequence (the repacking gathers every row at the kept columns),
    and decoding continues after the full sequence: ``deltas`` is the next position minus the real length.

    Attributes:
        ids (torch.LongTensor of shape (P, batch_size, sequence_length)).
        deltas (torch.LongTensor of shape (batch_size, 1)).
        layout: the family's :class:`PositionLayout`.
    """

    ids: torch.Tensor
    deltas: torch.Tensor
    layout: PositionLayout = field(default_factory=LinearLayout)

    def for_model(self, attention_mask: torch.Tensor | None, generation: bool) -> torch.Tensor:
        """The ``position_ids`` the model takes for this sequence (a forward, or the prompt of ``generate``)."""
        return self.layout.for_model(self.ids, attention_mask, generation)


def linear_positions(attention_mask: torch.Tensor | None, input_ids: torch.Tensor) -> Positions:
    """1-D positions of a full sequence as a causal language model counts them: 0, 1, ... over the real tokens (0 on
    padding), the next position = the real length (``deltas`` 0).

    Args:
        attention_mask (torch.LongTensor of shape (batch_size, length) or None): 0 on padding.
        input_ids (torch.LongTensor of shape (batch_size, length)).
    """
    if attention_mask is None:
        ids = torch.arange(input_ids.shape[1], device=input_ids.device).expand(input_ids.shape[0], -1)  # (B, L)
    else:
        ids = (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)  # (B, L)
    deltas = torch.zeros(input_ids.shape[0], 1, dtype=torch.long, device=input_ids.device)  # (B, 1)
    return Positions(ids.unsqueeze(0), deltas, LinearLayout())  # (1, B, L)


POSITION_CHOICES = ("original", "renumber")
"""What 1-D position ids the kept tokens get (``compress(positions=...)``, :func:`pruned_positions`):

* ``"original"`` (the default): every kept token keeps the id it has in the FULL sequence, with gaps where tokens
  were dropped, and decoding continues after the full sequence, as if nothing had been dropped;
* ``"renumber"``: the pruned sequence is numbered 0, 1, ... over its real tokens, as if the dropped tokens had never
  been in the prompt, and decoding continues right after it.

The choice exists only for 1-D positions (:class:`LinearLayout`): M-RoPE ids carry an image's (t, h, w) layout, so
the Qwen line always keeps the original ids (``compress`` refuses ``"renumber"`` there). The default is argued in
``docs/families.md`` ("Positions of kept tokens")."""


def pruned_positions(
    choice: str, position_ids: torch.Tensor, deltas: torch.Tensor, attention_mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The positions of a pruned (repacked) sequence for a :data:`POSITION_CHOICES` ``choice``.

    Args:
        choice: ``"original"`` (returned as given) or ``"renumber"``.
        position_ids (torch.LongTensor of shape (P, batch_size, pruned_length)): the full sequence's ids gathered at
            the kept columns (0 on padding).
        deltas (torch.LongTensor of shape (batch_size, 1)): next position minus the real pruned length.
        attention_mask (torch.LongTensor of shape (batch_size, pruned_length) or None): 0 on padding.

    Returns:
        (position_ids, deltas) of the same shapes: renumbered, every row is 0, 1, ... over the real tokens (0 on
        padding) and the deltas are 0 (decoding continues at the pruned real length).
    """
    if choice == "original":
        return position_ids, deltas
    if choice != "renumber":
        raise ValueError(f"positions must be one of {', '.join(map(repr, POSITION_CHOICES))}, got {choice!r}")
    if attention_mask is None:
        ids = torch.arange(position_ids.shape[-1], device=position_ids.device).expand(position_ids.shape[1], -1)
    else:
        mask = attention_mask.to(position_ids.device)
        ids = (mask.long().cumsum(-1) - 1).masked_fill(mask == 0, 0)  # (B, L')
    ids = ids.to(position_ids.dtype).unsqueeze(0).expand(position_ids.shape[0], -1, -1).contiguous()  # (P, B, L')
    return ids, torch.zeros_like(deltas)


@dataclass(frozen=True)
class TurnMarkers:
    """The token ids that delimit a chat turn, for :func:`turn_question_ids`.

    Attributes:
        start, end: a turn's first and last marker (``None``: the family has none; the whole row is one turn).
        header_end: the token that ends the role header after ``start`` (looked for in the 3 tokens after it), or a set
            of them (Gemma's newline runs: the header's "\\n" merges with the processor's "\\n\\n" before an image).
        skip: ids never part of a question (placeholders, vision markers, the turn markers).
    """

    start: int | None
    end: int | None
    header_end: int | frozenset[int] | None
    skip: frozenset[int]


def turn_question_ids(
    row: Sequence[int], row_mask: Sequence[int], first: int, last: int, turn: TurnMarkers
) -> list[int]:
    """Token ids of the question around a visual item: the text of the turn that holds it, without the role header,
    the ``skip`` ids, padding, and anything between ``first`` and ``last`` (e.g. timestamps between a video's frames).

    Args:
        row: one row of ``input_ids``; ``row_mask``: its attention mask (1 = real token).
        first, last: columns of the item's first and last placeholder token.
        turn: the family's :class:`TurnMarkers`.
    """
    start = first - 1
    while start >= 0 and row[start] != turn.start:
        start -= 1
    end = last + 1
    while end < len(row) and row[end] != turn.end:
        end += 1
    begin = start + 1
    if start >= 0:  # skip the role header ("user\n")
        ends = turn.header_end if isinstance(turn.header_end, frozenset) else {turn.header_end}
        for j in range(begin, min(begin + 3, end)):
            if row[j] in ends:
                begin = j + 1
                break
    return [row[j] for j in range(begin, end) if row_mask[j] and row[j] not in turn.skip and not first <= j <= last]


class Adapter:
    """What every family fills in (see the module docstring); ``compress`` calls nothing else of a family.

    A family subclasses this (the Qwen line: :class:`~arr_coc.integrations.qwen_common.QwenAdapter`) and is named
    by its row in :mod:`arr_coc.families`. Methods a family cannot support (foveation on a tower that cannot run on
    kept patches) raise ``NotImplementedError`` with a sentence naming the family.

    Attributes:
        name: the family's name (a spelling :func:`arr_coc.families.get_family` knows).
        layout: how its positions look to its model (:class:`PositionLayout`).
        input_names: per modality, the model's keyword names of (pixels, grids); used in messages and by
            :meth:`split_inputs`.
    """

    name: str
    layout: PositionLayout = LinearLayout()
    input_names: Mapping[str, tuple[str, str]] = {}

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

    # ----- where the visual tokens are ----------------------------------------------------------------------------
    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        """Pop the family's visual inputs from ``kwargs`` (the caller's keyword arguments; the rest stays)."""
        visual = {kind: (kwargs.pop(px, None), kwargs.pop(grid, None)) for kind, (px, grid) in self.input_names.items()}
        return VisualInputs(visual)  # type: ignore[arg-type]

    def check_processor(self, model: Any, processor: Any) -> None:
        """Refuse, in one line naming it, a processor setting the family's token grid cannot map (``compress`` calls
        this when given ``processor=``; default: every setting is mapped)."""

    def token_ids(self, model: Any) -> dict[str, int]:
        """The placeholder id of each modality the family has (``{"image": id, ...}``)."""
        raise NotImplementedError(f"{self.name}: token_ids")

    def special_ids(self, model: Any, tokenizer: Any = None) -> dict[str, int]:
        """Every token id the family's :meth:`question_ids` and :meth:`locate` read (placeholders, markers)."""
        return self.token_ids(model)

    def turn_markers(self, ids: dict[str, int]) -> TurnMarkers:
        """The family's chat-turn markers (:class:`TurnMarkers`) from :meth:`special_ids`."""
        return TurnMarkers(None, None, None, frozenset(ids.values()))

    def question_ids(
        self, row: Sequence[int], mask: Sequence[int], first: int, last: int, ids: dict[str, int]
    ) -> list[int]:
        """The question of an item whose placeholders run from column ``first`` to ``last`` of ``row``."""
        return turn_question_ids(row, mask, first, last, self.turn_markers(ids))

    def token_types(self, input_ids: Any, ids: dict[str, int]) -> Any:
        """Per-token modality types the model reads (``mm_token_type_ids``), or None when it reads none."""
        return None

    def locate(self, prompt: HostPrompt, visual: Visual, ids: dict[str, int], model: Any) -> list[VisualItem]:
        """Every visual item of the batch, in the order the model scatters features (images, then videos)."""
        from .sequence import locate

        _, merge, _ = self.geometry(model)
        host_visual = {k: (px, prompt.grids.get(k)) for k, (px, _) in visual.items()}
        return locate(prompt.input_ids, prompt.attention_mask, host_visual, ids, merge, self.input_names)

    # ----- what the tokens cover, and what relevance sees ---------------------------------------------------------
    def geometry(self, model: Any) -> tuple[int, int, int]:
        """(patch_size, merge_size, temporal_patch_size): a visual token covers a cell of ``patch * merge`` pixels
        (``merge`` patches a side merged into one token) of ``temporal`` frames."""
        raise NotImplementedError(f"{self.name}: geometry")

    def item_pixels(self, visual: Visual, item: VisualItem) -> torch.Tensor:
        """The rows of the modality's pixels that belong to ``item`` (what a custom scorer's ``ImageContext``
        gets)."""
        px = visual[item.kind][0]
        assert px is not None
        return px[item.patch_start : item.patch_start + item.n_patches]

    def frame_plan(self, items: Sequence[VisualItem]) -> tuple[dict[Any, list[int]], dict[Any, np.ndarray | None]]:
        """How :meth:`frames` batches the items: groups of item indices, and per group a host index of pixel rows
        to upload with the decision's one upload (None: nothing to send)."""
        return {i: [i] for i in range(len(items))}, {i: None for i in range(len(items))}

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
        """Each item's frames as the processor resized them, (t, 3, H, W) floats in [0, 1] (the normalisation
        ``mean`` / ``std`` undone); ``sent`` yields the uploaded indices of :meth:`frame_plan`, in its order."""
        raise NotImplementedError(f"{self.name}: frames")

    def views(self, model: Any, items: Sequence[VisualItem], frames: Sequence[torch.Tensor], merge: int) -> list[View]:
        """The rasters the decision scores: by default each item is one (its frames over its merged grid, cell i =
        token i). A tiled family whose tokens are several rasters (a base view and a mosaic) or hold structure tokens
        (a newline a row) returns several views an item, each naming its tokens; :meth:`join_views` joins them."""
        return [View(i, f, it.merged_grid(merge)[1:]) for i, (it, f) in enumerate(zip(items, frames, strict=True))]

    def join_views(self, item: VisualItem, parts: Sequence[tuple[View, Any, torch.Tensor]], n: int) -> tuple[Any, Any]:
        """One item's (choice, scores (n,)) from its views' (view, choice, scores); by default its one view's."""
        (_, choice, scores), *rest = parts
        assert not rest, f"{self.name}: an item of several views needs the family's join_views"
        return choice, scores

    def token_views(self, item: VisualItem) -> list[tuple[tuple[int, int], np.ndarray]] | None:
        """The rasters of an item for a scorer's per-token scores (the ``per_item`` path): (grid, the item's token
        index of each cell) each, chosen each on its share of the budget and joined by :meth:`join_views`, as the
        decide path's :meth:`views`; None (the default): the item is one raster."""
        return None

    # ----- positions ----------------------------------------------------------------------------------------------
    def positions(
        self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, types: Any, inputs: VisualInputs
    ) -> Positions:
        """The model's own positions of the FULL (unpruned) sequence (1-D by default: 0, 1, ... over real tokens)."""
        return linear_positions(attention_mask, input_ids)

    # ----- the encoder --------------------------------------------------------------------------------------------
    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid: torch.Tensor) -> EncodedVisual:
        """The vision tower (and projector) once on every item of one modality, split per item."""
        raise NotImplementedError(f"{self.name}: encode")

    def encode_kept(
        self,
        model: Any,
        kind: Kind,
        pixel_values: torch.Tensor,
        grid: torch.Tensor,
        keeps: Sequence[torch.Tensor],
        host_grids: Any = None,
    ) -> EncodedVisual:
        """The tower on the kept tokens' patches only (foveation); ``features[i]`` has shape (k_i, D)."""
        raise NotImplementedError(
            f"compress(foveate=True) is not supported for {self.name}: its tower cannot run on kept patches"
        )

    def pruned_output(
        self,
        encoded: EncodedVisual,
        keeps: Sequence[torch.Tensor | None],
        levels: Sequence[torch.Tensor | None],
        flat: torch.Tensor | None = None,
    ) -> Any:
        """The kept rows of each item's encoder output (``keeps[i]`` None: all rows), in what :meth:`model_inputs`
        hands the model."""
        from .base import take_rows

        return take_rows(encoded.features, keeps, flat)

    def token_levels(self, scores: torch.Tensor, model: Any, tiers: Sequence[float] | None) -> torch.Tensor | None:
        """Per kept token, how many of the family's extra feature levels it receives (None: all; families without
        levels return None)."""
        return None

    def supports_foveation(self) -> bool:
        """Whether :meth:`encode_kept` runs the tower on kept patches (``compress(foveate=True)``)."""
        return False

    def supports_detail(self) -> bool:
        """Whether the family's pixels take a coarse view (``compress(detail=...)``)."""
        return False

    def has_own_coarse_view(self) -> bool:
        """Whether the family shows the model its own coarse view of each image (InternVL's thumbnail, OneVision's
        base view): ``compress(detail="thumbnail")`` then keeps it whole, inserting none (:mod:`.own_coarse`)."""
        return False

    def coarse_tokens(self, item: VisualItem) -> np.ndarray | None:
        """An item's tokens of the family's own coarse view (None: the item has none, e.g. a one-tile page)."""
        return None

    def supports_tile_choice(self) -> bool:
        """Whether the family's tokens are cells of tiles (:meth:`token_tiles`; ``tile_choice="concentrate"``)."""
        return False

    def token_tiles(self, item: VisualItem) -> np.ndarray | None:
        """A tiled family's tile of each of an item's tokens (-1: its coarse view, -2: a structure token), for
        ``compress(tile_choice="concentrate")`` (:mod:`.tile_choice`); None (default): the family has no tiles."""
        return None

    def structure_tokens(self, item: VisualItem) -> np.ndarray:
        """An item's structure tokens the decision always keeps (OneVision's newlines), not counted in its budget."""
        return np.zeros(0, dtype=np.int64)

    def supports_deepstack(self) -> bool:
        """Whether the family has per-level features that ``deepstack_tiers`` can thin."""
        return False

    def n_deepstack_levels(self, model: Any) -> int:
        """Number of per-level features the model injects (0 without)."""
        return 0

    # ----- the model's inputs -------------------------------------------------------------------------------------
    def model_inputs(self, kwargs: dict[str, Any], packed: Any, mm_outputs: Any, generation: bool) -> dict[str, Any]:
        """The model's keyword arguments for a packed (pruned) batch (``sequence.Repacked``) and the kept encoder
        outputs (per modality, :meth:`pruned_output`)."""
        raise NotImplementedError(f"{self.name}: model_inputs")

    def decode_position_ids(self, positions: torch.Tensor) -> torch.Tensor:
        """Position ids of text tokens decoded after the prompt: (B, n) -> what the model takes."""
        return self.layout.next(positions)
