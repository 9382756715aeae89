"""Paraphrased questions on realdocs-dev's pages (issue 40): new wordings of its questions, grouped by source.

Example:
    python benchmarks/paraphrase_set.py make                      # writes benchmarks/paraphrase_questions.jsonl
    python benchmarks/paraphrase_set.py run --data /work/data/realdocs-dev --ocr-cache /work/cache/ocr \\
        --relevance learned --out /tmp/paraphrase.md

The wordings below were written for this set BEFORE the matcher was changed for it, by looking at realdocs-dev's
questions and keys only (not at any page's misses): for receipts (issuer, date, total), for forms (a key printed on
the page, reworded without its words where English allows: "TO:" -> "Who is the recipient?") and for tables (a
cell named by its column header and row label, reworded around them). Each rephrases one realdocs-dev question, whose
page and answer boxes it keeps (``rephrases`` names it).

Two writers' styles:

* ``A``: full questions ("How much was charged in total?", "Who sold these items?");
* ``B``: terse or indirect requests, another phrasing family ("amount owed?", "Tell me who I bought this from.").
  Held out LAST: never looked at while the matcher was changed; reported apart.
* ``C`` (``paraphrase_questions_c.jsonl``): another writer, who had not read the lexicon: one everyday wording per
  question without the printed key's content words ("What amount remains after this transaction?" for "NEW
  BALANCE", "Which restaurant served this meal?"), on every held-out source and a sample of dev sources.

Sources are realdocs-dev's (``arr_coc.training.data.derive_sources``: a FUNSD Bates range, a receipt's issuer, a
table PDF's family); ``held_out_sources`` takes, per doc_type, seeded whole sources up to ``HELD_OUT_SHARE`` of the
questions. Choices are made on the dev sources' style-A questions (``run --show dev``); held-out sources and style B
are reported apart.

``run`` scores each question with ``arr_coc.allocate(mode="text")`` (``benchmarks/realdocs_recall.py``'s
``recall_of``: Qwen2.5-VL grid, realdocs' evidence-cell rule, words kept whole) with the rules and, with
``--relevance``, a checkpoint (the built-in ``learned`` is trained on realdocs-dev's pages: in-sample), and reports
recall / full-hit at 11.1% by style x split, doc_type and concept, and the misses of the groups ``--show`` names.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from arr_coc.training.data import Question, derive_sources  # noqa: E402

QUESTIONS = Path(__file__).with_name("paraphrase_questions.jsonl")
# style C: a second writer's wordings (para4, issue 40), one per question of every held-out source and of a seeded
# sample of dev sources (40 forms, 40 receipts, 20 tables), written from each question's printed key and answer only,
# before the lexicon was read or changed; hand-written, so ``make`` does not rewrite them
QUESTIONS_C = Path(__file__).with_name("paraphrase_questions_c.jsonl")
# style D: a third writer's wordings (writerd, issue 40), one per question of style C's questions (the same held-out
# and dev ones), written without reading the lexicon, the matching code or the A, B, C wordings: held out from the
# matcher's development; ``run --styles D`` reads them (the default styles stay A,B,C)
QUESTIONS_D = Path(__file__).with_name("paraphrase_questions_d.jsonl")
# style E: a fourth writer's wordings (writere, issue 40), of the 174 held-out questions only, in the voice of users
# who are not native English speakers, written without reading the lexicon, the matching code or the A-D wordings;
# ``run --styles E`` reads them (the default styles stay A,B,C)
QUESTIONS_E = Path(__file__).with_name("paraphrase_questions_e.jsonl")
# style F: a fifth writer's wordings (writerf, issue 40, round 10), of the same 174 held-out questions, in the voice of
# a person doing a job with the document (a bookkeeper, a clerk routing mail, an analyst), naming each field by its
# purpose; written from each question's printed key and answer only, without reading the lexicon, the matching code or
# the A-E wordings, while the purpose table (reading/matching/form_purposes.py) was being written by someone who never
# saw them; ``run --styles F`` reads them (the default styles stay A,B,C)
QUESTIONS_F = Path(__file__).with_name("paraphrase_questions_f.jsonl")
# style G: a sixth writer's wordings (writerg, issue 40, round 11), of the same 174 held-out questions, spoken to a
# colleague holding the page, in many Englishes (till slip, docket, chit), each field named by what it is for or where
# it sits, a table's row and column by their meaning; written from each question's printed key and answer only, without
# reading any code or the A-F wordings, and measured blind before and after round 11's changes, whose authors never saw
# them; ``run --styles G`` reads them (the default styles stay A,B,C)
QUESTIONS_G = Path(__file__).with_name("paraphrase_questions_g.jsonl")
# style H: a seventh writer's wordings (writerh, issue 40, round 12), of the same 174 held-out questions, typed into a
# chat box by users for whom English is a second language (plain words, word-for-word renderings, bare keyword
# queries, a few typing slips), each field named by what it is; written from each question's printed key and answer
# only, without reading any code or the A-G wordings, and measured blind before and after round 12's changes, whose
# authors never saw them; ``run --styles H`` reads them (the default styles stay A,B,C)
QUESTIONS_H = Path(__file__).with_name("paraphrase_questions_h.jsonl")
SEED = 40
HELD_OUT_SHARE = 0.3
PER_QUESTION = {"A": 2, "B": 1}  # wordings drawn per realdocs-dev question and style

# receipts: realdocs-dev's ``key`` -> style -> wordings
RECEIPT: dict[str, dict[str, tuple[str, ...]]] = {
    "total": {
        "A": (
            "How much was charged in total?",
            "How much did the customer have to pay altogether?",
            "What was the final amount on this bill?",
            "What is the full cost of this purchase?",
            "How much money did this purchase come to?",
            "What did everything cost in the end?",
            "What sum was due at checkout?",
            "What is the bottom line of the bill?",
            "How much does the receipt say was owed?",
            "What was the overall charge?",
            "How much was spent here?",
            "What was the price of the whole order?",
        ),
        "B": (
            "amount owed?",
            "Tell me the grand sum spent here.",
            "Give the net payable.",
            "total price of the order",
            "I need to know what this cost me",
            "Final figure to pay",
        ),
    },
    "date": {
        "A": (
            "When did this transaction take place?",
            "On which date was the receipt issued?",
            "What day was this printed?",
            "When was the payment made?",
            "When did the customer shop here?",
            "What is the transaction date?",
            "On what date was this sale made?",
            "When was this bill written?",
            "What day did this sale happen?",
            "When was this paid for?",
        ),
        "B": (
            "day of purchase?",
            "Give me the date of the sale.",
            "which day was this",
            "Receipt dated?",
            "the day I paid",
        ),
    },
    "company": {
        "A": (
            "Who sold these items?",
            "Which business is this receipt from?",
            "What is the merchant's name?",
            "Which vendor issued this bill?",
            "What is the name of the retailer?",
            "Which outlet printed this receipt?",
            "Who is the supplier on this receipt?",
            "Which trader is this from?",
            "What business made this sale?",
            "Who was the purchase made from?",
        ),
        "B": (
            "name of the business?",
            "Merchant?",
            "Tell me who I bought this from.",
            "the seller's trading name",
            "Give the outlet that issued it.",
        ),
    },
}

# forms: a pattern on the printed key (lower case, letters and spaces) -> (concept, style A, style B)
FORM: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        r"date",
        "date",
        ("When was this form dated?", "On what day was this document written?", "When was this filled in?"),
        ("day it was written?", "when's it from"),
    ),
    (
        r"to|attention|attn",
        "recipient",
        ("Who is this addressed to?", "Who is the recipient?", "Who was this sent to?"),
        ("recipient?", "addressee"),
    ),
    (r"from", "sender", ("Who sent this?", "Who is the sender?", "Who wrote this?"), ("sender?", "originator")),
    (
        r"subject|re",
        "subject",
        ("What is this document about?", "What topic does this concern?", "What is the matter discussed?"),
        ("topic?", "what it's regarding"),
    ),
    (
        r"cc|copies|copies to|copy",
        "copies",
        ("Who else received this?", "Who are the other recipients?", "Who was also sent this?"),
        ("also sent to?", "other recipients"),
    ),
    (
        r"phone|phone number|phone no|telephone|tel|phone ext",
        "phone",
        ("What number can be called?", "What number should one ring?", "How can they be reached by telephone?"),
        ("contact number?", "number to ring"),
    ),
    (
        r"fax|fax number|fax no",
        "fax",
        ("What is the facsimile number?", "Where should a facsimile be sent?"),
        ("facsimile?", "number for faxes"),
    ),
    (
        r"brand|brand name|item brand",
        "brand",
        ("Which product label is this about?", "What make of cigarette is it?"),
        ("label of the product?", "which make"),
    ),
    (r"product", "product", ("Which item is this about?", "What goods are concerned?"), ("item?", "goods concerned")),
    (
        r"manufacturer",
        "manufacturer",
        ("Who makes it?", "Which company produced it?", "Who is the maker?"),
        ("maker?", "produced by"),
    ),
    (r"supplier", "supplier", ("Who provides it?", "Which vendor delivers it?"), ("vendor?", "provided by")),
    (
        r"location",
        "location",
        ("Where does this take place?", "At what site is it?", "Where is it?"),
        ("site?", "place"),
    ),
    (r"department|division|dept", "department", ("Which unit is it from?", "What section of the company?"), ("unit?",)),
    (
        r"submitted by|prepared by|reported by|originator|author",
        "author",
        ("Who drew this up?", "Who wrote the report?", "Who handed this in?"),
        ("author?", "drawn up by"),
    ),
    (
        r"requested by|work requested by",
        "requester",
        ("Who asked for this?", "Who made the request?"),
        ("asked for by?", "requester"),
    ),
    (r"time", "time", ("At what hour?", "What o'clock was it?"), ("hour?",)),
    (
        r"comments|r d comments|remarks|notes",
        "comments",
        ("What remarks were written?", "What notes were added?"),
        ("remarks?", "any notes"),
    ),
    (r"description", "description", ("What is it, in words?", "How is it explained?"), ("explanation?",)),
    (r"client|account name|customer", "client", ("Who is the customer?", "For which customer?"), ("customer?",)),
    (
        r"deadline for bid receipt|target date|due date|deadline",
        "deadline",
        ("By when must it be done?", "What is the cut-off day?"),
        ("due by?",),
    ),
    (
        r"date received|date recd|received",
        "received",
        ("When did it arrive?", "On what day did it come in?"),
        ("arrival day?",),
    ),
    (r"date submitted", "submitted", ("When was it handed in?",), ("handed in on?",)),
    (r"date requested", "requested", ("When was it asked for?",), ("asked for on?",)),
    (r"signed|signature", "signature", ("Who endorsed it?", "Whose autograph is on it?"), ("endorsed by?",)),
    (r"coupon value", "coupon", ("How much is the voucher worth?",), ("voucher worth?",)),
    (r"new balance|current bal available|balance", "balance", ("How much remains?", "What is left over?"), ("left?",)),
    (r"total|total sample", "total", ("What does it add up to?", "What is the sum?"), ("sum?",)),
    (r"country|state|geographical areas", "region", ("Which region?", "In what part of the world?"), ("region?",)),
    (r"market", "market", ("Which sales region?", "In what trading area?"), ("sales area?",)),
    (r"agency", "agency", ("Which bureau?", "What office handles it?"), ("bureau?",)),
    (r"name", "name", ("Who is the person on this form?", "Who is it about?"), ("person?",)),
    (r"address", "address", ("Where is it located?", "What is the mailing location?"), ("where to send it?",)),
)

# tables: a cell named by its column header and row label, reworded around them
TABLE: dict[str, tuple[str, ...]] = {
    "A": (
        "For {label}, what figure is given under {header}?",
        "Which value does the table give {label} for {header}?",
        "Looking at {label}, what is its {header}?",
        "What does {label} show in the {header} column?",
        "How does {label} do on {header}?",
    ),
    "B": ("{label} / {header}?", "{header} of {label} please", "give {label}'s {header}"),
}
_TABLE_QUERY = (
    re.compile(r"^What is the (?P<header>.+) for (?P<label>.+)\?$"),
    re.compile(r"^In the (?P<label>.+) row, what is the (?P<header>.+)\?$"),
)


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^a-z ]", " ", text.lower()).split())


def wordings(q: dict) -> tuple[str, dict[str, tuple[str, ...]]] | None:
    """(concept, style -> wordings) for a realdocs-dev question object, or None when no wording fits it."""
    if q["doc_type"] == "realreceipt":
        return (q["key"], RECEIPT[q["key"]]) if q["key"] in RECEIPT else None
    if q["doc_type"] == "realform":
        key = _key(q["key"])
        for pattern, concept, a, b in FORM:
            if re.fullmatch(pattern, key):
                return concept, {"A": a, "B": b}
        return None
    if q["doc_type"] == "realtable":
        for pat in _TABLE_QUERY:
            m = pat.match(q["query"])
            if m:
                parts = {"header": m["header"], "label": m["label"]}
                return "cell", {s: tuple(t.format(**parts) for t in ts) for s, ts in TABLE.items()}
    return None


def held_out_sources(objs: Sequence[dict], sources: Sequence[str]) -> set[str]:
    """Per doc_type, seeded whole sources until ``HELD_OUT_SHARE`` of its questions (never one that is most of it)."""
    out: set[str] = set()
    for doc_type in sorted({o["doc_type"] for o in objs}):
        sizes: dict[str, int] = {}
        for o, s in zip(objs, sources, strict=True):
            if o["doc_type"] == doc_type:
                sizes[s] = sizes.get(s, 0) + 1
        total, taken = sum(sizes.values()), 0
        names = sorted(sizes)
        random.Random(f"{SEED}:{doc_type}").shuffle(names)
        for name in names:
            if taken >= HELD_OUT_SHARE * total:
                break
            if sizes[name] <= 0.5 * total:
                out.add(name)
                taken += sizes[name]
    return out


def make(data: Path) -> list[dict]:
    """The paraphrase set's question objects (id, rephrases, query, style, concept, doc_type, source, split)."""
    objs = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line.strip()]
    sources = derive_sources(objs)
    held = held_out_sources(objs, sources)
    out = []
    for o, src in zip(objs, sources, strict=True):
        found = wordings(o)
        if found is None:
            continue
        concept, by_style = found
        rng = random.Random(f"{SEED}:{o['id']}")
        for style, n in PER_QUESTION.items():
            picks = rng.sample(by_style[style], min(n, len(by_style[style])))
            for k, text in enumerate(picks):
                out.append(
                    {
                        "id": f"{o['id']}_p{style}{k}",
                        "rephrases": o["id"],
                        "query": text,
                        "style": style,
                        "concept": f"{o['doc_type']}:{concept}",
                        "doc_type": o["doc_type"],
                        "source": src,
                        "split": "held-out" if src in held else "dev",
                    }
                )
    return out


def load(data: Path, path: Path | Sequence[Path] = (QUESTIONS, QUESTIONS_C)) -> list[tuple[dict, Question]]:
    """(paraphrase object, realdocs ``Question`` with the paraphrase's text) for every line of ``path`` (files)."""
    from arr_coc.training.data import load_jsonl

    base = {q.id: q for q in load_jsonl(data)}
    out = []
    paths = [path] if isinstance(path, Path) else list(path)
    for line in (ln for pth in paths for ln in pth.read_text().splitlines()):
        if not line.strip():
            continue
        p = json.loads(line)
        q = base[p["rephrases"]]
        kw = {"doc": q.doc, "doc_type": q.doc_type, "template": p["concept"], "source": p["source"]}
        out.append((p, Question(p["id"], p["query"], q.boxes, paraphrased=True, image_path=q.image_path, **kw)))
    return out


def _cell(vals: Sequence[float]) -> str:
    return f"{np.mean(vals):.3f} / {np.mean([v == 1.0 for v in vals]):.2f} (n={len(vals)})" if vals else "-"


def run(args: argparse.Namespace) -> int:
    from arr_coc.training.evidence import BUDGETS, DiskOcrCache
    from benchmarks.realdocs_recall import realizers, recall_of

    rows = load(args.data, args.questions)
    rows = [(p, q) for p, q in rows if p["style"] in args.styles and p["split"] in args.splits]
    if args.ids:
        keep = set(Path(args.ids).read_text().split())
        rows = [(p, q) for p, q in rows if p["id"] in keep]
    if args.shuffle:  # a seeded order: the questions done so far are a fair sample (``--out``'s .partial.jsonl)
        random.Random(SEED).shuffle(rows)
    if args.limit:
        rows = rows[: args.limit]
    partial = open(f"{args.out}.partial.jsonl", "w") if args.out else None  # noqa: SIM115
    ocr = DiskOcrCache(args.ocr_cache)
    fold_of, per_fold, final = realizers(args.relevance)
    from arr_coc.realizing import RULES, Realizer

    rules = Realizer.from_pretrained(RULES)  # by name: the default is routed-cells (issue 40 item 4, round 12)
    scorers = {"rules": rules, **({"learned": final} if final is not None else {})}
    if args.no_rules and final is not None:  # the rules' figures are another run's
        del scorers["rules"]
    held = sum(q.doc in fold_of and fold_of[q.doc] in per_fold for _, q in rows)  # scored by their fold's scorer
    label = BUDGETS[0][0]
    res: dict[str, list[float]] = {name: [] for name in scorers}
    t0 = time.perf_counter()
    for i, (_, q) in enumerate(rows):
        for name, realizer in scorers.items():
            if name == "learned" and q.doc in fold_of and fold_of[q.doc] in per_fold:
                realizer = per_fold[fold_of[q.doc]]  # a checkpoint with folds: the page's held-out fold
            res[name].append(recall_of(q, ocr, realizer)[label])
        if partial is not None:
            p = rows[i][0]
            partial.write(json.dumps({**p, **{s: res[s][-1] for s in scorers}}) + "\n")
            partial.flush()
        if (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(rows)}, {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    command = "python benchmarks/paraphrase_set.py " + " ".join(sys.argv[1:])
    lines = [
        f"# Paraphrased questions on realdocs-dev's pages ({', '.join(q.name for q in args.questions)})",
        "",
        f"- command: `{command}`",
        f"- {len(rows)} questions; recall / full-hit at {label} of the tokens; learned: {args.relevance} ("
        + (f"{held} questions scored by their page's held-out fold (folds.json), the others " if held else "")
        + "in-sample on realdocs-dev's pages)"
        if final is not None
        else f"- {len(rows)} questions; recall / full-hit at {label}",
        f"- wall time {time.perf_counter() - t0:.0f} s",
    ]
    gates = [getattr(getattr(r, "box_scorer", None), "pages", None) for r in (final, *per_fold.values())]
    if any(gates):  # a gated checkpoint (hybrid:FOLDER): how often each side scored a page (one call a question)
        n_l, n_r = (sum(g[k] for g in gates if g) for k in ("learned", "rules"))
        lines.append(f"- gate: {n_l} calls scored by the learned scorer, {n_r} by the rules")

    def groups(key) -> list[str]:
        names = sorted({key(p) for p, _ in rows})
        out = ["", "| group | " + " | ".join(scorers) + " |", "|---|" + "---:|" * len(scorers)]
        for g in [*names, None]:
            idx = [i for i, (p, _) in enumerate(rows) if g is None or key(p) == g]
            out.append(f"| {g or 'all'} | " + " | ".join(_cell([res[s][i] for i in idx]) for s in scorers) + " |")
        return out

    lines += ["", "## By style and split", *groups(lambda p: f"{p['style']} {p['split']}")]
    lines += ["", "## By style, split and doc_type", *groups(lambda p: f"{p['style']} {p['split']} {p['doc_type']}")]
    lines += ["", "## By concept (every style and split)", *groups(lambda p: p["concept"])]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        Path(args.out).write_text(report)
        recs = [{"id": p["id"], **{s: res[s][i] for s in scorers}} for i, (p, _) in enumerate(rows)]
        Path(args.out).with_suffix(".json").write_text(json.dumps(recs, indent=0))
    show = [(i, p, q) for i, (p, q) in enumerate(rows) if f"{p['style']} {p['split']}" in args.show]
    for i, p, q in show:
        if min(res[s][i] for s in scorers) < 1.0:
            print(f"MISS {' '.join(f'{s}={res[s][i]:.2f}' for s in scorers)} {p['id']} [{p['concept']}] {q.query!r}")
    return 0


def kept_recall(args: argparse.Namespace) -> int:
    """Recall at 11.1% of two ``benchmarks/kept_sets.py --realdocs`` outputs (before, after) of the same data, by
    doc_type, wording and template, and every question whose kept set differs, with both recalls."""
    from PIL import Image

    from arr_coc.training.data import evidence_cells, grid_of, load_jsonl

    questions = load_jsonl(args.data)
    runs = [json.loads(Path(k).read_text()) for k in args.kept]
    rec: list[dict[str, float]] = [{} for _ in runs]
    for q in questions:
        with Image.open(q.image_path) as im:
            size = im.size
        rows, cols = grid_of(*size)
        cells = evidence_cells(q.boxes, size, rows, cols)
        for r, run in zip(rec, runs, strict=True):
            r[q.id] = float(np.isin(cells, run[q.id]["11.1%"]).mean())
    for by in ("doc_type", "wording", "template"):
        print(f"\n## by {by} (recall at 11.1%: " + " -> ".join(str(k) for k in args.kept) + ")")
        key = {"doc_type": lambda q: q.doc_type, "wording": lambda q: "paraphrased" if q.paraphrased else "literal",
               "template": lambda q: q.template}[by]  # fmt: skip
        for g in sorted({key(q) for q in questions}):
            ids = [q.id for q in questions if key(q) == g]
            print(f"| {g} (n={len(ids)}) | " + " | ".join(f"{np.mean([r[i] for i in ids]):.3f}" for r in rec) + " |")
    print("\n## kept sets that differ (id, template, recall in each run, query)")
    for q in questions:
        if any(run[q.id]["11.1%"] != runs[0][q.id]["11.1%"] for run in runs[1:]):
            print(f"{q.id} [{q.template}] " + " ".join(f"{r[q.id]:.2f}" for r in rec) + f" {q.query!r}")
    return 0


def touched(args: argparse.Namespace) -> int:
    """The realdocs-schema questions this checkout's English paraphrase rules change, written one id a line: those
    whose answer types differ from the types the question's words alone give, those whose lexical scores on their
    page (OCR boxes from ``--ocr-cache``) differ from the scores of the question's own words, and those a loose
    table-cell split (``cell_wording``) finds a crossing for. Every other question runs the same code on the same
    numbers as before, so its kept set is unchanged (``kept_sets.py`` on the listed ones alone then compares all)."""
    from arr_coc.reading import Reading
    from arr_coc.reading.config import LexicalConfig
    from arr_coc.reading.matching import lexical
    from arr_coc.reading.matching.crossing import split_cell_query
    from arr_coc.training.data import load_jsonl
    from arr_coc.training.evidence import DiskOcrCache

    cfg, ocr, out = LexicalConfig(), DiskOcrCache(args.ocr_cache), []
    matcher = Reading().matcher(semantic=False)

    def before(t: str, texts: list[str]) -> tuple[tuple[str, ...], np.ndarray]:
        """(answer types, lexical scores) without this change: its lexicon, types and context words patched out."""
        saved = lexical.english_key_phrases, lexical.english_types, lexical._context_tokens
        lexical.english_key_phrases = lexical.english_types = lexical._context_tokens = lambda q: ()
        try:
            return lexical.answer_types(t), lexical.lexical_scores(texts, t, cfg)
        finally:
            lexical.english_key_phrases, lexical.english_types, lexical._context_tokens = saved

    for q in load_jsonl(args.data):
        t = q.query
        if lexical.foreign_words(t):
            continue
        boxes = ocr.read(q.load_image())
        texts = [b.text for b in boxes]
        types, lex = before(t, texts)
        if types != lexical.answer_types(t) or not np.array_equal(lex, lexical.lexical_scores(texts, t, cfg)):
            out.append(q.id)
        elif not split_cell_query(t) and matcher.table_cell(boxes, t) is not None:
            out.append(q.id)
    Path(args.out).write_text("\n".join(out) + "\n")
    print(f"{len(out)} questions touched -> {args.out}")
    return 0


def signatures(args: argparse.Namespace) -> int:
    """A digest per question (this set's wordings, realdocs-dev's questions, docgen's test split) of everything the
    English lexicon and the lexical gate derive from its words alone: answer types, concepts, printed keys, cue
    matches, the context words it holds, query terms. Run with two checkouts' ``src`` on PYTHONPATH and compare the
    files: a question whose digest is the same gets the same lexical scores and answer types on any page, so only
    the others need running in both (how the before / after figures of issue 40's para4 part were composed)."""
    import hashlib

    from arr_coc.evaluation import docgen
    from arr_coc.reading.config import LexicalConfig
    from arr_coc.reading.matching import lexical
    from arr_coc.reading.matching import paraphrase_en as pe

    cfg = LexicalConfig()

    def sig(q: str) -> str:
        terms = lexical.query_terms(q, cfg, context=True)
        unmatched = getattr(lexical, "unmatched_tokens", lexical._context_tokens)  # a checkout before para7's: context
        ctx = sorted(set(unmatched(q)) & {t for t, _ in terms})
        parts = [
            lexical.answer_types(q),
            pe.concepts(q),
            pe.english_key_phrases(q),
            [(name, sorted(sorted(m) for m in ms)) for name, ms in pe.cue_words(q, lexical.STOP_WORDS)],  # sets sorted
        ]
        parts += [ctx, lexical.query_terms(q, cfg), terms, lexical.foreign_words(q)]
        return hashlib.sha1(repr(parts).encode()).hexdigest()

    out = {}
    for path in (QUESTIONS, QUESTIONS_C, QUESTIONS_D, QUESTIONS_E, QUESTIONS_F, QUESTIONS_G, QUESTIONS_H):
        for p in (json.loads(x) for x in path.read_text().splitlines() if x.strip()):
            out[f"para:{p['id']}"] = sig(p["query"])
    for q in (json.loads(x) for x in (args.data / "questions.jsonl").read_text().splitlines() if x.strip()):
        out[f"rd:{q['id']}"] = sig(q["query"])
    for sample in docgen.generate("test", args.n_per_kind, 0):
        out[f"dg:{sample.id}:{sample.query}"] = sig(sample.query)
    Path(args.out).write_text(json.dumps(out))
    print(f"{len(out)} question digests -> {args.out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Paraphrased questions on realdocs-dev's pages (make the set / run it).")
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="write the question file from the wordings above")
    mk.add_argument("--data", type=Path, default=Path("/work/data/realdocs-dev"))
    mk.add_argument("--out", type=Path, default=QUESTIONS)
    r = sub.add_parser("run", help="recall at 11.1% on the set")
    r.add_argument("--data", type=Path, required=True, help="the realdocs-dev folder the set rephrases")
    r.add_argument(
        "--questions",
        type=Path,
        nargs="+",
        default=[QUESTIONS, QUESTIONS_C, QUESTIONS_D, QUESTIONS_E, QUESTIONS_F, QUESTIONS_G, QUESTIONS_H],
    )
    r.add_argument("--ocr-cache", type=Path, default=None)
    r.add_argument("--relevance", type=Path, default=None, help="a checkpoint folder or built-in name (learned)")
    r.add_argument("--no-rules", action="store_true", help="with --relevance: score only the checkpoint")
    r.add_argument("--styles", default="A,B,C", type=lambda s: s.split(","), help="of A,B,C,D,E,F,G,H")
    r.add_argument("--splits", default="dev,held-out", type=lambda s: s.split(","))
    r.add_argument("--show", default="A dev", type=lambda s: s.split(","), help="groups whose misses are printed")
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--ids", default=None, help="a file of question ids: only those")
    r.add_argument("--shuffle", action="store_true", help="run the questions in a seeded random order")
    r.add_argument("--out", default=None, help="markdown report; per-question JSON beside it")
    k = sub.add_parser("kept-recall", help="recall at 11.1% of kept_sets.py --realdocs outputs, and what differs")
    k.add_argument("--data", type=Path, required=True)
    k.add_argument("kept", nargs="+", type=Path, help="kept_sets.py --realdocs JSON files (the first: before)")
    t = sub.add_parser("touched", help="ids of the realdocs questions the English paraphrase rules can change")
    t.add_argument("--data", type=Path, required=True)
    t.add_argument("--ocr-cache", type=Path, default=None)
    t.add_argument("--out", type=Path, required=True)
    g = sub.add_parser("signatures", help="digests of what the lexicon reads in each question (compare two checkouts)")
    g.add_argument("--data", type=Path, required=True)
    g.add_argument("--n-per-kind", type=int, default=12, help="docgen test samples per kind (evidence_recall's)")
    g.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.cmd == "signatures":
        return signatures(args)
    if args.cmd == "touched":
        return touched(args)
    if args.cmd == "kept-recall":
        return kept_recall(args)
    if args.cmd == "make":
        objs = make(args.data)
        args.out.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objs))
        print(f"{len(objs)} questions -> {args.out}")
        return 0
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
