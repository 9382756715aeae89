"""The differentiable keep-mask: a Qwen-VL forward pass whose visual tokens are scaled by per-token gates.

``compress`` prunes: dropped visual tokens leave the sequence, kept ones keep their original M-RoPE positions.
Pruning is a hard choice, so no gradient reaches whatever chose. Training the relevance model against the language
model's loss (``arr_coc.training.answer``) needs the same pass with the choice made continuous: here every visual
token stays in the sequence at its own position, and the vision tower's output for it is multiplied by a gate
``g`` in [0, 1] (for Qwen3-VL every DeepStack level too, with the same gate), so ``d loss / d g`` exists.

* ``g == 1`` everywhere is the unmodified model, exactly (``x * 1.0 == x`` in every float format);
* a hard 0/1 gate is a pass in which the dropped tokens are blanked (zero embedding, no DeepStack feature) rather than
  removed: still attended to as content-free tokens, so its loss is close to, not equal to, the pruned model's.

The pass uses only the seams ``compress`` uses: the adapter's ``encode`` (vision tower + merger, run without
gradients, the VLM is frozen), ``rope_index`` (the model's own ``get_rope_index`` on the full sequence) and the
model's ``forward(input_ids=..., mm_encoder_outputs=..., position_ids=...)``; the family-specific part (DeepStack) is
the adapter's ``gated_output``.

Example:
    >>> from arr_coc.testing import tiny_model  # doctest: +SKIP
    >>> out = gated_forward(model, inputs, [torch.ones(n_tokens)])  # == model(**inputs).logits
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from .base import EncodedVisual, FamilyAdapter
from .compress import find_adapter


def encode_images(model: Any, inputs: Any, adapter: FamilyAdapter | None = None) -> EncodedVisual:
    """The vision tower + merger on the batch's images, without gradients (the frozen VLM's constant part).

    Args:
        model: a supported ``...ForConditionalGeneration`` model.
        inputs: the processor's outputs, with ``pixel_values`` and ``image_grid_thw``.

    Returns:
        :class:`~arr_coc.integrations.base.EncodedVisual`: ``features[i]`` of shape (N_i, D) per image (and, for
        Qwen3-VL, the DeepStack levels), detached.
    """
    adapter = adapter or find_adapter(model)
    if inputs.get("pixel_values") is None or inputs.get("image_grid_thw") is None:
        raise ValueError("the gated pass needs images: pixel_values and image_grid_thw, as the processor returns them")
    with torch.no_grad():
        return adapter.encode(model, "image", inputs["pixel_values"], inputs["image_grid_thw"])


def gated_forward(
    model: Any,
    inputs: Any,
    gates: Sequence[torch.Tensor],
    encoded: EncodedVisual | None = None,
    adapter: FamilyAdapter | None = None,
    logits_to_keep: int = 0,
) -> Any:
    """The model's forward pass with every visual token scaled by its gate, each at its original M-RoPE position.

    Args:
        model: a supported ``...ForConditionalGeneration`` model (Qwen2-VL, Qwen2.5-VL, Qwen3-VL).
        inputs: the processor's outputs for images: ``input_ids`` (B, L), ``attention_mask`` (B, L),
            ``pixel_values``, ``image_grid_thw`` (num_images, 3), optionally ``mm_token_type_ids``.
        gates: one tensor (N_i,) per image (rows of ``image_grid_thw``), N_i = t*h*w / merge**2, in raster order;
            may require grad (that is the point).
        encoded: the images' :func:`encode_images` output, when the caller has it already (same inputs).
        adapter: the family adapter (found from the model's class when None).
        logits_to_keep: compute logits of the last this-many positions only (0: all), as the model's forward.

    Returns:
        The model's output (``logits`` of shape (B, L or logits_to_keep, vocab)).

    Raises:
        ValueError: no images in ``inputs``, or a gate whose length is not its image's token count.
    """
    adapter = adapter or find_adapter(model)
    encoded = encoded if encoded is not None else encode_images(model, inputs, adapter)
    if len(gates) != len(encoded.features):
        raise ValueError(f"got {len(gates)} gates for {len(encoded.features)} images")
    for i, (g, f) in enumerate(zip(gates, encoded.features, strict=True)):
        if g.dim() != 1 or g.shape[0] != f.shape[0]:
            raise ValueError(f"gate {i} has shape {tuple(g.shape)}; image {i} has {f.shape[0]} visual tokens")
    input_ids, mask = inputs["input_ids"], inputs.get("attention_mask")
    grid = inputs["image_grid_thw"]
    mm_types = inputs.get("mm_token_type_ids")
    if mm_types is None:
        mm_types = (input_ids == adapter.token_ids(model)["image"]).int()  # (B, L) 1 on image placeholders
    positions, _ = adapter.rope_index(model, input_ids, mm_types, grid, None, mask, {})  # (3, B, L): full sequence
    return model(
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=positions,
        mm_token_type_ids=mm_types,
        mm_encoder_outputs={"image": adapter.gated_output(encoded, gates)},
        logits_to_keep=logits_to_keep,
        use_cache=False,
    )
