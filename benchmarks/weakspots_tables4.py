"""Real table questions asked the way realdocs-dev's generator asks them, chosen by written rules (issue 40, round 4).

Example:
    python benchmarks/weakspots_tables4.py make --src /work/data/weakspots/tables-src --out OUT --max-pages 10
    python benchmarks/realdocs_recall.py --data OUT/dev.jsonl --ocr-cache /work/cache/weakspots/ocr-tables \\
        --relevance learned --out X.md        # then heldout.jsonl once, at the end (and last.jsonl)
    python benchmarks/weakspots_tables.py report --data OUT/questions.jsonl --runs X.json
    python benchmarks/weakspots_tables4.py spread --data OUT/last.jsonl --runs X.json Y.json   # spread over sources

``weakspots_tables.py`` (round 3) keeps only clean cells: one header row, geometry checked on the text layer, so it
reads 1.000 where the independent set reads 0.88. realdocs-dev's ``make_dev.py`` chose each table's header rows and
label column by eye and asked every cell that passes its uniqueness filters; this module makes those choices by
rules, liberally, on the same PDFs as round 3 (``weakspots_tables.py``'s collections, ``RESERVED`` names left out,
its ``split_of`` groups and ``NOT_TABLES``). The criteria, written before anything was measured:

* Tables: pdfplumber's ruling-line tables of each page (first ``--max-pages`` pages; pdf.js 2); on a page without
  one, pdfplumber's text strategy (``vertical_strategy`` and ``horizontal_strategy`` "text"), kept where it is a
  plausible table: 3+ columns, 4+ body rows, header cells standing apart on their line, short body cells (median 4
  words, 30 characters) -- round 3's criteria.
* Header rows (``header_rows``): the first row (of the first 4) with non-numeric text (a year is text) in half the
  columns; a table whose such row looks like data (``data_like4``: round 3's ``data_like``, where a cell with a
  letter is never a number, so "Q1" heads a column) gives none. The rows above it join the header up to the first
  title row (text in one cell only), the rows below it while the row above them or they themselves hold a spanning
  (merged, ``None``) cell and they are not ``data_like4``; at most 4 header rows. A column's header = its cells'
  text in those rows joined with spaces (a merged cell is ``None`` in pdfplumber's rows for the columns it spans,
  so those columns take only the other rows' text: exactly ``make_dev.py``'s join).
* Label column (``label_column``): the first column whose body cells are mostly distinct non-numeric text (60% of
  the body rows hold text that is not a number -- ``_num``: a year or a cell with a letter counts as text -- and
  80% of those texts distinct); not always column 0.
* Cells: the columns right of the label column (added after the first development measurement: realdocs-dev's
  by-eye value columns are never left of the label -- cam_20: label 1, values 2-3; cam_medicine: label 2, values
  4-5 -- and on PyMuPDF's test-4055, two tables side by side that pdfplumber reads as one, a "Form Code" left of
  the right table's label asked for the left table's code: a wrong answer key); a cell's text is its words in
  reading order, wrapped lines joined (``clean``), and
  ``make_dev.py``'s filters: answer 1-8 words printed once on the page (as a cell and as a phrase), label non-empty,
  at most 8 words and unique in its column, header non-empty, at most 16 words and unique among the headers, word
  boxes at least 5 px high; and the text decoded (no ``(cid:N)``). No geometric check of the value against its
  label and header (``make_dev.py`` has none). Added after reading the first run's questions (no recall measured
  yet): a header that reads as a value (``_number_header``: "29.1", "21.32T") asks nothing (a data row taken for
  the header; realdocs-dev's by-eye headers are words, codes like "Q1", or years).
* At most 4 questions a page (``make_dev.py``'s ``--max-per-image``), 2 pages a source (seeded), 8 questions a
  source; a page whose text another source has counts once. If more than ``MAX_TOTAL`` questions remain, whole
  sources are drawn (seeded, sorted names) until the next would pass it: OCR costs 10-30 s a new page here.

The "last" group, named before it was measured (helper tables4b): collections added after every figure above,
with the generator unchanged -- docling-eval's ``tests/data/`` (github:docling-project/docling-eval, MIT), pypdf's
``resources/`` (github:py-pdf/pypdf, BSD-3-Clause), and, added when those two gave only 4 questions from 1 source
(a count, before any recall), deepdoctection's ``_tests/test_objects/`` at d5e60d4 (FedEx annual-report pages;
Apache-2.0) and pymupdf/RAG's ``examples/`` (AGPL-3.0). Every source of theirs is "last" (``weakspots_tables.LAST``),
built with ``make --collections doclingeval pypdf deepdoctection pymupdfrag``, measured once, never tuned on.

Round 5's "last" group (helper tables5), named and committed before any figure on it (``weakspots_tables.LAST5``):
nine collections no earlier round copied -- amazon-textract-textractor (tests, fixtures), amazon-textract-code-samples
``python/``, Azure document-intelligence-code-samples, docling-parse ``tests/data/``, img2table ``examples/data/``,
layout-parser ``tests/fixtures/``, pdf-table-extract ``example/``, py-pdf/sample-files, nlm-ingestor ``files/pdf/``
-- each file checked against ``RESERVED`` by name and, by sha1, against every other collection and realdocs-dev's
13 table PDFs (``copy``). tabula-java gives nothing new: its top-level PDFs are rounds 2-4's ``tabula`` sources and
its ICDAR 2013 folders are camelot's ``tests/files/tabula/`` copies (reserved). Built with ``make --collections
textractor textractsamples azuredi doclingparse img2table layoutparser pdftableextract pypdfsamples nlmingestor``.

Round 6's "last" group (helper tables6), named and committed before any figure on it (``weakspots_tables.LAST6``):
nine collections no earlier table round copied -- Apache PDFBox (test and example resources), Apache Tika (test
documents), kreuzberg ``test_documents/``, OCRmyPDF ``tests/resources/`` (the scans benchmark reads a few of its
scanned pages, not as tables), pdf2htmlEX ``pdf2htmlEX/test/``, unstract (its one 10-K), markitdown ``packages/``,
unstructured-api ``sample-docs/``, spacy-layout ``tests/data/`` -- copied and checked as round 5's were. Built with
``make --collections pdfbox tika kreuzberg ocrmypdf pdf2htmlex unstract markitdown unstructuredapi spacylayout``.
Those nine gave 28 questions from 6 sources (a count, before any recall), so three more collections joined it, named
and committed before any figure too: pymupdf4llm (AGPL-3.0), llama_parse (MIT), and Adobe's PDF Services Python SDK
samples ``src/resources/`` (MIT); ``make --collections`` then lists all twelve.

Round 11's "last" group (helper tablesfresh), named and committed before any figure on it (``weakspots_tables.LAST11``):
eight collections no earlier table round copied -- MegaParse ``libs/megaparse/tests/``, papermage ``tests/fixtures/``,
zerox ``shared/inputs/``, sycamore ``lib/`` (its test resources), haystack ``test/``, gmft ``data/pdfs/`` (beyond
kreuzberg's copy of its ``tiny``), PyMuPDF-Utilities ``table-analysis/`` and GROBID's ``grobid-core`` test resources --
copied as round 5's were, with each copied file's git blob also looked up in every earlier collection's repository
(all its history) and in camelot's, excalibur's and pdfplumber's (``dupes``). Built with ``make --collections
megaparse papermage zerox sycamore haystack gmft pymupdfutil grobid``, measured once at main 99c5826.

Round 12's "last" group (helper tablesfresh12), named and committed before any figure (``weakspots_tables.LAST12``):
eight collections no earlier table round copied -- pdf2docx ``test/samples/`` (ArtifexSoftware), invoice2data
``tests/``, Parsr (axa-group, whole repository), pikepdf ``tests/resources/``, pdfcpu ``pkg/testdata/``, pdftabextract
``examples/``, textract (deanmalmgren) ``tests/`` and PDFMathTranslate ``test/file/`` -- copied as round 11's were
(``copy`` into a folder beside the earlier 45 collections, so its sha1 check sees them all), then ``dupes`` over the
48 earlier and reserved repositories' histories; the files it names are deleted (each collection's MANIFEST says
which). Those eight gave 29 questions from 9 sources (a count, before any recall), so five more joined, named and
committed before any figure too: PageIndex ``docs/``, smalot/pdfparser ``samples/``, pdf-lib ``assets/pdfs/``,
Google's document-ai-samples and langchain-community's ``libs/community/tests/``; those thirteen gave 41 questions
from 11 sources (a count), so three more joined before any figure: cognita ``sample-data/``, FPDI's test PDFs and
pdf-rs ``files/``. Built with ``make --collections pdf2docx invoice2data parsr pikepdf pdfcpu pdftabextract textract
pdfmathtranslate pageindex pdfparser pdflib docaisamples lccommunity cognita fpdi pdfrs``, measured once at 993eb7e.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "src", ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from realdocs_extra import MAX_WORDS, MIN_BOX_H, clean, norm, word_boxes  # noqa: E402
from weakspots_tables import GAP, _apart, _numeric, _text, _words_in, data_like, make, page_tables  # noqa: E402

from arr_coc.training.data import decoded_text as decoded  # noqa: E402

MAX_HEADER_ROWS = 4
PAGES_PER_SOURCE = 2
PER_PAGE = 4
MAX_TOTAL = 150


def _num(s: str) -> bool:
    """A number: mostly digits, no letter ("Q1", "T0-C1" are text), not a year."""
    return _numeric(s) and not re.search(r"[^\W\d_]", s)


def _number_header(s: str) -> bool:
    """A header that reads as a value: it opens with a digit and holds no word of two letters, and is not a year
    ("29.1", "21.32T", "131.44% 112.24%"; not "3-Year-Old Cohort", "2004", "Q1")."""
    return bool(re.match(r"\d", s)) and not re.search(r"[^\W\d_]{2}", s) and not re.fullmatch(r"(1[89]|20)\d\d", s)


def _text_cells(t: list[str]) -> int:
    return sum(bool(x) and not _num(x) for x in t)


def data_like4(texts: list[list[str]], i: int) -> bool:
    """``weakspots_tables.data_like`` with ``_num`` for numbers: more than half the row's cells numbers, or at
    least half of them recurring below in their column or numbers shaped like the column's commonest body cell."""
    return data_like(texts, i, _num)


def header_rows(rows: list, texts: list[list[str]]) -> tuple[list[int], int] | None:
    """(header row indices, first body row) of a table (the module docstring's rule), or None: no header."""
    ncol = len(texts[0])
    h = next((i for i, t in enumerate(texts[:4]) if _text_cells(t) >= max(2, ncol / 2)), None)
    if h is None or data_like4(texts, h):
        return None

    def spans(i: int) -> bool:
        return any(c is None for c in rows[i].cells)

    top = h
    while top > 0 and h - top + 1 < MAX_HEADER_ROWS and sum(bool(x) for x in texts[top - 1]) >= 2:
        top -= 1
    d0 = h + 1
    while d0 < len(rows) and d0 - top < MAX_HEADER_ROWS and (spans(d0 - 1) or spans(d0)) and not data_like4(texts, d0):
        d0 += 1
    return list(range(top, d0)), d0


def label_column(texts: list[list[str]], body: Sequence[int]) -> int | None:
    """The first column whose body cells are mostly distinct non-numeric text, or None."""
    for c in range(len(texts[0])):
        vals = [texts[r][c] for r in body if texts[r][c] and not _num(texts[r][c])]
        if len(vals) >= 0.6 * len(body) and len(set(vals)) >= 0.8 * len(vals):
            return c
    return None


def _plausible_text_table(pg, words, rows, texts, hrows, body) -> bool:
    """Round 3's criteria for a table found by text alignment (no ruling lines)."""
    ncol = len(texts[0])
    if ncol < 3 or len(body) < 4:
        return False
    head_ws = [_words_in(pg, c) for h in hrows for c in rows[h].cells if c]
    if not all(_apart(words, x, GAP) for x in head_ws if x):
        return False
    sizes = [len(texts[r][c].split()) for r in body for c in range(ncol) if texts[r][c]]
    chars = sorted(len(texts[r][c]) for r in body for c in range(ncol) if texts[r][c])
    return bool(sizes) and sorted(sizes)[len(sizes) // 2] <= 4 and chars[len(chars) // 2] <= 30


def page_questions4(pg, scale: float, rng: random.Random, max_per: int) -> list[dict]:
    """Cell questions of one page, asked as ``make_dev.py`` asks them (the module docstring's rules)."""
    words, page_text, found = page_tables(pg)
    tables = []
    for ti, (strategy, table) in enumerate(found):
        rows = list(table.rows)
        ncol = len(rows[0].cells) if rows else 0
        if len(rows) < 3 or ncol < 2 or any(len(r.cells) != ncol for r in rows):
            continue
        tables.append((ti, strategy, rows, [[_text(pg, c) if c else "" for c in r.cells] for r in rows]))
    # make_dev.py: an answer is printed once among the cells of every table on the page
    all_cells = [norm(x) for _, _, _, texts in tables for t in texts for x in t]
    cands = []
    for ti, strategy, rows, texts in tables:
        ncol = len(texts[0])
        got = header_rows(rows, texts)
        if got is None:
            continue
        hrows, d0 = got
        body = range(d0, len(rows))
        if len(body) < 3:
            continue
        if strategy == "text" and not _plausible_text_table(pg, words, rows, texts, hrows, body):
            continue
        lcol = label_column(texts, body)
        if lcol is None:
            continue
        headers = {
            c: clean(" ".join(texts[h][c] for h in hrows if rows[h].cells[c] and texts[h][c])) for c in range(ncol)
        }
        labels = {r: texts[r][lcol] for r in body}
        for r in body:
            lab, lab_cell = labels[r], rows[r].cells[lcol]
            if not lab or not lab_cell or len(lab.split()) > MAX_WORDS or list(labels.values()).count(lab) != 1:
                continue
            for c in range(ncol):
                hd, cell = headers[c], rows[r].cells[c]
                if c <= lcol or not hd or not cell or list(headers.values()).count(hd) != 1 or _number_header(hd):
                    continue
                if len(hd.split()) > 2 * MAX_WORDS:
                    continue
                ws = _words_in(pg, cell)
                ans = clean(" ".join(w["text"] for w in ws))
                if not ans or len(ans.split()) > MAX_WORDS or not norm(ans):
                    continue
                if not (decoded(ans) and decoded(hd) and decoded(lab)):
                    continue
                if all_cells.count(norm(ans)) != 1 or page_text.count(" " + ans + " ") != 1:
                    continue
                boxes = word_boxes(ws, scale)
                if min(b[3] - b[1] for b in boxes) < MIN_BOX_H:
                    continue
                head_boxes = [[int(v * scale) for v in rows[h].cells[c]] for h in hrows if rows[h].cells[c]]
                cands.append(
                    {
                        "answer": ans,
                        "boxes": boxes,
                        "key": f"{hd} / {lab}",
                        "key_boxes": [[int(v * scale) for v in lab_cell], *head_boxes],
                        "hd": hd,
                        "lab": lab,
                        "table": ti,
                        "row": r,
                        "col": c,
                        "strategy": strategy,
                        "page_text": page_text,
                        "header_rows": len(hrows),
                        "label_col": lcol,
                    }
                )
    return rng.sample(cands, min(max_per, len(cands)))


def cap(questions: list[dict], seed: int, max_total: int = MAX_TOTAL) -> list[dict]:
    """At most ``PAGES_PER_SOURCE`` pages a source (a seeded draw), then whole sources in a seeded order while the
    total stays within ``max_total``."""
    by_source: dict[str, list[dict]] = {}
    for q in questions:
        by_source.setdefault(q["source"], []).append(q)
    kept: dict[str, list[dict]] = {}
    for source, qs in sorted(by_source.items()):
        pages = sorted({q["image"] for q in qs})
        keep = set(random.Random(f"{seed}/pages/{source}").sample(pages, min(PAGES_PER_SOURCE, len(pages))))
        kept[source] = [q for q in qs if q["image"] in keep]
    order = sorted(kept)
    random.Random(f"{seed}/sources").shuffle(order)
    out, total = [], 0
    for source in order:
        if total + len(kept[source]) > max_total:
            continue
        out += kept[source]
        total += len(kept[source])
    chosen = {q["id"] for q in out}
    return [q for q in questions if q["id"] in chosen]


def make4(src: Path, out: Path, dpi: int, max_pages: int, seed: int, jobs: int, only: Sequence[str] = ()) -> list[dict]:
    """Build, cap (``cap``) and write ``questions.jsonl`` and one file a group, as ``weakspots_tables.make``."""
    qs = make(src, out, dpi, max_pages, PER_PAGE, seed, jobs, only, page_fn=page_questions4)
    qs = cap(qs, seed)
    lines = {q["id"]: json.dumps(q) + "\n" for q in qs}
    (out / "questions.jsonl").write_text("".join(lines.values()))
    for group in ("dev", "heldout", "last"):
        (out / f"{group}.jsonl").write_text("".join(lines[q["id"]] for q in qs if q["split"] == group))
    used = {q["image"] for q in qs}
    for png in (out / "images").glob("*.png"):
        if f"images/{png.name}" not in used:
            png.unlink()
    return qs


def make_pdfs(pdfs: Sequence[Path], out: Path, dpi: int, seed: int) -> list[dict]:
    """The same rules on page 1 of each PDF in ``pdfs`` (realdocs-dev's 13 table PDFs: the by-eye choices of
    ``make_dev.py`` against these rules on the same pages), one source a PDF, group "dev"; writes
    ``questions.jsonl``."""
    from weakspots_tables import _pdf_questions

    (out / "images").mkdir(parents=True, exist_ok=True)
    qs = []
    for pdf in sorted(pdfs):
        repo = f"{pdf.name} (realdocs-dev's table PDFs)"
        job = (pdf, "rd", repo, out, dpi, 1, PER_PAGE, seed, False, page_questions4)
        for q in _pdf_questions(job):
            q.pop("page_text", None)
            q["split"] = "dev"
            qs.append(q)
    (out / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    return qs


def spread(data: Path, runs: Sequence[Path], budget: str = "11.1%") -> str:
    """Recall at ``budget`` of each run (``realdocs_recall.py``'s JSON; a run's allocators are named by its file:
    ``X.json``'s "rules" as rules, its "learned" as X) over the questions of ``data``: the mean, the spread over
    sources (min / median / sd of the per-source means) and the mean of each collection (a source's prefix)."""
    import numpy as np

    source = {}
    for line in data.read_text().splitlines():
        q = json.loads(line)
        source[q["id"]] = q.get("source", q["id"])
    rows = ["| allocator | questions | sources | mean | min / median / sd over sources | by collection |"]
    rows.append("|---|---:|---:|---:|---|---|")
    done = set()
    for run in runs:
        for key, name in (("rules", "rules"), ("learned", run.stem)):
            got = {r["id"]: r[key][budget] for r in json.loads(run.read_text())["questions"] if key in r}
            got = {i: v for i, v in got.items() if i in source}
            if not got or name in done:
                continue
            done.add(name)
            by: dict[str, list[float]] = {}
            for i, v in got.items():
                by.setdefault(source[i], []).append(v)
            per = {s: float(np.mean(v)) for s, v in by.items()}
            colls: dict[str, list[float]] = {}
            for i, v in got.items():
                colls.setdefault(source[i].split(":")[0], []).append(v)
            cells = ", ".join(f"{c} {np.mean(v):.2f}" for c, v in sorted(colls.items()))
            vals = list(per.values())
            rows.append(
                f"| {name} | {len(got)} | {len(per)} | {np.mean(list(got.values())):.3f} | "
                f"{min(vals):.2f} / {np.median(vals):.2f} / {np.std(vals):.2f} | {cells} |"
            )
    return "\n".join(rows) + "\n"


def blob_dupes(src: Path, names: Sequence[str], git_dirs: Sequence[Path]) -> list[str]:
    """Files of the collections ``names`` under ``src`` whose git blob id is among ALL objects (every commit, every
    path) of the repositories ``git_dirs``: a second de-duplication beside ``copy``'s sha1 check, which sees only the
    snapshots copied. Returns "collection/file in <git dir>" lines."""
    import subprocess

    mine = {}
    for n in names:
        for pdf in sorted((src / n).glob("*.pdf")):
            out = subprocess.run(["git", "hash-object", str(pdf)], capture_output=True, text=True, check=True)
            mine[out.stdout.strip()] = f"{n}/{pdf.name}"
    found = []
    for d in git_dirs:
        run = ["git", "--git-dir", str(d), "cat-file", "--batch-all-objects", "--batch-check"]
        ids = {ln.split()[0] for ln in subprocess.run(run, capture_output=True, text=True).stdout.splitlines()}
        found += [f"{f} in {d}" for h, f in mine.items() if h in ids]
    return found


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make", help="write OUT/questions.jsonl, dev / heldout / last.jsonl and OUT/images/")
    m.add_argument("--src", required=True, type=Path)
    m.add_argument("--out", required=True, type=Path)
    m.add_argument("--dpi", type=int, default=150)
    m.add_argument("--max-pages", type=int, default=10, help="first N pages of each PDF")
    m.add_argument("--seed", type=int, default=17)
    m.add_argument("--jobs", type=int, default=2)
    m.add_argument("--collections", nargs="*", default=(), help="only these collections (folders of --src)")
    r = sub.add_parser("pdfs", help="the same rules on page 1 of the PDFs given (realdocs-dev's own table PDFs)")
    r.add_argument("pdfs", nargs="+", type=Path)
    r.add_argument("--out", required=True, type=Path)
    r.add_argument("--dpi", type=int, default=150)
    r.add_argument("--seed", type=int, default=17)
    s = sub.add_parser("spread", help="mean and spread over sources of realdocs_recall.py runs (JSON)")
    s.add_argument("--data", required=True, type=Path, help="the questions' JSONL (with their sources)")
    s.add_argument("--runs", required=True, type=Path, nargs="+", help="realdocs_recall.py --out X.md's X.json")
    d = sub.add_parser("dupes", help="files of --collections whose git blob is anywhere in the --git-dirs' history")
    d.add_argument("--src", required=True, type=Path)
    d.add_argument("--collections", required=True, nargs="+")
    d.add_argument("--git-dirs", required=True, type=Path, nargs="+")
    a = p.parse_args(argv)
    if a.cmd == "dupes":
        found = blob_dupes(a.src, a.collections, a.git_dirs)
        print("\n".join(found) + f"\n{len(found)} duplicates in {len(a.git_dirs)} repositories")
        return 0
    if a.cmd == "spread":
        print(spread(a.data, a.runs), end="")
        return 0
    if a.cmd == "pdfs":
        qs = make_pdfs(a.pdfs, a.out, a.dpi, a.seed)
        print(f"wrote {a.out / 'questions.jsonl'}: {len(qs)} questions, {len({q['image'] for q in qs})} pages")
        return 0
    qs = make4(a.src, a.out, a.dpi, a.max_pages, a.seed, a.jobs, a.collections)
    print(f"wrote {a.out / 'questions.jsonl'}: {len(qs)} questions, {len({q['image'] for q in qs})} pages")
    for s in sorted({q["source"] for q in qs}):
        mine = [q for q in qs if q["source"] == s]
        ruled = sum(q["render"]["strategy"] == "lines" for q in mine)
        print(f"  {s}: {len(mine)} questions ({ruled} ruled) {mine[0]['split']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
