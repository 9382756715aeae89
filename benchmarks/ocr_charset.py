"""What reading every script costs: the recogniser with the Latin-sliced head against ``charset="auto"`` (every class
computed, each line in its script), on the English example invoice and a dense Chinese invoice, onnxruntime and the
torch backend on the CPU.

Example:
    python benchmarks/ocr_charset.py --repeat 5 --out /tmp/ocr_charset.md

The detector runs once a page; then each recogniser reads the page's lines ``--repeat`` times, the heads
alternating (latin, auto, latin, ...), one thread (onnxruntime: one worker; torch: ``torch.set_num_threads(1)``), so
the figures are process CPU time (``time.process_time``), which a machine shared with other processes changes less
than wall time. Reported: the median CPU ms of a page's recognition, per head, and how many lines read differently.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--torch-repeat", type=int, default=1, help="runs of the torch backend (slow on a CPU)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import cv2

    from arr_coc.evaluation.langgen import dense_page
    from arr_coc.reading.ocr.lines import PageRecognizer
    from arr_coc.reading.ocr.reader import TextReader, crop_quad
    from arr_coc.reading.ocr.recognition import LineRecognizer

    torch.set_num_threads(1)
    pages = [("invoice.jpg (English)", Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB")),
             ("dense Chinese invoice", dense_page("zh"))]  # fmt: skip
    detector, _ = TextReader(cache_items=0).engine()
    rows = []
    for name, page in pages:
        bgr = cv2.cvtColor(np.asarray(page), cv2.COLOR_RGB2BGR)
        quads = np.asarray(detector(bgr).boxes, dtype=np.float32).reshape(-1, 4, 2)
        crops = [crop_quad(bgr, q) for q in quads]
        recs = {cs: LineRecognizer(charset=cs, workers=1) for cs in ("latin", "auto")}
        times: dict[str, list[float]] = {cs: [] for cs in recs}
        texts = {}
        for _ in range(args.repeat):
            for cs, rec in recs.items():
                t = time.process_time()
                texts[cs] = [ln.text for ln in rec(crops)]
                times[cs].append((time.process_time() - t) * 1e3)
        diff = sum(a != b for a, b in zip(texts["latin"], texts["auto"], strict=True))
        row = {"page": name, "lines": len(crops), "differ": diff,
               **{f"ort {cs}": statistics.median(v) for cs, v in times.items()}}  # fmt: skip
        torch_texts = {}
        for cs in ("latin", "auto"):
            rec = PageRecognizer(charset=cs)
            rec.load()
            ts = []
            for _ in range(args.torch_repeat):
                t = time.process_time()
                torch_texts[cs] = [ln.text for ln in rec.read_page(bgr, quads)]
                ts.append((time.process_time() - t) * 1e3)
            row[f"torch {cs}"] = statistics.median(ts)
        row["torch = ort (auto)"] = sum(a == b for a, b in zip(torch_texts["auto"], texts["auto"], strict=True))
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    cols = ["page", "lines", "ort latin", "ort auto", "torch latin", "torch auto", "differ", "torch = ort (auto)"]
    lines = [
        f"Recognition CPU ms a page (median of {args.repeat} onnxruntime / {args.torch_repeat} torch runs, one "
        "thread, process CPU time), the Latin-sliced head against charset='auto'; differ: lines the two heads read "
        "differently; torch = ort: lines the torch backend reads as onnxruntime does (auto). Command: "
        f"`python benchmarks/ocr_charset.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        "| " + " | ".join(cols) + " |",
        "|---|" + "---:|" * (len(cols) - 1),
    ]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:.0f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
