"""What the families with 1-D positions share (LLaVA's line: Mistral3 / Pixtral, Gemma 3, and the tiled ones): the
family contract (:mod:`.contract`) filled in for a model that takes ``pixel_values`` of shape (num_images, 3, H, W),
scatters one feature a placeholder token in raster order, and numbers its tokens 0, 1, ... .

A family subclasses :class:`LinearAdapter` and says where each image's pixels lie in ``pixel_values``
(:meth:`LinearAdapter.pixel_sizes`), how its tower is called (:meth:`LinearAdapter.encode`) and its geometry.
Everything else is here:

* the placeholder id from ``config.image_token_id``, the chat turn's markers from the family's row (or the tokenizer);
* an item's pixels: its image cropped to the region the processor filled (``(1, 3, height, width)``) and, for
  relevance, the same un-normalised to [0, 1]; its grid in patches (the pixel size over the model's patch);
* positions: 1-D, 0, 1, ... over the real tokens (:func:`~.contract.linear_positions`); kept tokens keep them, or are
  renumbered (``compress(positions=...)``);
* the model's inputs: the pruned ids, ``mm_encoder_outputs`` with the kept features, ``position_ids`` (B, L') and
  ALWAYS an attention mask: without one, transformers' mask reads a jump in 1-D ``position_ids`` (the original ids
  with gaps) as the start of a new packed sequence (``masking_utils.find_packed_sequence_indices``) when no cache is
  passed, and would hide the text before the gap.

Nothing here imports ``transformers``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from .base import EncodedVisual, take_rows
from .contract import Adapter, LinearLayout, PositionLayout, TurnMarkers, VisualInputs

if TYPE_CHECKING:
    from .sequence import VisualItem


@dataclass
class LinearAdapter(Adapter):
    """The contract for a 1-D family (see the module docstring); subclasses fill in :meth:`geometry` and
    :meth:`encode` (and :meth:`pixel_sizes` where images are padded to a common size).

    Attributes:
        name: the family's name in :mod:`arr_coc.families`.
        marker_tokens: per turn-marker key (``im_start``, ``im_end``, ``newline``), the token text a tokenizer knows it
            by (the family's row gives the default ids).
    """

    name: str
    marker_tokens: Mapping[str, str] = field(default_factory=dict)
    layout: PositionLayout = field(default=LinearLayout(), repr=False)
    input_names: Mapping[str, tuple[str, str]] = field(default_factory=lambda: {"image": ("pixel_values", "")})

    # ----- where the visual tokens are ----------------------------------------------------------------------------
    def pixel_sizes(self, pixel_values: torch.Tensor, kwargs: dict[str, Any]) -> torch.Tensor:
        """(num_images, 2) the (height, width) in pixels of the region of each image the processor filled, popping
        the family's size inputs from ``kwargs`` (default: the whole of ``pixel_values``)."""
        n, _, h, w = pixel_values.shape
        return torch.tensor([[h, w]] * n, device=pixel_values.device)

    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        """Pop ``pixel_values`` and the family's size inputs. The grid slot holds each image's pixel size as
        (1, height, width): :meth:`locate` turns it into patches with the model's geometry.

        Raises:
            ValueError: pixels that are not (num_images, 3, height, width).
        """
        px = kwargs.pop("pixel_values", None)
        if px is None:
            for _, grid_name in self.input_names.values():
                if grid_name:
                    kwargs.pop(grid_name, None)
            return VisualInputs({"image": (None, None)})
        if px.dim() != 4:
            raise ValueError(f"pixel_values must have shape (num_images, 3, height, width), got {tuple(px.shape)}")
        sizes = self.pixel_sizes(px, kwargs)  # (n, 2)
        ones = torch.ones(sizes.shape[0], 1, dtype=sizes.dtype, device=sizes.device)
        return VisualInputs({"image": (px, torch.cat([ones, sizes], 1))})

    def patch_size(self, model: Any) -> int:
        """Pixels a patch side (the tower's patch)."""
        return self.geometry(model)[0]

    def locate(self, prompt: Any, visual: Any, ids: dict[str, int], model: Any) -> list[VisualItem]:
        """Every image of the batch: the pixel sizes in patches (each side a whole number of merged tokens, else a
        ValueError naming the image, its size and the cell), then the placeholders assigned in order (a count that
        does not match the grid is named with both counts)."""
        from .sequence import locate

        patch, merge, _ = self.geometry(model)
        host_sizes = prompt.grids.get("image")
        if host_sizes is None:
            return locate(prompt.input_ids, prompt.attention_mask, {"image": (None, None)}, ids, merge, None)
        grids = host_sizes.copy()
        for i, (_, h, w) in enumerate(host_sizes.tolist()):
            if h % (patch * merge) or w % (patch * merge):
                raise ValueError(
                    f"image {i} is {h}x{w} pixels, not a whole number of {patch * merge}-pixel cells (patch {patch} x "
                    f"merge {merge}); the processor's resize and the model's geometry do not match"
                )
            grids[i, 1:] = (h // patch, w // patch)
        host_visual = {"image": (visual["image"][0], grids)}
        return locate(prompt.input_ids, prompt.attention_mask, host_visual, ids, merge, self.input_names)

    def token_ids(self, model: Any) -> dict[str, int]:
        """The image placeholder's id (``config.image_token_id``)."""
        return {"image": int(model.config.image_token_id)}

    def special_ids(self, model: Any, tokenizer: Any = None) -> dict[str, int]:
        """The placeholder, the family's structure tokens and turn markers (from its row in :mod:`arr_coc.families`,
        replaced by what ``tokenizer`` knows them as)."""
        from arr_coc.families import get_family

        ids = {k: v for k, v in get_family(self.name).token_ids.items() if k != "image"}
        ids.update(self.token_ids(model))
        if tokenizer is not None and hasattr(tokenizer, "convert_tokens_to_ids"):
            for key, text in self.marker_tokens.items():
                value = tokenizer.convert_tokens_to_ids(text)
                if isinstance(value, int) and value >= 0 and value != getattr(tokenizer, "unk_token_id", None):
                    ids[key] = value
        return ids

    def turn_markers(self, ids: dict[str, int]) -> TurnMarkers:
        """The turn that holds the image: ``im_start`` (role header up to ``newline``) ... ``im_end``; every special id
        is skipped. An id of -1 is a marker the family's row does not know without a tokenizer."""

        def known(key: str) -> int | None:
            value = ids.get(key, -1)
            return None if value < 0 else value

        return TurnMarkers(known("im_start"), known("im_end"), known("newline"), frozenset(ids.values()))

    # ----- what relevance sees --------------------------------------------------------------------------------------
    def item_pixels(self, visual: Any, item: VisualItem) -> torch.Tensor:
        """The item's image, cropped to the region the processor filled: (1, 3, height, width) (its pixel size, the
        grid slot of :meth:`split_inputs`)."""
        px, sizes = visual["image"]
        _, h, w = (int(v) for v in sizes[item.index])
        return px[item.index : item.index + 1, :, :h, :w]

    def frames(self, model, visual, items, plan, sent, mean, std) -> list[torch.Tensor]:  # type: ignore[override]
        """Each item's image as the processor resized it, un-normalised to [0, 1]: (1, 3, H, W)."""
        out = []
        for it in items:
            px = self.item_pixels(visual, it).float()
            m, s = px.new_tensor(mean).view(1, 3, 1, 1), px.new_tensor(std).view(1, 3, 1, 1)
            out.append((px * s + m).clamp(0, 1))
        return out

    # ----- the encoder ----------------------------------------------------------------------------------------------
    def pruned_output(
        self,
        encoded: EncodedVisual,
        keeps: Sequence[torch.Tensor | None],
        levels: Sequence[torch.Tensor | None],
        flat: torch.Tensor | None = None,
    ) -> Any:
        """A fresh encoder output holding each image's kept features (``pooler_output``: one (k_i, D) per image)."""
        return type(encoded.raw)(pooler_output=take_rows(encoded.features, keeps, flat))

    # ----- the model's inputs ---------------------------------------------------------------------------------------
    def model_inputs(self, kwargs: dict[str, Any], packed: Any, mm_outputs: Any, generation: bool) -> dict[str, Any]:
        """The caller's other inputs, the pruned ids, the kept features, 1-D ``position_ids`` (B, L'), labels, and an
        attention mask (always; see the module docstring)."""
        out = dict(kwargs, input_ids=packed.input_ids, mm_encoder_outputs=mm_outputs)
        mask = packed.attention_mask
        out["attention_mask"] = mask if mask is not None else torch.ones_like(packed.input_ids)
        if packed.labels is not None:
            out["labels"] = packed.labels
        out["position_ids"] = self.layout.for_model(packed.position_ids, out["attention_mask"], generation)  # (B, L')
        return out
