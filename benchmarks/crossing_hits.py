"""The table crossing's own hits (``arr_coc.reading.matching.crossing``): for each question of a realdocs-schema
JSONL, does ``QueryMatcher.table_cell``'s cell cover an answer box? The development signal on lone tables, where
11.1% of the tokens covers the whole table end to end.

Example:
    python benchmarks/crossing_hits.py --data /work/data/weakspots/tables4c/dev.jsonl \\
        --ocr-cache /work/cache/weakspots/ocr-tables --show        # development only: --show prints the misses

A hit: a box of the evidence's cells (weight 1.0) overlaps an answer box. "none": the crossing gave no evidence.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path


def _overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def crossing_hits(data: Path, ocr_cache: Path | None, show: bool = False) -> tuple[int, int, int]:
    """(hits, questions without evidence, questions) over ``data``; with ``show``, print each miss."""
    from arr_coc.reading.matching.matcher import QueryMatcher
    from arr_coc.training.data import load_jsonl
    from arr_coc.training.records import DiskOcrCache

    questions = load_jsonl(data)
    ocr, matcher = DiskOcrCache(ocr_cache), QueryMatcher()
    hits = none = 0
    for q in questions:
        ev = matcher.table_cell(ocr.read(q.load_image()), q.query)
        if ev is None:
            none += 1
            if show:
                print(f"none  {q.id}: {q.query}")
            continue
        cells = [r for r, w in zip(ev.regions, ev.weights, strict=True) if w == 1.0]
        hit = any(_overlap(c, a) for c in cells for a in q.boxes)
        hits += hit
        if show and not hit:
            print(f"miss  {q.id}: {q.query} ({ev.detail})")
    return hits, none, len(questions)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, type=Path, help="realdocs-schema JSONL")
    p.add_argument("--ocr-cache", type=Path, default=None)
    p.add_argument("--show", action="store_true", help="print every miss (development data only)")
    a = p.parse_args(argv)
    hits, none, n = crossing_hits(a.data, a.ocr_cache, a.show)
    print(f"crossing hits {hits} / {n}; no evidence {none}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
