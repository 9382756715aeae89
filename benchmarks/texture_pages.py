"""Texture mode's time a NEW page, in one process: ``allocate(mode="texture")`` on distinct pages, none seen before.

The pages are docgen's generated documents (every kind in turn, so sizes and layouts vary; ``--pages N``), each a
different picture, so no page cache is hit: every call resizes the page, builds its texture and decides. The first
call of the process (torch's and the pipeline's one-time set-up) is reported apart from the other pages. A second
question on the last page (its frames and texture cached) is timed too, for contrast.

Example:
    python benchmarks/texture_pages.py --pages 20 --out results/texture_pages.md
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: the harness beside it

from harness import parser, summary, table, write_report  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__, repeat=1, warmup=0)
    p.add_argument("--pages", type=int, default=20, help="distinct pages (default 20)")
    p.add_argument("--budget", default="0.11")
    args = p.parse_args(argv)
    t_import = time.perf_counter()
    import arr_coc
    from arr_coc.evaluation.docgen import KINDS, make_sample

    import_s = time.perf_counter() - t_import
    samples = [make_sample("dev", KINDS[i % len(KINDS)], i // len(KINDS), seed=7) for i in range(args.pages)]
    rows, ms, cpu, totals = [], [], [], []
    for s in samples:
        t, c = time.perf_counter(), time.process_time()
        a = arr_coc.allocate(s.image, s.query, args.budget, mode="texture")
        ms.append((time.perf_counter() - t) * 1e3)
        cpu.append((time.process_time() - c) * 1e3)  # every thread of this process: the work, less the waiting
        totals.append(a.timings_ms["total"])
        grid = f"{a.grid[0]}x{a.grid[1]}"
        rows.append([s.id, f"{s.image.width}x{s.image.height}", grid, f"{ms[-1]:.1f}", f"{cpu[-1]:.1f}"])
    last = samples[-1]
    again = []
    for _ in range(5):
        t = time.perf_counter()
        arr_coc.allocate(last.image, "What is the total?", args.budget, mode="texture")
        again.append((time.perf_counter() - t) * 1e3)
    later = summary(ms[1:]) if len(ms) > 1 else summary(ms)
    head = ["what", *summary([0.0]).HEADER]
    sections = [
        f"Load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other jobs share them). "
        f"`import arr_coc`: {import_s:.1f} s. Every call below is a page the process has not seen "
        "(wall-clock around `allocate`, page already in memory as a PIL image).",
        table(
            head,
            [
                ["first page of the process (one-time set-up included)", *summary(ms[:1]).cells()],
                [f"a new page, pages 2-{len(ms)}", *later.cells()],
                [f"a new page, pages 2-{len(ms)}: CPU time (all threads)", *summary(cpu[1:] or cpu).cells()],
                ["a second question on a page seen before", *summary(again).cells()],
            ],
        ),
        "Each page:\n\n" + table(["page", "size", "grid", "wall ms", "CPU ms"], rows),
    ]
    write_report(
        args.out,
        f"Texture mode: a new page in one process ({len(ms)} distinct pages)",
        sections,
        {
            "new_page_ms": ms,
            "new_page_cpu_ms": cpu,
            "allocation_total_ms": totals,
            "second_question_ms": again,
            "import_s": import_s,
        },
        argv,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
