"""Which questions ``--relevance routed`` gives to the rules, and routed's recall from a rules + learned run (issue 40).

Examples:
    python benchmarks/routed_choice.py --data /work/data/realdocs-dev --ocr-cache /work/cache/ocr --out rd_route.jsonl
    python benchmarks/routed_choice.py --paraphrases A,B,C,D:dev --ocr-cache /work/cache/ocr --out par_route.jsonl
    python benchmarks/routed_choice.py --data Q.jsonl --ocr-cache DIR --results L.json --routed R.json

The route (``arr_coc.reading.matching.routed``) sends a question to the rules when their structural evidence found
its referent on the page or the table-cell crossing found its cell, and needs no learned scorer to decide: the page's
OCR (from the cache), its layout and the question. This prints how many questions of each kind go to the rules, and
why, and writes one line per question (``id``, ``kind``, ``route``: the rule, or ``learned``).

A routed allocation is exactly the rules' (routed to the rules) or the learned scorer's (routed to it) for the same
question: with ``--results`` (a ``realdocs_recall.py --relevance learned`` JSON, both columns) it prints routed's
recall at 11.1% composed that way next to the two, by kind (and ``routed-structure``'s: the table-cell questions to
the learned scorer; and ``routed-tables``'s: structural evidence, or a literal question on a table page -- the
third criterion, ``routed.table_page`` and ``routed.literal_question`` -- to the rules), each also as its mean
per-question difference from the rules with that difference's standard error (``--results`` repeats; a
``paraphrase_set.py run`` JSON reads too, and only the questions it holds are composed); with ``--routed`` (a
``realdocs_recall.py --relevance routed --no-rules`` JSON of the same questions) it checks the composition against
the end-to-end run, question by question (the count that differ is printed; only the count); ``--routed-tables``
does the same for a ``--relevance routed-tables --no-rules`` JSON against ``routed-tables``'s composition.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

LABEL = "11.1%"


def routes(
    questions: Sequence,
    ocr_cache: str,
    tables: dict[str, tuple[bool, bool]] | None = None,
    cells: dict[str, str | None] | None = None,
) -> dict[str, str]:
    """question id -> the route's reason to give it to the rules, or ``"learned"``, as ``allocate(mode="text")``
    decides it (the page read at its own size, the question normalised); ``tables`` (when given) gets, per question,
    the two parts of ``routed-tables``'s third criterion: (its page reads as a table, the question is literal);
    ``cells`` (when given) ``routed-cells``'s fourth criterion's reason (``routed.printed_cell``) or None."""
    from arr_coc.query import normalize_text
    from arr_coc.reading import QueryMatcher, default_reading
    from arr_coc.reading.matching.routed import literal_question, printed_cell, table_page, why_rules
    from arr_coc.training.evidence import DiskOcrCache

    ocr = DiskOcrCache(ocr_cache)
    matcher = QueryMatcher(default_reading().config, embedder=default_reading().embedder)
    out = {}
    for q in questions:
        boxes = ocr.read(q.load_image())
        query = normalize_text(q.query)
        ev = matcher.evidence(boxes, query)
        out[q.id] = why_rules(matcher, boxes, query, ev) or "learned"
        if tables is not None:
            tables[q.id] = (bool(boxes) and table_page(boxes), bool(query) and literal_question(query, boxes))
        if cells is not None:
            cells[q.id] = printed_cell(matcher, boxes, query) if boxes and query else None
    return out


def _recall(v: object) -> float:
    return float(v[LABEL]) if isinstance(v, dict) else float(v)


def _records(path: Path) -> list[dict]:
    """Per-question records of a ``realdocs_recall.py`` JSON (``{"questions": [...]}``) or a ``paraphrase_set.py
    run`` JSON (a list)."""
    data = json.loads(path.read_text())
    return data["questions"] if isinstance(data, dict) else data


def _paired(d: np.ndarray) -> str:
    """Mean of per-question differences and its standard error (0 for one question)."""
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
    return f"{d.mean():+.3f} ({se:.3f})"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", action="append", default=[], help="realdocs-schema questions (folder or JSONL)")
    p.add_argument(
        "--paraphrases", default=None, help="STYLES:SPLITS of the paraphrase set on realdocs-dev, e.g. A,B,C,D:dev"
    )
    p.add_argument("--realdocs", default="/work/data/realdocs-dev", help="the folder the paraphrase set rephrases")
    p.add_argument("--ocr-cache", required=True)
    p.add_argument(
        "--results",
        type=Path,
        action="append",
        default=[],
        help="realdocs_recall.py (or paraphrase_set.py run) JSON with rules and learned; repeatable",
    )
    p.add_argument("--routed", type=Path, default=None, help="realdocs_recall.py --relevance routed JSON to check")
    p.add_argument(
        "--routed-tables", type=Path, default=None, help="realdocs_recall.py --relevance routed-tables JSON to check"
    )
    p.add_argument(
        "--routed-cells", type=Path, default=None, help="realdocs_recall.py --relevance routed-cells JSON to check"
    )
    p.add_argument("--out", type=Path, default=None, help="one JSON line per question: id, kind, route")
    args = p.parse_args(argv)

    from arr_coc.training.data import load_jsonl

    questions = [q for d in args.data for q in load_jsonl(d)]
    kind_of = {q.id: q.doc_type for q in questions}
    if args.paraphrases:
        from benchmarks.paraphrase_set import QUESTIONS, QUESTIONS_C, QUESTIONS_D, QUESTIONS_E, QUESTIONS_F, load

        styles, _, splits = args.paraphrases.partition(":")
        rows = load(Path(args.realdocs), (QUESTIONS, QUESTIONS_C, QUESTIONS_D, QUESTIONS_E, QUESTIONS_F))
        rows = [(par, q) for par, q in rows if par["style"] in styles.split(",") and par["split"] in splits.split(",")]
        questions += [q for _, q in rows]
        kind_of.update({q.id: f"{par['style']} {par['split']} {q.doc_type}" for par, q in rows})
    tab: dict[str, tuple[bool, bool]] = {}
    printed: dict[str, str | None] = {}
    route = routes(questions, args.ocr_cache, tab, printed)
    # routed-tables: the structural evidence's rule, else "table-literal" where the third criterion fires
    rt = {
        i: r if r not in ("learned", "table-cell") else ("table-literal" if all(tab[i]) else "learned")
        for i, r in route.items()
    }
    # routed-cells: the structural evidence's rule, else the fourth criterion's reason where it fires
    rc = {i: r if r not in ("learned", "table-cell") else (printed[i] or "learned") for i, r in route.items()}
    print(f"{len(questions)} questions; the route gives {sum(r != 'learned' for r in route.values())} to the rules")
    page, literal = (sum(t[k] for t in tab.values()) for k in (0, 1))
    print(
        f"routed-tables: {page} pages read as a table, {literal} questions literal, {sum(map(all, tab.values()))} both"
    )
    print("| kind (n) | to the rules | why | routed-tables: to the rules | why | routed-cells: to the rules | why |")
    print("|---|---:|---|---:|---|---:|---|")
    by_kind: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        by_kind[kind_of[q.id]].append(route[q.id])
    rt_kind: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        rt_kind[kind_of[q.id]].append(rt[q.id])
    rc_kind: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        rc_kind[kind_of[q.id]].append(rc[q.id])
    for kind in sorted(by_kind):
        cols = []
        for r in (by_kind[kind], rt_kind[kind], rc_kind[kind]):
            why = Counter(x for x in r if x != "learned")
            cols += [str(len(r) - r.count("learned")), ", ".join(f"{k} {n}" for k, n in why.items())]
        print(f"| {kind} ({len(by_kind[kind])}) | " + " | ".join(cols) + " |")
    if args.out:
        args.out.write_text(
            "".join(
                json.dumps({"id": i, "kind": kind_of[i], "route": r, "routed_tables": rt[i], "routed_cells": rc[i]})
                + "\n"
                for i, r in route.items()
            )
        )
    if args.results:
        recs = {r["id"]: r for path in args.results for r in _records(path)}
        comp = {
            i: _recall(recs[i]["rules"] if route[i] != "learned" else recs[i]["learned"]) for i in route if i in recs
        }
        structure = {  # routed-structure: a crossed table cell goes to the learned scorer too
            i: _recall(recs[i]["rules"] if route[i] not in ("learned", "table-cell") else recs[i]["learned"])
            for i in comp
        }
        tables = {i: _recall(recs[i]["rules"] if rt[i] != "learned" else recs[i]["learned"]) for i in comp}
        cells = {i: _recall(recs[i]["rules"] if rc[i] != "learned" else recs[i]["learned"]) for i in comp}
        print(
            "\n| kind (n) | rules | learned | routed (composed) | routed-structure (composed) "
            "| routed-tables (composed) | routed-cells (composed) | routed - rules (se) "
            "| routed-structure - rules (se) | routed-tables - rules (se) | routed-cells - rules (se) "
            "| routed-cells - routed-structure (se) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for kind in [*sorted(by_kind), "overall"]:
            ids = [i for i in comp if kind == "overall" or kind_of[i] == kind]
            if ids:
                rules = np.array([_recall(recs[i]["rules"]) for i in ids])
                row = [rules.mean(), np.mean([_recall(recs[i]["learned"]) for i in ids])]
                row += [np.mean([c[i] for i in ids]) for c in (comp, structure, tables, cells)]
                diffs = [_paired(np.array([c[i] for i in ids]) - rules) for c in (comp, structure, tables, cells)]
                diffs.append(_paired(np.array([cells[i] - structure[i] for i in ids])))
                print(f"| {kind} ({len(ids)}) | " + " | ".join([*(f"{c:.3f}" for c in row), *diffs]) + " |")
        for path, composed, name in (
            (args.routed, comp, "routed"),
            (args.routed_tables, tables, "routed-tables"),
            (args.routed_cells, cells, "routed-cells"),
        ):
            if path:
                e2e = {r["id"]: _recall(r["learned"]) for r in json.loads(path.read_text())["questions"]}
                differ = sum(abs(e2e[i] - composed[i]) > 1e-9 for i in composed if i in e2e)
                print(f"\n{name} end to end vs composed: {differ} of {sum(i in e2e for i in composed)} differ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
