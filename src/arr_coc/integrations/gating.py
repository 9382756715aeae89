"""The differentiable keep-mask: a Qwen-VL forward pass in which each visual token counts as much as its gate says.

``compress`` prunes: dropped visual tokens leave the sequence, kept ones keep their original M-RoPE positions.
Pruning is a hard choice, so no gradient reaches whatever chose. Training the relevance model against the language
model's loss (``arr_coc.training.answer``) needs the same pass with the choice made continuous: here every visual
token stays in the sequence at its own position and gets a gate ``g`` in [0, 1], so ``d loss / d g`` exists.

* ``mask="attention"`` (default): a 4-D additive attention mask (causal, padding) in which every visual token's key
  column carries :func:`key_bias` = log(f + (1 - f) g), f = 2**-24, in every layer: its attention weight is scaled
  by about g. ``g == 1`` is the unmodified model (bias exactly 0); ``g == 0`` leaves it 6e-8 of its weight, i.e. the
  pruned model up to that share, with a gradient. DeepStack (Qwen3-VL) needs no gating here: it only adds to the
  visual token's own hidden state, which no other token reads once its key is masked.
* ``mask="embedding"``: the vision tower's output for the token (and each DeepStack level, the adapter's
  ``gated_output``) is multiplied by g. Exact at 1, but the decoder's RMSNorm is scale-invariant, so other tokens see
  the same layer-0 keys for any g > 0: a poor relaxation of pruning (see ``arr_coc.training.answer``).

The pass uses only the seams ``compress`` uses: the adapter's ``encode`` (vision tower + merger, run without
gradients, the VLM is frozen), ``rope_index`` (the model's own ``get_rope_index`` on the full sequence) and the
model's ``forward(input_ids=..., mm_encoder_outputs=..., position_ids=..., attention_mask=<4-D>)`` (transformers
uses a 4-D mask as given); the family-specific part (DeepStack, embedding mode) is the adapter's ``gated_output``.

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

KEY_FLOOR = 2.0**-24  # a key gated to 0 keeps this share of its attention weight, so its gradient exists


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


def key_bias(gate: torch.Tensor, floor: float = KEY_FLOOR) -> torch.Tensor:
    """The attention-logit bias of a key with gate ``g``: log(floor + (1 - floor) * g).

    g = 1 gives exactly 0 (floor = 2**-24: 1 - floor is exact in float32, so the sum is exactly 1); g = 0 gives
    log(floor) (about -16.6): the key's attention weight is multiplied by ``floor + (1 - floor) * g``, so its share
    of every row is scaled smoothly, down to 6e-8 of what it was at g = 0, where its gradient still exists.
    """
    gate = gate.to(torch.promote_types(gate.dtype, torch.float32))
    return torch.log(floor + (1.0 - floor) * gate)


def gated_attention_mask(
    attention_mask: torch.Tensor | None, column_gate: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """A 4-D additive attention mask: causal, padding columns masked, each key column biased by its gate.

    Args:
        attention_mask (torch.LongTensor of shape (batch_size, length) or None): 0 on padding.
        column_gate (torch.Tensor of shape (batch_size, length)): gate of every key (1 for text tokens).
        dtype: the attention's dtype (the model's).

    Returns:
        torch.Tensor of shape (batch_size, 1, length, length): 0 + bias where a query may attend, the dtype's
        minimum where it may not (future tokens, padding).
    """
    batch, length = column_gate.shape
    device = column_gate.device
    allowed = torch.ones(length, length, dtype=torch.bool, device=device).tril()[None]  # (1, L, L) causal
    if attention_mask is not None:
        allowed = allowed & attention_mask.to(device).bool()[:, None, :]  # (B, L, L) no padding keys
    base = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)
    bias = key_bias(column_gate).to(dtype)  # (B, L)
    return (base + bias[:, None, :]).unsqueeze(1)  # (B, 1, L, L)


def keep_lse_for_backward(encoded: EncodedVisual) -> Any:
    """The encoder output with its visual features as fresh leaves that require grad (values unchanged).

    Why: SDPA's fused CUDA kernels keep the softmax's log-sum-exp (LSE), which their backward reads, only when the
    query, key or value requires grad (``should_compute_logsumexp`` in PyTorch's ``attention.cpp``). With the VLM
    frozen, the first decoder layer's q/k/v come from constant embeddings and only the attention bias (the gates)
    requires grad: the forward then allocates an EMPTY LSE of shape (B, H, 0), whose head stride is 1, and the
    memory-efficient backward refuses it (``kernel_backward.h``: ``lse_strideH % 8 == 0``, "LSE is not correctly
    aligned (strideH)"). Visual features that require grad make every layer's q/k/v require grad, so every layer
    keeps a (B, H, ceil(L / 32) * 32) LSE; the extra work is layer 0's backward to its input, and the features'
    own gradient is never used.

    Args:
        encoded: :func:`encode_images` output (detached features).

    Returns:
        A ``ModelOutput`` of the same type with ``pooler_output`` = per image a (N_i, D) leaf that requires grad; the
        other fields (DeepStack levels) as they were.
    """
    fields = {key: value for key, value in encoded.raw.items()}
    fields["pooler_output"] = tuple(f.detach().requires_grad_(True) for f in encoded.features)  # each (N_i, D)
    return type(encoded.raw)(**fields)


def gated_forward(
    model: Any,
    inputs: Any,
    gates: Sequence[torch.Tensor],
    encoded: EncodedVisual | None = None,
    adapter: FamilyAdapter | None = None,
    logits_to_keep: int = 0,
    mask: str = "attention",
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
        mask: ``"attention"`` (default): each visual token's key column gets the bias :func:`key_bias` in every
            attention layer (a 4-D float mask; needs the ``sdpa`` or ``eager`` attention, not flash-attention);
            ``"embedding"``: its embedding (and DeepStack features) is multiplied by its gate.

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
    input_ids, pad = inputs["input_ids"], inputs.get("attention_mask")
    grid = inputs["image_grid_thw"]
    mm_types = inputs.get("mm_token_type_ids")
    if mm_types is None:
        mm_types = (input_ids == adapter.token_ids(model)["image"]).int()  # (B, L) 1 on image placeholders
    positions, _ = adapter.rope_index(model, input_ids, mm_types, grid, None, pad, {})  # (3, B, L): full sequence
    if mask == "embedding":
        visual, attention = adapter.gated_output(encoded, gates), pad
    elif mask == "attention":
        placeholders = input_ids == adapter.token_ids(model)["image"]  # (B, L)
        dtype = encoded.features[0].dtype if encoded.features[0].is_floating_point() else torch.float32
        wide = torch.promote_types(
            dtype, torch.float32
        )  # the gate's arithmetic: float32, or float64 for a float64 model
        flat = torch.cat([g.reshape(-1) for g in gates]).to(input_ids.device, wide)  # (sum N_i,)
        column = torch.ones(input_ids.shape, dtype=wide, device=input_ids.device)
        column = column.masked_scatter(placeholders, flat)  # (B, L): 1 on text, the gates on image placeholders
        visual, attention = encoded.raw, gated_attention_mask(pad, column, dtype)
        if torch.is_grad_enabled() and column.requires_grad:
            visual = keep_lse_for_backward(encoded)
    else:
        raise ValueError(f"mask must be 'attention' or 'embedding', got {mask!r}")
    return model(
        input_ids=input_ids,
        attention_mask=attention,
        position_ids=positions,
        mm_token_type_ids=mm_types,
        mm_encoder_outputs={"image": visual},
        logits_to_keep=logits_to_keep,
        use_cache=False,
    )
