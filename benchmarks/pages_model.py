"""Many pages, one budget, in the model: ``compress(budget_scope="prompt")`` against ``allocate_pages`` on the
multi-page benchmark's documents, and the prefill of a 20-page PDF at one budget against per-page budgets.

Example:
    PYTHONPATH=src python benchmarks/pages_model.py --data /work/data/realdocs-dev --limit 100 \\
        --pdf /usr/share/doc/libtasn1-doc/libtasn1.pdf --out /tmp/pages_model.md

Totals (``--data``): the documents of ``benchmarks/pages.py`` (each question's page among 7 pages of the same kind,
seeded; the probe's and trial's questions left out; ``--limit`` evenly spaced), 1% of all 8 pages' tokens
(Qwen2.5-VL grid, at most 1,280 tokens a page). For each document, ``allocate_pages`` (the pages as PIL images) and
``compress(model, 0.01, foveate=True, budget_scope="prompt")`` on a tiny random-weight Qwen2.5-VL whose processor
has the same bound (the prompt: the 8 pages then the question, the model's chat template), with ONE realizer: the
number of pages whose grid matches, documents whose kept total matches, pages whose share matches and pages whose
kept set matches. ``--mode texture`` (default; no OCR: the even split) or ``text`` (OCR every page: the shares by
relevance; slow on a CPU).

Prefill (``--pdf``): pages 1-20 of a real PDF (rendered by ``arr_coc.documents``, at most ``--page-tokens`` tokens a
page), one question, the same tiny model, ``foveate=True``: the unpruned model, 1% per page
(``budget_scope="item"``), 1% of the document (``"prompt"``), and a count per page against the same count for the
document. Per row: the prompt the language model prefills (tokens), the visual tokens kept, pages that keep none,
patches the vision tower encodes, and wall time (median of ``--repeat``) of the decision + tower
(``CompressedModel._plan``) and of the model's forward on the pruned inputs.

Decision (``--decision N``): what the in-page key-span rule costs the document decision of a 4-image prompt
(``integrations.document_budget.split_prompt``, the step ``compress(budget_scope="prompt")`` and the vLLM plugin run
after scoring): pages 1-4 of ``examples/report.pdf`` (Qwen2.5-VL grid, the text layer's boxes), their scorings as
``Realizer.decide`` gives them (:func:`document_scorings`), 1% of their tokens, question :data:`Q_DOC`; before = no
rule (``PagesConfig(focus=0)``: the path of main f9708bb), after = the rule (``focus=0.5``); ``--decision-pdf``,
``--decision-pages``, ``--decision-query``: other pages (a dense manual's). Ops and host syncs
(``arr_coc.profiling.OpCounter``), and wall time over N paired rounds (before and after alternating, first one or the
other by turns; wall time and the thread's CPU time, which contention on a shared machine inflates less), warm (the
pages' reading-order words cached, as a second question or a second forward finds them) and cold (``spans``' word
cache cleared before each run: a first question on the pages).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FAMILY = "qwen2.5-vl"
Q_PDF = "Where should bugs be reported?"
Q_DOC = "What grew in every region?"


def tiny(max_pixels: int) -> tuple[object, object]:
    """A tiny random-weight Qwen2.5-VL (seeded) and its processor, resize bound ``max_pixels``."""
    from arr_coc import load_processor
    from arr_coc.testing import _model_class, tiny_checkpoint

    folder = tiny_checkpoint(FAMILY, Path(tempfile.mkdtemp(prefix="pages-model-")), max_pixels=max_pixels)
    model = _model_class(FAMILY).from_pretrained(str(folder), dtype=torch.float32).eval()
    return model, load_processor(str(folder))


def inputs_for(processor, images: list, question: str) -> dict:
    """The processor's inputs for one user turn: the pages, then the question."""
    content = [{"type": "image"} for _ in images] + [{"type": "text", "text": question}]
    text = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True)
    return processor(text=[text], images=images, return_tensors="pt")


def totals(data: Path, limit: int, mode: str, log) -> list[str]:
    """Per document: allocate_pages' grids, total, shares and kept sets against compress(budget_scope="prompt")."""
    from PIL import Image

    from arr_coc import compress
    from arr_coc.pages import allocate_pages
    from arr_coc.realizing import Realizer
    from arr_coc.training.data import MAX_PIXELS, load_jsonl
    from benchmarks.pages import build_documents, probe_ids

    model, processor = tiny(MAX_PIXELS)
    realizer = Realizer().eval().requires_grad_(False)
    questions = load_jsonl(data)
    skip = probe_ids(questions)
    docs = [(q, d) for q, d in build_documents(questions) if q.id not in skip]
    if limit and limit < len(docs):
        docs = [docs[int(i)] for i in np.linspace(0, len(docs) - 1, limit).round()]
    cm = compress(model, 0.01, processor=processor, foveate=True, budget_scope="prompt",
                  text_prior=mode == "text", realizer=realizer)  # fmt: skip
    n = grids = total_eq = share_eq = set_eq = pages = 0
    totals_seen = []
    t0 = time.perf_counter()
    for q, paths in docs:
        pics = [Image.open(p).convert("RGB") for p in paths]
        doc = allocate_pages(pics, q.query, 0.01, family=FAMILY, max_pixels=MAX_PIXELS, mode=mode, realizer=realizer)
        with torch.no_grad():
            cm(**inputs_for(processor, pics, q.query))
        alloc = cm.last_allocation[0]
        n += 1
        pages += len(pics)
        grids += sum(a.grid[1:] == p.grid for a, p in zip(alloc, doc.pages, strict=True))
        ours = sum(a.budget for a in alloc)
        total_eq += ours == doc.budget
        share_eq += sum(a.budget == p.budget for a, p in zip(alloc, doc.pages, strict=True))
        set_eq += sum(a.keep.tolist() == p.keep.tolist() for a, p in zip(alloc, doc.pages, strict=True))
        totals_seen.append(doc.budget)
        if n % 10 == 0:
            log(f"  {n}/{len(docs)} documents, {time.perf_counter() - t0:.0f} s")
    return [
        "| mode | documents | pages whose grid matches | documents whose kept total matches | pages whose share "
        "matches | pages whose kept set matches | kept total (min-max) |",
        "|---|---:|---:|---:|---:|---:|---|",
        f"| {mode} | {n} | {grids} / {pages} | {total_eq} / {n} | {share_eq} / {pages} | {set_eq} / {pages} | "
        f"{min(totals_seen)}-{max(totals_seen)} |",
    ]


def prefill(pdf: str, page_tokens: int, count: int, repeat: int, mode: str, log) -> list[str]:
    """The prefill table of a 20-page PDF (see the module doc)."""
    from arr_coc import compress
    from arr_coc.documents import load_document
    from arr_coc.realizing import Realizer

    cell = 28
    model, processor = tiny(page_tokens * cell * cell)
    pages = load_document(pdf, pages="1-20", target_pixels=2 * page_tokens * cell * cell)
    images = [p.image for p in pages]
    inputs = inputs_for(processor, images, Q_PDF)
    n_visual = int(inputs["image_grid_thw"].prod(-1).sum()) // 4
    realizer = Realizer().eval().requires_grad_(False)
    rows = [
        ("unpruned model", None, None),
        ("1% per page", 0.01, "item"),
        ("1% of the document", 0.01, "prompt"),
        (f"{count} tokens per page", count, "item"),
        (f"{count} tokens for the document", count, "prompt"),
    ]
    lines = [
        f"| budget ({mode}) | prefill tokens | visual tokens kept | pages with none | tower patches | decision + tower "
        "(ms) | forward on the pruned prompt (ms) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, budget, scope in rows:
        plan_ms, fwd_ms = [], []
        for _ in range(repeat + 1):  # the first run warms the caches (OCR, texture) and is not counted
            with torch.no_grad():
                if budget is None:
                    t1 = time.perf_counter()
                    model(**inputs)
                    t2 = time.perf_counter()
                    length, kept, empty = int(inputs["input_ids"].shape[1]), n_visual, 0
                    t0 = t1
                else:
                    cm = compress(model, budget, processor=processor, foveate=True, budget_scope=scope,
                                  text_prior=mode == "text", realizer=realizer)  # fmt: skip
                    t0 = time.perf_counter()
                    kwargs, _ = cm._plan(inputs["input_ids"], {k: v for k, v in inputs.items() if k != "input_ids"},
                                         generation=False)  # fmt: skip
                    t1 = time.perf_counter()
                    model(**kwargs)
                    t2 = time.perf_counter()
                    alloc = cm.last_allocation[0]
                    length, kept = int(kwargs["input_ids"].shape[1]), sum(a.budget for a in alloc)
                    empty = sum(a.budget == 0 for a in alloc)
            plan_ms.append((t1 - t0) * 1e3)
            fwd_ms.append((t2 - t1) * 1e3)
        plan = "-" if budget is None else f"{statistics.median(plan_ms[1:]):.0f}"
        lines.append(f"| {label} | {length} | {kept} | {empty} | {kept * 4} | {plan} | "
                     f"{statistics.median(fwd_ms[1:]):.0f} |")  # fmt: skip
        log("  " + lines[-1])
    lines += ["", f"{len(images)} pages, {n_visual} visual tokens unpruned, question: {Q_PDF!r}."]
    return lines


def document_scorings(pdf: Path = ROOT / "examples" / "report.pdf", pages: str = "1-4", query: str = Q_DOC) -> list:
    """The pages' ``Scoring`` objects as ``compress``'s decision hands them to ``split_prompt`` (scores, word units,
    text prior, boxes, evidence, the boxes' picture size), from ``allocate_pages`` on the PDF (every page read, its
    text layer's boxes: no OCR)."""
    from arr_coc.deciding import Scoring
    from arr_coc.pages import allocate_pages

    doc = allocate_pages(str(pdf), query, 1.0, family=FAMILY, mode="text", pages=pages, first_look_pages=False,
                         read_ahead_pages=False)  # fmt: skip
    out = []
    for p in doc.pages:
        a = p.allocation
        assert a is not None
        prior = torch.from_numpy(a.components["text_prior"])[None]  # (1, rows, cols)
        out.append(Scoring(torch.from_numpy(a.scores)[None], a.units, prior, "text", boxes=[a.text_boxes],
                           evidence=[a.evidence], sizes=[tuple(a.original)]))  # fmt: skip
    return out


def document_decision(scorings: list, focus: float, budget: float = 0.01, query: str = Q_DOC) -> list:
    """``split_prompt`` on the pages' scorings: each page's kept indices."""
    from arr_coc.attending import TokenBudget
    from arr_coc.integrations.document_budget import split_prompt
    from arr_coc.pages import PagesConfig

    flat = [s.scores.flatten() for s in scorings]
    return split_prompt(flat, TokenBudget.parse(budget), query, scorings, config=PagesConfig(focus=focus))


def decision(rounds: int, pdf: Path, pages: str, query: str, log) -> list[str]:
    """The before / after table of the document decision (see the module doc)."""
    from arr_coc.profiling import OpCounter
    from arr_coc.reading.matching import spans

    scorings = document_scorings(pdf, pages, query)
    counts, kept = {}, {}
    for focus in (0.0, 0.5):
        kept[focus] = document_decision(scorings, focus, query=query)  # warm-up
        with OpCounter() as c:
            document_decision(scorings, focus, query=query)
        counts[focus] = c
    times: dict[tuple[str, str, float], list[float]] = {}  # (clock, warm / cold, focus) -> ms per run
    for kind in ("warm", "cold"):
        for r in range(rounds):
            for focus in (0.0, 0.5) if r % 2 == 0 else (0.5, 0.0):
                if kind == "cold":
                    spans._WORDS.clear()
                t0, c0 = time.perf_counter(), time.thread_time()
                document_decision(scorings, focus, query=query)
                times.setdefault(("wall", kind, focus), []).append((time.perf_counter() - t0) * 1e3)
                times.setdefault(("cpu", kind, focus), []).append((time.thread_time() - c0) * 1e3)
        log(f"  {kind}: {rounds} rounds")
    shares = [[int(k.numel()) for k in kept[f]] for f in (0.0, 0.5)]
    changed = sum(not torch.equal(a, b) for a, b in zip(kept[0.0], kept[0.5], strict=True))
    cols = [(clock, kind) for clock in ("wall", "cpu") for kind in ("warm", "cold")]
    lines = [
        "| document decision, 4 pages | aten ops | host syncs | wall ms, warm | wall ms, cold | CPU ms, warm | "
        "CPU ms, cold |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for focus, label in ((0.0, "before: no in-page rule (focus 0)"), (0.5, "after: the in-page rule (focus 0.5)")):
        c = counts[focus]
        cells = " | ".join(f"{statistics.median(times[(clock, kind, focus)]):.2f}" for clock, kind in cols)
        lines.append(f"| {label} (medians) | {c.n_ops} | {c.n_syncs} | {cells} |")
    diffs = {
        col: [y - x for x, y in zip(times[(*col, 0.0)], times[(*col, 0.5)], strict=True)] for col in cols
    }  # after - before, run by run
    cells = " | ".join(f"{statistics.median(d):+.2f} ({min(d):+.1f} to {max(d):+.1f})" for d in diffs.values())
    lines.append(f"| after - before, paired (median of {rounds}; min to max) | "
                 f"{counts[0.5].n_ops - counts[0.0].n_ops} | {counts[0.5].n_syncs - counts[0.0].n_syncs} | "
                 f"{cells} |")  # fmt: skip
    n = sum(int(s.scores.numel()) for s in scorings)
    lines += ["", f"{pdf.name} pages {pages}, {query!r}: {len(scorings)} pages, {n} tokens, kept per page "
              f"{shares[1]} (the same shares before: {shares[0] == shares[1]}); pages whose kept cells the rule "
              f"changed: {changed}. Before: "
              f"{counts[0.0].summary(6)}. After: {counts[0.5].summary(6)}."]  # fmt: skip
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=None, help="realdocs-schema folder (questions.jsonl + images)")
    p.add_argument("--limit", type=int, default=100, help="documents for the totals (evenly spaced)")
    p.add_argument("--mode", default="texture", choices=("texture", "text"), help="the text path of both")
    p.add_argument("--pdf", default=None, help="a PDF of 20 pages or more for the prefill table")
    p.add_argument("--page-tokens", type=int, default=320, help="the prefill table's bound of tokens a page")
    p.add_argument("--count", type=int, default=64, help="the prefill table's token count")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--decision", type=int, default=0, help="rounds of the 4-page document decision's table (0: none)")
    p.add_argument("--decision-pdf", type=Path, default=ROOT / "examples" / "report.pdf", help="its PDF")
    p.add_argument("--decision-pages", default="1-4", help="its 4 pages")
    p.add_argument("--decision-query", default=Q_DOC, help="its question")
    p.add_argument("--out", type=Path, default=Path("/tmp/pages_model.md"))
    args = p.parse_args(argv)
    torch.manual_seed(0)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    lines = ["```", "PYTHONPATH=src python benchmarks/pages_model.py " + " ".join(sys.argv[1:]), "```", ""]
    if args.data:
        table = totals(args.data, args.limit, args.mode, log)
        lines += ["Kept totals, compress against allocate_pages:", "", *table, ""]
    if args.pdf:
        lines += ["Prefill of a 20-page PDF:", "", *prefill(args.pdf, args.page_tokens, args.count, args.repeat,
                                                           args.mode, log), ""]  # fmt: skip
    if args.decision:
        table = decision(args.decision, args.decision_pdf, args.decision_pages, args.decision_query, log)
        lines += ["The document decision of a 4-image prompt, before / after the in-page rule:", "", *table, ""]
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
