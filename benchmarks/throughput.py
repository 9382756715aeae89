"""Throughput benchmark: images/s and time to first token at batch 1, 8 and 32, pruned against the honest baselines.

    nice python benchmarks/throughput.py     # CPU default: tiny Qwen2.5-VL widths, the example invoice, batch 1/8/32
    python benchmarks/throughput.py --models tiny-qwen2.5-vl --batches 1 2 --repeat 1 --out /tmp/t.md  # seconds
    python benchmarks/throughput.py --device cuda --dtype bfloat16 --models qwen2.5-vl-7b qwen3-vl-8b \\
        --fraction 1 --batches 1 8 32 --repeat 5 --out results/throughput_gpu.md                      # a GPU

Models: random weights on the REAL configs of Qwen2.5-VL-7B and Qwen3-VL-8B (``benchmarks/prefill.py``'s
:data:`CONFIGS`), or the tiny ones (``tiny-qwen2.5-vl``, ``tiny-qwen3-vl``: 32 wide, the real vision geometry);
``--fraction F`` keeps the same share of vision blocks and LM layers (``benchmarks/foveation.py``'s
:func:`proportional_spec`: a cut Qwen2.5-VL tower keeps a full-attention block as its last block). The compute is the
real model's, the answers are meaningless. Input: ``examples/invoice.jpg`` resized by the family's image processor to
at most ``--tokens`` visual tokens (default 1,300: 1,248 tokens on Qwen2.5-VL), one question; a batch of ``B`` is
``B`` copies of that sample (the OCR of the text mode reads one page per distinct page: see below).

Rows, each at every ``--batches`` size and each ``--budgets`` fraction ``b`` (default 22.2% and 11.1%):

* ``unpruned``: the unwrapped model on the full page;
* ``downscaled``: the unwrapped model on the page resized to ``round(b * N)`` visual tokens: no decision at all,
  the speed limit a pruning method with that token count can approach;
* ``compress``: ``compress(model, budget=b)``, post-encoder drop (the tower encodes the whole page);
* ``foveate``: ``compress(model, budget=b, foveate=True)`` (the tower encodes the kept patches only);

``compress`` and ``foveate`` in two modes (``--modes``): ``texture`` (pixels + query cues, scorer ``auto``) and
``text`` (``text_prior=True``: OCR of the model's own pixels, the text-aware prior). In the text rows the page has
been read before (OCR cached: the case of a second question on a page); the ``first question`` rows (batch 1) clear
the OCR cache before each run, so they include reading the page.

Columns: TTFT ms = one forward call with ``logits_to_keep=1`` (vision tower + decision + LM prefill + last-token
logits: the work of ``generate``'s first step), median of ``--repeat`` runs after a warm-up, in rounds over all rows
(load from other processes spreads over every row); images/s = B / TTFT; speed-up = unpruned TTFT / row TTFT; "% of
downscaled" = row speed-up / the speed-up of the downscaled page at the same budget (the issue's goal: foveate >= 80%);
decision ops / syncs = aten ops and host syncs (:class:`arr_coc.profiling.OpCounter`) of the forward outside the vision
tower and the language model, minus the same count for the unpruned forward (the work the decision adds: scoring,
selection, positions, repacking; the OCR of a first question runs on the host and adds host syncs only where its
inputs come off the device), counted at the ``--ops-batches`` sizes.

Foveated tower (Qwen2.5-VL): ops, host syncs and attention calls of the tower on the kept patches of the ``foveate``
rows, the model's own tower (one SDPA call per window: ``torch.split`` and a Python loop in the library's vision
attention) against the project's (``arr_coc.integrations.qwen2_5_vl.window_batched_tower``: one call per block), per
window block and per full-attention block, and the tower's wall time both ways. On a GPU with flash-attn, the model
runs with ``attn_implementation="flash_attention_2"`` and the library's own varlen path (one
``flash_attn_varlen_func`` call per block) is what ``foveate`` runs; to compare it with the batched SDPA tower on the
same GPU: ``--attn flash_attention_2`` (a separate run; the rows are then flash-attn's).

Writes the markdown table to ``--out`` (default ``results/throughput.md``) with the command line, and the numbers as
JSON next to it. Timings on a shared machine are under contention: the load average is printed with the table.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from arr_coc.testing import batched, proportional_spec

try:  # run as a script (benchmarks/ on sys.path) or imported from the repository root
    from prefill import _QWEN_TOKEN_IDS, ALL_CONFIGS, QUESTION, build_model, make_inputs
except ImportError:  # pragma: no cover - depends on how the file is loaded
    from benchmarks.prefill import _QWEN_TOKEN_IDS, ALL_CONFIGS, QUESTION, build_model, make_inputs

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "examples" / "invoice.jpg"
DEFAULT_BUDGETS = ("22.2%", "11.1%")
DEFAULT_BATCHES = (1, 8, 32)
MODES = ("texture", "text")
GOAL_PCT_OF_DOWNSCALED = 80.0  # the goal: foveate reaches >= 80% of the downscaled page's speed-up


# ---------------------------------------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------------------------------------
def page_inputs(spec: dict[str, Any], tokens: int, question: str) -> tuple[dict[str, torch.Tensor], Any]:
    """Processor inputs of the example invoice at most ``tokens`` visual tokens, and the tokenizer (or None)."""
    from PIL import Image

    page = Image.open(PAGE).convert("RGB")
    return make_inputs(spec, page, question, tokens)


def n_visual(inputs: dict[str, torch.Tensor]) -> int:
    """Visual tokens of the FIRST sample."""
    return int((inputs["input_ids"][0] == _QWEN_TOKEN_IDS["image_token_id"]).sum())


# ---------------------------------------------------------------------------------------------------------------------
# Counting
# ---------------------------------------------------------------------------------------------------------------------
class OutsideCounter:
    """Aten ops and host syncs of a forward call OUTSIDE the vision tower and the language model.

    One :class:`~arr_coc.profiling.OpCounter` around the whole call, and one per run of the tower
    (:func:`arr_coc.loading.tower_hooks`: the model's own tower or the foveated one) and of the language model
    (forward hooks), entered and left by the hooks; counters nest, so outside = total - inside.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.inner: list[Any] = []
        self._open: list[Any] = []
        self._handles: list[Any] = []

    def _start(self) -> None:
        from arr_coc.profiling import OpCounter

        counter = OpCounter()
        counter.__enter__()
        self._open.append(counter)

    def _end(self) -> None:
        counter = self._open.pop()
        counter.__exit__(None, None, None)
        self.inner.append(counter)

    def __enter__(self) -> OutsideCounter:
        from arr_coc.loading import tower_hooks
        from arr_coc.profiling import OpCounter

        self.total = OpCounter().__enter__()
        self._handles = tower_hooks(self.model.model.visual, self._start, self._end)
        lm = self.model.model.language_model
        self._handles.append(lm.register_forward_pre_hook(lambda *_: self._start()))
        self._handles.append(lm.register_forward_hook(lambda *_: self._end()))
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self.total.__exit__(None, None, None)

    @property
    def ops(self) -> int:
        """Ops outside the tower and the language model."""
        return self.total.n_ops - sum(c.n_ops for c in self.inner)

    @property
    def syncs(self) -> int:
        """Host syncs outside the tower and the language model."""
        return self.total.n_syncs - sum(c.n_syncs for c in self.inner)


def outside_counts(model: Any, runner: Any, inputs: dict[str, torch.Tensor]) -> tuple[int, int]:
    """(ops, syncs) of ``runner(**inputs, logits_to_keep=1)`` outside the tower and the language model."""
    with torch.inference_mode(), OutsideCounter(model) as counter:
        runner(**inputs, logits_to_keep=1)
    return counter.ops, counter.syncs


def _sdpa_calls(counter: Any) -> int:
    return sum(n for name, n in counter.ops.items() if "scaled_dot_product" in name or "flash_attn" in name)


def tower_counts(model: Any, pixel_values: torch.Tensor, grid_thw: torch.Tensor, keeps: list[torch.Tensor]) -> dict:
    """Ops / syncs / attention calls of the foveated Qwen2.5-VL tower, the model's own against the batched one.

    Args:
        pixel_values (torch.Tensor of shape (sum t*h*w, patch_dim)): all images' patches.
        grid_thw (torch.LongTensor of shape (num_images, 3)): their FULL grids.
        keeps: per image, the kept merged-token indices (``CompressedModel.last_allocation``).

    Returns:
        Whole-tower counts both ways (``own`` / ``batched``), per-block counts for a window block and a
        full-attention block both ways, the number of kept windows and the tower wall times (ms).
    """
    from arr_coc.integrations.compress import find_adapter
    from arr_coc.integrations.foveation import PaddedSegments, concat_items
    from arr_coc.integrations.qwen2_5_vl import block_forward
    from arr_coc.profiling import OpCounter

    adapter = find_adapter(model)
    visual = model.model.visual
    grids = [tuple(int(v) for v in g) for g in grid_thw.tolist()]
    items = [adapter.kept_item(model, g, k) for g, k in zip(grids, keeps, strict=True)]
    starts, start = [], 0
    for t, h, w in grids:
        starts.append(start)
        start += t * h * w
    rows, kwargs = concat_items(items, starts)
    hidden = pixel_values[rows].type(visual.dtype)  # (P, patch_dim)
    out: dict[str, Any] = {"windows": int(kwargs["cu_window_seqlens"].numel() - 1), "images": len(grids)}

    def own() -> Any:
        return visual(hidden, grid_thw=grid_thw, return_dict=True, **dict(kwargs))

    def ours() -> Any:
        return adapter.run_tower(model, hidden, grid_thw, dict(kwargs))

    with torch.inference_mode():
        for name, fn in (("own", own), ("batched", ours)):
            with OpCounter() as c:
                fn()
            out[name] = {"ops": c.n_ops, "views": c.n_views, "syncs": c.n_syncs, "attention_calls": _sdpa_calls(c)}
        # per block, on the same block inputs
        x = visual.patch_embed(hidden)
        n_rows = x.shape[0]
        x = visual.permute_input_for_window_attn(x, kwargs["window_index"], seq_len=n_rows)
        pe = tuple(
            visual.permute_input_for_window_attn(f, kwargs["window_index"], seq_len=n_rows)
            for f in visual.rotary_pos_emb(x, kwargs["position_ids"])
        )
        full_blocks = set(visual.fullatt_block_indexes)
        for kind, cu in (("window block", kwargs["cu_window_seqlens"]), ("full block", kwargs["cu_seqlens"])):
            layer = next((i for i in range(len(visual.blocks)) if (i in full_blocks) == (kind == "full block")), None)
            if layer is None:
                continue
            block = visual.blocks[layer]
            with OpCounter() as c_own:
                block(x, cu_seqlens=cu, position_embeddings=pe)
            layout = PaddedSegments.from_cu_seqlens(cu)  # built once per tower call, not per block
            with OpCounter() as c_ours:
                block_forward(block, x, pe, layout.attend)
            out[kind] = {
                name: {"ops": c.n_ops, "views": c.n_views, "syncs": c.n_syncs, "attention_calls": _sdpa_calls(c)}
                for name, c in (("own", c_own), ("batched", c_ours))
            }
    return out


def tower_times(model: Any, pixel_values: torch.Tensor, grid_thw: torch.Tensor, keeps: list[torch.Tensor], repeat: int,
                device: str) -> dict[str, float]:  # fmt: skip
    """Median wall ms of the foveated tower, the model's own (per-window calls) against the batched one."""
    from arr_coc.integrations.compress import find_adapter
    from arr_coc.integrations.foveation import concat_items

    adapter = find_adapter(model)
    visual = model.model.visual
    grids = [tuple(int(v) for v in g) for g in grid_thw.tolist()]
    items = [adapter.kept_item(model, g, k) for g, k in zip(grids, keeps, strict=True)]
    starts = [0]
    for t, h, w in grids[:-1]:
        starts.append(starts[-1] + t * h * w)
    rows, kwargs = concat_items(items, starts)
    hidden = pixel_values[rows].type(visual.dtype)
    fns = {
        "own": lambda: visual(hidden, grid_thw=grid_thw, return_dict=True, **dict(kwargs)),
        "batched": lambda: adapter.run_tower(model, hidden, grid_thw, dict(kwargs)),
    }
    return alternating_ms(fns, repeat, device)


def full_tower_counts(
    visual: Any, pixels: torch.Tensor, grid: torch.Tensor, repeat: int, device: str, grouped: Any = None
) -> dict[str, Any]:
    """The whole page's tower as ``compress`` runs it on SDPA (``grouped(visual, pixels, grid)``, default
    ``qwen2_5_vl.full_tower``: each window length in one attention call, the model's output bit for bit) against the
    model's own (``visual(...)``: one call per window, or per image for Qwen2-VL / Qwen3-VL): ops, syncs, attention
    calls, median wall ms (None when ``repeat`` is 0), and whether the features are equal bit for bit."""
    from arr_coc.integrations.qwen2_5_vl import full_tower
    from arr_coc.profiling import OpCounter

    grouped = grouped or full_tower
    fns = {
        "own": lambda: visual(pixels.type(visual.dtype), grid_thw=grid, return_dict=True).pooler_output,
        "grouped": lambda: grouped(visual, pixels, grid).pooler_output,
    }
    out: dict[str, Any] = {}
    with torch.inference_mode():
        feats = {name: fn() for name, fn in fns.items()}  # warm-up too
        out["equal"] = bool(torch.equal(feats["own"], feats["grouped"]))
        for name, fn in fns.items():
            with OpCounter() as c:
                fn()
            out[name] = {"ops": c.n_ops, "syncs": c.n_syncs, "attention_calls": _sdpa_calls(c)}
    out["ms"] = alternating_ms(fns, repeat, device, warm=False) if repeat else None
    return out


def alternating_ms(fns: dict[str, Callable[[], Any]], repeat: int, device: str, warm: bool = True) -> dict[str, float]:
    """Median wall ms of each callable, run in turn ``repeat`` times (drift hits all of them), after one warm-up call
    each unless ``warm`` is False; the device synchronised around each call."""
    runs: dict[str, list[float]] = {name: [] for name in fns}
    with torch.inference_mode():
        for fn in fns.values() if warm else ():
            fn()
        for _ in range(repeat):
            for name, fn in fns.items():
                _sync(device)
                start = time.perf_counter()
                fn()
                _sync(device)
                runs[name].append(1000 * (time.perf_counter() - start))
    return {name: statistics.median(v) for name, v in runs.items()}


# ---------------------------------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------------------------------
def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def text_realizer(args: argparse.Namespace, graphs: int | None = None) -> Any:
    """The realizer of the text rows: None (the shared default one: OCR on onnxruntime, MiniLM on) unless
    ``--ocr-backend torch`` (the PP-OCR networks on ``--device``, in ``--ocr-dtype``), ``--no-semantic`` (MiniLM off:
    a machine without its package) or ``graphs`` (texture CUDA graphs, 0: off; None: the default) asks for another
    config."""
    if args.ocr_backend == "onnxruntime" and not args.no_semantic and graphs is None:
        return None
    from arr_coc.config import RelevanceConfig
    from arr_coc.engine import EngineConfig
    from arr_coc.reading import ReadingConfig
    from arr_coc.realizing import Realizer

    reading = ReadingConfig()
    if args.ocr_backend == "torch":
        reading = reading.replace(ocr={"backend": "torch", "device": args.device, "dtype": args.ocr_dtype})
    if args.no_semantic:
        reading = reading.with_switches(semantic=False)
    engine = EngineConfig() if graphs is None else EngineConfig(texture_graphs=graphs)
    return Realizer(RelevanceConfig(reading=reading.to_dict()), engine=engine).eval()


def texture_realizer(graphs: int | None = None) -> Any:
    """The realizer of the texture rows: None (the shared default one) unless ``graphs`` sets how many frame shapes
    keep their texture as a CUDA graph (``EngineConfig.texture_graphs``; 0: off)."""
    if graphs is None:
        return None
    from arr_coc.engine import EngineConfig
    from arr_coc.realizing import Realizer

    return Realizer(engine=EngineConfig(texture_graphs=graphs)).eval()


def clear_ocr_cache(realizer: Any = None) -> None:
    """Empty the OCR cache of ``realizer`` (default: the shared default realizer): the next text-mode question
    reads its page again."""
    from arr_coc.realizing import default_realizer

    cache = getattr((realizer or default_realizer()).reading.reader, "cache", None)
    if cache is not None:
        cache.clear()


@dataclass
class Row:
    """One timed configuration at one batch size.

    Attributes:
        kind: ``unpruned`` / ``downscaled`` / ``compress`` / ``foveate``.
        mode: ``-`` (no decision), ``texture``, ``text`` or ``text, first question``.
        budget: the budget as written (``-`` for unpruned).
        runner: the model or a ``CompressedModel``.
        inputs: the batch's inputs, on the device.
        before: called before each timed run (clears the OCR cache for first-question rows).
        runs: TTFT ms of each timed run.
        kept, seq_len: visual tokens the LM gets (first sample) and the LM's sequence length.
        ops, syncs: the decision's ops / host syncs (None when not counted).
    """

    kind: str
    mode: str
    budget: str
    runner: Any
    inputs: dict[str, torch.Tensor]
    before: Callable[[], None] | None = None
    runs: list[float] = field(default_factory=list)
    kept: int = 0
    seq_len: int = 0
    ops: int | None = None
    syncs: int | None = None

    @property
    def ttft(self) -> float:
        return statistics.median(self.runs)


def time_once(row: Row, device: str) -> float:
    """One forward call with ``logits_to_keep=1``, wall ms."""
    if row.before is not None:
        row.before()
    with torch.inference_mode():
        _sync(device)
        start = time.perf_counter()
        row.runner(**row.inputs, logits_to_keep=1)
        _sync(device)
        return 1000 * (time.perf_counter() - start)


def bench_batch(
    name: str, model: Any, spec: dict[str, Any], batch: int, args: argparse.Namespace, log: Callable[[str], None]
) -> dict[str, Any]:
    """All rows of one model at one batch size."""
    from arr_coc.attending import parse_budget
    from arr_coc.integrations import compress
    from arr_coc.realizing import ocr_available

    dtype = getattr(torch, args.dtype)

    def to_device(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out = {k: v.to(args.device) for k, v in inputs.items()}
        out["pixel_values"] = out["pixel_values"].to(dtype)
        return out

    one, tok = page_inputs(spec, args.tokens, args.question)
    n_vis, n_text = n_visual(one), int(one["input_ids"].shape[1]) - n_visual(one)
    full = to_device(batched(one, batch))
    if args.tower_only:  # the foveated tower's counts alone: no timing of the rows
        tower = []
        for b in args.budgets:
            runner = compress(model, budget=parse_budget(b), tokenizer=tok, foveate=True)
            with torch.inference_mode():
                runner(**full, logits_to_keep=1)
            keeps = [a.keep for per in runner.last_allocation for a in per]
            counts = tower_counts(model, full["pixel_values"], full["image_grid_thw"], keeps)
            tower.append({"budget": b, "kept": int(keeps[0].numel()), **counts, "ms": None})
        full_tower = full_tower_counts(model.model.visual, full["pixel_values"], full["image_grid_thw"], 0, args.device)
        log(f"{name} batch {batch}: tower counts done")
        return {"model": name, "batch": batch, "n_vis": n_vis, "n_text": n_text, "rows": [], "tower": tower,
                "full_tower": full_tower}  # fmt: skip
    rows = [Row("unpruned", "-", "-", model, full)]
    modes = [m for m in args.modes if m != "text" or ocr_available()]
    # each mode as configured (the library's default texture graphs, or --texture-graphs N), and with
    # --texture-graphs also with the texture run eagerly (rows "<mode>, eager texture")
    variants = [(m, "") for m in modes] + [(m, ", eager texture") for m in modes if args.texture_graphs is not None]
    realizers = {}
    for m, suffix in variants:
        n = 0 if suffix else args.texture_graphs
        realizers[m, suffix] = text_realizer(args, n) if m == "text" else texture_realizer(n)
    for b in args.budgets:
        budget = parse_budget(b)
        k = budget if isinstance(budget, int) else max(1, round(float(budget) * n_vis))
        small, _ = page_inputs(spec, k, args.question)
        rows.append(Row("downscaled", "-", b, model, to_device(batched(small, batch))))
        for mode, suffix in variants:
            reader = realizers[mode, suffix]
            for kind, foveate in (("compress", False), ("foveate", True)):
                text = mode == "text"
                runner = compress(model, budget=budget, tokenizer=tok, foveate=foveate, text_prior=text,
                                  realizer=reader)  # fmt: skip
                rows.append(Row(kind, mode + suffix, b, runner, full))
                if text and batch == 1 and not suffix:
                    clear = functools.partial(clear_ocr_cache, reader)
                    rows.append(Row(kind, "text, first question", b, runner, full, before=clear))
    log(f"{name} batch {batch}: {n_vis} visual + {n_text} text tokens a sample, {len(rows)} rows")
    for row in rows:  # warm-up: kernel selection, scorer / OCR model loading, the OCR cache for the text rows
        time_once(row, args.device)
    for round_ in range(args.repeat):
        for row in rows:
            row.runs.append(time_once(row, args.device))
        log(f"  round {round_ + 1}/{args.repeat} done")
    base_ops = None
    for row in rows:
        last = getattr(row.runner, "last_inputs", None)
        alloc = getattr(row.runner, "last_allocation", None)
        row.kept = int(alloc[0][0].budget) if alloc else n_visual(row.inputs)
        row.seq_len = int(last.input_ids.shape[1]) if last is not None else int(row.inputs["input_ids"].shape[1])
        if batch in args.ops_batches and row.kind in ("unpruned", "compress", "foveate") and row.before is None:
            ops, syncs = outside_counts(model, row.runner, row.inputs)
            if row.kind == "unpruned":
                base_ops = (ops, syncs)
            else:
                assert base_ops is not None
                row.ops, row.syncs = ops - base_ops[0], syncs - base_ops[1]
    tower = []
    full_tower = None
    if spec["family"] == "qwen2_5_vl" and batch in args.ops_batches:
        full_tower = full_tower_counts(
            model.model.visual, full["pixel_values"], full["image_grid_thw"], args.repeat, args.device
        )
        for row in rows:
            if row.kind == "foveate" and row.mode == "texture":
                keeps = [a.keep for per in row.runner.last_allocation for a in per]
                counts = tower_counts(model, full["pixel_values"], full["image_grid_thw"], keeps)
                counts["ms"] = tower_times(
                    model, full["pixel_values"], full["image_grid_thw"], keeps, args.repeat, args.device
                )
                tower.append({"budget": row.budget, "kept": row.kept, **counts})
    return {
        "model": name,
        "batch": batch,
        "n_vis": n_vis,
        "n_text": n_text,
        "rows": [
            {
                "kind": r.kind,
                "mode": r.mode,
                "budget": r.budget,
                "kept": r.kept,
                "seq_len": r.seq_len,
                "ttft": r.ttft,
                "runs": r.runs,
                "ops": r.ops,
                "syncs": r.syncs,
            }
            for r in rows
        ],
        "tower": tower,
        "full_tower": full_tower,
    }


# ---------------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------------
def analyse(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per row: images/s, speed-up over unpruned and share of the downscaled page's speed-up at that budget."""
    if not res["rows"]:
        return []
    base = res["rows"][0]["ttft"]
    down = {r["budget"]: base / r["ttft"] for r in res["rows"] if r["kind"] == "downscaled"}
    out = []
    for r in res["rows"]:
        speed = base / r["ttft"]
        ref = down.get(r["budget"])
        pct = 100 * speed / ref if ref and r["kind"] in ("compress", "foveate") else None
        out.append({**r, "images_s": 1000 * res["batch"] / r["ttft"], "speedup": speed, "pct_of_downscaled": pct})
    return out


def _fmt(value: Any, spec: str = ",") -> str:
    return "—" if value is None else format(value, spec)


def render(results: list[dict[str, Any]], env: dict[str, str], depth: dict[str, str], args: argparse.Namespace) -> str:
    """The markdown report."""
    lines = [
        "# Throughput: images/s and time to first token, batch " + ", ".join(str(b) for b in args.batches),
        "",
        f"Command: `{env['command']}`",
        "",
        f"{env['device']}, {args.dtype}, torch {env['torch']}, transformers {env['transformers']}, attention "
        f"`{args.attn}`; "
        + (
            "counts only (`--tower-only`: deterministic, nothing timed); "
            if args.tower_only
            else f"median of {args.repeat} run(s) after a warm-up; "
        )
        + f"load average at the start {env['load']} "
        f"({'timings under contention: compare rows, not machines' if env['contended'] else 'quiet machine'}). "
        "Random weights on the named config; page `examples/invoice.jpg`; a batch is B copies of the sample. "
        "TTFT = one forward with `logits_to_keep=1`. Text rows: OCR on "
        f"{'the device (torch backend)' if args.ocr_backend == 'torch' else 'the CPU (onnxruntime)'}"
        f"{', semantic matching (MiniLM) OFF' if args.no_semantic else ''}; OCR cached (the page was read before) "
        "unless marked `first question` (cache cleared before each run). Decision ops / syncs: aten ops and host syncs "
        "outside the vision tower and the LM, minus the unpruned forward's (`arr_coc.profiling.OpCounter`).",
        "",
    ]
    goals = []
    for res in results:
        rows = analyse(res)
        lines += [
            f"## {res['model']}, batch {res['batch']}: {res['n_vis']} visual + {res['n_text']} text tokens a sample; "
            f"{depth[res['model']]}",
            "",
        ]
        if rows:
            lines += [
                "| row | mode | budget | visual tokens | LM seq | TTFT ms | images/s | speed-up | % of downscaled | "
                "decision ops | decision syncs |",
                "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
            ]
        for r in rows:
            pct = "—" if r["pct_of_downscaled"] is None else f"{r['pct_of_downscaled']:.0f}%"
            lines.append(
                f"| {r['kind']} | {r['mode']} | {r['budget']} | {r['kept']} | {r['seq_len']} | {r['ttft']:,.1f} | "
                f"{r['images_s']:,.2f} | {r['speedup']:.2f}x | {pct} | {_fmt(r['ops'])} | {_fmt(r['syncs'])} |"
            )
            if r["kind"] == "foveate" and r["pct_of_downscaled"] is not None and "first" not in r["mode"]:
                ok = r["pct_of_downscaled"] >= GOAL_PCT_OF_DOWNSCALED
                goals.append(
                    f"- {res['model']} batch {res['batch']}, {r['mode']}, {r['budget']}: foveate {r['speedup']:.2f}x "
                    f"= {r['pct_of_downscaled']:.0f}% of the downscaled page's speed-up ({'met' if ok else 'NOT met'}:"
                    f" goal ≥ {GOAL_PCT_OF_DOWNSCALED:.0f}%)"
                )
        lines.append("")
        ft = res.get("full_tower")
        if ft:
            lines += [
                f"Full tower ({res['model']}, batch {res['batch']}): what `compress` runs without foveation "
                "(each window length in one attention call) against the model's own tower (one call per window); "
                f"features equal bit for bit: {'yes' if ft['equal'] else 'NO'}.",
                "",
                "| tower | ops | syncs | attention calls | ms |",
                "|---|---:|---:|---:|---:|",
                *(
                    f"| {label} | {ft[k]['ops']} | {ft[k]['syncs']} | {ft[k]['attention_calls']} | "
                    + (f"{ft['ms'][k]:,.1f} |" if ft["ms"] else " |")
                    for k, label in (("own", "model's own"), ("grouped", "grouped (`full_tower`)"))
                ),
                "",
            ]
        if res["tower"]:
            lines += [
                f"Foveated tower ({res['model']}, batch {res['batch']}, texture mode): the model's own tower (one SDPA "
                "call per kept window) against the batched one (one call per block), on the same kept patches.",
                "",
                "| budget | kept tokens | kept windows | images | part | ops own → batched | syncs own → batched | "
                "attention calls own → batched | tower ms own → batched |",
                "|---|---:|---:|---:|---|---:|---:|---:|---:|",
            ]
            for t in res["tower"]:
                for part in ("tower", "window block", "full block"):
                    c = t if part == "tower" else t.get(part)
                    if c is None:
                        continue
                    ms = f"{t['ms']['own']:,.1f} → {t['ms']['batched']:,.1f}" if part == "tower" and t["ms"] else ""

                    def ops(x: dict[str, Any]) -> str:
                        return f"{x['ops']}" + (f" (+{x['views']} views)" if "views" in x else "")

                    lines.append(
                        f"| {t['budget']} | {t['kept']} | {t['windows']} | {t['images']} | {part} | "
                        f"{ops(c['own'])} → {ops(c['batched'])} | {c['own']['syncs']} → {c['batched']['syncs']} | "
                        f"{c['own']['attention_calls']} → {c['batched']['attention_calls']} | {ms} |"
                    )
            lines.append("")
    lines += ["## Goal (reported, not asserted)", "", *goals, ""]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", nargs="+", choices=sorted(ALL_CONFIGS), default=None,
                   help="default: qwen2.5-vl-7b qwen3-vl-8b on a GPU, tiny-qwen2.5-vl on the CPU")  # fmt: skip
    p.add_argument("--tokens", type=int, default=1300, help="max visual tokens of the page")
    p.add_argument("--budgets", nargs="+", default=list(DEFAULT_BUDGETS), help="fractions like 22.2%% or counts")
    p.add_argument("--batches", nargs="+", type=int, default=list(DEFAULT_BATCHES))
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    p.add_argument("--ops-batches", nargs="*", type=int, default=[1, 8], help="batch sizes at which ops are counted")
    p.add_argument("--fraction", type=float, default=None, help="depth kept (default 1 on a GPU, 1 on the CPU)")
    p.add_argument("--device", default="cuda" if cuda else "cpu")
    p.add_argument("--dtype", default=None, help="float32 / bfloat16 (default bfloat16 on GPU, float32 on CPU)")
    p.add_argument("--attn", default="sdpa", help="attention implementation: sdpa (default) or flash_attention_2")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per row, median (default 5 GPU, 3 CPU)")
    p.add_argument("--question", default=QUESTION)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default torch's)")
    p.add_argument("--ocr-backend", default="onnxruntime", choices=("onnxruntime", "torch"),
                   help="text rows' OCR networks: onnxruntime (CPU, the default) or torch on --device")  # fmt: skip
    p.add_argument("--ocr-dtype", default="float32", choices=("float32", "float16", "bfloat16"),
                   help="torch OCR backend's dtype (float32: the library's default; bfloat16 misreads)")  # fmt: skip
    p.add_argument(
        "--no-semantic",
        action="store_true",
        help="text rows without MiniLM (where its package is missing, e.g. a GPU machine without it)",
    )
    p.add_argument("--tower-only", action="store_true", help="only the foveated tower's counts (Qwen2.5-VL), no timing")
    graphs_help = ("texture CUDA graphs for this many frame shapes (EngineConfig.texture_graphs; default: the "
                   "library's), and rows with the texture run eagerly beside them")  # fmt: skip
    p.add_argument("--texture-graphs", type=int, default=None, help=graphs_help)
    p.add_argument("--out", type=Path, default=Path("results/throughput.md"), help="markdown output (JSON alongside)")
    p.add_argument(
        "--tiled",
        nargs="+",
        default=None,
        metavar="MODEL",
        help="tiled families instead: tiles chosen before the tower (benchmarks/tile_foveation.py's models)",
    )
    args = p.parse_args(argv)
    on_gpu = str(args.device).startswith("cuda")
    args.models = args.models or (["qwen2.5-vl-7b", "qwen3-vl-8b"] if on_gpu else ["tiny-qwen2.5-vl"])
    args.fraction = args.fraction if args.fraction is not None else 1.0
    args.dtype = args.dtype or ("bfloat16" if on_gpu else "float32")
    args.repeat = args.repeat or (5 if on_gpu else 3)
    from arr_coc.attending import parse_budget

    for b in args.budgets:
        parse_budget(b)
    if args.repeat < 1 or args.tokens < 4 or any(b < 1 for b in args.batches):
        p.error("--repeat and --batches must be >= 1, --tokens >= 4")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the markdown report and write it (and JSON) to ``--out``. Returns 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--tiled" in argv:  # InternVL / LLaVA-OneVision: the tower on the chosen tiles (benchmarks/tile_foveation.py)
        try:
            from tile_foveation import main as tiled_main
        except ImportError:  # pragma: no cover - depends on how the file is loaded
            from benchmarks.tile_foveation import main as tiled_main
        rest = [a if a != "--tiled" else "--models" for a in argv]
        return tiled_main(rest, command="python benchmarks/throughput.py " + shlex.join(argv))
    import transformers

    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    on_gpu = str(args.device).startswith("cuda")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    cores = os.cpu_count() or 1
    env = {
        "device": torch.cuda.get_device_name(args.device)
        if on_gpu
        else f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, {cores} cores)",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "load": f"{load:.1f}",
        "contended": bool(load > 0.5 * cores),
        "command": "python benchmarks/throughput.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
    }
    results, depth = [], {}
    for name in args.models:
        full = ALL_CONFIGS[name]
        spec = proportional_spec(full, args.fraction)
        v, fv = spec["vision_config"]["depth"], full["vision_config"]["depth"]
        lm, flm = spec["text_config"]["num_hidden_layers"], full["text_config"]["num_hidden_layers"]
        depth[name] = f"vision blocks {v} of {fv}, LM layers {lm} of {flm}"
        if "fullatt_block_indexes" in spec["vision_config"]:
            depth[name] += f" (full-attention blocks {spec['vision_config']['fullatt_block_indexes']})"
        t0 = time.perf_counter()
        model = build_model(name, spec, getattr(torch, args.dtype), args.device)
        if args.attn != "sdpa":
            model.set_attn_implementation(args.attn)
        log(f"{name}: built in {time.perf_counter() - t0:.1f} s; {depth[name]}")
        for batch in args.batches:
            results.append(bench_batch(name, model, spec, batch, args, log))
        del model
        if on_gpu:
            torch.cuda.empty_cache()
    report = render(results, env, depth, args)
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    payload = {
        "env": env,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "depth": depth,
        "results": [{**res, "rows": analyse(res)} for res in results],
    }
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
