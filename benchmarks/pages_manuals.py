"""Many pages, one budget on real typeset manuals: 8-page windows of born-digital PDFs from Debian's documentation
packages, questions whose answer is printed on one page, answer boxes from the PDF's own text layer (pdfplumber).

Example:
    PYTHONPATH=src python benchmarks/pages_manuals.py --pdfs /tmp/pdfs --out results/pages_manuals.md

The PDFs (none is TeX Live documentation; none is a test file of camelot or pdfplumber)::

    apt-get download libidn2-doc gnutls-doc libgcrypt20-doc    # + the installed libtasn1-doc, shared-mime-info,
    # zlib1g-dev (crc-doc), nettle-dev, fontconfig, valgrind, bzip2 (gunzip the .pdf.gz ones into the folder)
    apt-get download bash-doc glpk-doc libmpfr-doc shishi-doc  # added after the in-page rule was fixed (LATE):
    # bashref.pdf, glpk.pdf, mpfr.pdf(.gz), shishi.pdf as bash-doc-bashref.pdf, glpk-doc-glpk.pdf,
    # libmpfr-doc-mpfr.pdf, shishi-doc-shishi.pdf
    apt-get download autoconf-doc flex-doc gnuplot-doc r-doc-pdf sdcc-doc docbook-xsl-doc-pdf  # a fresh held-out
    # set, in a folder of its own, run once (results/pages.md): <package>-<pdf name>.pdf as above, every source
    # named in --holdout

The set: each PDF gives one or two windows of 8 consecutive pages (:func:`windows`); on each page, every line that
reads "<subject> <verb> <object>" (verb in :data:`VERBS`: "X returns Y", "X is Y", ...) or "<key>: <value>" becomes
a question ("What does X return?", "What is X?", "What is given for <key>?") whose answer boxes are the object's
words (at most 6, up to the line's first punctuation), provided the subject's rarest word is printed on no other page
of the window (the answer is on one page) and the object has a content word. At most :data:`PER_WINDOW` questions a
window, spread over its pages (seeded). Questions are grouped by source (the PDF): ``--holdout`` names the sources
held out of every choice, reported apart, and the table shows each source's recall (the spread).

Compared at 1% and 2.8% of the window's tokens (Qwen2.5-VL grid, at most 1,280 tokens a page): the even split
(every page keeps that fraction of its own tokens, ``allocate`` page by page), one budget (``allocate_pages`` on the
PDF, its defaults: the first look, the text layer as the text path's boxes) and the right page alone (the whole
budget on the answer's page, an oracle). ``--images`` runs the same questions on the rendered pages as images (no
text layer: OCR, every page read; ``--ocr-cache`` keeps the boxes).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FRACTIONS = (0.01, 0.028)
N_PAGES = 8
PER_WINDOW = 6
VERBS = {
    "returns": "return", "generates": "generate", "contains": "contain", "specifies": "specify",
    "defines": "define", "describes": "describe", "uses": "use", "requires": "require", "provides": "provide",
    "creates": "create", "reads": "read", "writes": "write", "checks": "check", "sets": "set", "prints": "print",
    "computes": "compute", "supports": "support", "implements": "implement", "takes": "take", "is": "is",
    "are": "are", "produces": "produce", "stores": "store", "encodes": "encode", "decodes": "decode",
}  # fmt: skip
STOP = frozenset(
    "the a an this that these those it its of in on to for and or by with from as at be is are was not no can may "
    "will if then than which what who when where how all any each function value values one two also only here there "
    "last first next".split()
)
_TOKEN = re.compile(r"[A-Za-z0-9_.\-]+")


def windows(n_pages: int) -> list[int]:
    """First pages (0-based) of the 8-page windows of a PDF of ``n_pages``: one from page 3 (past the title pages),
    a second from the middle when the PDF has 30 pages or more."""
    if n_pages < N_PAGES:
        return []
    first = min(2, n_pages - N_PAGES)
    out = [first]
    if n_pages >= 30:
        out.append(n_pages // 2)
    return out


def _lines(words: list[dict]) -> list[list[dict]]:
    """pdfplumber words grouped into lines (same baseline, left to right)."""
    rows: list[list[dict]] = []
    for w in sorted(words, key=lambda w: (round(w["bottom"]), w["x0"])):
        if rows and abs(rows[-1][-1]["bottom"] - w["bottom"]) < 2 and w["x0"] >= rows[-1][-1]["x0"]:
            rows[-1].append(w)
        else:
            rows.append([w])
    return rows


def _vocab(text: str) -> set[str]:
    return {t.lower().strip(".-") for t in _TOKEN.findall(text)}


def _content(word: str) -> bool:
    w = word.lower().strip(".,;:()-")
    return len(w) > 2 and w not in STOP and any(ch.isalpha() for ch in w)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*[A-Za-z0-9_](\([A-Za-z0-9_, ]*\))?")


def _rare(subject: Sequence[str], others: set[str]) -> bool:
    """Whether some content word of the subject is printed on no other page of the window."""
    parts = [t.lower().strip(".-") for s in subject for t in _TOKEN.findall(s)]
    return any(len(t) > 2 and t not in STOP and any(ch.isalpha() for ch in t) and t not in others for t in parts)


def _named(word: str) -> bool:
    """An identifier-like name (a function, a constant, a file: an underscore, a digit, an inner capital, a dot or
    parentheses), not an ordinary English word."""
    core = word.strip("()")
    return bool(re.search(r"[_0-9()]|[a-z][A-Z]|[A-Za-z]\.[A-Za-z]", core)) or (core.isupper() and len(core) > 2)


def page_questions(words: list[dict], others: set[str], size: tuple[float, float]) -> list[dict]:
    """The questions of one page: ``others`` is the vocabulary of the window's other pages; boxes are fractions of
    the page (x0, y0, x1, y1)."""
    w0, h0 = size
    out = []
    lines = _lines(words)
    for n, line in enumerate(lines):
        texts = [w["text"] for w in line]
        if n and lines[n - 1][-1]["text"].endswith("-"):
            continue  # the line starts with the end of a hyphenated word
        for j, t in enumerate(texts):
            verb = t.lower()
            key_line = 0 < j <= 3 and texts[j - 1].endswith(":") and not texts[0][0].isdigit()
            if not (verb in VERBS and j > 0) and not key_line:
                continue
            article = ""
            if key_line:
                subject, start = [s.rstrip(":") for s in texts[:j]], j
            else:
                lead = texts[max(0, j - 3) : j]
                at = [k for k, s in enumerate(lead) if s in ("The", "the")]
                if at and 1 <= len(lead) - at[-1] - 1 <= 2:
                    article, subject = "the ", lead[at[-1] + 1 :]
                elif _named(lead[-1]):
                    subject = lead[-1:]
                else:
                    continue
                start = j + 1
            if not all(_IDENT.fullmatch(s) and s.lower() not in STOP for s in subject):
                continue
            obj = []
            for w in line[start : start + 6]:
                obj.append(w)
                if re.search(r"[.,;:)]$", w["text"]):
                    break
            if len(obj) < 2 or "..." in " ".join(w["text"] for w in obj) or not any(_content(w["text"]) for w in obj):
                continue
            if not _rare(subject, others):
                continue
            name = article + " ".join(subject)
            if key_line:
                query = f"What is given for {name}?"
            elif verb in ("is", "are"):
                query = f"What {verb} {name}?"
            else:
                query = f"What does {name} {VERBS[verb]}?"
            boxes = [[w["x0"] / w0, w["top"] / h0, w["x1"] / w0, w["bottom"] / h0] for w in obj]
            answer = " ".join(w["text"] for w in obj)
            out.append({"query": query, "answer": answer, "boxes": boxes})
            break
    return out


def build_set(folder: Path) -> list[dict]:
    """Every question of every window of every PDF in ``folder`` (sorted by name)."""
    import pdfplumber

    out = []
    for pdf_path in sorted(folder.glob("*.pdf")):
        with pdfplumber.open(pdf_path) as pdf:
            for first in windows(len(pdf.pages)):
                pages = pdf.pages[first : first + N_PAGES]
                words = [p.extract_words(x_tolerance=1.5) for p in pages]
                vocab = [_vocab(" ".join(w["text"] for w in ws)) for ws in words]
                found = []
                for i, page in enumerate(pages):
                    others = set().union(*(v for k, v in enumerate(vocab) if k != i))
                    for q in page_questions(words[i], others, (float(page.width), float(page.height))):
                        found.append({**q, "page": i})
                seen: dict[str, int] = {}
                for q in found:
                    seen[q["query"]] = seen.get(q["query"], 0) + 1
                found = [q for q in found if seen[q["query"]] == 1]  # a question asked on two pages: dropped
                rng = random.Random(zlib.crc32(f"{pdf_path.name}:{first}".encode()))
                rng.shuffle(found)
                chosen, per_page = [], {}
                for q in found:  # spread over the pages: at most 2 a page
                    if per_page.get(q["page"], 0) < 2 and len(chosen) < PER_WINDOW:
                        chosen.append(q)
                        per_page[q["page"]] = per_page.get(q["page"], 0) + 1
                for n, q in enumerate(chosen):
                    out.append({
                        "id": f"{pdf_path.stem}_{first + 1}_q{n}", "source": pdf_path.stem, "pdf": str(pdf_path),
                        "pages": f"{first + 1}-{first + N_PAGES}", **q,
                    })  # fmt: skip
    return out


def recall_rows(questions: list[dict], images: bool, ocr_cache: Path | None, log, realizer=None) -> list[dict]:
    """One row a question: recall of the answer's cells for each method at each fraction (``realizer``: the
    relevance, ``--relevance``; None: the default)."""
    import torch

    import arr_coc
    from arr_coc.attending import select
    from arr_coc.documents import load_document
    from arr_coc.page_text import LayerReader
    from arr_coc.pages import allocate_pages
    from arr_coc.training.data import FAMILY, MAX_PIXELS, evidence_cells

    reader = None
    if images:
        from arr_coc.training.records import DiskOcrCache

        reader = DiskOcrCache(ocr_cache)
    loaded: dict[tuple[str, str], list] = {}
    rows = []
    t_start = time.perf_counter()
    for n, q in enumerate(questions, 1):
        key = (q["pdf"], q["pages"])
        if key not in loaded:
            loaded[key] = load_document(q["pdf"], q["pages"], target_pixels=2 * MAX_PIXELS)
        pages = loaded[key]
        source = [p.image for p in pages] if images else pages
        t0 = time.perf_counter()
        doc = allocate_pages(source, q["query"], FRACTIONS[0], family=FAMILY, max_pixels=MAX_PIXELS, mode="text",
                             reader=reader, realizer=realizer)  # fmt: skip
        ms = (time.perf_counter() - t0) * 1e3
        right = q["page"]
        page = doc.pages[right]
        alloc = page.allocation
        if alloc is None:  # the first look did not read it: the baselines need its scores
            alloc = arr_coc.allocate(pages[right].image, q["query"], 1.0, family=FAMILY, max_pixels=MAX_PIXELS,
                                     mode="text", reader=LayerReader(pages[right].lines, reader),
                                     realizer=realizer)  # fmt: skip
        w, h = pages[right].original
        boxes = [[b[0] * w, b[1] * h, b[2] * w, b[3] * h] for b in q["boxes"]]
        cells = evidence_cells(boxes, (w, h), *page.grid)
        ranked = sorted(range(len(doc.pages)), key=lambda i: -(doc.pages[i].relevance or 0.0))
        best = doc.pages[ranked[0]].relevance or 0.0
        row = {"id": q["id"], "source": q["source"], "ms": ms, "specific": doc.specific,
               "page_first": (page.relevance or 0.0) >= best and page.relevance is not None,
               "read": sum(p.read == "text" for p in doc.pages)}  # fmt: skip
        scores = torch.from_numpy(np.ascontiguousarray(alloc.scores, dtype=np.float32)).flatten()
        units = list(alloc.units)
        for frac in FRACTIONS:
            keeps = doc.select(frac)
            mine = keeps[right].numpy()
            row[f"ours@{frac}"] = float(np.isin(cells, mine).mean())
            even = select(scores, max(1, round(frac * page.n_tokens)), units=units).numpy()
            row[f"even@{frac}"] = float(np.isin(cells, even).mean())
            alone = select(scores, max(1, min(page.n_tokens, round(frac * doc.n_tokens))), units=units).numpy()
            row[f"alone@{frac}"] = float(np.isin(cells, alone).mean())
        rows.append(row)
        if n % 10 == 0:
            log(f"  {n}/{len(questions)} questions, {time.perf_counter() - t_start:.0f} s")
    return rows


def recall_table(rows: list[dict], holdout: set[str]) -> list[str]:
    def mean(rs: list[dict], key: str) -> str:
        return f"{np.mean([r[key] for r in rs]):.3f}" if rs else "-"

    late = set(LATE.split(","))
    groups = [("all", rows), ("held-out sources", [r for r in rows if r["source"] in holdout]),
              ("tuning sources", [r for r in rows if r["source"] not in holdout])]  # fmt: skip
    if late & {r["source"] for r in rows}:
        groups.insert(2, ("held out, added after the in-page rule", [r for r in rows if r["source"] in late]))
    for s in sorted({r["source"] for r in rows}):
        groups.append((f"{s}{' (held out)' if s in holdout else ''}", [r for r in rows if r["source"] == s]))
    head = "| questions | n | " + " | ".join(
        f"{m} @ {100 * f:g}%" for f in FRACTIONS for m in ("even split", "one budget", "right page alone")
    )
    lines = [head + " | answer page ranked first |", "|---|---:|" + "---:|" * (3 * len(FRACTIONS) + 1)]
    for name, rs in groups:
        vals = [mean(rs, f"{m}@{f}") for f in FRACTIONS for m in ("even", "ours", "alone")]
        lines.append(f"| {name} | {len(rs)} | " + " | ".join(vals) + f" | {mean(rs, 'page_first')} |")
    return lines


LATE = "bash-doc-bashref,glpk-doc-glpk,libmpfr-doc-mpfr,shishi-doc-shishi"  # sources added after the in-page rule
HOLDOUT = "gnutls,nettle-dev-nettle,valgrind-valgrind_manual,zlib1g-dev-crc-doc.1.0,shared-mime-info-spec," + LATE


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pdfs", type=Path, required=True, help="folder of PDFs (see the module doc)")
    p.add_argument("--set-only", action="store_true", help="print the questions and stop")
    p.add_argument("--images", action="store_true", help="the pages as images (OCR) instead of the PDF")
    p.add_argument("--ocr-cache", type=Path, default=None, help="folder of cached OCR boxes (--images)")
    p.add_argument("--holdout", default=HOLDOUT, help="comma-separated sources held out of every choice")
    p.add_argument("--out", type=Path, default=None, help="write the table (markdown) and rows (.json) here")
    p.add_argument("--relevance", default=None, help="a relevance name or folder (Realizer.from_pretrained)")
    args = p.parse_args(argv)
    qs = build_set(args.pdfs)
    if args.set_only:
        for q in qs:
            print(json.dumps({k: q[k] for k in ("id", "page", "query", "answer")}))
        print(len(qs), "questions", file=sys.stderr)
        return 0

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    realizer = None
    if args.relevance:
        from arr_coc.realizing import Realizer

        realizer = Realizer.from_pretrained(args.relevance).eval()
    rows = recall_rows(qs, args.images, args.ocr_cache, log, realizer)
    what = "rendered pages as images (OCR)" if args.images else "the PDF (text layer)"
    lines = [
        f"## Recall of the answer's cells, 8-page windows of typeset manuals, {what}",
        "",
        "```",
        "PYTHONPATH=src python benchmarks/pages_manuals.py " + " ".join(sys.argv[1:]),
        "```",
        "",
        *recall_table(rows, set(args.holdout.split(","))),
        "",
        f"Median time of one question (8 pages): {np.median([r['ms'] for r in rows]):.0f} ms.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
