"""Time per stage of text-aware relevance on dense document pages: first question vs cached second question.

Stages, in the order ``arr_coc.allocate(mode="text")`` runs them: ``load`` (decode + resize to the grid), ``texture``
(13-channel texture array), ``ocr hash`` (pixel digest for the OCR cache), ``ocr detect`` (PP-OCR detector),
``ocr recognize`` (crops + line recogniser), ``matching`` (lexical + MiniLM matching, layout rule, painting),
``scorers`` (information / perspectival / participatory scorers and their balancing), ``selection`` (budget + top-k).
Two pages: the example invoice at the default 1,280-token cap (~1,300 tokens) and a 2 x 2 tiling of it at a
5,120-token cap (~5,000 tokens, four times the text). Each page is asked a first question with an empty OCR cache
and then a second, different question (the OCR comes from the cache). Models are loaded before timing.

Every figure is the median over ``--repeat`` runs, wall-clock milliseconds and, beside it, the process CPU
milliseconds (all threads), which says how much work a stage is even when other processes share the cores. The
machine's load average is printed with the table: wall times on a shared machine are not the machine's speed.

Example:
    python benchmarks/stages.py --repeat 3 --out results/stages.md
    python benchmarks/stages.py --device cuda --dtype bfloat16 --out results/stages_cuda.md   # on a GPU machine
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("load", "texture", "ocr hash", "ocr detect", "ocr recognize", "matching", "scorers", "selection")
QUESTIONS = ("How much must be paid?", "Who is the invoice addressed to?")


def pages() -> list[tuple[str, Image.Image, int]]:
    """(name, image, max tokens) of the two benchmark pages."""
    invoice = Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB")
    w, h = invoice.size
    tiled = Image.new("RGB", (2 * w, 2 * h), "white")
    for dx in (0, w):
        for dy in (0, h):
            tiled.paste(invoice, (dx, dy))
    return [("invoice.jpg", invoice, 1280), ("invoice 2x2", tiled, 5120)]


class Clock:
    """Wall and process-CPU time of consecutive stages (CUDA work synchronised before each reading)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self.mark()

    def mark(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self._w, self._c = time.perf_counter(), time.process_time()

    def stage(self, name: str) -> None:
        """Close stage ``name``: the time since the previous mark is its time."""
        w0, c0 = self._w, self._c
        self.mark()
        self.wall[name] = self.wall.get(name, 0.0) + (self._w - w0) * 1e3
        self.cpu[name] = self.cpu.get(name, 0.0) + (self._c - c0) * 1e3


def run_once(image: Image.Image, max_tokens: int, query: str, reading: Any, realizer: Any, device: torch.device,
             dtype: torch.dtype) -> tuple[dict[str, float], dict[str, float], int, int]:  # fmt: skip
    """One text-aware allocation, stage by stage, as ``arr_coc.allocate`` does it: (wall ms, cpu ms, tokens,
    text boxes)."""
    from arr_coc.attending import resolve_budget, select
    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.query import normalize_text, parse_query
    from arr_coc.texture import texture_array

    clock = Clock(device)
    spec = GridSpec.for_family("qwen2.5-vl", None, max_tokens * 28 * 28)
    img, (orig_w, orig_h) = load_image_with_size(image, target_pixels=spec.max_pixels)
    grid = spec.grid_for(orig_h, orig_w)
    text = normalize_text(query)
    cues = parse_query(text)
    clock.stage("load")
    texture = texture_array(img, grid)[None].to(device=device, dtype=dtype)  # (1, 13, rows, cols)
    clock.stage("texture")
    w0, c0 = time.perf_counter(), time.process_time()
    result = reading.reader.read_timed(img)  # hash, then detection + recognition unless the page is cached
    wall_ms, cpu_ms = (time.perf_counter() - w0) * 1e3, (time.process_time() - c0) * 1e3
    for stage, part in (("ocr hash", "hash"), ("ocr detect", "detect"), ("ocr recognize", "recognize")):
        share = result.timings_ms[part] / max(result.timings_ms["total"], 1e-9)
        clock.wall[stage], clock.cpu[stage] = wall_ms * share, cpu_ms * share  # CPU split in proportion to wall
    clock.mark()
    boxes = result.boxes
    matcher = reading.matcher()
    prior_map = matcher.relevance(boxes, text, grid.rows, grid.cols, (img.width, img.height))
    units = matcher.units(boxes, grid.rows, grid.cols, (img.width, img.height))  # each word's cells
    prior = torch.from_numpy(np.asarray(prior_map, dtype=np.float32))[None].to(device=device, dtype=dtype)
    clock.stage("matching")
    relevance, _, _ = realizer(texture, [cues], prior=prior)
    clock.stage("scorers")
    scores = relevance[0].flatten()
    keep = select(scores, resolve_budget(0.111, grid.n_tokens, scores), units=units)  # words kept whole
    keep.cpu()
    clock.stage("selection")
    return clock.wall, clock.cpu, grid.n_tokens, len(boxes)


def _median(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r.get(k, 0.0) for r in rows) for k in STAGES}


def measure(repeat: int, device: torch.device, dtype: torch.dtype, threads: int | None,
            log: Callable[[str], None]) -> list[dict[str, Any]]:  # fmt: skip
    """Per page and question (first / cached second): median stage times."""
    from arr_coc.reading import Reading, ReadingConfig
    from arr_coc.realizing import Realizer

    reading = Reading(ReadingConfig().replace(ocr={"num_threads": threads}) if threads else ReadingConfig())
    reading.warmup()
    realizer = Realizer().eval().to(device=device)
    out = []
    with torch.inference_mode():
        for name, image, max_tokens in pages():
            run_once(image, max_tokens, QUESTIONS[0], reading, realizer, device, dtype)  # warm caches of torch/ORT
            first, second, tokens, lines = [], [], 0, 0
            for _ in range(repeat):
                reading.reader.cache.clear()  # a new page: no OCR and no text embeddings cached yet
                reading.embedder.clear()
                w, c, tokens, lines = run_once(image, max_tokens, QUESTIONS[0], reading, realizer, device, dtype)
                first.append((w, c))
                w, c, _, _ = run_once(image, max_tokens, QUESTIONS[1], reading, realizer, device, dtype)
                second.append((w, c))
            for label, rows in (("first question", first), ("second question (OCR cached)", second)):
                wall, cpu = _median([r[0] for r in rows]), _median([r[1] for r in rows])
                out.append(
                    {
                        "page": name,
                        "tokens": tokens,
                        "boxes": lines,
                        "question": label,
                        "wall_ms": wall,
                        "cpu_ms": cpu,
                        "total_wall_ms": sum(wall.values()),
                        "total_cpu_ms": sum(cpu.values()),
                    }
                )
                log(f"{name} {label}: {sum(wall.values()):.0f} ms wall, {sum(cpu.values()):.0f} ms cpu")
    return out


def table(rows: list[dict[str, Any]], header: str) -> str:
    lines = [header, "", "| page | tokens | text boxes | question | " + " | ".join(STAGES) + " | total |",
             "|---|---:|---:|---|" + "---:|" * (len(STAGES) + 1)]  # fmt: skip
    for r in rows:
        cells = [f"{r['wall_ms'][s]:.0f} ({r['cpu_ms'][s]:.0f})" for s in STAGES]
        total = f"**{r['total_wall_ms']:.0f}** ({r['total_cpu_ms']:.0f})"
        lines.append(
            f"| {r['page']} | {r['tokens']} | {r['boxes']} | {r['question']} | " + " | ".join(cells) + f" | {total} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per page and question (median reported)")
    parser.add_argument("--device", default="cpu", help="device of the torch stages (texture, scorers, selection)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--threads", type=int, default=0, help="torch and OCR threads (0: their defaults)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "stages.md")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda but torch sees no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = measure(args.repeat, device, getattr(torch, args.dtype), args.threads or None,
                   lambda s: print(s, file=sys.stderr, flush=True))  # fmt: skip
    load = os.getloadavg()
    header = (
        f"Median over {args.repeat} runs, milliseconds: wall (process CPU, all threads). Text-aware relevance, "
        f"budget 11.1%, Qwen2.5-VL grid; OCR on onnxruntime (CPU), torch stages on {args.device} in {args.dtype}; "
        f"{os.cpu_count()} CPU cores, load average during the run {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. "
        f"Command: `python benchmarks/stages.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
    )
    text = table(rows, header)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps({"header": header, "rows": rows}, indent=1))
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
