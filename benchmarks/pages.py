"""Many pages, one budget: recall of the answer's cells on 8-page documents of real pages, and the time of a first
and a second question on a 20-page PDF.

Example:
    PYTHONPATH=src python benchmarks/pages.py --data /work/data/realdocs-dev --ocr-cache /work/cache/ocr \\
        --pdf /usr/share/doc/libtasn1-doc/libtasn1.pdf --out results/pages.md

Recall. Every question of a realdocs-schema set (real FUNSD forms, SROIE receipts, PDF table pages; the answer's
boxes on one page) becomes an 8-page document: its page and 7 other pages of the same kind (doc_type) drawn from
OTHER sources, in a random order (seeded by the question's id), so a form question sits among 7 other forms. The
document's budget is 1% or 2.8% of all its pages' tokens (Qwen2.5-VL grid, max_pixels 1280*28*28). Compared:

* even split: every page keeps the same fraction (its own top cells, words whole) -- what page-by-page ``allocate``
  with one fraction does;
* right page alone: the whole budget spent on the answer's page (an oracle: it knows the page);
* one budget (``arr_coc.pages.allocate_pages``, the default ``PagesConfig``): the decision over the pages.

Recall is the share of the answer's evidence cells kept (realdocs' cell rule, ``arr_coc.training.data.evidence_cells``),
averaged over questions; "ambiguous" questions are those whose printed key (the annotation's ``key``) is also found
in the OCR text of another page of the document (e.g. "What is the Date?" among 8 forms): no page decision can tell
which page is meant, so they are reported apart. ``PagesConfig.lexical`` was chosen on documents of FUNSD's
"10d" sources (``TUNED_SOURCES``): the table shows the other sources apart (held out). The 24 questions the
thresholds were set on (the probe's 12, seed 0, and the trial run's 12: ``probe_ids``) are left out. Pages are
read with ``--ocr-cache`` (the boxes stored).

Time (``--pdf``): each case in a fresh process, the OCR and text models loaded before the clock starts (on an
unrelated image), page caches cold: one page of the PDF, a first question on 20 pages (the first look on the text
layer, then the text path on the likely pages), a second question on the same loaded document, the same 20 pages
with every page read (no first look), and the 20 pages as images (a scan: no text layer, every page read in
parallel threads).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FRACTIONS = (0.01, 0.028)
N_PAGES = 8
PROBE_SEED = 0  # the probe that set PagesConfig's thresholds: random.seed(0); random.sample(questions, 12)


# the 12 documents of the first trial run (--limit 12), whose failures set the capitals rule of ``_words`` and the
# ``margin`` of ``PagesConfig``: left out too
TRIAL_IDS = frozenset(
    "realform_0000971160_q0 realform_0011838621_q0 realform_0060007216_q2 realform_0071032790_q1 "
    "realform_01191071_1072_q3 realform_716552_q0 realform_89867723_q2 realform_92298125_q0 realreceipt_052_q1 "
    "realreceipt_158_q0 realreceipt_399_q1 realreceipt_602_q1".split()
)


# PagesConfig.lexical was chosen on 60 documents of these sources (FUNSD's "10d" folders): the other sources are
# held out of every choice made after the trial run
TUNED_SOURCES = "funsd:10d"


def tuned(row: dict) -> bool:
    return str(row["source"]).startswith(TUNED_SOURCES)


def probe_ids(questions: Sequence) -> set[str]:
    """The questions the thresholds were set on: the probe's 12 and the trial run's 12."""
    rng = random.Random(PROBE_SEED)
    return {q.id for q in rng.sample(list(questions), 12)} | TRIAL_IDS


def build_documents(questions: Sequence, n_pages: int = N_PAGES) -> list[tuple[object, list[str]]]:
    """(question, page paths in document order) for every question: its page + n_pages - 1 pages of the same
    doc_type from other sources, shuffled (seeded by the question's id)."""
    pages: dict[str, tuple[str, str]] = {}  # path -> (doc_type, source)
    for q in questions:
        pages[str(q.image_path)] = (q.doc_type, q.source)
    out = []
    for q in questions:
        rng = random.Random(zlib.crc32(q.id.encode()))
        pool = sorted(p for p, (t, s) in pages.items() if t == q.doc_type and s != q.source)
        if len(pool) < n_pages - 1:  # a kind with few sources: other pages of the same kind
            pool = sorted(p for p, (t, _) in pages.items() if t == q.doc_type and p != str(q.image_path))
        doc = [*rng.sample(pool, min(n_pages - 1, len(pool))), str(q.image_path)]
        rng.shuffle(doc)
        out.append((q, doc))
    return out


def _norm(text: str) -> str:
    return " ".join("".join(ch.lower() if ch.isalnum() else " " for ch in text).split())


def recall_rows(data: Path, ocr_cache: Path, limit: int, log) -> list[dict]:
    """One row a question: recall of each method at each fraction."""
    from PIL import Image

    from arr_coc.attending import select
    from arr_coc.pages import allocate_pages
    from arr_coc.training.data import FAMILY, MAX_PIXELS, evidence_cells, load_jsonl
    from arr_coc.training.evidence import DiskOcrCache

    ocr = DiskOcrCache(ocr_cache)
    questions = load_jsonl(data)
    folder = data if data.is_dir() else data.parent
    raw = {}
    for line in (folder / "questions.jsonl").read_text().splitlines() if (folder / "questions.jsonl").is_file() else []:
        item = json.loads(line)
        raw[item["id"]] = item
    skip = probe_ids(questions)
    docs = [(q, d) for q, d in build_documents(questions) if q.id not in skip]
    if limit and limit < len(docs):
        docs = [docs[int(i)] for i in np.linspace(0, len(docs) - 1, limit).round()]  # evenly over every kind
    images: dict[str, Image.Image] = {}
    rows = []
    t_start = time.perf_counter()
    for n, (q, paths) in enumerate(docs, 1):
        pics = [images.setdefault(p, Image.open(p).convert("RGB")) for p in paths]
        doc = allocate_pages(pics, q.query, FRACTIONS[0], family=FAMILY, max_pixels=MAX_PIXELS, mode="text", reader=ocr)
        right = paths.index(str(q.image_path))
        page = doc.pages[right]
        rows_, cols_ = page.grid
        cells = evidence_cells(q.boxes, pics[right].size, rows_, cols_)
        total = doc.n_tokens
        row = {"id": q.id, "doc_type": q.doc_type, "source": q.source, "specific": doc.specific}
        key = _norm(str(raw.get(q.id, {}).get("key") or ""))
        texts = [" ".join(_norm(b.text) for b in (p.allocation.text_boxes if p.allocation else [])) for p in doc.pages]
        row["ambiguous"] = bool(key) and any(f" {key} " in f" {t} " for i, t in enumerate(texts) if i != right)
        ranked = sorted(range(len(doc.pages)), key=lambda i: -(doc.pages[i].relevance or 0.0))
        row["page_first"] = ranked[0] == right or (doc.pages[right].relevance or 0) >= (
            doc.pages[ranked[0]].relevance or 0
        )
        for frac in FRACTIONS:
            keeps = doc.select(frac)
            mine = keeps[right].numpy()
            row[f"ours@{frac}"] = float(np.isin(cells, mine).mean()) if len(cells) else 1.0
            row[f"share@{frac}"] = len(mine) / max(1, sum(len(k) for k in keeps))
            scores = torch.from_numpy(np.ascontiguousarray(page.allocation.scores, dtype=np.float32)).flatten()
            units = list(page.allocation.units)
            k_even = max(1, round(frac * page.n_tokens))
            even = select(scores, k_even, units=units).numpy()
            row[f"even@{frac}"] = float(np.isin(cells, even).mean()) if len(cells) else 1.0
            k_alone = max(1, min(page.n_tokens, round(frac * total)))
            alone = select(scores, k_alone, units=units).numpy()
            row[f"alone@{frac}"] = float(np.isin(cells, alone).mean()) if len(cells) else 1.0
        rows.append(row)
        if n % 25 == 0:
            log(f"  {n}/{len(docs)} documents, {time.perf_counter() - t_start:.0f} s")
    return rows


def recall_table(rows: list[dict]) -> list[str]:
    def mean(rs: list[dict], key: str) -> str:
        return f"{np.mean([r[key] for r in rs]):.3f}" if rs else "-"

    clear = [r for r in rows if not r["ambiguous"]]
    groups: list[tuple[str, list[dict]]] = [("all", rows), ("unambiguous", clear)]
    groups.append((f"unambiguous, held-out sources (not {TUNED_SOURCES}*)", [r for r in clear if not tuned(r)]))
    groups.append((f"unambiguous, tuning sources ({TUNED_SOURCES}*)", [r for r in clear if tuned(r)]))
    for t in sorted({r["doc_type"] for r in rows}):
        groups.append((f"{t} (unambiguous)", [r for r in rows if r["doc_type"] == t and not r["ambiguous"]]))
    groups.append(("ambiguous", [r for r in rows if r["ambiguous"]]))
    head = "| questions | n | " + " | ".join(
        f"{m} @ {100 * f:g}%" for f in FRACTIONS for m in ("even split", "one budget", "right page alone")
    )
    lines = [head + " | answer page ranked first |", "|---|---:|" + "---:|" * (3 * len(FRACTIONS) + 1)]
    for name, rs in groups:
        vals = [mean(rs, f"{m}@{f}") for f in FRACTIONS for m in ("even", "ours", "alone")]
        first = f"{np.mean([r['page_first'] for r in rs]):.3f}" if rs else "-"
        lines.append(f"| {name} | {len(rs)} | " + " | ".join(vals) + f" | {first} |")
    return lines


# ---- time: each case in its own process (cold caches), models loaded first --------------------------------------

Q1 = "Where should bugs be reported?"
Q2 = "What does asn1Decoding generate?"


def time_case(case: str, pdf: str) -> dict:
    """Run in a fresh process: ms of the case's questions (models loaded beforehand, page caches cold)."""
    import arr_coc
    from arr_coc.documents import load_document
    from arr_coc.pages import allocate_pages

    arr_coc.allocate(str(ROOT / "examples" / "receipt.jpg"), "warm up", 0.1, mode="text")  # models loaded
    # ... and run once on a page of the PDF's size outside pages 1-20 (the first MiniLM batches of a dense page and
    # the first texture of a grid size cost seconds once a process: not the document's cost)
    allocate_pages(pdf, "warm up the text layer", 0.05, pages="30", mode="text")
    out: dict[str, float | list] = {}
    t0, c0 = time.perf_counter(), time.process_time()  # wall; CPU of the whole process (every thread)
    if case == "one_page":
        doc = allocate_pages(pdf, Q1, 0.05, pages="9", mode="text")
        out["first"] = (time.perf_counter() - t0) * 1e3
        out["first_cpu"] = (time.process_time() - c0) * 1e3
    elif case in ("twenty", "twenty_all"):
        pages = load_document(pdf, pages="1-20")
        out["render"] = (time.perf_counter() - t0) * 1e3
        doc = allocate_pages(pages, Q1, 0.01, mode="text", first_look_pages=case == "twenty")
        out["first"] = (time.perf_counter() - t0) * 1e3
        out["first_cpu"] = (time.process_time() - c0) * 1e3  # the read-ahead starts at the answer: not in it
        out["first_read_pages"] = [p.page.name for p in doc.pages if p.read == "text"]
        t_ahead = time.perf_counter()
        doc.wait()  # the read-ahead of the pages the first question skipped (a user reads the answer meanwhile)
        out["ahead"] = (time.perf_counter() - t_ahead) * 1e3
        t1 = time.perf_counter()
        doc = allocate_pages(pages, Q1, 0.01, mode="text", first_look_pages=case == "twenty")
        out["same_again"] = (time.perf_counter() - t1) * 1e3
        t2 = time.perf_counter()
        doc = allocate_pages(pages, Q2, 0.01, mode="text", first_look_pages=case == "twenty")
        out["second"] = (time.perf_counter() - t2) * 1e3
        out["second_read_pages"] = [p.page.name for p in doc.pages if p.read == "text"]
        t3 = time.perf_counter()
        allocate_pages(pages, Q2, 0.01, mode="text", first_look_pages=case == "twenty")
        out["second_again"] = (time.perf_counter() - t3) * 1e3
    elif case == "twenty_scan":
        pages = load_document(pdf, pages="1-20")
        for p in pages:
            p.text = None  # a scan: no text layer
        t0 = time.perf_counter()
        doc = allocate_pages(pages, Q1, 0.01, mode="text")
        out["first"] = (time.perf_counter() - t0) * 1e3
        t1 = time.perf_counter()
        allocate_pages(pages, Q2, 0.01, mode="text")
        out["second"] = (time.perf_counter() - t1) * 1e3
    out["shares"] = {str(p.page.name): p.budget for p in doc.pages if p.budget}
    return out


CASES = ("one_page", "twenty", "twenty_all", "twenty_scan")


def time_table(pdf: str, log, cases: Sequence[str] = CASES, threads: int = 0) -> tuple[list[str], dict]:
    results = {}
    for case in cases:
        cmd = [sys.executable, __file__, "--time-case", case, "--pdf", pdf, "--threads", str(threads)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            raise RuntimeError(f"{case} failed: {proc.stderr[-2000:]}")
        results[case] = json.loads(proc.stdout.strip().splitlines()[-1])
        log(f"  {case}: {results[case]}")
    one = results["one_page"]["first"]
    lines = [
        "| case | first question (ms) | x one page | second question (ms) "
        "| pages read by the text path (first / second) |",
        "|---|---:|---:|---:|---|",
        f"| one page (page 9 alone) | {one:.0f} | 1.0 | - | 9 |",
    ]
    for case, label in (
        ("twenty", "20 pages, first look on the text layer (default)"),
        ("twenty_all", "20 pages, every page read (no first look)"),
        ("twenty_scan", "20 pages as a scan (no text layer: every page read, in threads)"),
    ):
        if case not in results:
            continue
        r = results[case]
        read = [r.get(k, "all") for k in ("first_read_pages", "second_read_pages")]
        pages = " / ".join("all 20" if v == "all" or len(v) == 20 else ", ".join(map(str, v)) for v in read)
        lines.append(f"| {label} | {r['first']:.0f} | {r['first'] / one:.1f} | {r['second']:.0f} | {pages} |")
    if "twenty" in results:
        t = results["twenty"]
        lines.append("")
        lines.append(
            "20 pages, first look: opening the PDF and reading its pages' sizes and text layers took "
            f"{t['render']:.0f} "
            f"ms of the first question; the read-ahead of the other pages took {t.get('ahead', 0):.0f} ms after the "
            f"first answer (waited for before the second question); the same first question again "
            f"{t['same_again']:.0f} ms; the second question again {t['second_again']:.0f} ms."
        )
    return lines, results


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=None, help="realdocs-schema folder (questions.jsonl + images)")
    p.add_argument("--ocr-cache", type=Path, default=None, help="folder of cached OCR boxes (DiskOcrCache)")
    p.add_argument("--limit", type=int, default=0, help="only N documents (evenly spaced)")
    p.add_argument("--pdf", default=None, help="a real PDF of 20 pages or more for the time table")
    p.add_argument("--out", type=Path, default=Path("results/pages.md"))
    p.add_argument("--time-case", default=None, help=argparse.SUPPRESS)
    p.add_argument("--cases", default=",".join(CASES), help="the time cases to run (comma-separated)")
    p.add_argument("--threads", type=int, default=0, help="torch threads in each time case (0: default)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.time_case:
        print(json.dumps(time_case(args.time_case, args.pdf)))
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    lines = [
        "# Many pages, one budget",
        "",
        "```",
        "PYTHONPATH=src python benchmarks/pages.py " + " ".join(sys.argv[1:]),
        "```",
        "",
    ]
    raw: dict = {}
    if args.data:
        rows = recall_rows(args.data, args.ocr_cache, args.limit, log)
        raw["recall"] = rows
        lines += [
            f"## Recall of the answer's cells, {N_PAGES}-page documents of real pages",
            "",
            *recall_table(rows),
            "",
        ]
    if args.pdf:
        tl, res = time_table(args.pdf, log, args.cases.split(","), args.threads)
        raw["time"] = res
        lines += [f"## Time on a 20-page PDF ({args.pdf}, pages 1-20)", "", *tl, ""]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(raw))
    return 0


if __name__ == "__main__":
    sys.exit(main())
