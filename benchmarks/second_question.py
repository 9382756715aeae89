"""A second question on a page already read, asked six ways: wall ms per question, this checkout against another.

``benchmarks/stages.py`` times one second question ("Who is the invoice addressed to?"). What a second question
costs depends on the question: a date, a VAT number or an issuer makes the type prior mark many boxes, and the
whole-word selection then walks further down the ranking. This benchmark asks each of ``SECOND`` (the stages
benchmark's question, an amount, a date, a VAT number, an issuer and a seller) about the example invoice with its
OCR, texture, layout and box embeddings cached, each as a NEW question (its own embedding forgotten first, so MiniLM
embeds it again), through the checkout's own ``stages.run_once`` (the steps of ``arr_coc.allocate(mode="text")``,
whose kept tokens the stages benchmark checks against ``allocate``).

The machine's speed drifts from minute to minute, so two checkouts are compared in alternating rounds: each round runs
one worker process per checkout, one after the other (``--against DIR``: a checkout of another commit, with its own
``src`` and ``benchmarks``). Every figure is the median over all rounds' runs; beside it, MiniLM alone on the same
questions (each embedded anew), measured in the same worker.

Example:
    python benchmarks/second_question.py --rounds 4 --repeat 5 --against /tmp/base --out results/second_question.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: the harness beside it

from harness import add_against, alternate_checkouts, parser, run_in_checkout, table, write_report  # noqa: E402

SECOND = (
    "Who is the invoice addressed to?",
    "What is the total amount due?",
    "When is the invoice dated?",
    "What is the VAT number?",
    "Which company issued this invoice?",
    "Where is the seller?",
)


def worker(checkout: Path, repeat: int) -> dict[str, Any]:
    """In this process, with ``checkout``'s code: {question: [wall ms of each run]}, and MiniLM alone per question."""
    sys.path.insert(0, str(checkout / "benchmarks"))
    import stages  # the checkout's own steps of allocate(mode="text")
    import torch

    from arr_coc.config import RelevanceConfig
    from arr_coc.query import normalize_text
    from arr_coc.realizing import Realizer

    realizer = Realizer(RelevanceConfig()).eval()
    reading = realizer.reading
    reading.warmup()
    _, image, max_tokens = stages.pages()[0]
    cpu = torch.device("cpu")
    cache = reading.embedder._cache  # the embedding cache: a question's own entry is forgotten before each run
    runs: dict[str, list[float]] = {q: [] for q in SECOND}
    minilm: dict[str, list[float]] = {q: [] for q in SECOND}
    with torch.inference_mode():
        for q in stages.QUESTIONS:  # the first question reads the page (OCR, texture, layout, box embeddings)
            stages.run_once(image, max_tokens, q, reading, realizer, cpu, torch.float32)
        limit = reading.matcher().config.lexical.max_query_chars
        own = {q: [normalize_text(q)[:limit].strip()] for q in SECOND}  # the text MiniLM embeds for the question
        for q in SECOND:
            stages.run_once(image, max_tokens, q, reading, realizer, cpu, torch.float32)
            if own[q][0] not in cache:
                raise SystemExit(f"the matcher did not embed {own[q][0]!r}: this benchmark is stale")
        for _ in range(repeat):
            for q in SECOND:
                for k in own[q]:
                    cache.pop(k, None)
                t0 = time.perf_counter()
                stages.run_once(image, max_tokens, q, reading, realizer, cpu, torch.float32)
                runs[q].append((time.perf_counter() - t0) * 1e3)
                for k in own[q]:
                    cache.pop(k, None)
                t0 = time.perf_counter()
                reading.embedder.embed(own[q])
                minilm[q].append((time.perf_counter() - t0) * 1e3)
    return {"runs": runs, "minilm": minilm, "threads": torch.get_num_threads()}


def report(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The table of median wall ms per question, each checkout's total and MiniLM's share."""
    names = list(results)

    def med(name: str, key: str, qs: tuple[str, ...]) -> float:
        return statistics.median(x for r in results[name] for q in qs for x in r[key][q])

    rounds = len(next(iter(results.values())))
    per = sum(len(r["runs"][SECOND[0]]) for r in results[names[0]])
    rows = [[q, *(f"{med(n, 'runs', (q,)):.1f}" for n in names), *(f"{med(n, 'minilm', (q,)):.1f}" for n in names)]
            for q in SECOND]  # fmt: skip
    rows.append(["**all six**", *(f"**{med(n, 'runs', SECOND):.1f}**" for n in names), *([""] * len(names))])
    return [
        f"Median wall ms of a second question on examples/invoice.jpg (OCR, texture, layout and box embeddings cached; "
        f"the question embedded anew), {rounds} alternating rounds, {per} runs per question and checkout; torch "
        f"threads {results[names[0]][0]['threads']}; load average after the run "
        + " / ".join(f"{x:.1f}" for x in os.getloadavg())
        + ".",
        table(["question", *(f"{n}: total" for n in names), *(f"{n}: MiniLM" for n in names)], rows),
    ]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__, repeat=5, warmup=None)
    add_against(p)
    p.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.repeat)))
        return 0

    def run(checkout: Path) -> dict[str, Any]:  # the checkout's own src only, as before
        flags = ["--worker", str(checkout), "--repeat", str(args.repeat)]
        return run_in_checkout(checkout, Path(__file__), flags, keep_path=False)

    results = alternate_checkouts(args.against, args.rounds, run)
    title = "A second question on a page already read, six questions"
    write_report(args.out, title, report(results), {"results": results}, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
