"""What the default relevance adds to a question's text-path matching: the rules against the default (``routed-cells``).

Example:
    PYTHONPATH=src python benchmarks/default_cost.py --repeat 15

The example invoice is read once (the OCR cached, as for a second question on a page); then
``QueryMatcher.relevance_and_evidence`` (the text map: the rules' scores, or the route and the learned box scorer's
features and scores) runs for four questions with ``--relevance rules`` and with the default (issue 40 item 4),
alternating which goes first, after one warm-up call each (the questions' embeddings cached). Reported: the median
process CPU and wall milliseconds of a call (and the CPU's 10th percentile: under contention torch's threads spin,
which process CPU time counts), and how the route sent the questions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ("How much must be paid?", "When is the invoice due?", "Who is it billed to?", "What is the VAT?")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (each: every question with both)")
    args = parser.parse_args(argv)
    from PIL import Image

    from arr_coc.query import normalize_text
    from arr_coc.realizing import RULES, Realizer, default_realizer

    img = Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB")
    pair = {"rules": Realizer.from_pretrained(RULES), "default": default_realizer()}
    boxes = pair["rules"].reading.reader.read(img)
    rows, cols = 39, 32  # the invoice's Qwen2.5-VL grid
    for r in pair.values():
        for q in QUESTIONS:
            r.reading.matcher().relevance_and_evidence(boxes, normalize_text(q), rows, cols, img.size)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in pair}
    for i in range(args.repeat):
        for name in ("rules", "default") if i % 2 == 0 else ("default", "rules"):
            matcher = pair[name].reading.matcher()
            for q in QUESTIONS:
                c0, w0 = time.process_time(), time.perf_counter()
                matcher.relevance_and_evidence(boxes, normalize_text(q), rows, cols, img.size)
                times[name].append(((time.process_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3))
    print(f"example invoice, {len(boxes)} boxes, {args.repeat} rounds x {len(QUESTIONS)} questions")
    for name, v in times.items():
        cpu, wall = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
        low = sorted(x[0] for x in v)[len(v) // 10]
        print(f"{name}: median CPU {cpu:.2f} ms, wall {wall:.2f} ms a call; 10th percentile CPU {low:.2f} ms")
    scorer = pair["default"].box_scorer
    print(f"the default's route: {scorer.pages} {dict(scorer.reasons)}; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
