"""Speed and memory of `allocate`: median time per image for the texture-only and the text-aware path.

Each path runs in its own fresh process, so its peak memory (peak resident set size of that process, models
included) is its own. OCR time is shown separately from the rest of the text-aware path.

``--contention`` instead measures the texture-only path on a quiet and on a busy machine (``--busy`` alone runs the
whole benchmark busy): a burner subprocess keeps every core spinning while the timed process runs, with torch's
default intra-op threads and with one thread, and with the CPU bands of ``EngineConfig.cpu_band_elements`` on
(default) and off (0: whole frames, what every op of the old code did).

Example:
    python benchmarks/speed.py --repeat 5 --out results/speed.md
    python benchmarks/speed.py --contention --repeat 15 --out results/speed_contention.md
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
TARGET_WH = (1008, 1288)  # 36 x 46 cells before the 1280-token cap; 31 x 40 = 1,240 tokens after it (Qwen2.5-VL)


def _images() -> list[tuple[str, Image.Image, str]]:
    """Benchmark inputs: the shipped example invoice, a real scanned page and two photos, at ~1,250 tokens."""
    from skimage import data

    items = []
    for path in sorted((ROOT / "examples").glob("*.jpg")):
        if "heatmap" not in path.name:
            items.append((path.name, Image.open(path).convert("RGB"), "How much must be paid?"))
    items.append(("skimage.page", Image.fromarray(data.page()).convert("RGB").resize(TARGET_WH), "What is the title?"))
    items.append(("skimage.astronaut", Image.fromarray(data.astronaut()).resize(TARGET_WH), "What is on the flag?"))
    items.append(("skimage.coffee", Image.fromarray(data.coffee()).resize(TARGET_WH), "What is in the cup?"))
    return items


class Busy:
    """A context that keeps every core busy: one burner subprocess spinning ``os.cpu_count()`` Python loops."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Busy:
        if self.enabled:
            code = (
                "import multiprocessing as mp, os\n"
                "def spin():\n    while True: pass\n"
                "if __name__ == '__main__':\n"
                "    ps = [mp.Process(target=spin, daemon=True) for _ in range(os.cpu_count())]\n"
                "    [p.start() for p in ps]; [p.join() for p in ps]\n"
            )
            self.proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
            time.sleep(1.0)  # let the burners start
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the burner and its children: its own process group
            self.proc.wait()


def _run(mode: str, repeat: int, threads: int, queue, band_elements: int | None = None) -> None:
    import torch

    import arr_coc
    from arr_coc.engine import EngineConfig
    from arr_coc.realizing import default_realizer

    if threads:
        torch.set_num_threads(threads)  # a benchmark process of its own: its one global setting, set once
    realizer = None
    if band_elements is not None:
        realizer = arr_coc.Realizer(engine=EngineConfig(cpu_band_elements=band_elements)).eval()
    rows = []
    reading = (realizer or default_realizer()).reading if mode == "text" else None

    def first_question(image, query):  # a page not read before: the OCR cache is emptied, so OCR runs every time
        if reading is not None:
            reading.reader.cache.clear()
        return arr_coc.allocate(image, query, budget=0.11, mode=mode, realizer=realizer)

    for name, image, query in _images():
        first_question(image, query)  # warm-up (loads models once)
        runs = [first_question(image, query) for _ in range(repeat)]
        total = statistics.median(r.timings_ms["total"] for r in runs)
        ocr = statistics.median(r.timings_ms["ocr"] for r in runs)
        rows.append({"image": name, "mode": mode, "tokens": runs[0].n_tokens, "total_ms": total, "ocr_ms": ocr,
                     "rest_ms": total - ocr})  # fmt: skip
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put({"rows": rows, "peak_mib": peak_mib})


def matcher_100_boxes_ms(repeat: int) -> float:
    """Median ms of one lexical ``QueryMatcher.relevance`` call on a page of 100 text boxes (after a warm-up).

    The target was a test's bound before (tests do not time the machine): well under 0.5 s, ~10-20 ms expected.
    """
    import time

    from arr_coc.reading import QueryMatcher, TextBox

    size, rows, cols = (1000, 1300), 46, 36
    boxes = []
    for i in range(100):  # 4 columns x 25 rows of key labels
        x, y = 20 + (i % 4) * 240, 20 + (i // 4) * 50
        boxes.append(TextBox(f"Label {i} item{i % 7}:", (x, y, x + 180, y + 25)))
    matcher = QueryMatcher(semantic=False)
    matcher.relevance(boxes, "What is the value of item3 label 42?", rows, cols, size)  # warm the caches
    runs = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        matcher.relevance(boxes, "What is the quantity for label 57?", rows, cols, size)
        runs.append(1000 * (time.perf_counter() - start))
    return statistics.median(runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per image (median reported)")
    parser.add_argument("--modes", default="texture,text")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--busy", action="store_true", help="time while a burner process keeps every core busy")
    parser.add_argument("--contention", action="store_true",
                        help="texture path only: quiet vs busy, default vs 1 thread, CPU bands on vs off")  # fmt: skip
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "speed.md")
    args = parser.parse_args(argv)

    ctx = mp.get_context("spawn")
    if args.contention:
        return _contention(args, ctx)
    results = {}
    for mode in args.modes.split(","):
        with Busy(args.busy):
            results[mode] = _measure(ctx, mode, args.repeat, args.threads)

    busy = " while a burner process kept every core busy" if args.busy else ""
    lines = [
        f"Median `allocate` time per image over {args.repeat} runs (after a warm-up), budget 11.1%, Qwen2.5-VL grid, "
        f"max_pixels=1280*28*28; {mp.cpu_count()} CPU cores{busy}. Peak memory: peak RSS of the process running that "
        "path.",
        "",
        "| image | tokens | texture-only ms | text-aware ms (total) | of which OCR ms | text-aware without OCR ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    tex = {r["image"]: r for r in results.get("texture", {"rows": []})["rows"]}
    txt = {r["image"]: r for r in results.get("text", {"rows": []})["rows"]}
    for name in tex or txt:
        a, b = tex.get(name), txt.get(name)
        fmt = lambda r, k: f"{r[k]:.1f}" if r else "-"  # noqa: E731
        lines.append(f"| {name} | {(a or b)['tokens']} | {fmt(a, 'total_ms')} | {fmt(b, 'total_ms')} | "
                     f"{fmt(b, 'ocr_ms')} | {fmt(b, 'rest_ms')} |")  # fmt: skip
    for mode in results:
        vals = [r["total_ms"] for r in results[mode]["rows"]]
        lines.append(f"\n{mode}: median over images {statistics.median(vals):.1f} ms, "
                     f"peak memory {results[mode]['peak_mib']:.0f} MiB")  # fmt: skip
    if "text" in results:
        matching = matcher_100_boxes_ms(args.repeat)
        lines.append(f"\nquery matching, 100 boxes (lexical, no OCR): median {matching:.1f} ms (target: < 500 ms)")
    table = "\n".join(lines)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1))
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


def _measure(ctx, mode: str, repeat: int, threads: int, band_elements: int | None = None) -> dict:
    """Run ``_run`` in a fresh process and return its result."""
    queue = ctx.Queue()
    proc = ctx.Process(target=_run, args=(mode, repeat, threads, queue, band_elements))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def _contention(args: argparse.Namespace, ctx) -> int:
    """Texture-only `allocate` on a quiet and a busy machine, threads x CPU bands; a table per image."""
    settings = [("torch default", 0, None), ("1", 1, None), ("torch default", 0, 0), ("1", 1, 0)]
    rows = []
    for label, threads, band in settings:
        quiet = _measure(ctx, "texture", args.repeat, threads, band)
        with Busy():
            busy = _measure(ctx, "texture", args.repeat, threads, band)
        for q, b in zip(quiet["rows"], busy["rows"], strict=True):
            rows.append({"image": q["image"], "tokens": q["tokens"], "threads": label,
                         "bands": "off (whole frames)" if band == 0 else "on (default)",
                         "quiet_ms": q["total_ms"], "busy_ms": b["total_ms"]})  # fmt: skip
    lines = [
        f"Texture-only `allocate`, median ms per image over {args.repeat} runs after a warm-up, {mp.cpu_count()} CPU "
        "cores; busy = a burner process spinning one Python loop per core while timing. Bands: "
        "`EngineConfig.cpu_band_elements` (on: pixel work in bands below torch's intra-op split size; off: 0).",
        "",
        "| image | tokens | torch threads | CPU bands | quiet ms | busy ms |",
        "|---|---:|---|---|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['image']} | {r['tokens']} | {r['threads']} | {r['bands']} | {r['quiet_ms']:.1f} | "
                     f"{r['busy_ms']:.1f} |")  # fmt: skip
    lines.append("")
    for label, _threads, band in settings:
        sel = [r for r in rows if r["threads"] == label and (r["bands"].startswith("off") == (band == 0))]
        lines.append(f"threads {label}, bands {'off' if band == 0 else 'on'}: median over images "
                     f"{statistics.median(r['quiet_ms'] for r in sel):.1f} ms quiet, "
                     f"{statistics.median(r['busy_ms'] for r in sel):.1f} ms busy")  # fmt: skip
    table = "\n".join(lines)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    raise SystemExit(main())
