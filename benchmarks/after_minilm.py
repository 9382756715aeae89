"""Why a second question costs more than the sum of its steps: each per-question step on the example invoice timed
alone (repeated back to back) and right after MiniLM embeds a new question (as it does in a real second question).

MiniLM's six layers hold 42 MB of float32 weights, more than this machine's 32 MB L3 cache; a question's embedding
streams them all and evicts what the next steps use. The table prints the median of ``--repeat`` runs of each.

Command: ``python benchmarks/after_minilm.py [--repeat 30]``
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from arr_coc.caching import _FROZEN  # the page-bytes digest memo (see the frames step)

ROOT = Path(__file__).resolve().parents[1]


def _median_ms(step: Callable[[], object], repeat: int, before: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="runs per step and setting (median reported)")
    args = parser.parse_args(argv)
    from PIL import Image

    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.query import normalize_text
    from arr_coc.realizing import Realizer

    realizer = Realizer().eval()
    reading = realizer.reading
    reading.warmup()
    image = Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB")
    spec = GridSpec.for_family("qwen2.5-vl", None, 1280 * 28 * 28)
    img, (w, h) = load_image_with_size(image, target_pixels=spec.max_pixels)
    grid = spec.grid_for(h, w)
    text = normalize_text("What is the total amount due?")
    matcher = reading.matcher()
    numbers = itertools.count()
    with torch.inference_mode():
        boxes = reading.reader.read(img)
        pixels = np.asarray(img)
        frames = realizer.frames(img, grid, pixels)
        texture = realizer.texture(frames, grid.rows, grid.cols)
        reading.embedder.embed([text, *(b.text for b in boxes)])  # the page's boxes and this question: cached
        prior_map, _ = matcher.relevance_and_evidence(boxes, text, grid.rows, grid.cols, img.size)
        units = matcher.units(boxes, grid.rows, grid.cols, img.size)
        prior = torch.from_numpy(np.asarray(prior_map, dtype=np.float32))[None]
        relevance, _, _ = realizer(texture, [realizer.cues(text)], prior=prior)
        steps: dict[str, Callable[[], object]] = {
            "page bytes out of PIL (np.asarray)": lambda: np.asarray(img),
            # a second question's page bytes are new: the frames' key hashes them (the memo of frozen bytes is cleared
            # first), the OCR's key then reuses that digest
            "frames from the page cache": lambda: (_FROZEN.clear(), realizer.frames(img, grid, pixels, copy=False)),
            "texture from the page cache": lambda: realizer.texture(frames, grid.rows, grid.cols),
            "OCR boxes from the page cache": lambda: reading.reader.read(pixels),
            "matching (question embedding cached)": lambda: matcher.relevance_and_evidence(
                boxes, text, grid.rows, grid.cols, img.size
            ),
            "scorers and balancing": lambda: realizer(texture, [realizer.cues(text)], prior=prior),
            "selection (words whole)": lambda: realizer.select(relevance[0].flatten(), 0.111, units=units),
        }

        def new_question() -> None:
            reading.embedder.embed([f"What is the amount on line {next(numbers)}?"])

        question = _median_ms(new_question, args.repeat)
        rows = [(name, _median_ms(step, args.repeat), _median_ms(step, args.repeat, new_question))
                for name, step in steps.items()]  # fmt: skip
    load = os.getloadavg()
    print(f"Median of {args.repeat} runs, wall ms; examples/invoice.jpg, {grid.rows} x {grid.cols} tokens, "
          f"{len(boxes)} boxes; torch {torch.__version__}, {torch.get_num_threads()} threads; load average "
          f"{load[0]:.1f}. Command: `python benchmarks/after_minilm.py --repeat {args.repeat}`\n")  # fmt: skip
    print(f"MiniLM embedding a new question: {question:.1f} ms\n")
    print("| step of a second question | alone (back to back) | right after a question's embedding | ratio |")
    print("|---|---:|---:|---:|")
    for name, alone, after in rows:
        print(f"| {name} | {alone:.2f} | {after:.2f} | {after / max(alone, 1e-9):.1f}x |")
    total_alone, total_after = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"| **sum** | **{total_alone:.2f}** | **{total_after:.2f}** | {total_after / total_alone:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
