"""More real documents for training and validation: table questions from the text layer of public PDFs
that are NOT reserved for evaluation, in realdocs-dev's schema, each page tagged with its source.

The PDFs come from document-conversion projects' example / test data (``MANIFEST``: repository, commit, path,
licence). The reserved data (FUNSD's testing split, SROIE receipts outside realdocs-dev, camelot's and pdfplumber's
test PDFs other than realdocs-dev's 13) is not used, and neither is tabula's (camelot copies its test PDFs).

Steps:
    copy      ``git show COMMIT:PATH`` of each manifest entry out of a local clone into ``SRC/<collection>/`` (the
              PDFs stay out of this repository: ``fetch`` them as git mirrors first)
    make      for each PDF page (the first ``--max-pages``) pdfplumber's tables: header row 0, label column 0; a
              question "What is the <header> for <label>?" / "In the <label> row, what is the <header>?" for each
              cell whose header, label and value are unambiguous on the page; evidence boxes = the value's words
              (the PDF's own text layer, scaled to the rendered page); pages rendered by pdftoppm at ``--dpi``

Each line carries ``"source": "<collection>:<pdf stem>"`` (the file is the source: folds never split it) and a
``render`` block (file, page, dpi, table, row, col, repository, commit, licence).

Example::

    python benchmarks/realdocs_extra.py copy --git-dir /work/.mirror/Unstructured-IO+unstructured/repo \\
        --collection unstructured --src /work/data/general/extra-src
    python benchmarks/realdocs_extra.py copy --git-dir /work/.mirror/docling-project+docling/repo \\
        --collection docling --src /work/data/general/extra-src
    python benchmarks/realdocs_extra.py copy --git-dir /work/.mirror/mozilla+pdf.js/repo --collection pdfjs \\
        --src /work/data/general/extra-src
    python benchmarks/realdocs_extra.py copy --git-dir /work/.mirror/py-pdf+sample-files/repo \\
        --collection pypdf-samples --src /work/data/general/extra-src
    python benchmarks/realdocs_extra.py make --src /work/data/general/extra-src --out /work/data/general/realdocs-extra
    arr-coc train --data /work/data/realdocs-dev --data /work/data/general/realdocs-extra ...
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from arr_coc.training.data import decoded_text as decoded  # text pdfplumber decoded: no "(cid:N)" in it

UNSTRUCTURED = ("github:Unstructured-IO/unstructured", "3e5482bfcdc843b5218ad98d2845b4b71ab013b7", "Apache-2.0")
DOCLING = ("github:docling-project/docling", "e1cb2b234c48ff29746b0f2f843d07f8e23905a0", "MIT")
PDFJS = ("github:mozilla/pdf.js", "0f26334f9d6f96119f6e5164fb65832fbbde7344", "Apache-2.0")
PYPDF_SAMPLES = ("github:py-pdf/sample-files", "6921079eb3e1ed0944db5ec75016910d59da7fdb", "CC-BY-SA-4.0")
# collection -> (repository, commit, repository licence, [paths]); the documents inside are public example
# documents (papers, reports, manuals, statements) the projects ship as test data under the repository's licence
MANIFEST: dict[str, tuple[str, str, str, list[str]]] = {
    "unstructured": (
        *UNSTRUCTURED,
        [
            f"example-docs/pdf/{n}.pdf"
            for n in (
                "DA-1p",
                "a1977-backus-p21",
                "all-number-table",
                "chevron-page",
                "embedded-images-tables",
                "interface-config-guide-p93",
                "layout-parser-paper-with-table",
                "layout-parser-paper-fast",
                "list-item-example",
                "multi-column-2p",
                "multi-column",
                "reliance",
                "single_table",
                "table-multi-row-column-cells",
                "pdf-with-ocr-text",
                "header-test-doc",
                "emphasis-text",
                "copy-protected",
                "negative-coords",
                "pdf-bad-color-space",
            )
        ]
        + ["example-docs/language-docs/fr_olap.pdf"],
    ),
    "docling": (
        *DOCLING,
        [
            f"tests/data/pdf/sources/{n}.pdf"
            for n in (
                "2305.03393v1-pg9",
                "amt_handbook_sample",
                "code_and_formula",
                "multi_page",
                "picture_classification",
                "redp5110_sampled",
                "table_mislabeled_as_picture",
                "skipped_1page",
                "skipped_2pages",
            )
        ],
    ),
    # pdf.js' test PDFs are mostly reduced rendering cases; these two are whole documents with a text layer (a
    # two-column conference paper, a working paper); the repository's other real documents are stored as links
    "pdfjs": (*PDFJS, ["test/pdfs/tracemonkey.pdf", "test/pdfs/TAMReview.pdf"]),
    # py-pdf's sample files (every PDF CC-BY-SA-4.0 by the repository's README): LaTeX multi-column, a German
    # thesis, a Google Docs export, LaTeX and LibreOffice documents
    "pypdf-samples": (
        *PYPDF_SAMPLES,
        [
            "026-latex-multicolumn/multicolumn.pdf",
            "009-pdflatex-geotopo/GeoTopo-komprimiert.pdf",
            "011-google-doc-document/google-doc-document.pdf",
            "004-pdflatex-4-pages/pdflatex-4-pages.pdf",
            "006-pdflatex-outline/pdflatex-outline.pdf",
            "021-pdfa/crazyones-pdfa.pdf",
            "002-trivial-libre-office-writer/002-trivial-libre-office-writer.pdf",
        ],
    ),
}
TEXT_WORDINGS = [
    ("extra_text_next", 'Which words come right after "{key}"?'),
    ("extra_text_continue", 'How does the text continue after "{key}"?'),
    ("extra_text_follow", 'What follows "{key}" in the text?'),
]
KEY_WORDS, ANSWER_WORDS = 5, 3  # running text: the key phrase quoted, the words after it asked for
COLUMN_GAP = 12.0  # points: a wider gap between two words of a line separates two columns
WORDINGS = [
    ("extra_table_cell", "What is the {hd} for {lab}?"),
    ("extra_table_cell_row", "In the {lab} row, what is the {hd}?"),
]
MAX_WORDS = 8  # realdocs-dev's limits (make_dev.py)
MIN_BOX_H = 5


def norm(s: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", s.upper())


def clean(s: str) -> str:
    s = re.sub(r"-\n(?=[a-z])", "", s or "")
    return re.sub(r"\s+", " ", s).strip()


def copy(git_dir: str, collection: str, src: Path) -> int:
    """Copy the manifest's files of ``collection`` (``git show COMMIT:PATH``) into ``src/collection``."""
    repo, commit, _licence, paths = MANIFEST[collection]
    dest = src / collection
    dest.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in paths:
        blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], capture_output=True)
        if blob.returncode != 0 or blob.stdout[:4] != b"%PDF":
            print(f"  skip {path}: not in {repo}@{commit[:10]} as a PDF", file=sys.stderr)
            continue
        (dest / Path(path).name).write_bytes(blob.stdout)
        n += 1
    return n


def word_boxes(words: list[dict], scale: float) -> list[list[int]]:
    """Pixel boxes [x0, y0, x1, y1] of pdfplumber words at ``scale`` (pixels per PDF point): the top-left corner
    rounded down, the bottom-right rounded up, so a box always covers its word."""
    return [
        [int(w["x0"] * scale), int(w["top"] * scale), int(w["x1"] * scale + 0.999), int(w["bottom"] * scale + 0.999)]
        for w in words
    ]


def page_questions(pg, scale: float, rng: random.Random, max_per: int) -> list[dict]:
    """Unambiguous table-cell questions of one pdfplumber page (header row 0, label column 0; header and label hold
    words, not only numbers)."""
    words = pg.extract_words()
    page_text = " " + " ".join(w["text"] for w in words) + " "

    def cell_words(bb):
        x0, y0, x1, y1 = bb
        sub = pg.filter(
            lambda o: (
                o.get("object_type") == "char"
                and x0 <= (o["x0"] + o["x1"]) / 2 <= x1
                and y0 <= (o["top"] + o["bottom"]) / 2 <= y1
            )
        )
        return sorted(sub.extract_words(), key=lambda w: (round(w["top"]), w["x0"]))

    def text(bb) -> str:
        return clean(" ".join(w["text"] for w in cell_words(bb))) if bb else ""

    found = pg.find_tables()
    all_cells = [norm(text(c)) for t in found for row in t.rows for c in row.cells if c]
    cands = []
    for ti, table in enumerate(found):
        rows = table.rows
        if len(rows) < 3 or len(rows[0].cells) < 2:
            continue
        ncol = len(rows[0].cells)
        headers = {c: text(rows[0].cells[c]) for c in range(ncol)}
        labels = {r: text(rows[r].cells[0]) for r in range(1, len(rows)) if len(rows[r].cells) == ncol}
        for r, lab in labels.items():
            if (
                not re.search(r"[A-Za-z]{2}", lab)
                or len(lab.split()) > MAX_WORDS
                or list(labels.values()).count(lab) != 1
            ):
                continue
            for c in range(1, ncol):
                hd, cell = headers[c], rows[r].cells[c]
                if not re.search(r"[A-Za-z]{2}", hd) or not cell or list(headers.values()).count(hd) != 1:
                    continue
                if len(hd.split()) > 2 * MAX_WORDS:
                    continue
                ws = cell_words(cell)
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
                key_boxes = [[int(v * scale) for v in rows[r].cells[0]], [int(v * scale) for v in rows[0].cells[c]]]
                cands.append(
                    {
                        "answer": ans,
                        "boxes": boxes,
                        "key": f"{hd} / {lab}",
                        "key_boxes": key_boxes,
                        "hd": hd,
                        "lab": lab,
                        "table": ti,
                        "row": r,
                        "col": c,
                    }
                )
    return rng.sample(cands, min(max_per, len(cands)))


def text_questions(pg, scale: float, rng: random.Random, max_per: int) -> list[dict]:
    """Running-text questions of one page: a line segment (one column's part of a printed line) of at least
    ``KEY_WORDS + ANSWER_WORDS`` words; the query quotes its first ``KEY_WORDS`` words, the answer is the next
    ``ANSWER_WORDS`` (both unique on the page, the answer holding a word of 3+ letters); evidence boxes = the answer's
    words from the text layer. Multi-column pages keep each column's segments apart (``COLUMN_GAP``)."""
    words = [w for w in pg.extract_words() if w["text"].strip()]
    words.sort(key=lambda w: (round(w["top"] / 3), w["x0"]))
    segments: list[list[dict]] = []
    for w in words:
        last = segments[-1][-1] if segments else None
        if last is not None and abs(w["top"] - last["top"]) < 3 and 0 <= w["x0"] - last["x1"] < COLUMN_GAP:
            segments[-1].append(w)
        else:
            segments.append([w])
    flat = " " + " ".join(clean(w["text"]) for seg in segments for w in seg) + " "
    cands = []
    for seg in segments:
        if len(seg) < KEY_WORDS + ANSWER_WORDS:
            continue
        key = clean(" ".join(w["text"] for w in seg[:KEY_WORDS]))
        ans_words = seg[KEY_WORDS : KEY_WORDS + ANSWER_WORDS]
        ans = clean(" ".join(w["text"] for w in ans_words))
        if not re.search(r"[A-Za-z]{3}", ans) or not re.search(r"[A-Za-z]{3}", key) or '"' in key:
            continue
        if not decoded(key) or not decoded(ans):
            continue
        if flat.count(" " + key + " ") != 1 or flat.count(" " + ans + " ") != 1:
            continue
        boxes = word_boxes(ans_words, scale)
        if min(b[3] - b[1] for b in boxes) < MIN_BOX_H:
            continue
        key_boxes = word_boxes(seg[:KEY_WORDS], scale)
        cands.append({"answer": ans, "boxes": boxes, "key": key, "key_boxes": key_boxes})
    return rng.sample(cands, min(max_per, len(cands)))


def make(src: Path, out: Path, dpi: int, max_pages: int, max_per: int, seed: int) -> list[dict]:
    """Questions and rendered pages of every PDF under ``src/<collection>/`` (sorted, seeded)."""
    import pdfplumber
    from PIL import Image

    (out / "images").mkdir(parents=True, exist_ok=True)
    scale = dpi / 72.0
    questions: list[dict] = []
    for collection in sorted(MANIFEST):
        repo, commit, licence, paths = MANIFEST[collection]
        for path in paths:
            pdf_path = src / collection / Path(path).name
            if not pdf_path.is_file():
                continue
            stem = pdf_path.stem
            rng = random.Random(f"{seed}/{collection}/{stem}")
            try:
                pdf = pdfplumber.open(pdf_path)
            except Exception as exc:  # noqa: BLE001 - a broken test PDF is skipped, named
                print(f"  skip {pdf_path.name}: {exc}", file=sys.stderr)
                continue
            with pdf:
                for p, pg in enumerate(pdf.pages[:max_pages], 1):
                    if pg.bbox[0] != 0 or pg.bbox[1] != 0 or pg.rotation:
                        continue
                    try:
                        picked = [("pdftable", x) for x in page_questions(pg, scale, rng, max_per)]
                        if len(picked) < max_per:
                            picked += [("pdftext", x) for x in text_questions(pg, scale, rng, max_per - len(picked))]
                    except Exception as exc:  # noqa: BLE001 - a page pdfplumber cannot read is skipped, named
                        print(f"  skip {pdf_path.name} p{p}: {exc}", file=sys.stderr)
                        continue
                    if not picked:
                        continue
                    name = f"{collection}_{re.sub(r'[^A-Za-z0-9_]+', '_', stem)}_p{p}"
                    base = out / "images" / name
                    subprocess.run(
                        [
                            "pdftoppm",
                            "-r",
                            str(dpi),
                            "-f",
                            str(p),
                            "-l",
                            str(p),
                            "-png",
                            "-singlefile",
                            str(pdf_path),
                            str(base),
                        ],
                        check=True,
                    )
                    with Image.open(f"{base}.png") as im:
                        w, h = im.size
                    for i, (doc_type, x) in enumerate(picked):
                        if doc_type == "pdftable":
                            template, wording = rng.choice(WORDINGS)
                            query = wording.format(hd=x["hd"], lab=x["lab"])
                        else:
                            template, wording = rng.choice(TEXT_WORDINGS)
                            query = wording.format(key=x["key"])
                        questions.append(
                            {
                                "id": f"{name}_q{i}",
                                "query": query,
                                "answer": x["answer"],
                                "boxes": x["boxes"],
                                "key": x["key"],
                                "key_boxes": x["key_boxes"],
                                "image": f"images/{name}.png",
                                "doc_type": doc_type,
                                "paraphrased": False,
                                "alt_boxes": [],
                                "template": template,
                                "image_size": [w, h],
                                "source": f"{collection}:{stem}",
                                "render": {
                                    "file": pdf_path.name,
                                    "page": p,
                                    "dpi": dpi,
                                    "table": x.get("table"),
                                    "row": x.get("row"),
                                    "col": x.get("col"),
                                    "repository": repo,
                                    "commit": commit,
                                    "path": path,
                                    "licence": licence,
                                },
                            }
                        )
    (out / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return questions


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("copy", help="copy the manifest's PDFs out of a local git clone / mirror")
    c.add_argument("--git-dir", required=True)
    c.add_argument("--collection", required=True, choices=sorted(MANIFEST))
    c.add_argument("--src", required=True, type=Path)
    m = sub.add_parser("make", help="write OUT/questions.jsonl and OUT/images/")
    m.add_argument("--src", required=True, type=Path)
    m.add_argument("--out", required=True, type=Path)
    m.add_argument("--dpi", type=int, default=150)
    m.add_argument("--max-pages", type=int, default=3, help="first N pages of each PDF")
    m.add_argument("--max-per-page", type=int, default=3)
    m.add_argument("--seed", type=int, default=17)
    a = p.parse_args(argv)
    if a.cmd == "copy":
        print(f"copied {copy(a.git_dir, a.collection, a.src)} PDFs to {a.src / a.collection}")
        return 0
    qs = make(a.src, a.out, a.dpi, a.max_pages, a.max_per_page, a.seed)
    sources = sorted({q["source"] for q in qs})
    pages = len({q["image"] for q in qs})
    print(f"wrote {a.out / 'questions.jsonl'}: {len(qs)} questions, {pages} pages, {len(sources)} sources")
    for s in sources:
        print(f"  {s}: {sum(q['source'] == s for q in qs)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
