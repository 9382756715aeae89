"""Rules vs learned vs "learned where sure, rules where not" on a training run's source-grouped folds (issue 40).

Example:
    arr-coc train --data /work/data/realdocs-dev --docgen-dev 12 --cached-only --ocr-cache /work/cache/ocr \\
        --feature-cache FEATS --epochs 15 --folds 4 --inner-folds 3 --family res16-b2-x5-page-e30 --out RUN
    python benchmarks/default_choice.py --run RUN --data /work/data/realdocs-dev --docgen-dev 12 \\
        --ocr-cache /work/cache/ocr --feature-cache FEATS --out results.json

Every question of the run's folds (``RUN/folds.json``: page -> fold) is scored by its fold's scorer (``RUN/folds/
<k>``, trained without that fold), as the learned scorer, and gated by ``arr_coc.reading.matching.gated``
(``agree``: the learned scorer where its ensemble's majority votes for its best box, else the rules; ``floor``: the
maximum of both), and routed by ``arr_coc.reading.matching.routed`` (``routed``: the rules where their structural
evidence or the table-cell crossing found the answer's place, else the learned scorer), at the box-feature level the
run itself validates on (``recall_at``: the text map's recall at 11.1%, words whole). Nothing is fitted here: the
gates and the route have no threshold chosen on any fold. Prints a markdown table by doc_type with [min-max over
folds], the share of pages the ``agree`` gate gave to the learned scorer and the share the route gave to the rules.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NAMES = ("rules", "learned", "hybrid", "hybrid-floor", "routed")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", type=Path, default=None, help="an arr-coc train output folder (folds.json, folds/<k>)")
    p.add_argument(
        "--checkpoint", default=None, help="instead of --run: one checkpoint folder or built-in name for every question"
    )
    p.add_argument("--data", action="append", default=[], help="realdocs-schema questions (repeatable)")
    p.add_argument("--paraphrases", default=None, help="also the paraphrase set's questions of this split (held-out)")
    p.add_argument("--split", action="append", default=[], help="NAME=JSONL: report the questions of JSONL as NAME")
    p.add_argument("--docgen-dev", type=int, default=0)
    p.add_argument("--ocr-cache", required=True)
    p.add_argument("--feature-cache", required=True)
    p.add_argument("--out", type=Path, default=None, help="per-question JSON")
    args = p.parse_args(argv)

    from arr_coc.query import normalize_text
    from arr_coc.reading import QueryMatcher, default_reading
    from arr_coc.reading.matching.gated import GatedScorer
    from arr_coc.reading.matching.learned import BoxScorer
    from arr_coc.reading.matching.routed import why_rules
    from arr_coc.training.data import docgen_questions, load_jsonl
    from arr_coc.training.evidence import BUDGETS, DiskOcrCache, extract, recall_at, rule_scores

    if (args.run is None) == (args.checkpoint is None):
        p.error("give one of --run and --checkpoint")
    questions = [q for d in args.data for q in load_jsonl(d)]
    if args.paraphrases:
        from benchmarks.paraphrase_set import load

        base = args.data[0] if args.data else "/work/data/realdocs-dev"
        questions = [q for par, q in load(Path(base)) if par["split"] == args.paraphrases]
    if args.docgen_dev:
        questions += docgen_questions("dev", args.docgen_dev, 0)
    split_of = {}
    for spec in args.split:
        name, _, path = spec.partition("=")
        split_of.update({q.id: name for q in load_jsonl(path)})
    matcher = QueryMatcher(default_reading().config, embedder=default_reading().embedder)
    records = extract(questions, matcher, DiskOcrCache(args.ocr_cache), None, args.feature_cache, True)
    if args.run is not None:
        fold_of = {k: int(v) for k, v in json.loads((args.run / "folds.json").read_text()).items()}
        scorers = {}
        for k in sorted(set(fold_of.values())):
            sub = args.run / "folds" / str(k)
            scorers[k] = BoxScorer.load(sub) if (sub / "scorer.json").is_file() else None
    else:
        from arr_coc.realizing import relevance_folder

        fold_of, scorers = {}, {0: BoxScorer.load(relevance_folder(args.checkpoint))}
    rows = []
    agree_pages = {"learned": 0, "rules": 0}
    for r in records:
        f = fold_of.get(r.question.doc) if args.run is not None else 0
        if f is None or scorers.get(f) is None:
            continue
        sc = scorers[f]
        feats = sc.own_columns(r.feats)
        gate = GatedScorer(sc, "agree")
        query = normalize_text(r.question.query)  # as the records were made (training/records.py)
        why = why_rules(matcher, r.boxes, query, matcher.evidence(r.boxes, query))  # the route (routed.py)
        scores = {
            "rules": rule_scores(r),
            "learned": sc.box_scores(feats),
            "hybrid": gate.box_scores(feats),
            "hybrid-floor": GatedScorer(sc, "floor").box_scores(feats),
        }
        scores["routed"] = scores["rules"] if why is not None else scores["learned"]
        for side, n in gate.pages.items():
            agree_pages[side] += n
        q = r.question
        rows.append(
            {
                "id": q.id,
                "doc_type": split_of.get(q.id, q.doc_type) if split_of else q.doc_type,
                "paraphrased": bool(q.paraphrased),
                "fold": f,
                "sure": gate.pages["learned"] > 0,
                "route": why or "learned",
                **{n: recall_at(r, s, BUDGETS[:1])[BUDGETS[0][0]] for n, s in scores.items()},
            }
        )
    kinds = sorted({r["doc_type"] for r in rows})
    print(
        f"{len(rows)} questions of {len(records)} scored by "
        + (f"their fold's scorer ({args.run})" if args.run else args.checkpoint)
    )
    print("| kind (n) | " + " | ".join(NAMES) + " | agree gate: pages learned | route: to the rules |")
    print("|---|" + "---:|" * (len(NAMES) + 2))
    for kind in [*kinds, "literal", "paraphrased", "overall"]:
        sel = [
            r
            for r in rows
            if kind == "overall"
            or r["doc_type"] == kind
            or (kind == "literal" and not r["paraphrased"])
            or (kind == "paraphrased" and r["paraphrased"])
        ]
        if not sel:
            continue
        cells = []
        for n in NAMES:
            by_fold = [np.mean([r[n] for r in sel if r["fold"] == f]) for f in sorted({r["fold"] for r in sel})]
            cells.append(f"{np.mean([r[n] for r in sel]):.3f} [{min(by_fold):.2f}-{max(by_fold):.2f}]")
        sure = np.mean([r["sure"] for r in sel])
        routed = np.mean([r["route"] != "learned" for r in sel])
        print(f"| {kind} ({len(sel)}) | " + " | ".join(cells) + f" | {sure:.2f} | {routed:.2f} |")
    print(f"agree gate over all pages: {agree_pages}")
    print(f"route: {dict(Counter(r['route'] for r in rows))}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
