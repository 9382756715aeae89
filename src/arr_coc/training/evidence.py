"""The evidence objective: train the learned box scorer (``arr_coc.reading.matching.BoxScorer``) on answer boxes.

Steps (each a function taking data and returning data):
    extract     OCR (cached on disk per page) + the rule matcher's per-box features, labels (OCR boxes that overlap an
                evidence box), evidence cells, word units -> one ``Record`` per question
    fit         a listwise ranking loss over each question's boxes: softmax cross-entropy against the uniform
                distribution over its evidence boxes (the model learns to put evidence boxes first), Adam, seeded
    recall      the text map a record's box scores paint (``paint_boxes``, the structural budget rule on top), kept
                top-k with whole words (``arr_coc.attending.select``), evidence recall at 11.1 / 22.2 / 33.3%
    cross-validate  document-level folds: train on k-1, score the held-out fold, for rules and each candidate

``main(argv)`` is ``arr-coc train --objective evidence``: it picks the model family by cross-validated recall,
trains the chosen one on every question, writes the checkpoint folder (``model.safetensors``, ``scorer.json``,
``config.json``, ``README.md`` card, ``metrics.json``) and, with ``--ablation``, the held-out recall without each
feature group.

Example (a small run on realdocs-dev and docgen's dev split, OCR cached)::

    arr-coc train --data /work/data/realdocs-dev --docgen-dev 12 --ocr-cache /tmp/ocr --out runs/evidence
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..reading.matching.learned import FEATURE_GROUPS, FEATURES, BoxScorer, box_features
from .data import Question, box_labels, docgen_questions, folds, grid_of, load_jsonl, question_cells

BUDGETS: tuple[tuple[str, float], ...] = (("11.1%", 1 / 9), ("22.2%", 2 / 9), ("33.3%", 1 / 3))
CANDIDATES: dict[str, int] = {"linear": 0, "mlp16": 16, "mlp32": 32}  # name -> hidden units
RULE = FEATURES.index("rule")


# --------------------------------------------------------------------------------------------------- OCR cache


class DiskOcrCache:
    """OCR boxes per page on disk, one JSON file per page named by a blake2b hash of its RGB pixels and shape (the
    format of ``benchmarks/evidence_recall.py --ocr-cache``, so the two share a folder). Without a folder, OCR runs
    every time."""

    def __init__(self, folder: str | Path | None, reader: Any = None) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._reader = reader

    def path(self, image: Any) -> Path | None:
        """The page's cache file (None without a folder)."""
        if self.folder is None:
            return None
        arr = np.asarray(image)
        return (
            self.folder
            / f"{hashlib.blake2b(arr.tobytes() + repr(arr.shape).encode(), digest_size=16).hexdigest()}.json"
        )

    def read(self, image: Any) -> list:
        from ..reading import TextBox, shared_reader

        path = self.path(image)
        if path is not None:
            if path.exists():
                return [TextBox(t, tuple(b), c) for t, b, c in json.loads(path.read_text())]
        reader = self._reader or shared_reader(warm=True)
        boxes = reader.read(image)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps([[b.text, list(b.box), b.confidence] for b in boxes]))
        return boxes


# --------------------------------------------------------------------------------------------------- records


@dataclass
class Record:
    """One question, ready for training and scoring."""

    question: Question
    feats: np.ndarray  # (N, F) float32
    labels: np.ndarray  # (N,) 1 for evidence boxes
    boxes: list  # N TextBox
    size: tuple[int, int]  # (W, H) original
    rows: int
    cols: int
    cells: np.ndarray  # evidence cells (raster indices)
    units: list[np.ndarray]  # cells of each word
    ev_map: np.ndarray | None  # (rows, cols) structural evidence map, None when no rule fired
    damp: float  # structure.evidence_damp


def _cache_path(folder: Path | None, q: Question) -> Path | None:
    if folder is None:
        return None
    key = json.dumps([q.id, q.query, q.boxes, q.cell_rule, FEATURES])
    return folder / f"{hashlib.blake2b(key.encode(), digest_size=12).hexdigest()}.pkl"


def extract(
    questions: Sequence[Question],
    matcher: Any,
    ocr: DiskOcrCache,
    log: Callable[[str], None] | None = None,
    cache: str | Path | None = None,
    cached_only: bool = False,
) -> list[Record]:
    """Features, labels and scoring geometry of each question (questions without an evidence cell are skipped).

    With ``cache`` (a folder), each question's record is kept on disk (keyed by the question and the feature list)
    and reused: a second run with the same data skips OCR and MiniLM. Delete the folder after changing the rules.
    ``cached_only``: skip questions whose page has no OCR cache entry yet (no OCR runs)."""
    import dataclasses
    import pickle

    folder = Path(cache) if cache is not None else None
    from ..query import normalize_text
    from ..reading import TextBox, paint_boxes

    out: list[Record] = []
    pages: dict[str, tuple[Any, list] | None] = {}
    t0 = time.perf_counter()
    for n, q in enumerate(questions):
        path = _cache_path(folder, q)
        if path is not None and path.exists():
            rec = pickle.loads(path.read_bytes())
            rec.question = q
            out.append(rec)
            continue
        if q.doc not in pages:
            pages.clear()  # questions of one page are adjacent; keep one page in memory
            page = q.load_image()
            if cached_only and not (ocr.path(page) is not None and ocr.path(page).exists()):
                pages[q.doc] = None
                continue
            pages[q.doc] = (page.size, ocr.read(page))
        if pages[q.doc] is None:
            continue
        size, boxes = pages[q.doc]
        rows, cols = grid_of(*size)
        query = normalize_text(q.query)
        layout = matcher.layout_of(boxes) if boxes else None
        ev = matcher.evidence(boxes, query, layout)
        feats = box_features(matcher, boxes, query, layout, ev, size)
        ev_map = None
        if ev is not None and ev.regions:
            regions = [TextBox("", r) for r in ev.regions]
            ev_map = paint_boxes(regions, ev.weights or [1.0] * len(regions), rows, cols, size)
        cells = question_cells(q, size, rows, cols)
        out.append(
            Record(
                q,
                feats,
                box_labels(boxes, q.boxes),
                boxes,
                size,
                rows,
                cols,
                cells,
                matcher.units(boxes, rows, cols, size),
                ev_map,
                matcher.evidence_damp,
            )
        )
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pickle.dumps(dataclasses.replace(out[-1], question=dataclasses.replace(q, image=None))))
        if log is not None and ((n + 1) % 100 == 0 or n + 1 == len(questions)):
            log(f"  features {n + 1}/{len(questions)}, {time.perf_counter() - t0:.0f} s")
    return out


# --------------------------------------------------------------------------------------------------- scoring


def text_map(record: Record, box_scores: np.ndarray) -> np.ndarray:
    """(rows, cols) map the box scores paint, with the structural budget rule (evidence first, the rest damped)."""
    from ..reading import paint_boxes

    out = paint_boxes(record.boxes, box_scores, record.rows, record.cols, record.size)
    if record.ev_map is not None:
        out = np.where(record.ev_map > 0, record.ev_map, record.damp * out).astype(np.float32)
    return out


def recall_at(record: Record, box_scores: np.ndarray) -> dict[str, float]:
    """Evidence recall at each budget of the cells kept by top-k of ``text_map`` (whole words; ties: lower index)."""
    from ..attending import select

    flat = torch.from_numpy(text_map(record, box_scores).ravel())
    n = record.rows * record.cols
    out = {}
    for label, frac in BUDGETS:
        k = max(1, min(n, round(frac * n)))
        keep = select(flat, k, units=record.units).numpy()
        out[label] = float(np.isin(record.cells, keep).mean())
    return out


def rule_scores(record: Record) -> np.ndarray:
    """The rules' own per-box scores (the ``rule`` feature)."""
    return record.feats[:, RULE]


# --------------------------------------------------------------------------------------------------- training


def fit(
    records: Sequence[Record],
    hidden: int = 32,
    drop_groups: Sequence[str] = (),
    epochs: int = 40,
    lr: float = 3e-3,
    weight_decay: float = 1e-4,
    batch: int = 32,
    seed: int = 0,
) -> BoxScorer:
    """Train a ``BoxScorer`` with the listwise loss on ``records`` (those with at least one evidence box), seeded."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train = [r for r in records if r.labels.any() and len(r.feats)]
    scorer = BoxScorer(hidden=hidden, drop_groups=drop_groups)
    if not train:
        return scorer.eval()
    scorer.fit_standardisation(torch.from_numpy(np.concatenate([r.feats for r in train])))
    opt = torch.optim.Adam(scorer.parameters(), lr=lr, weight_decay=weight_decay)
    order = np.argsort([len(r.feats) for r in train], kind="stable")  # batches of similar length: little padding
    chunks = [order[i : i + batch] for i in range(0, len(order), batch)]
    padded = []
    for idx in chunks:
        m = max(len(train[i].feats) for i in idx)
        x = np.zeros((len(idx), m, len(FEATURES)), dtype=np.float32)  # (B, M, F)
        y = np.zeros((len(idx), m), dtype=np.float32)  # (B, M)
        valid = np.zeros((len(idx), m), dtype=bool)
        for b, i in enumerate(idx):
            n = len(train[i].feats)
            x[b, :n], y[b, :n], valid[b, :n] = train[i].feats, train[i].labels, True
        y /= y.sum(1, keepdims=True)
        padded.append((torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(valid)))
    scorer.train()
    for _ in range(epochs):
        for j in rng.permutation(len(padded)):
            x, y, valid = padded[j]
            logits = scorer(x).masked_fill(~valid, -1e4)  # (B, M)
            loss = -(y * torch.log_softmax(logits, dim=1)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return scorer.eval()


def cross_validate(
    records: Sequence[Record],
    fold_of: Sequence[int],
    k: int,
    make: Callable[[Sequence[Record]], BoxScorer] | None,
    scorers: dict[int, BoxScorer] | None = None,
) -> list[dict[str, float]]:
    """Held-out recall of every record: for each fold, ``make`` trains on the other folds (None: the rules); each
    fold's scorer goes into ``scorers`` when given."""
    out: list[dict[str, float]] = [{} for _ in records]
    for f in range(k):
        held = [i for i, g in enumerate(fold_of) if g == f]
        if not held:
            continue
        scorer = make([r for r, g in zip(records, fold_of, strict=True) if g != f]) if make is not None else None
        if scorers is not None and scorer is not None:
            scorers[f] = scorer
        for i in held:
            r = records[i]
            scores = rule_scores(r) if scorer is None else scorer.box_scores(r.feats)
            out[i] = recall_at(r, scores)
    return out


def summarise(
    records: Sequence[Record], recalls: Sequence[dict[str, float]], budget: str = "11.1%", by: str = "doc_type"
) -> dict[str, dict[str, float]]:
    """group -> {"recall", "full_hit", "n"} at ``budget``; groups: doc_type, "paraphrased"/"literal" (``by`` =
    "wording") or the template (``by`` = "template"), plus "overall"."""
    groups: dict[str, list[float]] = {}
    for r, rec in zip(records, recalls, strict=True):
        q = r.question
        key = {
            "doc_type": q.doc_type,
            "wording": "paraphrased" if q.paraphrased else "literal",
            "template": q.template,
        }[by]
        groups.setdefault(key, []).append(rec[budget])
        groups.setdefault("overall", []).append(rec[budget])
    return {
        g: {"recall": float(np.mean(v)), "full_hit": float(np.mean([x == 1.0 for x in v])), "n": len(v)}
        for g, v in sorted(groups.items(), key=lambda kv: (kv[0] == "overall", kv[0]))
    }


# --------------------------------------------------------------------------------------------------- command


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="arr-coc train", description="Train the learned box scorer on evidence boxes.")
    p.add_argument(
        "--objective",
        choices=("evidence",),
        default="evidence",
        help="this parser: evidence (arr-coc train --objective answer --help: the answer objective)",
    )
    p.add_argument(
        "--data",
        action="append",
        default=[],
        help="realdocs-schema questions (a folder with questions.jsonl, or a .jsonl); repeatable",
    )
    p.add_argument(
        "--docgen-dev",
        type=int,
        default=None,
        metavar="N",
        help="also train on docgen's dev split, N generated documents per kind (default with --data: 12; 0: none; "
        "without --data it must be given: generated documents only are a choice, not a fallback; the test split "
        "is never used for training)",
    )
    p.add_argument("--out", required=True, help="checkpoint folder to write")
    p.add_argument("--ocr-cache", default=None, help="folder caching each page's OCR boxes (reused across runs)")
    p.add_argument("--feature-cache", default=None, help="folder keeping each question's features (reused across runs)")
    p.add_argument(
        "--cached-only",
        action="store_true",
        help="use only the questions whose page is already in --ocr-cache (no OCR runs; the card says so)",
    )
    p.add_argument(
        "--docgen-test",
        type=int,
        default=0,
        metavar="N",
        help="report (never train or select on) docgen's test split, N documents per kind",
    )
    p.add_argument("--folds", type=int, default=5, help="document-level folds for model selection and figures")
    p.add_argument(
        "--family",
        default="auto",
        choices=("auto", *CANDIDATES),
        help="model family; auto: the best held-out recall at 11.1%% over the folds",
    )
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ablation", action="store_true", help="also cross-validate without each feature group")
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads for training (the model is tiny: one thread was 30x faster than two on a busy "
        "2-core machine)",
    )
    p.add_argument("--limit", type=int, default=0, help="use only the first N questions of each --data (debugging)")
    args = p.parse_args(argv)
    if not args.data and args.docgen_dev is None:
        p.error(
            "nothing to train on: give --data (a realdocs-schema .jsonl or a folder with questions.jsonl), or "
            "--docgen-dev N to train on N generated documents per kind only"
        )
    if args.docgen_dev is None:
        args.docgen_dev = 12
    if not args.data and args.docgen_dev <= 0:
        p.error("nothing to train on: give --data and/or --docgen-dev N")
    if args.folds < 2:
        p.error("--folds must be >= 2")
    return args


def card(meta: dict[str, Any]) -> str:
    """The checkpoint's README.md: data, folds, family choice, held-out figures, ablation, command, time."""
    lines = [
        "# ARR-COC-VIS learned box scorer (evidence objective)",
        "",
        f"- command: `{meta['command']}`",
        f"- data: {meta['data']}",
        f"- folds: {meta['folds']} document-level folds (no page in two folds), seed {meta['seed']}",
        f"- family: **{meta['family']}** (hidden={meta['hidden']}), chosen by held-out recall @11.1% "
        f"(candidates: {', '.join(meta['family_recall'])})",
        f"- features: {len(FEATURES)} per box in {len(FEATURE_GROUPS)} groups ({', '.join(FEATURE_GROUPS)})",
        f"- training time: {meta['train_s']:.0f} s wall on {meta['cpus']} CPU core(s) (OCR from cache: "
        f"{meta['ocr_cached']}); feature extraction {meta['extract_s']:.0f} s",
        "",
        "## Held-out recall at 11.1% of the tokens (text map; recall / full-hit, n)",
        "",
    ]
    for by in ("doc_type", "wording"):
        groups = list(next(iter(meta["heldout"].values()))[by])
        lines += ["| model | " + " | ".join(groups) + " |", "|---|" + "---:|" * len(groups)]
        for name, table in meta["heldout"].items():
            lines.append(
                f"| {name} | "
                + " | ".join(
                    f"{table[by][g]['recall']:.3f} / {table[by][g]['full_hit']:.2f} (n={table[by][g]['n']})"
                    if g in table[by]
                    else "–"
                    for g in groups
                )
                + " |"
            )
        lines.append("")
    if meta.get("docgen_test"):
        test = meta["docgen_test"]
        kinds = list(next(iter(test.values())))
        lines += [
            "## docgen test split at 11.1% (reported only; never trained or selected on)",
            "",
            "| model | " + " | ".join(kinds) + " |",
            "|---|" + "---:|" * len(kinds),
        ]
        for name, table in test.items():
            lines.append(
                f"| {name} | "
                + " | ".join(f"{table[k]['recall']:.3f} / {table[k]['full_hit']:.2f}" for k in kinds)
                + " |"
            )
        lines.append("")
    lines += [
        "Figures are the text map's recall (the box scores painted on the grid, the structural budget rule on top, "
        "top-k with whole words), the quantity the scorer is trained for; `benchmarks/realdocs_recall.py` measures "
        "the end-to-end `allocate` recall.",
        "",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``arr-coc train --objective evidence``."""
    args = parse_args(argv)
    t_start = time.perf_counter()
    torch.set_num_threads(max(1, args.threads))  # this process is the training command's own

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    questions: list[Question] = []
    described = []
    for d in args.data:
        qs = load_jsonl(d)
        qs = qs[: args.limit] if args.limit else qs
        questions += qs
        described.append(f"{d} ({len(qs)} questions, {len({q.doc for q in qs})} pages)")
    if args.docgen_dev > 0:
        qs = docgen_questions("dev", args.docgen_dev, args.seed)
        questions += qs
        described.append(f"docgen dev split ({len(qs)} questions, {args.docgen_dev} per kind, seed {args.seed})")
    log(f"{len(questions)} questions: {'; '.join(described)}")

    from ..reading import QueryMatcher, default_reading

    matcher = QueryMatcher(default_reading().config, embedder=default_reading().embedder)
    ocr = DiskOcrCache(args.ocr_cache)
    t0 = time.perf_counter()
    records = extract(questions, matcher, ocr, log, args.feature_cache, args.cached_only)
    if args.cached_only:
        described.append(f"--cached-only: {len(records)} of {len(questions)} questions had their page OCR-cached")
    extract_s = time.perf_counter() - t0
    fold_of = folds([r.question for r in records], args.folds, args.seed)
    t_train = time.perf_counter()

    def trainer(hidden: int, drop: Sequence[str] = ()) -> Callable[[Sequence[Record]], BoxScorer]:
        return lambda rs: fit(rs, hidden=hidden, drop_groups=drop, epochs=args.epochs, seed=args.seed)

    heldout: dict[str, list[dict[str, float]]] = {"rules": cross_validate(records, fold_of, args.folds, None)}
    family_recall = {}
    fold_scorers: dict[str, dict[int, BoxScorer]] = {}
    names = list(CANDIDATES) if args.family == "auto" else [args.family]
    for name in names:
        fold_scorers[name] = {}
        heldout[name] = cross_validate(records, fold_of, args.folds, trainer(CANDIDATES[name]), fold_scorers[name])
        family_recall[name] = summarise(records, heldout[name])["overall"]["recall"]
        log(
            f"  {name}: held-out recall @11.1% {family_recall[name]:.3f} (rules "
            f"{summarise(records, heldout['rules'])['overall']['recall']:.3f})"
        )
    family = max(family_recall, key=lambda n: family_recall[n])
    if args.ablation:
        for group in FEATURE_GROUPS:
            heldout[f"{family} - {group}"] = cross_validate(
                records, fold_of, args.folds, trainer(CANDIDATES[family], (group,))
            )
            log(f"  without {group}: {summarise(records, heldout[f'{family} - {group}'])['overall']['recall']:.3f}")
    scorer = fit(records, hidden=CANDIDATES[family], epochs=args.epochs, seed=args.seed)
    train_s = time.perf_counter() - t_train
    test_tables: dict[str, dict[str, dict[str, float]]] = {}
    if args.docgen_test > 0:  # reported only: nothing above saw it
        test_qs = docgen_questions("test", args.docgen_test, args.seed)
        test = extract(test_qs, matcher, ocr, log, args.feature_cache, args.cached_only)
        test_tables["rules"] = summarise(test, [recall_at(r, rule_scores(r)) for r in test])
        test_tables[family] = summarise(test, [recall_at(r, scorer.box_scores(r.feats)) for r in test])
        log(
            f"  docgen test: rules {test_tables['rules']['overall']['recall']:.3f}, "
            f"{family} {test_tables[family]['overall']['recall']:.3f}"
        )

    from ..config import RelevanceConfig

    out = Path(args.out)
    scorer.save(out)
    reading_cfg = default_reading().config.to_dict()
    fold_cfg = RelevanceConfig().replace(reading=reading_cfg).to_json(indent=1) + "\n"
    for f, fold_scorer in fold_scorers[family].items():  # the held-out scorers: benchmarks score each page unseen
        fold_scorer.save(out / "folds" / str(f))
        (out / "folds" / str(f) / "config.json").write_text(fold_cfg)
    (out / "folds.json").write_text(
        json.dumps({r.question.doc: g for r, g in zip(records, fold_of, strict=True)}, indent=0) + "\n"
    )
    (out / "config.json").write_text(
        RelevanceConfig().replace(reading=default_reading().config.to_dict()).to_json(indent=1) + "\n"
    )
    tables = {
        name: {by: summarise(records, rec, by=by) for by in ("doc_type", "wording", "template")}
        for name, rec in heldout.items()
    }
    command = "arr-coc train " + " ".join(sys.argv[2:] if argv is None else argv)
    import os

    meta = {
        "command": command.strip(),
        "data": "; ".join(described),
        "folds": args.folds,
        "seed": args.seed,
        "family": family,
        "hidden": CANDIDATES[family],
        "family_recall": family_recall,
        "train_s": train_s,
        "extract_s": extract_s,
        "cpus": os.cpu_count(),
        "ocr_cached": args.ocr_cache is not None,
        "heldout": tables,
        "docgen_test": test_tables,
        "n_questions": len(records),
        "epochs": args.epochs,
        "wall_s": time.perf_counter() - t_start,
    }
    (out / "metrics.json").write_text(json.dumps(meta, indent=1) + "\n")
    (out / "README.md").write_text(card(meta))
    log(card(meta))
    log(f"wrote {out} in {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
