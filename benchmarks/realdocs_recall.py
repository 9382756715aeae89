"""Evidence recall on real annotated documents (realdocs-dev, or your own JSONL in its schema), end to end.

Example:
    python benchmarks/realdocs_recall.py --data /work/data/realdocs-dev --ocr-cache /tmp/ocr \\
        --relevance runs/evidence --out results/realdocs_recall.md

For every question, ``arr_coc.allocate(mode="text")`` runs on the page (Qwen2.5-VL grid, max_pixels = 1280*28*28,
the grid realdocs-dev's ``score.py`` scores on) once with the rules (``--relevance rules``) and, with ``--relevance``,
once with a trained checkpoint; the kept cells at 11.1 / 22.2 / 33.3% of the tokens (``select`` over the scores,
words kept whole, as ``allocate`` keeps them) are scored with realdocs' evidence-cell rule (a cell counts when a box
covers >= 25% of it, plus each box's centre cell). Reported: recall / full-hit by doc_type, by wording (paraphrased
vs literal) and by template.

Held-out figures: a checkpoint written by ``arr-coc train`` holds ``folds.json`` (the fold of every training page)
and one scorer per fold (``folds/<k>/``) trained without that fold; a question whose page was in training is scored
by its fold's scorer, so no page is scored by a model that saw it (document-level k-fold). Pages the checkpoint never
saw (your own data) use the checkpoint's final scorer.

``--data`` takes any realdocs-schema JSONL (``{"id", "query", "boxes", "image", "doc_type", "paraphrased",
"template"}``; only the first four are required). ``--ocr-cache`` keeps each page's OCR boxes on disk (the format of
``benchmarks/evidence_recall.py --ocr-cache`` and ``arr-coc train --ocr-cache``).

``--ocr-backend torch`` reads the pages with the OCR a GPU runs (``OcrConfig(backend="torch")``: the PP-OCR networks
on torch, every line of a page cut on the device and recognised in one call) on ``--ocr-device`` in ``--ocr-dtype``;
give it its own ``--ocr-cache`` folder (the cache files are named by the page alone, not by the backend). On a CPU
that backend takes 10-30 s a page (``--pages`` picks a subset: the first N pages of each doc_type, all their
questions).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arr_coc.attending import select  # noqa: E402
from arr_coc.training.data import FAMILY, MAX_PIXELS, Question, evidence_cells, load_jsonl  # noqa: E402
from arr_coc.training.evidence import BUDGETS, DiskOcrCache  # noqa: E402


def realizers(folder: Path | None) -> tuple[dict[str, int], dict[int, object], object | None]:
    """(page -> fold, fold -> Realizer, final Realizer) of a checkpoint folder (empty / None without one)."""
    if folder is None:
        return {}, {}, None
    from arr_coc.reading.matching.gated import gate_of
    from arr_coc.realizing import Realizer, relevance_folder

    gate, base = gate_of(folder)  # "hybrid[-floor][:FOLDER]": the same folder(s), gated (reading/matching/gated.py)
    name = str(folder).partition(":")[0] if gate else ""

    def load(path: Path) -> object:
        return Realizer.from_pretrained(f"{name}:{path}" if gate else path)

    folder = relevance_folder(base)  # a built-in name ("learned") -> the shipped folder (no folds: in-sample)
    final = load(folder)
    fold_of: dict[str, int] = {}
    per_fold: dict[int, object] = {}
    if (folder / "folds.json").is_file():
        fold_of = {k: int(v) for k, v in json.loads((folder / "folds.json").read_text()).items()}
        for k in sorted(set(fold_of.values())):
            sub = folder / "folds" / str(k)
            if (sub / "scorer.json").is_file():
                per_fold[k] = load(sub)
    return fold_of, per_fold, final


def recall_of(
    q: Question, ocr: DiskOcrCache, realizer: object | None, text_options: dict | None = None
) -> dict[str, float]:
    """Recall at each budget of ``allocate``'s scores (words whole) for one question."""
    import arr_coc

    page = q.load_image()
    alloc = arr_coc.allocate(
        page,
        q.query,
        BUDGETS[-1][1],
        family=FAMILY,
        max_pixels=MAX_PIXELS,
        mode="text",
        realizer=realizer,
        reader=ocr,
        text_options=text_options,
    )
    rows, cols = alloc.grid
    cells = evidence_cells(q.boxes, page.size, rows, cols)
    flat = torch.as_tensor(np.asarray(alloc.scores, dtype=np.float32)).ravel()
    n = rows * cols
    out = {}
    for label, frac in BUDGETS:
        k = max(1, min(n, round(frac * n)))
        keep = select(flat, k, units=list(alloc.units)).numpy()
        out[label] = float(np.isin(cells, keep).mean())
    return out


def table(questions: Sequence[Question], recalls: dict[str, list[dict[str, float]]], by: str) -> list[str]:
    """Markdown rows: one per allocator, recall / full-hit at 11.1% per group of ``by``."""

    def key(q: Question) -> str:
        return {
            "doc_type": q.doc_type,
            "wording": "paraphrased" if q.paraphrased else "literal",
            "template": q.template,
        }[by]

    groups = sorted({key(q) for q in questions})
    lines = [
        f"| allocator | {' | '.join(f'{g} (n={sum(key(q) == g for q in questions)})' for g in groups)} "
        f"| overall (n={len(questions)}) |",
        "|---|" + "---:|" * (len(groups) + 1),
    ]
    for name, rec in recalls.items():
        cells = []
        for g in [*groups, None]:
            vals = [r[BUDGETS[0][0]] for q, r in zip(questions, rec, strict=True) if g is None or key(q) == g]
            cells.append(f"{np.mean(vals):.3f} / {np.mean([v == 1.0 for v in vals]):.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Evidence recall of the text allocator on realdocs-schema documents.")
    p.add_argument("--data", required=True, help="realdocs-schema folder (questions.jsonl) or JSONL file")
    p.add_argument(
        "--relevance", type=Path, default=None, help="a checkpoint folder (arr-coc train) or built-in name to compare"
    )
    p.add_argument("--ocr-cache", type=Path, default=None, help="folder caching each page's OCR boxes")
    p.add_argument("--no-rules", action="store_true", help="with --relevance: score only the checkpoint")
    p.add_argument("--no-semantic", action="store_true", help="MiniLM off (text_options semantic False), every column")
    p.add_argument("--limit", type=int, default=0, help="only the first N questions")
    p.add_argument("--pages", type=int, default=0, help="only the first N pages of each doc_type (all their questions)")
    p.add_argument("--ocr-backend", choices=("onnxruntime", "torch"), default="onnxruntime", help="OcrConfig.backend")
    p.add_argument("--ocr-device", default=None, help="torch device of --ocr-backend torch (default: cpu)")
    p.add_argument("--ocr-dtype", default=None, help="float32 (default), bfloat16 or float16 (--ocr-backend torch)")
    p.add_argument("--out", default="results/realdocs_recall.md", help="markdown report; JSON goes next to it")
    args = p.parse_args(argv)
    questions = load_jsonl(args.data)
    if args.pages:
        firsts: dict[str, list[str]] = {}
        for q in questions:
            docs = firsts.setdefault(q.doc_type, [])
            if q.doc not in docs and len(docs) < args.pages:
                docs.append(q.doc)
        chosen = {d for docs in firsts.values() for d in docs}
        questions = [q for q in questions if q.doc in chosen]
    questions = questions[: args.limit] if args.limit else questions
    reader = None
    if args.ocr_backend != "onnxruntime" or args.ocr_device or args.ocr_dtype:
        from arr_coc.reading import TextReader

        reader = TextReader(backend=args.ocr_backend, device=args.ocr_device, dtype=args.ocr_dtype)
    ocr = DiskOcrCache(args.ocr_cache, reader)
    fold_of, per_fold, final = realizers(args.relevance)
    recalls: dict[str, list[dict[str, float]]] = {} if args.no_rules and final is not None else {"rules": []}
    if final is not None:
        recalls["learned"] = []
    held = 0
    from arr_coc.realizing import RULES, Realizer

    opts = {"semantic": False} if args.no_semantic else None
    rules = Realizer.from_pretrained(RULES)  # the rules by name (the default is routed-cells since round 12, issue 40)
    t0 = time.perf_counter()
    for i, q in enumerate(questions):
        if "rules" in recalls:
            recalls["rules"].append(recall_of(q, ocr, rules, opts))
        if final is not None:
            fold = fold_of.get(q.doc)
            held += fold in per_fold
            recalls["learned"].append(recall_of(q, ocr, per_fold.get(fold, final), opts))
        if (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(questions)}, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    wall = time.perf_counter() - t0
    command = "python benchmarks/realdocs_recall.py " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = [
        f"# Evidence recall on {args.data}",
        "",
        f"- command: `{command.strip()}`",
        f"- {len(questions)} questions, {len({q.doc for q in questions})} pages; grid {FAMILY}, max_pixels "
        f"{MAX_PIXELS}; evidence cells: realdocs' rule (>= 25% of a cell, plus each box's centre cell)",
        "- cells read `recall / full-hit` at 11.1% of the tokens (allocate's scores, words kept whole)",
    ]
    if final is not None and per_fold:
        lines.append(
            f"- learned: {args.relevance}; {held} of {len(questions)} questions scored by the scorer of "
            "their held-out fold (folds.json); the others' pages are not in the checkpoint's folds and are scored "
            "by its final scorer"
        )
    elif final is not None:
        lines.append(
            f"- learned: {args.relevance}; no folds.json: every question scored by its final scorer, so pages of its "
            "training data are scored IN-SAMPLE (optimistic; a shipped checkpoint has no folds)"
        )
    scorers = [getattr(r, "box_scorer", None) for r in (final, *per_fold.values())]
    gates = [sc.pages for sc in scorers if hasattr(sc, "pages")]
    if gates:  # a gated checkpoint (hybrid:FOLDER): how often each side scored a page (one call a question)
        lines.append(f"- gate: {sum(g['learned'] for g in gates)} calls scored by the learned scorer, "
                     f"{sum(g['rules'] for g in gates)} by the rules")  # fmt: skip
    lines.append(f"- wall time {wall:.0f} s (2 shared CPU cores, under contention; OCR from cache where cached)")
    for by in ("doc_type", "wording", "template"):
        lines += ["", f"## By {by} at 11.1%", "", *table(questions, recalls, by)]
    lines += [
        "",
        "## Overall at every budget (recall / full-hit)",
        "",
        "| allocator | " + " | ".join(b for b, _ in BUDGETS) + " |",
        "|---|" + "---:|" * len(BUDGETS),
    ]
    for name, rec in recalls.items():
        lines.append(
            f"| {name} | "
            + " | ".join(
                f"{np.mean([r[b] for r in rec]):.3f} / {np.mean([r[b] == 1.0 for r in rec]):.2f}" for b, _ in BUDGETS
            )
            + " |"
        )
    report = "\n".join(lines) + "\n"
    print(report)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "command": command.strip(),
                "questions": [
                    {
                        "id": q.id,
                        "doc": q.doc,
                        "doc_type": q.doc_type,
                        "paraphrased": q.paraphrased,
                        "template": q.template,
                        **{name: rec[i] for name, rec in recalls.items()},
                    }
                    for i, q in enumerate(questions)
                ],
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
