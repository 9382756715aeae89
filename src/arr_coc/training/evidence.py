"""The evidence objective: train the learned box scorer (``arr_coc.reading.matching.BoxScorer``) on answer boxes.

Steps (each a function taking data and returning data):
    extract     OCR (cached on disk per page) + the rule matcher's per-box features, labels (OCR boxes that overlap an
                evidence box), evidence cells, word units -> one ``Record`` per question
    fit         a listwise ranking loss over each question's boxes: softmax cross-entropy against the uniform
                distribution over its evidence boxes (the model learns to put evidence boxes first), Adam, seeded
    recall      the text map a record's box scores paint (``paint_boxes``, the structural budget rule on top), kept
                top-k with whole words (``arr_coc.attending.select``), evidence recall at 11.1 / 22.2 / 33.3%
    cross-validate  train on k-1 folds, score the held-out fold, for the rules and each candidate
    nested      folds grouped by SOURCE (``data.source_folds``); in each outer fold the candidate (the rules, or a
                family with its settings) is chosen by source-grouped inner folds of the training part only, then
                trained on that part and scored on the held-out fold: the reported figure is never used for choosing

``main(argv)`` is ``arr-coc train --objective evidence``: the nested source-grouped validation (``--folds-by
document``: page-level folds, an optimistic figure), the candidate chosen on all folds trained on every question,
the checkpoint folder (``model.safetensors``, ``scorer.json``, ``config.json``, ``README.md`` card,
``metrics.json``) and, with ``--ablation``, the held-out recall without each feature group; ``--holdout-share`` /
``--holdout`` keep whole sources out of everything and score them at the end (does the validation predict them?).

Example (a small run on realdocs-dev and docgen's dev split, OCR cached)::

    arr-coc train --data /work/data/realdocs-dev --docgen-dev 12 --ocr-cache /tmp/ocr --out runs/evidence
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..reading.matching.learned import FEATURE_GROUPS, FEATURES, BoxScorer
from .data import Question, docgen_questions, folds, load_jsonl, source_folds
from .evidence_card import card, decide  # noqa: F401  (the checkpoint's card and the default decision)
from .records import (  # noqa: F401  (the records and their recall, importable from here)
    BUDGETS,
    RULE,
    DiskOcrCache,
    Record,
    extract,
    recall_at,
    rule_scores,
    text_map,
)


@dataclass(frozen=True)
class Candidate:
    """One model family with its settings; ``rules`` is the rules themselves (nothing trained).

    Attributes:
        hidden: hidden units of the MLP (0: linear).
        residual: a bounded correction of the rules' score (``BoxScorer(residual=True)``) instead of a free logit.
        bound: the correction's bound (residual; None: unbounded).
        ood_margin: fall back to the rules on boxes outside the training range (residual; None: never).
        drop_groups: feature groups the model never sees (e.g. "position": no absolute layout to memorise).
        members: networks trained with seeds ``seed .. seed + members - 1`` whose outputs are averaged (a seed
            ensemble, ``BoxScorer.ensemble``).
        weight_decay: Adam's weight decay (residual: the pull of the correction toward 0, i.e. toward the rules).
        epochs: passes over the training data (None: the command's ``--epochs``).
        ood_page: the rules alone on a page with more than this share of boxes outside the training range (residual;
            None: never).
        rules: the rules (every other field ignored).
    """

    hidden: int = 16
    residual: bool = False
    bound: float | None = None
    ood_margin: float | None = None
    drop_groups: tuple[str, ...] = ()
    members: int = 1
    weight_decay: float = 1e-4
    ood_page: float | None = None
    epochs: int | None = None
    rules: bool = False

    def fit_key(self) -> tuple:
        """What training depends on (the out-of-range checks are applied after training)."""
        return (self.hidden, self.residual, self.bound, self.drop_groups, self.members, self.weight_decay, self.epochs)

    def make(self, records: Sequence[Record], epochs: int, seed: int) -> BoxScorer | None:
        """Train on ``records`` for ``self.epochs`` (or ``epochs``) passes (None for the rules)."""
        if self.rules:
            return None
        members = [
            fit(
                records,
                hidden=self.hidden,
                drop_groups=self.drop_groups,
                epochs=self.epochs or epochs,
                seed=seed + m,
                residual=self.residual,
                bound=self.bound,
                weight_decay=self.weight_decay,
            )
            for m in range(self.members)
        ]
        scorer = BoxScorer.ensemble(members)
        scorer.ood_margin, scorer.ood_page = self.ood_margin, self.ood_page
        return scorer


# name -> candidate; nested validation chooses among them inside the training folds ("rules" included: a scorer
# that does not beat the rules there is not used)
CANDIDATES: dict[str, Candidate] = {
    "rules": Candidate(rules=True),
    "linear": Candidate(hidden=0),
    "mlp16": Candidate(hidden=16),
    "mlp32": Candidate(hidden=32),
    "res16": Candidate(hidden=16, residual=True),
    "res16-b2": Candidate(hidden=16, residual=True, bound=2.0),
    "res16-b2-ood": Candidate(hidden=16, residual=True, bound=2.0, ood_margin=0.0),
    "res16-b2-nopos": Candidate(hidden=16, residual=True, bound=2.0, drop_groups=("position",)),
    "res16-b2-nopos-ood": Candidate(hidden=16, residual=True, bound=2.0, ood_margin=0.0, drop_groups=("position",)),
    "res16-b1": Candidate(hidden=16, residual=True, bound=1.0),
    "res16-b2-x5": Candidate(hidden=16, residual=True, bound=2.0, members=5),
    "res16-b2-wd": Candidate(hidden=16, residual=True, bound=2.0, weight_decay=1e-2),
    "mlp16-x5": Candidate(hidden=16, members=5),
    "res16-b2-page": Candidate(hidden=16, residual=True, bound=2.0, ood_page=0.2),
    "res16-b2-x5-page": Candidate(hidden=16, residual=True, bound=2.0, members=5, ood_page=0.2),
    "res16-b2-x5-page-e30": Candidate(hidden=16, residual=True, bound=2.0, members=5, ood_page=0.2, epochs=30),
}
# issue 26, round 2's set (results/learned_relevance.md); ties go to the first listed, so the page fallback comes
# before the same candidate without it
DEFAULT_CANDIDATES = (
    "rules",
    "mlp16",
    "res16-b2-x5-page",
    "res16-b2-x5-page-e30",
    "res16-b2-page",
    "res16-b2-x5",
    "res16-b2",
)


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
    residual: bool = False,
    bound: float | None = None,
) -> BoxScorer:
    """Train a ``BoxScorer`` with the listwise loss on ``records`` (those with at least one evidence box), seeded.
    ``residual`` / ``bound``: the correction-of-the-rules form (``BoxScorer``); weight decay pulls it to the rules."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    train = [r for r in records if r.labels.any() and len(r.feats)]
    scorer = BoxScorer(hidden=hidden, drop_groups=drop_groups, residual=residual, bound=bound)
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


# --------------------------------------------------------------------------------------------------- nested


def macro_recall(records: Sequence[Record], recalls: Sequence[dict[str, float]], budget: str = "11.1%") -> float:
    """Mean over doc_types of each doc_type's mean recall at ``budget``: every kind counts the same, so a choice made
    by it must serve every kind (the pooled mean is three fifths forms)."""
    table = summarise(records, recalls, budget)
    return float(np.mean([v["recall"] for g, v in table.items() if g != "overall"]))


def candidate_recalls(
    records: Sequence[Record],
    fold_of: Sequence[int],
    k: int,
    candidates: dict[str, Candidate],
    epochs: int,
    seed: int,
) -> tuple[dict[str, list[dict[str, float]]], dict[str, dict[int, BoxScorer | None]]]:
    """Held-out recalls of every record for each candidate (trained on the other folds), and each fold's scorer.
    Candidates that differ only in the out-of-range check share one fit."""
    import copy

    out: dict[str, list[dict[str, float]]] = {name: [{} for _ in records] for name in candidates}
    scorers: dict[str, dict[int, BoxScorer | None]] = {name: {} for name in candidates}
    for f in range(k):
        held = [i for i, g in enumerate(fold_of) if g == f]
        if not held:
            continue
        train = [r for r, g in zip(records, fold_of, strict=True) if g != f]
        fits: dict[tuple, BoxScorer | None] = {}
        for name, cand in candidates.items():
            if cand.rules:
                scorer = None
            else:
                if cand.fit_key() not in fits:
                    fits[cand.fit_key()] = cand.make(train, epochs, seed)
                scorer = copy.deepcopy(fits[cand.fit_key()])
                scorer.ood_margin, scorer.ood_page = cand.ood_margin, cand.ood_page
            scorers[name][f] = scorer
            for i in held:
                r = records[i]
                scores = rule_scores(r) if scorer is None else scorer.box_scores(r.feats)
                out[name][i] = recall_at(r, scores, BUDGETS[:1])  # 11.1%: what is chosen on and reported
    return out, scorers


def choose(scores: dict[str, float]) -> str:
    """The best candidate; ties go to the rules, then to the first listed (the simpler)."""
    names = list(scores)
    return max(names, key=lambda n: (round(scores[n], 6), n == "rules", -names.index(n)))


@dataclass
class Nested:
    """The nested validation's result.

    Attributes:
        chosen: per record, the held-out recalls of the candidate chosen inside its outer fold's training part.
        per_candidate: per candidate, the held-out recalls (a fixed candidate: optimistic when reported as the best).
        choice: outer fold -> the candidate chosen there; inner: outer fold -> candidate -> its inner macro recall.
        scorers: outer fold -> the chosen candidate trained on that fold's training part (None: the rules).
    """

    chosen: list[dict[str, float]]
    per_candidate: dict[str, list[dict[str, float]]]
    choice: dict[int, str]
    inner: dict[int, dict[str, float]]
    scorers: dict[int, BoxScorer | None]


def nested_validate(
    records: Sequence[Record],
    fold_of: Sequence[int],
    k: int,
    candidates: dict[str, Candidate],
    inner_folds: Callable[[Sequence[Question]], list[int]],
    inner_k: int,
    epochs: int,
    seed: int,
    log: Callable[[str], None] | None = None,
) -> Nested:
    """Nested cross-validation: in each outer fold the candidate is chosen by ``macro_recall`` over the inner folds
    (``inner_folds`` of the outer training part's questions) and the outer held-out fold only scores it."""
    per_candidate, fold_scorers = candidate_recalls(records, fold_of, k, candidates, epochs, seed)
    chosen: list[dict[str, float]] = [{} for _ in records]
    choice: dict[int, str] = {}
    inner: dict[int, dict[str, float]] = {}
    for f in range(k):
        held = [i for i, g in enumerate(fold_of) if g == f]
        if not held:
            continue
        train = [r for r, g in zip(records, fold_of, strict=True) if g != f]
        inner_of = inner_folds([r.question for r in train])
        inner_rec, _ = candidate_recalls(train, inner_of, inner_k, candidates, epochs, seed)
        inner[f] = {name: macro_recall(train, rec) for name, rec in inner_rec.items()}
        choice[f] = choose(inner[f])
        for i in held:
            chosen[i] = per_candidate[choice[f]][i]
        if log is not None:
            log(
                f"  outer fold {f}: chose {choice[f]} (inner macro "
                + ", ".join(f"{n} {v:.3f}" for n, v in inner[f].items())
                + f"); held-out {len(held)} questions"
            )
    return Nested(chosen, per_candidate, choice, inner, {f: fold_scorers[c][f] for f, c in choice.items()})


def fold_spread(
    records: Sequence[Record], recalls: Sequence[dict[str, float]], fold_of: Sequence[int], budget: str = "11.1%"
) -> dict[str, dict[str, float]]:
    """group (doc_type, "overall") -> {"min", "max", "sd", "folds"}: the spread of the per-fold mean recall over the
    folds that hold the group."""
    per: dict[str, dict[int, list[float]]] = {}
    for r, rec, f in zip(records, recalls, fold_of, strict=True):
        for g in (r.question.doc_type, "overall"):
            per.setdefault(g, {}).setdefault(f, []).append(rec[budget])
    out = {}
    for g, by_fold in per.items():
        means = [float(np.mean(v)) for v in by_fold.values()]
        out[g] = {"min": min(means), "max": max(means), "sd": float(np.std(means)), "folds": len(means)}
    return out


def holdout_sources(questions: Sequence[Question], share: float, prefixes: Sequence[str], seed: int) -> set[str]:
    """Sources kept out of training and validation: those starting with any of ``prefixes``, plus, for each doc_type
    of the JSONL data (not docgen), seeded whole sources until at least ``share`` of its questions. Each doc_type
    draws from its own seeded generator, so adding data of another kind does not change a kind's held-out sources."""
    import random

    out = {q.source for q in questions if any(q.source.startswith(p) for p in prefixes)}
    if share > 0:
        by_type: dict[str, dict[str, int]] = {}
        for q in questions:
            if q.origin == "jsonl":
                by_type.setdefault(q.doc_type, {})
                by_type[q.doc_type][q.source] = by_type[q.doc_type].get(q.source, 0) + 1
        for doc_type, sizes in sorted(by_type.items()):
            rng = random.Random(f"{seed + 1}:{doc_type}")
            total, taken = sum(sizes.values()), 0
            names = sorted(sizes)
            rng.shuffle(names)
            for name in names:
                if taken >= share * total or len(names) < 2:
                    break
                if sizes[name] > 0.5 * total:  # never a source that is most of its kind
                    continue
                out.add(name)
                taken += sizes[name]
    return out


def rules_checkpoint(features: Sequence[str] = FEATURES) -> BoxScorer:
    """A residual scorer whose correction is 0 everywhere: it scores every box exactly as the rules do."""
    scorer = BoxScorer(hidden=0, features=features, residual=True)
    with torch.no_grad():
        for p in scorer.net.parameters():
            p.zero_()
    return scorer.eval()


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
    p.add_argument(
        "--folds-by",
        choices=("source", "document"),
        default="source",
        help="source (default): folds never split a source (collection, issuer, file family, generator), the "
        "figure a new source gets; document: folds only keep pages whole (OPTIMISTIC: sources shared across folds)",
    )
    p.add_argument("--folds", type=int, default=5, help="outer folds (the reported figure)")
    p.add_argument("--inner-folds", type=int, default=4, help="inner folds (choosing the candidate, per outer fold)")
    p.add_argument(
        "--family",
        default="auto",
        choices=("auto", *CANDIDATES),
        help="auto: nested choice among --candidates; a name: that candidate only (still validated)",
    )
    p.add_argument(
        "--candidates",
        default=",".join(DEFAULT_CANDIDATES),
        help=f"comma-separated candidates for --family auto (known: {', '.join(CANDIDATES)})",
    )
    p.add_argument(
        "--holdout-share",
        type=float,
        default=0.0,
        help="keep whole sources of each real doc_type (at least this share of its questions) out of training and "
        "validation, and score them at the end: does the validation predict a new source?",
    )
    p.add_argument(
        "--holdout", action="append", default=[], help="keep sources with this prefix out (like --holdout-share)"
    )
    p.add_argument(
        "--compare-document-folds",
        action="store_true",
        help="also report the chosen candidate on document-level folds (to show their optimism)",
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
    if args.folds < 2 or args.inner_folds < 2:
        p.error("--folds and --inner-folds must be >= 2")
    if not 0.0 <= args.holdout_share < 1.0:
        p.error("--holdout-share must be in [0, 1)")
    names = [n.strip() for n in args.candidates.split(",") if n.strip()]
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown or not names:
        p.error(f"unknown --candidates {unknown}; known: {', '.join(CANDIDATES)}")
    args.candidates = names if args.family == "auto" else [args.family]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """``arr-coc train --objective evidence``."""
    import copy
    import os

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
    held_src = holdout_sources([r.question for r in records], args.holdout_share, args.holdout, args.seed)
    held_out = [r for r in records if r.question.source in held_src]
    records = [r for r in records if r.question.source not in held_src]
    if held_src:
        log(f"held out {len(held_src)} sources ({len(held_out)} questions): {', '.join(sorted(held_src))}")

    def make_folds(qs: Sequence[Question], k: int) -> list[int]:
        return folds(qs, k, args.seed) if args.folds_by == "document" else source_folds(qs, k, args.seed)

    fold_of = make_folds([r.question for r in records], args.folds)
    candidates = {n: CANDIDATES[n] for n in args.candidates}
    if "rules" not in candidates:
        candidates = {"rules": CANDIDATES["rules"], **candidates}
    t_train = time.perf_counter()
    nested = nested_validate(
        records,
        fold_of,
        args.folds,
        candidates,
        lambda qs: make_folds(qs, args.inner_folds),
        args.inner_folds,
        args.epochs,
        args.seed,
        log,
    )
    heldout: dict[str, list[dict[str, float]]] = {"rules": nested.per_candidate["rules"], "nested": nested.chosen}
    heldout.update({n: rec for n, rec in nested.per_candidate.items() if n != "rules"})
    family_recall = {n: macro_recall(records, rec) for n, rec in nested.per_candidate.items()}
    family = choose(family_recall) if args.family == "auto" else args.family
    log(
        f"  nested @11.1%: {summarise(records, nested.chosen)['overall']['recall']:.3f} (rules "
        f"{summarise(records, heldout['rules'])['overall']['recall']:.3f}); final family {family}"
    )
    if args.compare_document_folds and args.folds_by == "source" and family != "rules":
        doc_rec, _ = candidate_recalls(
            records,
            folds([r.question for r in records], args.folds, args.seed),
            args.folds,
            {family: CANDIDATES[family]},
            args.epochs,
            args.seed,
        )
        heldout[f"{family}, document-level folds (optimistic)"] = doc_rec[family]
    if args.ablation and family != "rules":
        for group in FEATURE_GROUPS:
            base = CANDIDATES[family]
            if group in base.drop_groups:
                continue
            cand = Candidate(**{**base.__dict__, "drop_groups": (*base.drop_groups, group)})
            rec, _ = candidate_recalls(records, fold_of, args.folds, {"x": cand}, args.epochs, args.seed)
            heldout[f"{family} - {group}"] = rec["x"]
            log(f"  without {group}: {summarise(records, rec['x'])['overall']['recall']:.3f}")
    scorer = CANDIDATES[family].make(records, args.epochs, args.seed) if family != "rules" else rules_checkpoint()
    train_s = time.perf_counter() - t_train

    def score_all(rs: Sequence[Record], sc: BoxScorer | None) -> list[dict[str, float]]:
        return [recall_at(r, rule_scores(r) if sc is None else sc.box_scores(r.feats)) for r in rs]

    holdout_tables: dict[str, dict[str, dict[str, float]]] = {}
    if held_out:  # never trained, validated or chosen on
        holdout_tables["rules"] = summarise(held_out, score_all(held_out, None))
        holdout_tables[family] = summarise(held_out, score_all(held_out, scorer))
    test_tables: dict[str, dict[str, dict[str, float]]] = {}
    if args.docgen_test > 0:  # reported only: nothing above saw it
        test_qs = docgen_questions("test", args.docgen_test, args.seed)
        test = extract(test_qs, matcher, ocr, log, args.feature_cache, args.cached_only)
        test_tables["rules"] = summarise(test, score_all(test, None))
        if family != "rules":
            test_tables[family] = summarise(test, score_all(test, scorer))
        log("  docgen test: " + ", ".join(f"{n} {t['overall']['recall']:.3f}" for n, t in test_tables.items()))

    from ..config import RelevanceConfig

    out = Path(args.out)
    scorer.save(out)
    cfg = RelevanceConfig().replace(reading=default_reading().config.to_dict()).checkpoint_json(indent=1) + "\n"
    for f, fold_scorer in nested.scorers.items():  # held-out scorers: benchmarks score each page unseen
        saved = copy.deepcopy(fold_scorer) if fold_scorer is not None else rules_checkpoint()
        saved.save(out / "folds" / str(f))
        (out / "folds" / str(f) / "config.json").write_text(cfg)
    (out / "folds.json").write_text(
        json.dumps({r.question.doc: g for r, g in zip(records, fold_of, strict=True)}, indent=0) + "\n"
    )
    (out / "config.json").write_text(cfg)
    tables = {
        name: {by: summarise(records, rec, by=by) for by in ("doc_type", "wording", "template")}
        for name, rec in heldout.items()
    }
    spread = {name: fold_spread(records, rec, fold_of) for name, rec in heldout.items() if name in ("rules", "nested")}
    command = "arr-coc train " + " ".join(sys.argv[2:] if argv is None else argv)
    meta = {
        "command": command.strip(),
        "data": "; ".join(described),
        "folds_by": args.folds_by,
        "folds": args.folds,
        "inner_folds": args.inner_folds,
        "n_sources": len({r.question.source for r in records}),
        "seed": args.seed,
        "candidates": list(candidates),
        "choice": {str(f): c for f, c in nested.choice.items()},
        "inner": {str(f): v for f, v in nested.inner.items()},
        "family": family,
        "family_recall": family_recall,
        "scorer": scorer.config,
        "train_s": train_s,
        "extract_s": extract_s,
        "cpus": os.cpu_count(),
        "ocr_cached": args.ocr_cache is not None,
        "heldout": tables,
        "spread": spread,
        "holdout_sources": sorted(held_src),
        "holdout": holdout_tables,
        "docgen_test": test_tables,
        "n_questions": len(records),
        "epochs": args.epochs,
    }
    meta["decision"] = decide(meta)
    meta["wall_s"] = time.perf_counter() - t_start
    (out / "metrics.json").write_text(json.dumps(meta, indent=1) + "\n")
    (out / "README.md").write_text(card(meta))
    log(card(meta))
    log(f"wrote {out} in {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
