"""Multi-page tasks of ``eval``: a question about a document of several pages, the answer on one of them.

    mpdocvqa | slidevqa | pages (JSONL, local copy)  ─┐
    docgen-pages (several docgen pages, generated) ───┴─► PagesSample ──► arr_coc.pages.allocate_pages (one budget)
        ──► per (sample, budget): the answer page's share of the budget, whether it gets the most tokens, and (docgen
            pages, whose answer box is known) the share of the answer's cells kept; beside it the even split

The document decision is measured without a model (the pruned model's answer on several pages needs
``compress`` over a multi-image prompt): what it tells is whether the budget goes where the answer is.

Local copies, one JSON object a line (images relative to the file):

* ``--task mpdocvqa``: MP-DocVQA's own fields, ``{"questionId", "question", "page_ids": [...], "answers": [...],
  "answer_page_idx"}``, page images at ``images/<page_id>.jpg`` beside the file (as the dataset ships them), or an
  ``"images"`` list;
* ``--task slidevqa``: SlideVQA's ``{"qa_id", "question", "answer", "evidence_pages": [1-based], "images": [...]}``
  (or ``"deck_name"``: ``images/<deck_name>/*.jpg`` in slide order); the first evidence page is the answer page;
* ``--task pages``: ``{"id", "question", "images": [...], "answer_page" (0-based), "answers"}``.

``docgen-pages``: ``n_pages`` generated pages of distinct kinds; the question and its answer box come from one of them,
at position ``index % n_pages``; the others are the distractors (deterministic).

Example:
    >>> s = docgen_pages(2, n_pages=3)[1]
    >>> len(s.pages), s.answer_page, s.answer_box is not None
    (3, 1, True)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .datasets import BadSample, DatasetError

PAGE_TASKS = ("mpdocvqa", "slidevqa", "pages", "docgen-pages")


@dataclass
class PagesSample:
    """One question about a document of several pages.

    Attributes:
        id: unique id; question; answers: the reference answers.
        pages: the page images in order (paths or PIL images).
        answer_page: 0-based index of the page that holds the answer.
        answer_box: (x0, y0, x1, y1) of the answer on that page, in its pixels, when known (docgen pages).
    """

    id: str
    question: str
    answers: list[str]
    pages: list[Any]
    answer_page: int
    answer_box: tuple[float, float, float, float] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def docgen_pages(n: int, n_pages: int = 4, split: str = "test", seed: int = 0) -> list[PagesSample]:
    """``n`` documents of ``n_pages`` docgen pages each (distinct kinds); the answer's page is ``i % n_pages``."""
    from . import docgen

    kinds = list(docgen.KINDS)
    if n_pages > len(kinds):
        raise DatasetError(f"docgen-pages has at most {len(kinds)} pages a document (one a kind), not {n_pages}")
    out = []
    for i in range(n):
        chosen = [kinds[(i + j) % len(kinds)] for j in range(n_pages)]
        samples = [docgen.make_sample(split, kind, i, seed) for kind in chosen]
        at = i % n_pages
        samples.insert(at, samples.pop(0))  # the question's page (the first kind) at position i % n_pages
        q = samples[at]
        out.append(
            PagesSample(
                f"{split}/pages{n_pages}/{i}",
                q.query,
                [q.answer],
                [s.image for s in samples],
                at,
                tuple(float(v) for v in q.answer_box),
                {"kind": q.kind},
            )  # fmt: skip
        )
    return out


def _slides(root: Path, deck: str) -> list[str]:
    folder = root / "images" / deck
    files = [p for p in folder.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png")]

    def number(p: Path) -> tuple[int, str]:
        found = re.findall(r"\d+", p.stem)
        return (int(found[0]) if found else 0, p.name)

    return [str(p) for p in sorted(files, key=number)]


def _row(task: str, row: dict[str, Any], line: int, root: Path) -> PagesSample:
    def images(values: Sequence[Any]) -> list[str]:
        return [str(v) if Path(str(v)).is_absolute() else str(root / str(v)) for v in values]

    if task == "mpdocvqa":
        pages = (
            images(row["images"]) if "images" in row else [str(root / "images" / f"{p}.jpg") for p in row["page_ids"]]
        )
        return PagesSample(str(row["questionId"]), row["question"], list(row["answers"]), pages,
                           int(row["answer_page_idx"]))  # fmt: skip
    if task == "slidevqa":
        pages = images(row["images"]) if "images" in row else _slides(root, str(row["deck_name"]))
        evidence = row.get("evidence_pages") or [1]
        answer = row["answer"]
        return PagesSample(str(row["qa_id"]), row["question"], answer if isinstance(answer, list) else [str(answer)],
                           pages, int(evidence[0]) - 1)  # fmt: skip
    answers = row.get("answers", [])
    return PagesSample(str(row.get("id", f"line-{line}")), row["question"],
                       [answers] if isinstance(answers, str) else list(answers), images(row["images"]),
                       int(row["answer_page"]))  # fmt: skip


def open_pages(task: str, data: str | Path | None = None, limit: int | None = None,
               n_pages: int = 4) -> list[PagesSample | BadSample]:  # fmt: skip
    """The samples of a multi-page task: a local JSONL copy (``data``) or the generated ``docgen-pages``.

    A line that cannot be read (bad JSON, a missing field, an answer page outside the pages) is a
    :class:`~arr_coc.evaluation.datasets.BadSample` and the rest goes on."""
    if task not in PAGE_TASKS:
        raise DatasetError(f"unknown multi-page task {task!r}; choose one of {', '.join(PAGE_TASKS)}")
    if task == "docgen-pages":
        return list(docgen_pages(limit or 20, n_pages))
    if data is None:
        raise DatasetError(f"--task {task} needs --data: a JSONL file (see arr_coc.evaluation.multipage)")
    path = Path(data)
    if path.is_dir():
        found = sorted(path.glob("*.jsonl"))
        if not found:
            raise DatasetError(f"{path}: no .jsonl file in this folder")
        path = found[0]
    out: list[PagesSample | BadSample] = []
    with open(path, encoding="utf-8") as f:
        for line, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                s = _row(task, json.loads(text), line, path.parent)
                if not 0 <= s.answer_page < len(s.pages):
                    raise ValueError(f"answer page {s.answer_page + 1} of {len(s.pages)} pages")
                out.append(s)
            except (ValueError, KeyError, TypeError) as err:
                out.append(BadSample(f"line-{line}", f"{path}:{line}: {type(err).__name__}: {err}"))
            if limit is not None and len(out) >= limit:
                break
    return out


def score_sample(sample: PagesSample, budgets: Sequence[float], mode: str = "text", **options: Any) -> list[dict]:
    """The document decision for one sample at each budget, with the even split beside it.

    Returns one record a (budget, allocator): ``{"id", "budget", "allocator" ("document" | "even"), "answer_share"
    (the answer page's share of the tokens kept), "page_hit" (it alone gets the most tokens), "recall" (share of the
    answer's cells kept, docgen pages only, else None), "tokens"}``."""
    from ..evaluation.evidence import answer_cells, evidence_recall
    from ..pages import allocate_pages, decide_pages, document_budget
    from ..realizing import allocate, default_realizer

    doc = allocate_pages(sample.pages, sample.question, budgets[0], mode=mode, **options)
    allocations = [p.allocation for p in doc.pages]
    for i, p in enumerate(doc.pages):  # the even split needs every page's scores
        if allocations[i] is None:
            allocations[i] = allocate(p.page.image, sample.question, 1.0, family=doc.family, mode=mode)
    relevance = {i: p.relevance for i, p in enumerate(doc.pages) if p.relevance is not None}
    page = doc.pages[sample.answer_page]
    cells = None
    if sample.answer_box is not None:
        cells = answer_cells(sample.answer_box, page.page.original[0], page.page.original[1], *page.grid)
    records = []
    for b in budgets:
        k = document_budget(b, doc.n_tokens, None, doc.realizer or default_realizer())
        for name, keeps in (("document", doc.select(b)), ("even", decide_pages(allocations, relevance, False, k))):
            sizes = np.array([len(x) for x in keeps])
            total, top = int(sizes.sum()), sizes.max()
            records.append({
                "id": sample.id, "budget": b, "allocator": name,
                "answer_share": float(sizes[sample.answer_page] / total) if total else 0.0,
                "page_hit": bool(total and sizes[sample.answer_page] == top and (sizes == top).sum() < 2),
                "recall": None if cells is None else evidence_recall(keeps[sample.answer_page].numpy(), cells),
                "tokens": total,
            })  # fmt: skip
    return records


def summarize_pages(records: Sequence[dict]) -> str:
    """A markdown table: per (allocator, budget) the samples, the answer page's share, page hits and answer recall."""
    groups: dict[tuple[str, float], list[dict]] = {}
    for r in records:
        groups.setdefault((r["allocator"], r["budget"]), []).append(r)
    lines = ["| allocator | budget | samples | answer page's share | answer page first | answer recall |",
             "|---|---:|---:|---:|---:|---:|"]  # fmt: skip
    for (name, b), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rec = [r["recall"] for r in rs if r["recall"] is not None]
        lines.append(
            f"| {name} | {b:g} | {len(rs)} | {np.mean([r['answer_share'] for r in rs]):.3f} "
            f"| {np.mean([r['page_hit'] for r in rs]):.3f} | {np.mean(rec):.3f} |"
            if rec
            else f"| {name} | {b:g} | {len(rs)} | {np.mean([r['answer_share'] for r in rs]):.3f} "
            f"| {np.mean([r['page_hit'] for r in rs]):.3f} | — |"
        )
    return "\n".join(lines)


def run_pages_eval(
    task: str,
    data: str | Path | None = None,
    budgets: Sequence[float] = (0.01, 0.028),
    limit: int | None = None,
    mode: str = "text",
    n_pages: int = 4,
) -> tuple[list[dict], str]:
    """Every sample of a multi-page task through the document decision: (records, the markdown table). A sample that
    fails is one ``{"id", "error"}`` record and the run goes on."""
    records: list[dict] = []
    for s in open_pages(task, data, limit, n_pages):
        if isinstance(s, BadSample):
            records.append({"id": s.id, "error": s.error})
            continue
        try:
            records += score_sample(s, budgets, mode)
        except (ValueError, OSError) as err:
            records.append({"id": s.id, "error": str(err)})
    return records, summarize_pages([r for r in records if "error" not in r])


def pages_eval_main(args: Any) -> int:
    """``arr-coc eval --task docgen-pages|mpdocvqa|slidevqa|pages``: the table printed and written to
    ``--out``/results.md, one record a (sample, budget, allocator) in ``--out``/pages.jsonl. Budgets: ``--budgets``
    as fractions of the document's tokens or counts (the single-page default is replaced by 0.01,0.028)."""
    import sys

    from .runner import DEFAULT_BUDGETS

    text = args.budgets if args.budgets != DEFAULT_BUDGETS else "0.01,0.028"
    budgets = [float(b) if "." in b else int(b) for b in text.split(",") if b.strip() and b.strip() != "1.0"]
    try:
        records, table = run_pages_eval(args.task, args.data, budgets, args.limit)
    except DatasetError as err:
        print(f"arr-coc: error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (out / "results.md").write_text(table + "\n", encoding="utf-8")
    bad = sum("error" in r for r in records)
    print(table)
    if bad:
        print(f"{bad} samples could not be read; their errors are in {out / 'pages.jsonl'}")
    print(f"wrote {out / 'pages.jsonl'}, {out / 'results.md'}")
    return 1 if bad and bad == len(records) else 0


__all__ = [
    "PAGE_TASKS",
    "PagesSample",
    "docgen_pages",
    "open_pages",
    "pages_eval_main",
    "run_pages_eval",
    "score_sample",
    "summarize_pages",
]
