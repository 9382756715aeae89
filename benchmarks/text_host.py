"""The host work a text-mode decision adds on a page already read, stage by stage: this checkout against another.

A text-mode ``Realizer.decide`` on a GPU runs the same host work as on a CPU before and after its kernels: the page's
keys and the OCR cache's look-up (digests of its pixels, made as decide makes them: ``digested_pictures``, on a CPU
XXH3 over the frame in place, shared with the texture cache's key; on a GPU the same call hashes the frame there and
the texture has no cache), the matching of the question
to the page's boxes (``QueryMatcher.relevance_and_evidence``: lexical scores, the layout rule, the structural query,
the painting), the page's word units, and the whole-word selection's walk (``select_units``). The goal of a
decision in 2 ms per image at batch 1 on a GPU is met in texture mode and missed in text mode by this work; this
benchmark times it on the host alone (MiniLM off by default, as on the GPU machine, where its package does not fit).

Each of ``decision_time.QUESTIONS`` is asked of the example invoice (Qwen2.5-VL grid, 1,248 tokens, budget 22.2%;
the page read first with another question): ``new`` is the first time the question is asked in the worker (its
terms new to the page's caches), ``again`` the median of ``--repeat`` more asks. The selection is timed on the
decision's own ranking and budget. Two checkouts run in alternating rounds, one worker process each
(``--against DIR``: a checkout of another commit with its own ``src``); every figure is the median over all rounds.

Example:
    python benchmarks/text_host.py --rounds 4 --repeat 30 --against /tmp/base --out results/text_host.md
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: the harness beside it

from harness import add_against, alternate_checkouts, parser, run_in_checkout, table, write_report  # noqa: E402

STAGES = ("page keys, OCR look-up", "matching", "word units", "selection", "total")


def worker(repeat: int, semantic: bool) -> dict[str, Any]:
    """In this process: {question: {stage: {"new": ms, "again": [ms, ...]}}}."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import torch
    from decision_time import QUESTIONS
    from PIL import Image

    from arr_coc.attending import select_units
    from arr_coc.caching import page_digest
    from arr_coc.config import RelevanceConfig
    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.query import normalize_text
    from arr_coc.reading import ReadingConfig
    from arr_coc.realizing import Realizer, pictures_from_frames
    from arr_coc.texture import frames_from_image

    try:  # the page's keys as decide makes them: its frames hashed once, where they lie (older: each key hashes)
        from arr_coc.caching import digest_scope
        from arr_coc.realizing import digested_pictures
    except ImportError:
        digest_scope, digested_pictures = contextlib.nullcontext, None

    torch.set_num_threads(1)  # the host work is single-threaded Python and NumPy
    spec = GridSpec.for_family("qwen2.5-vl", None, 1280 * 28 * 28)
    img, _ = load_image_with_size(Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB"),
                                  target_pixels=spec.max_pixels)  # fmt: skip
    grid = spec.grid_for(img.height, img.width)
    rows, cols = grid.rows, grid.cols
    reading = ReadingConfig() if semantic else ReadingConfig().with_switches(semantic=False)
    if torch.cuda.is_available():  # the page is read once, by the torch backend there (as decision_time.py does)
        reading = reading.replace(ocr={"backend": "torch", "device": "cuda"})
    realizer = Realizer(RelevanceConfig(reading=reading.to_dict())).eval()
    frames = frames_from_image(img, grid)
    realizer.decide([frames], [(rows, cols)], ["What is this page?"], 0.222, mode="text")  # reads the page
    reader, matcher = realizer.reading.reader, realizer.reading.matcher()
    picture = pictures_from_frames(frames)[0]
    size = (picture.shape[1], picture.shape[0])
    decided = {}
    for q in QUESTIONS:  # each question's ranking and budget (what the selection walks), from its decision
        d = realizer.decide([frames], [(rows, cols)], [q], 0.222, mode="text")[0]
        order = torch.sort(torch.nan_to_num(d.scoring.scores.flatten().float(), nan=-float("inf")), descending=True,
                           stable=True).indices  # fmt: skip
        decided[q] = (order, int(d.keep.numel()))
    realizer.reading.clear()  # forget the page: the worker's first ask of each question below is a new one
    realizer.decide([frames], [(rows, cols)], ["What is this page?"], 0.222, mode="text")
    out: dict[str, dict[str, dict[str, Any]]] = {q: {s: {"again": []} for s in STAGES} for q in QUESTIONS}
    for r in range(1 + repeat):
        for q in QUESTIONS:
            text = normalize_text(q)
            order, k = decided[q]
            t0 = time.perf_counter()
            with digest_scope():  # the OCR cache's and the texture cache's keys of the page, as decide makes them
                boxes = reader.read(digested_pictures([frames])[0][0] if digested_pictures else picture)
                page_digest(frames, f"texture {rows} {cols}")
            t1 = time.perf_counter()
            matcher.relevance_and_evidence(boxes, text, rows, cols, size)
            t2 = time.perf_counter()
            units = matcher.units(boxes, rows, cols, size)
            t3 = time.perf_counter()
            select_units(order, k, units)
            t4 = time.perf_counter()
            for stage, ms in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0), strict=True):
                if r == 0:
                    out[q][stage]["new"] = ms * 1e3
                else:
                    out[q][stage]["again"].append(ms * 1e3)
    return out


def report(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The two tables (by stage, by question) of the median host ms, each checkout's new and again."""
    names = list(results)
    questions = list(next(iter(results.values()))[0])

    def med(name: str, stage: str, kind: str, q: str | None = None) -> float:
        qs = [q] if q else questions
        if kind == "new":
            return statistics.median(w[x][stage]["new"] for w in results[name] for x in qs)
        return statistics.median(v for w in results[name] for x in qs for v in w[x][stage]["again"])

    rounds = len(results[names[0]])
    head = [f"{n}: {kind}" for n in names for kind in ("new", "again")]
    by_stage = [
        [stage, *(f"{med(n, stage, kind):.3f}" for n in names for kind in ("new", "again"))] for stage in STAGES
    ]
    by_question = [
        [q, *(f"{med(n, 'total', kind, q):.3f}" for n in names for kind in ("new", "again"))] for q in questions
    ]
    return [
        f"Median host ms of a text-mode decision's text work on examples/invoice.jpg (page read; {rounds} alternating "
        "rounds; `new`: a question's first ask in a worker, `again`: asked before).",
        table(["stage", *head], by_stage),
        table(["question (total)", *head], by_question),
    ]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__, repeat=20, warmup=None)
    add_against(p)
    p.add_argument("--semantic", action="store_true", help="MiniLM on (off by default, as on the GPU machine)")
    p.add_argument("--no-semantic", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.repeat, not args.no_semantic)))
        return 0
    flags = ["--worker", "--repeat", str(args.repeat)] + ([] if args.semantic else ["--no-semantic"])
    results = alternate_checkouts(args.against, args.rounds, lambda c: run_in_checkout(c, Path(__file__), flags))
    title = "The host work of a text-mode decision, stage by stage"
    write_report(args.out, title, report(results), {"results": results}, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
