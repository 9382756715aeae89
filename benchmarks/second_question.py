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
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
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


def run_worker(checkout: Path, repeat: int) -> dict[str, Any]:
    """``worker`` in a fresh process with ``checkout``'s ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(checkout), "--repeat", str(repeat)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the worker for {checkout} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def commit_of(checkout: Path) -> str:
    got = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return got.stdout.strip() or str(checkout)


def report(results: dict[str, list[dict[str, Any]]], command: str) -> str:
    names = list(results)
    med = {
        name: {q: statistics.median(x for r in rs for x in r["runs"][q]) for q in SECOND}
        for name, rs in results.items()
    }
    mini = {
        name: {q: statistics.median(x for r in rs for x in r["minilm"][q]) for q in SECOND}
        for name, rs in results.items()
    }
    every = {
        name: statistics.median(x for r in rs for q in SECOND for x in r["runs"][q]) for name, rs in results.items()
    }
    rounds = len(next(iter(results.values())))
    per = sum(len(r["runs"][SECOND[0]]) for r in results[names[0]])
    load = os.getloadavg()
    lines = [
        f"Median wall ms of a second question on examples/invoice.jpg (OCR, texture, layout and box embeddings cached; "
        f"the question embedded anew), {rounds} alternating rounds, {per} "
        f"runs per question and checkout; torch threads {results[names[0]][0]['threads']}; load average after the run "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}. Command: `{command}`",
        "",
        "| question | "
        + " | ".join(f"{n}: total" for n in names)
        + " | "
        + " | ".join(f"{n}: MiniLM" for n in names)
        + " |",
        "|---|" + "---:|" * (2 * len(names)),
    ]
    for q in SECOND:
        lines.append(
            f"| {q} | "
            + " | ".join(f"{med[n][q]:.1f}" for n in names)
            + " | "
            + " | ".join(f"{mini[n][q]:.1f}" for n in names)
            + " |"
        )
    lines.append("| **all six** | " + " | ".join(f"**{every[n]:.1f}**" for n in names) + " |" + " |" * len(names))
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (one worker per checkout each)")
    p.add_argument("--repeat", type=int, default=5, help="runs of each question per worker")
    p.add_argument("--against", type=Path, default=None, help="another checkout to run alternately with this one")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.repeat)))
        return
    checkouts = [ROOT] + ([args.against.resolve()] if args.against else [])
    results: dict[str, list[dict[str, Any]]] = {commit_of(c): [] for c in checkouts}
    for r in range(args.rounds):
        for c, name in zip(checkouts, list(results), strict=True):
            results[name].append(run_worker(c, args.repeat))
            print(f"round {r + 1}: {name} done", file=sys.stderr, flush=True)
    command = "python benchmarks/second_question.py " + " ".join(sys.argv[1:])
    text = report(results, command)
    print(text)
    if args.out is not None:
        args.out.write_text(f"# A second question on a page already read, six questions\n\n{text}\n")


if __name__ == "__main__":
    main()
