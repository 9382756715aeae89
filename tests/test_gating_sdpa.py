"""The attention gate meets what SDPA's fused CUDA kernels demand, checked on a CPU.

``benchmarks/train_answer.py --device cuda`` failed in ``loss.backward()`` with "LSE is not correctly aligned
(strideH)". PyTorch's memory-efficient attention (``aten/src/ATen/native/transformers``):

* ``attention.cpp``: ``should_compute_logsumexp(q, k, v)`` is ``(q or k or v requires grad) and grad mode``; the
  attention mask is not consulted;
* ``attention.cu``: the forward allocates ``logsumexp`` of shape ``(B, H, ceil(Lq / 32) * 32)`` when it computes it,
  else ``(B, H, 0)``;
* ``kernel_backward.h`` (``check_supported``): ``num_heads <= 1 || lse_strideH % 8 == 0`` and
  ``num_batches <= 1 || lse_strideB % 8 == 0``;
* the mask itself is expanded to (B, H, Lq, Lk) and its last dimension padded to a multiple of 16 by SDPA
  (``preprocess_mask`` / ``pad_bias``), so any 4-D mask with a unit last stride is laid out as the kernel needs.

With the VLM frozen, the first decoder layer's q/k/v came from constant embeddings while only its bias (the gates)
required grad: an empty LSE, head stride 1, refused. The test records every SDPA call of a gated forward whose gates
require grad and applies those rules to it.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.overrides import TorchFunctionMode

transformers = pytest.importorskip("transformers")

from test_compress import Sample, batch, build  # noqa: E402

from arr_coc.families import QWEN_VL  # noqa: E402
from arr_coc.integrations.gating import encode_images, gated_forward  # noqa: E402

K_ALIGN_LSE = 32  # Kernel::kAlignLSE: the forward pads the LSE's query dimension to a multiple of this


class SdpaCalls(TorchFunctionMode):
    """Records (q, k, v requires grad; mask) of every ``scaled_dot_product_attention`` call, shapes (B, H, L, D)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[bool, tuple[int, ...], torch.Tensor | None]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention:
            q, k, v = args[:3]
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            qkv_grad = q.requires_grad or k.requires_grad or v.requires_grad
            self.calls.append((qkv_grad and torch.is_grad_enabled(), tuple(q.shape), mask))
        return func(*args, **kwargs)


def kernel_refusal(qkv_grad: bool, q_shape: tuple[int, ...], mask: torch.Tensor | None) -> str | None:
    """What the memory-efficient kernel's backward would refuse for one call, or None."""
    if mask is None or not mask.requires_grad:
        return None  # no gradient through this call's bias
    batch_size, heads, length = q_shape[0], q_shape[1], q_shape[2]
    lse = torch.empty(batch_size, heads, math.ceil(length / K_ALIGN_LSE) * K_ALIGN_LSE if qkv_grad else 0)
    if heads > 1 and lse.stride(1) % 8:
        return f"LSE is not correctly aligned (strideH): LSE {tuple(lse.shape)}, strides {lse.stride()}"
    if batch_size > 1 and lse.stride(0) % 8:
        return f"LSE is not correctly aligned (strideB): LSE {tuple(lse.shape)}, strides {lse.stride()}"
    if mask.dim() != 4 or mask.shape[1] not in (1, heads) or mask.stride(-1) != 1:
        return f"attention bias of shape {tuple(mask.shape)}, strides {mask.stride()}: not (B, 1|H, Lq, Lk)"
    return None


@pytest.mark.parametrize("model_type", [f.classes[0].model_type for f in QWEN_VL])
def test_every_biased_sdpa_call_keeps_the_lse_its_backward_needs(model_type: str) -> None:
    model = build(model_type).requires_grad_(False)  # frozen, as the answer trainer freezes it
    inputs = batch(
        [Sample(model, [[9, 10], ("image", (1, 4, 6)), [11, 12, 13]]), Sample(model, [[9], ("image", (1, 4, 4))])]
    )
    encoded = encode_images(model, inputs)
    gates = [torch.full((f.shape[0],), 0.5, requires_grad=True) for f in encoded.features]
    recorder = SdpaCalls()
    with recorder:
        out = gated_forward(model, inputs, gates, encoded)
    layers = model.config.get_text_config().num_hidden_layers
    biased = [call for call in recorder.calls if call[2] is not None and call[2].requires_grad]
    assert len(biased) == layers  # every decoder layer got the gate's bias (the vision tower has none)
    refusals = [kernel_refusal(*call) for call in biased]
    assert refusals == [None] * layers, refusals
    out.logits.float().square().mean().backward()
    assert all(g.grad is not None and torch.isfinite(g.grad).all() and g.grad.abs().sum() > 0 for g in gates)
    assert all(p.grad is None for p in model.parameters())  # the VLM stays frozen


def test_the_rule_refuses_what_the_kernel_refused() -> None:
    """The check is not vacuous: a bias-only call (frozen q/k/v) is what the H100 refused."""
    mask = torch.zeros(1, 1, 70, 70, requires_grad=True)
    assert "strideH" in kernel_refusal(False, (1, 4, 70, 8), mask)
    assert kernel_refusal(True, (1, 4, 70, 8), mask) is None
    assert kernel_refusal(False, (1, 1, 70, 8), mask) is None  # one head: no head stride to check
