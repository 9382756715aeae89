"""Foveation benchmark: time to first token with the vision tower run on the kept patches only.

    nice python benchmarks/foveation.py      # CPU default: 7B + 8B at 1/16 depth, ~1,300 and ~5,000 visual tokens
    python benchmarks/foveation.py --models tiny-qwen2.5-vl --tokens 48 --out /tmp/f.md     # smoke test (seconds)
    python benchmarks/foveation.py --device cuda --dtype bfloat16 --fraction 1 --repeat 3  # a GPU, full depth

Models: random weights on the REAL configs of Qwen2.5-VL-7B and Qwen3-VL-8B (``benchmarks/prefill.py``'s
:data:`CONFIGS`): the compute is the real model's, the answers are meaningless. Input: ``prefill.py``'s synthetic
invoice page (scaled up for the large size) resized by the family's image processor to at most ``--tokens`` visual
tokens (default ~1,300 and ~5,000), and one question.

Depth cut IN PROPORTION (``--fraction F``; CPU default 1/16, GPU default 1): the first ``max(1, round(depth * F))``
vision blocks and the first ``max(1, round(layers * F))`` language-model layers are kept, so both parts of the time to
first token shrink by about the same factor. Qwen2.5-VL's full-attention blocks (4 of 32, one every 8) are kept in
the same share where possible; a cut tower always keeps at least one, as its LAST block, so that both attention kinds
are measured (at 1/16 depth: 1 window block + 1 full-attention block, i.e. a larger share of full attention than the
real 7B's 1 in 8; the report says so). Qwen3-VL's DeepStack levels are rescaled to the cut depth.

Rows: the unwrapped model; post-encoder pruning ``compress(model, budget=b)``; foveation
``compress(model, budget=b, foveate=True)``, for ``b`` in 33.3%, 22.2%, 11.1% (``--budgets``). Scorer ``auto`` for
both (post-encoder: with the tower's features; foveated: from pixels). Per row, the median of ``--repeat`` runs of:

* TTFT ms: one forward call with ``logits_to_keep=1`` (vision tower + scoring + language-model prefill + last-token
  logits: the work of the first ``generate`` step), wall time;
* vision ms and LLM ms: the vision tower (``model.model.visual``) and the language model, timed with forward hooks;
* vision peak MiB: peak memory while the vision tower runs (CUDA: ``max_memory_allocated`` minus the allocation at
  its start; CPU: peak RSS minus the RSS at its start, sampled every ms);
* speedup: TTFT unpruned / TTFT of the row; ideal: (N_vis + N_text) / (K + N_text), the token ratio the issue sets as
  the yardstick (N_text = non-visual tokens of the prompt); % of ideal = speedup / ideal.

Goals (reported, not asserted): foveated speedup >= 80% of ideal; at 11.1%, foveated speedup >= 2x the post-encoder
speedup. Writes the markdown table to ``--out`` (default ``results/foveation.md``) and the numbers as JSON next to it.
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
from pathlib import Path
from typing import Any

import torch

from arr_coc.testing import proportional_spec  # noqa: F401  (importable from here too: full_tower.py)

try:  # run as a script (benchmarks/ on sys.path) or imported from the repository root
    from prefill import (
        _QWEN_TOKEN_IDS,
        ALL_CONFIGS,
        IMAGE_SIZE,
        QUESTION,
        StageTimer,
        build_model,
        make_image,
        make_inputs,
    )
except ImportError:  # pragma: no cover - depends on how the file is loaded
    from benchmarks.prefill import (
        _QWEN_TOKEN_IDS,
        ALL_CONFIGS,
        IMAGE_SIZE,
        QUESTION,
        StageTimer,
        build_model,
        make_image,
        make_inputs,
    )

DEFAULT_MODELS = ("qwen2.5-vl-7b", "qwen3-vl-8b")
DEFAULT_TOKENS = (1300, 5000)
DEFAULT_BUDGETS = ("33.3%", "22.2%", "11.1%")
GOALS = {"fov_pct_of_ideal": 80.0, "fov_over_post_at_11": 2.0}


# ---------------------------------------------------------------------------------------------------------------------
# Depth cut in proportion
# ---------------------------------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------------------------------
class VisionPeak:
    """Peak memory while ``model.model.visual`` runs, from forward hooks (nothing patched).

    CUDA: ``max_memory_allocated`` during the tower minus ``memory_allocated`` at its start. CPU: peak RSS minus the
    RSS at its start, sampled every millisecond from ``/proc/self/statm``.
    """

    def __init__(self, model: Any, device: str) -> None:
        self.module = model.model.visual
        self.cuda = str(device).startswith("cuda")
        self.device = device
        self.peak = 0
        self._base = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles: list[Any] = []
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def _rss(self) -> int:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * self._page
        except OSError:
            return 0

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss() - self._base)
            self._stop.wait(0.001)

    def _pre(self, module: Any, args: Any, kwargs: Any) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._base = int(torch.cuda.memory_allocated(self.device))
        else:
            self._base = self._rss()
            self._stop.clear()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()

    def _post(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)
            self.peak = max(self.peak, int(torch.cuda.max_memory_allocated(self.device)) - self._base)
        else:
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            self.peak = max(self.peak, self._rss() - self._base)

    def __enter__(self) -> VisionPeak:
        self.peak = 0
        from arr_coc.loading import tower_hooks  # the tower's own forward or the foveated tower's modules

        self._handles = tower_hooks(
            self.module, lambda: self._pre(None, None, None), lambda: self._post(None, None, None, None)
        )
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()


def _sync(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def measure_once(model: Any, runner: Any, inputs: dict[str, Any], device: str) -> dict[str, float]:
    """One forward call of ``runner`` (the model or a ``CompressedModel``) with ``logits_to_keep=1``."""
    with torch.inference_mode(), StageTimer(model, device) as stages, VisionPeak(model, device) as peak:
        _sync(device)
        start = time.perf_counter()
        runner(**inputs, logits_to_keep=1)
        _sync(device)
        ttft = 1000 * (time.perf_counter() - start)
    if stages.calls != {"vision": 1, "llm": 1}:
        raise RuntimeError(f"expected one vision and one LM call per forward, saw {stages.calls}")
    alloc = getattr(runner, "last_allocation", None)
    image = _QWEN_TOKEN_IDS["image_token_id"]
    n_visual = int((inputs["input_ids"] == image).sum())
    return {
        "kept": float(alloc[0][0].budget) if alloc else float(n_visual),
        "ttft": ttft,
        "vision": stages.ms["vision"],
        "llm": stages.ms["llm"],
        "vision_peak": float(peak.peak),
    }


def bench(
    name: str, tokens: int, args: argparse.Namespace, model: Any, spec: dict[str, Any], log: Callable[[str], None]
) -> dict[str, Any]:
    """All rows of one model at one image size."""
    from arr_coc.attending import parse_budget
    from arr_coc.integrations import compress

    scale = math.sqrt(max(1.0, tokens / 1300))
    size = (round(IMAGE_SIZE[0] * scale), round(IMAGE_SIZE[1] * scale))
    inputs, tok = make_inputs(spec, make_image(size), args.question, tokens)
    dtype = getattr(torch, args.dtype)
    inputs = {k: v.to(args.device) for k, v in inputs.items()}
    inputs["pixel_values"] = inputs["pixel_values"].to(dtype)
    n_vis = int((inputs["input_ids"] == _QWEN_TOKEN_IDS["image_token_id"]).sum())
    n_text = int(inputs["input_ids"].shape[1]) - n_vis
    log(f"{name} @ {tokens}: {n_vis} visual tokens, {n_text} text tokens")
    runners: list[tuple[str, str, Any]] = [("unpruned", "100%", model)]
    for mode, foveate in (("post-encoder", False), ("foveated", True)):
        for b in args.budgets:
            runners.append((mode, b, compress(model, budget=parse_budget(b), tokenizer=tok, foveate=foveate)))
    with torch.inference_mode():  # one-time set-up (scorer imports, kernel selection) kept out of every row
        runners[-1][2](**inputs, logits_to_keep=1)
    timed: dict[int, list[dict[str, float]]] = {i: [] for i in range(len(runners))}
    for round_ in range(args.repeat):  # rounds over all rows: load from other processes spreads over every row
        for i, (_, _, runner) in enumerate(runners):
            timed[i].append(measure_once(model, runner, inputs, args.device))
        log(f"  round {round_ + 1}/{args.repeat} done")
    rows = []
    for i, (mode, budget, _) in enumerate(runners):
        runs = timed[i]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append({"mode": mode, "budget": budget, **med, "runs": runs})
    return {"model": name, "tokens_max": tokens, "n_vis": n_vis, "n_text": n_text, "rows": rows}


# ---------------------------------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------------------------------
def analyse(res: dict[str, Any]) -> list[dict[str, Any]]:
    """Per row: speedup over unpruned TTFT, the ideal token ratio and the share of it reached."""
    base = res["rows"][0]
    out = []
    for r in res["rows"]:
        speed = base["ttft"] / r["ttft"] if r["ttft"] > 0 else float("nan")
        ideal = (res["n_vis"] + res["n_text"]) / (r["kept"] + res["n_text"])
        out.append({**r, "speedup": speed, "ideal": ideal, "pct_of_ideal": 100 * speed / ideal})
    return out


def render(results: list[dict[str, Any]], depth: dict[str, dict[str, Any]], env: dict[str, str], repeat: int) -> str:
    lines = [
        "# Foveation: time to first token with the vision tower on the kept patches only",
        "",
        f"Random-weight models from the published configs; {env['device']}, {env['dtype']}, torch {env['torch']}, "
        f"transformers {env['transformers']}; median of {repeat} run(s); scorer `auto`. TTFT = one forward call with "
        "`logits_to_keep=1` (vision tower + scoring + LM prefill + last-token logits).",
        "",
    ]
    goals = []
    for res in results:
        d = depth[res["model"]]
        rows = analyse(res)
        lines += [
            f"## {res['model']}: {res['n_vis']} visual + {res['n_text']} text tokens; depth {d['describe']}",
            "",
            "| mode | budget | kept K | TTFT ms | vision ms | LLM ms | vision peak MiB | speedup | ideal "
            "(N_vis+N_text)/(K+N_text) | % of ideal |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            of_ideal = "—" if r["mode"] == "unpruned" else f"{r['pct_of_ideal']:.0f}%"
            lines.append(
                f"| {r['mode']} | {r['budget']} | {int(r['kept'])} | {r['ttft']:,.0f} | {r['vision']:,.0f} | "
                f"{r['llm']:,.0f} | {r['vision_peak'] / 2**20:,.0f} | {r['speedup']:.2f}x | {r['ideal']:.2f}x | "
                f"{of_ideal} |"
            )
        lines.append("")
        by = {(r["mode"], r["budget"]): r for r in rows}
        for r in rows:
            if r["mode"] != "foveated":
                continue
            ok = r["pct_of_ideal"] >= GOALS["fov_pct_of_ideal"]
            line = (
                f"- {res['model']} @ {res['n_vis']} tokens, {r['budget']}: foveated {r['speedup']:.2f}x = "
                f"{r['pct_of_ideal']:.0f}% of ideal {r['ideal']:.2f}x ({'met' if ok else 'NOT met'}: goal ≥ "
                f"{GOALS['fov_pct_of_ideal']:.0f}%)"
            )
            post = by.get(("post-encoder", r["budget"]))
            if post is not None and r["budget"] == args_smallest(rows):
                ratio = r["speedup"] / post["speedup"]
                ok2 = ratio >= GOALS["fov_over_post_at_11"]
                line += (
                    f"; vs post-encoder {post['speedup']:.2f}x: **{ratio:.2f}x** ({'met' if ok2 else 'NOT met'}: "
                    f"goal ≥ {GOALS['fov_over_post_at_11']:.0f}x)"
                )
            goals.append(line)
    lines += ["## Goals (reported, not asserted)", "", *goals, ""]
    lines += [
        "Depth: the same fraction of vision blocks and LM layers is kept (`--fraction`); Qwen2.5-VL's cut tower keeps "
        "at least one full-attention block, as its last block. Vision peak = memory added while the vision tower runs "
        "(CUDA: max_memory_allocated minus allocated at its start; CPU: peak RSS minus RSS at its start, sampled every "
        "ms). Speedup = unpruned TTFT / row TTFT.",
        "",
    ]
    return "\n".join(lines)


def args_smallest(rows: list[dict[str, Any]]) -> str:
    """The smallest budget among the rows (the one the 2x goal is about)."""
    from arr_coc.attending import parse_budget

    budgets = [r["budget"] for r in rows if r["mode"] == "foveated"]
    return min(budgets, key=lambda b: float(parse_budget(b)))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", nargs="+", choices=sorted(ALL_CONFIGS), default=list(DEFAULT_MODELS))
    p.add_argument("--tokens", nargs="+", type=int, default=list(DEFAULT_TOKENS), help="max visual tokens per size")
    p.add_argument("--budgets", nargs="+", default=list(DEFAULT_BUDGETS), help="fractions like 11.1%% or counts")
    p.add_argument("--fraction", type=float, default=None, help="depth kept (default 1/16 on CPU, 1 on GPU)")
    p.add_argument("--device", default="cuda" if cuda else "cpu")
    p.add_argument("--dtype", default=None, help="float32 / bfloat16 (default bfloat16 on GPU, float32 on CPU)")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per row, median (default 3 GPU, 1 CPU)")
    p.add_argument("--question", default=QUESTION)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default torch's)")
    p.add_argument("--out", type=Path, default=Path("results/foveation.md"), help="markdown output (JSON alongside)")
    args = p.parse_args(argv)
    on_gpu = str(args.device).startswith("cuda")
    args.fraction = args.fraction if args.fraction is not None else (1.0 if on_gpu else 1 / 16)
    args.dtype = args.dtype or ("bfloat16" if on_gpu else "float32")
    args.repeat = args.repeat or (3 if on_gpu else 1)
    from arr_coc.attending import parse_budget

    for b in args.budgets:
        parse_budget(b)
    if args.repeat < 1 or any(t < 4 for t in args.tokens):
        p.error("--repeat must be >= 1 and --tokens >= 4")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; print the markdown table and write it (and JSON) to ``--out``. Returns 0."""
    import transformers

    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    on_gpu = str(args.device).startswith("cuda")
    env = {
        "device": torch.cuda.get_device_name(args.device)
        if on_gpu
        else f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)",
        "dtype": args.dtype,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    results, depth = [], {}
    for name in args.models:
        full = ALL_CONFIGS[name]
        spec = proportional_spec(full, args.fraction)
        v, fv = spec["vision_config"]["depth"], full["vision_config"]["depth"]
        lm, flm = spec["text_config"]["num_hidden_layers"], full["text_config"]["num_hidden_layers"]
        describe = f"vision blocks {v} of {fv}, LM layers {lm} of {flm} (fraction {args.fraction:.4g})"
        if "fullatt_block_indexes" in spec["vision_config"]:
            describe += f", full-attention blocks {spec['vision_config']['fullatt_block_indexes']}"
        depth[name] = {"vision": v, "vision_full": fv, "lm": lm, "lm_full": flm, "describe": describe}
        t0 = time.perf_counter()
        model = build_model(name, spec, getattr(torch, args.dtype), args.device)
        log(f"{name}: built in {time.perf_counter() - t0:.1f} s; {describe}")
        for tokens in args.tokens:
            results.append(bench(name, tokens, args, model, spec, log))
        del model
        if on_gpu:
            torch.cuda.empty_cache()
    report = render(results, depth, env, args.repeat)
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    payload = {
        "env": env,
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "goals": GOALS,
        "depth": depth,
        "results": [{**res, "rows": analyse(res)} for res in results],
    }
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
