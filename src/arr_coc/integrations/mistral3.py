"""Mistral3 (``Mistral3ForConditionalGeneration``: a Pixtral vision tower, a 2 x 2 patch merger, a Mistral language
model with 1-D positions) on the family contract (:class:`~.linear.LinearAdapter`).

The processor (``PixtralProcessor``) resizes an image so that its longest edge fits ``size["longest_edge"]`` (no
upscaling) and both sides are whole numbers of ``patch_size * spatial_merge_size`` pixels, pads the batch's images to
a common size (``image_sizes`` holds each one's real size) and lays an image out in the prompt row by row: ``w``
``[IMG]`` placeholders then ``[IMG_BREAK]``, the last row's break replaced by ``[IMG_END]``. The model scatters one
merged feature per ``[IMG]`` in raster order; the breaks and the end are text tokens.

What pruning does to that layout (the contract's decision, tested in ``tests/test_mistral3_gemma3.py``):

* only ``[IMG]`` placeholders are dropped; every ``[IMG_BREAK]`` and the ``[IMG_END]`` stay, at their original
  positions (or renumbered with everything else). **A row with no kept cell keeps its break**: the breaks are the only
  row structure the language model reads (its positions are 1-D; the tower's 2-D RoPE never reaches it), so an empty
  row still shows as a break after a break, the kept rows below stay on their rows, and the image's shape (rows) is
  the same as unpruned. The breaks are not visual tokens: budgets count ``[IMG]`` only, and they cost ``rows`` tokens
  an image (55 for a 1540-pixel-tall page: under 2% of its 3025 cells);
* a prompt whose placeholders are not laid out as ``rows`` runs of ``cols`` ``[IMG]``, each followed by
  ``[IMG_BREAK]`` (``[IMG_END]`` after the last), is refused naming the image and what was found.

Foveation and level of detail are not offered: Pixtral's tower attends over all of an image's patches (block-diagonal
per image), so running it on the kept cells only would change every kept feature, and a coarse view would need
another image in the prompt; both are refused at wrap time with one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .base import EncodedVisual, Kind
from .linear import LinearAdapter


@dataclass
class Mistral3Adapter(LinearAdapter):
    """The contract for ``Mistral3ForConditionalGeneration`` (see the module docstring)."""

    name: str = "mistral3"
    marker_tokens: dict[str, str] = field(
        default_factory=lambda: {
            "img_break": "[IMG_BREAK]", "img_end": "[IMG_END]", "im_start": "[INST]", "im_end": "[/INST]",
        }
    )  # fmt: skip
    input_names: dict[str, tuple[str, str]] = field(default_factory=lambda: {"image": ("pixel_values", "image_sizes")})

    def pixel_sizes(self, pixel_values: torch.Tensor, kwargs: dict[str, Any]) -> torch.Tensor:
        """``image_sizes`` (num_images, 2), each image's (height, width) inside the padded ``pixel_values``.

        Raises:
            ValueError: ``image_sizes`` missing, of another shape, or larger than the pixels.
        """
        sizes = kwargs.pop("image_sizes", None)
        if sizes is None:
            raise ValueError("pixel_values was passed without image_sizes; pass both, as the processor returns them")
        sizes = torch.as_tensor(sizes, device=pixel_values.device).long()
        n, _, h, w = pixel_values.shape
        if tuple(sizes.shape) != (n, 2):
            raise ValueError(f"image_sizes must have shape ({n}, 2) for {n} images, got {tuple(sizes.shape)}")
        if bool((sizes[:, 0] > h).any() or (sizes[:, 1] > w).any()):
            raise ValueError(f"image_sizes {sizes.tolist()} exceed the pixel_values' {h}x{w}")
        return sizes

    def geometry(self, model: Any) -> tuple[int, int, int]:
        """(patch_size, spatial_merge_size, 1): a placeholder covers ``patch * merge`` pixels a side."""
        cfg = model.config
        return int(cfg.vision_config.patch_size), int(cfg.spatial_merge_size), 1

    def locate(self, prompt: Any, visual: Any, ids: dict[str, int], model: Any) -> list[Any]:
        """The images of the batch (:meth:`LinearAdapter.locate`), each checked to be laid out as the processor lays
        it out: ``rows`` runs of ``cols`` ``[IMG]``, each followed by ``[IMG_BREAK]``, ``[IMG_END]`` after the last.

        Raises:
            ValueError: naming the image, the layout expected and what its prompt holds instead.
        """
        items = super().locate(prompt, visual, ids, model)
        _, merge, _ = self.geometry(model)
        for it in items:
            _, rows, cols = it.merged_grid(merge)
            row = prompt.input_ids[it.sample]
            runs = it.cols.reshape(rows, cols)  # (rows, cols)
            after = runs[:, -1] + 1  # (rows,) the column after each row's last placeholder
            expected = np.full(rows, ids.get("img_break", -1))
            expected[-1] = ids.get("img_end", -1)
            contiguous = bool((np.diff(runs, axis=1) == 1).all()) if cols > 1 else True
            found = row[np.minimum(after, row.shape[0] - 1)]
            if not contiguous or bool((after >= row.shape[0]).any()) or not np.array_equal(found, expected):
                raise ValueError(
                    f"image {it.index}: its {rows * cols} [IMG] placeholders are not laid out as {rows} rows of "
                    f"{cols}, each followed by [IMG_BREAK] (id {ids.get('img_break')}) and [IMG_END] (id "
                    f"{ids.get('img_end')}) after the last, as Mistral3's processor lays them out (found ids "
                    f"{found.tolist()} after the rows)"
                )
        return items

    def check_processor(self, model: Any, processor: Any) -> None:
        """Refuse a ``PixtralProcessor`` whose ``patch_size`` or ``spatial_merge_size`` is not the model's (its
        placeholders would not be the model's cells), naming the setting and both values."""
        patch, merge, _ = self.geometry(model)
        for setting, ours in (("patch_size", patch), ("spatial_merge_size", merge)):
            theirs = getattr(processor, setting, None)
            if isinstance(theirs, int) and theirs != ours:
                raise ValueError(
                    f"the processor's {setting} is {theirs} but the model's is {ours}: its [IMG] placeholders would "
                    "not be the model's cells; use the checkpoint's own processor"
                )

    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid: torch.Tensor) -> EncodedVisual:
        """The Pixtral tower and projector once on every image (``get_image_features`` with ``image_sizes``), split
        per image: (rows * cols, D) each, in raster order."""
        sizes = grid[:, 1:]  # (n, 2): the grid slot holds each image's pixel size (LinearAdapter.split_inputs)
        layer = model.config.vision_feature_layer
        raw = model.model.get_image_features(pixel_values, sizes, vision_feature_layer=layer, return_dict=True)
        return EncodedVisual(raw=raw, features=list(raw.pooler_output))


ADAPTER = Mistral3Adapter()
