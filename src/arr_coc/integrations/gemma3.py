"""Gemma 3 (``Gemma3ForConditionalGeneration``: a SigLIP tower, its patches average-pooled to a fixed
``mm_tokens_per_image`` (256 = 16 x 16), a Gemma 3 language model with 1-D positions) on the family contract
(:class:`~.linear.LinearAdapter`).

The processor resizes every image to the tower's square (896 x 896, the aspect not kept) and lays it out as
``<start_of_image>`` + 256 ``<image_soft_token>`` + ``<end_of_image>``; ``token_type_ids`` is 1 on the placeholders.
The model makes the image's tokens attend to each other both ways: ``get_block_sequence_ids_for_mask`` numbers each
maximal run of ``token_type_ids == 1`` as one block, and ``create_masks_for_vision_model`` ORs "same block" into the
causal mask (transformers 5.24, ``models/gemma3/modeling_gemma3.py``).

Pruning keeps that mask on the kept tokens: only placeholders are dropped, so an image's kept tokens are still one run
between its ``<start_of_image>`` and ``<end_of_image>`` and the model's own block numbering, given the gathered
``token_type_ids``, makes them one block: each kept token sees every other kept token of its image, and nothing else
changes (``tests/test_mistral3_gemma3.py`` checks it against a mask built by hand). A cell of the 16 x 16 grid is the
page region of 4 x 4 pooled patches (56 x 56 pixels of the resized square).

Foveation and level of detail are not offered (a SigLIP tower attends over all patches, and the token count is fixed);
pan and scan (``do_pan_and_scan=True``) is refused when ``compress`` is given the processor: its crops are extra
images whose place on the page the token grid does not know.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .base import EncodedVisual, Kind, take_rows
from .contract import Positions, TurnMarkers, VisualInputs, linear_positions
from .linear import LinearAdapter


@dataclass
class Gemma3Adapter(LinearAdapter):
    """The contract for ``Gemma3ForConditionalGeneration`` (see the module docstring)."""

    name: str = "gemma-3"
    marker_tokens: dict[str, str] = field(
        default_factory=lambda: {
            "boi": "<start_of_image>", "eoi": "<end_of_image>", "im_start": "<start_of_turn>",
            "im_end": "<end_of_turn>", "newline": "\n", "newline_2": "\n\n", "newline_3": "\n\n\n",
            "newline_4": "\n\n\n\n",
        }
    )  # fmt: skip

    def turn_markers(self, ids: dict[str, int]) -> TurnMarkers:
        """As a linear family's, but any newline run ends the role header: the processor writes ``"\\n\\n"`` before
        ``<start_of_image>``, which Gemma's tokenizer merges with the header's ``"\\n"`` into one ``"\\n\\n\\n"``
        token; the runs are skipped in the question with the other markers."""
        base = super().turn_markers(ids)
        runs = frozenset(v for k, v in ids.items() if k.startswith("newline") and v >= 0)
        return TurnMarkers(base.start, base.end, runs or None, base.skip)

    def geometry(self, model: Any) -> tuple[int, int, int]:
        """(patch_size, pooling, 1): ``image_size / patch_size`` patches a side pooled to ``sqrt(mm_tokens_per_image)``
        tokens a side, so a token covers ``patch * pooling`` pixels a side."""
        cfg = model.config
        patches = int(cfg.vision_config.image_size) // int(cfg.vision_config.patch_size)
        side = math.isqrt(int(cfg.mm_tokens_per_image))
        return int(cfg.vision_config.patch_size), patches // side, 1

    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        """``pixel_values`` (num_images, 3, S, S); the processor's ``token_type_ids`` are kept aside (checked against
        the placeholders, then rebuilt for the pruned sequence)."""
        types = kwargs.pop("token_type_ids", None)
        inputs = super().split_inputs(kwargs)
        inputs.extras["token_type_ids"] = types
        return inputs

    def token_types(self, input_ids: Any, ids: dict[str, int]) -> Any:
        """1 on the image placeholders, 0 elsewhere: the ``token_type_ids`` the model's bidirectional mask reads (a
        tensor for a tensor, a host array for a host array); gathered at the kept columns with the rest."""
        if isinstance(input_ids, np.ndarray):
            return (input_ids == ids["image"]).astype(np.int64)
        return (input_ids == ids["image"]).long()

    def positions(
        self, model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, types: Any, inputs: VisualInputs
    ) -> Positions:
        """1-D positions of the full sequence, after checking the caller's ``token_type_ids`` (if any) mark exactly
        the image placeholders.

        Raises:
            ValueError: ``token_type_ids`` of another shape, or marking other tokens than the placeholders.
        """
        given = inputs.extras.get("token_type_ids")
        if given is not None:
            if tuple(given.shape) != tuple(input_ids.shape):
                raise ValueError(f"token_type_ids has shape {tuple(given.shape)}, input_ids {tuple(input_ids.shape)}")
            image = int(model.config.image_token_id)
            if not torch.equal(given.to(input_ids.device).bool(), input_ids == image):
                raise ValueError(
                    f"token_type_ids marks other tokens than the image placeholders (id {image}); compress rebuilds "
                    "them for the pruned prompt, so pass them as the processor returns them"
                )
        return linear_positions(attention_mask, input_ids)

    def check_processor(self, model: Any, processor: Any) -> None:
        """Refuse pan and scan (one line naming the setting)."""
        image_processor = getattr(processor, "image_processor", processor)
        if getattr(image_processor, "do_pan_and_scan", False):
            raise ValueError(
                "compress() does not support Gemma 3's pan and scan (do_pan_and_scan=True): its crops are extra images "
                "whose place on the page the token grid does not know; process the images with do_pan_and_scan=False"
            )

    def encode(self, model: Any, kind: Kind, pixel_values: torch.Tensor, grid: torch.Tensor) -> EncodedVisual:
        """The SigLIP tower, pooling and projector once on every image (``get_image_features``): (256, D) each."""
        raw = model.model.get_image_features(pixel_values, return_dict=True)
        return EncodedVisual(raw=raw, features=list(raw.pooler_output))

    def pruned_output(
        self,
        encoded: EncodedVisual,
        keeps: Sequence[torch.Tensor | None],
        levels: Sequence[torch.Tensor | None],
        flat: torch.Tensor | None = None,
    ) -> Any:
        """The kept features of every image in one (sum k_i, D) tensor (Gemma 3 scatters ``pooler_output`` as one)."""
        return type(encoded.raw)(pooler_output=torch.cat(take_rows(encoded.features, keeps, flat)))

    def model_inputs(self, kwargs: dict[str, Any], packed: Any, mm_outputs: Any, generation: bool) -> dict[str, Any]:
        """:meth:`LinearAdapter.model_inputs` and the gathered ``token_type_ids`` (the bidirectional mask's blocks:
        each image's kept tokens, one run)."""
        out = super().model_inputs(kwargs, packed, mm_outputs, generation)
        out["token_type_ids"] = packed.mm_token_type_ids.long()
        return out


ADAPTER = Gemma3Adapter()
