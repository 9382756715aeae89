"""Development data for relevance on real table pages (issue 40), grouped by source: one source = one PDF.

Example:
    python benchmarks/weakspots_tables.py copy --git-dir /work/.mirror/tabulapdf+tabula-java/repo \\
        --src /work/data/weakspots/tables-src
    python benchmarks/weakspots_tables.py make --src /work/data/weakspots/tables-src --out /work/data/weakspots/tables
    python benchmarks/realdocs_recall.py --data /work/data/weakspots/tables/dev.jsonl --ocr-cache /work/cache/ocr \\
        --out X.md        # and heldout.jsonl: the sources kept out of all tuning

The PDFs are tabula-java's test resources (``src/test/resources/technology/tabula/``, MIT), its top-level files
only: its ICDAR 2013 folder and the ``eu-*`` / ``us-*`` / ``20`` / ``12s0324`` files are left out, because
camelot's ``tests/files/tabula/`` holds copies of them and camelot's test PDFs other than realdocs-dev's 13 are
reserved for evaluation (``EXCLUDED``). Camelot's folder may hold further tabula files under the same names; that
can't be checked here without downloading it, so the report names every file used.

Questions are realdocs-dev's table wording ("What is the <header> for <label>?", "In the <label> row, what is the
<header>?"). Each page's tables come from pdfplumber: ruling lines first (as realdocs-dev), and where a page has
none, pdfplumber's text-alignment strategy (tables without ruling lines). The header row is the first row whose
cells hold words in at least half the columns, the label column is the first column with words in most rows; a
cell becomes a question only when its header, label and value are unambiguous on the page and the value's words
lie on the label's line and under the header's column (checked on the text layer, so a mis-split alignment table
gives no question). Answer boxes = the value's words from the PDF's text layer, scaled to the rendered page.

``HELDOUT``: sources chosen before any measurement, never tuned on (``heldout.jsonl``); the others go to
``dev.jsonl``; ``questions.jsonl`` holds both, each line with ``"source"``.
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

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT / "src", ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from realdocs_extra import MAX_WORDS, MIN_BOX_H, WORDINGS, clean, norm, word_boxes  # noqa: E402

from arr_coc.training.data import decoded_text as decoded  # noqa: E402

TABULA = ("github:tabulapdf/tabula-java", "MIT")
TABULA_DIR = "src/test/resources/technology/tabula/"
EXCLUDED = re.compile(r"^(eu-|us-|20\.pdf|12s0324\.pdf|encrypted|arabic|rotated_page|jpeg2000)")
GAP = 6.0  # points: a cell's words stand this far from the other words of their line
# chosen after the data was built, before any recall was measured (a disclosure list, a statute table): never tuned on
HELDOUT = {"tabula:frx_2012_disclosure", "tabula:offense"}


def copy(git_dir: str, src: Path) -> int:
    """Copy tabula-java's top-level test PDFs (not ``EXCLUDED``) into ``src/tabula/``; writes ``MANIFEST.txt``."""
    head = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", "HEAD"], capture_output=True, text=True)
    commit = head.stdout.strip()
    names = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "--name-only", "HEAD", TABULA_DIR], capture_output=True, text=True
    ).stdout.split()
    dest = src / "tabula"
    dest.mkdir(parents=True, exist_ok=True)
    kept = []
    for path in names:
        name = Path(path).name
        if not name.lower().endswith(".pdf") or EXCLUDED.match(name):
            continue
        blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"], capture_output=True)
        if blob.returncode != 0 or blob.stdout[:4] != b"%PDF":
            continue
        (dest / name).write_bytes(blob.stdout)
        kept.append(path)
    (dest / "MANIFEST.txt").write_text(f"{TABULA[0]} @ {commit} ({TABULA[1]})\n" + "\n".join(kept) + "\n")
    return len(kept)


def _words_in(pg, bb) -> list[dict]:
    x0, y0, x1, y1 = bb
    sub = pg.filter(
        lambda o: (
            o.get("object_type") == "char"
            and x0 <= (o["x0"] + o["x1"]) / 2 <= x1
            and y0 <= (o["top"] + o["bottom"]) / 2 <= y1
        )
    )
    return sorted(sub.extract_words(), key=lambda w: (round(w["top"]), w["x0"]))


def _text(pg, bb) -> str:
    return clean(" ".join(w["text"] for w in _words_in(pg, bb))) if bb else ""


def _apart(words: list[dict], ws: list[dict], gap: float) -> bool:
    """The cell's words ``ws`` are whole page words, and every other word on their lines is ``gap`` points away:
    a cell of a table, not a piece of a prose line that an alignment split."""
    if not ws:
        return False
    ids = {(w["x0"], w["top"]) for w in ws}
    x0, x1 = min(w["x0"] for w in ws), max(w["x1"] for w in ws)
    for w in words:
        if (w["x0"], w["top"]) in ids:
            continue
        if any(w["bottom"] > v["top"] + 1 and w["top"] < v["bottom"] - 1 for v in ws):
            if w["x1"] > x0 - gap and w["x0"] < x1 + gap:
                return False
    return True


def _has_words(s: str) -> bool:
    return bool(re.search(r"[A-Za-z]{2}", s))


def page_questions(pg, scale: float, rng: random.Random, max_per: int) -> list[dict]:
    """Unambiguous cell questions of one page (see the module docstring); each with its table ``strategy``."""
    words = pg.extract_words()
    page_text = " " + " ".join(w["text"] for w in words) + " "
    found = [("lines", t) for t in pg.find_tables()]
    if not found:
        text = {"vertical_strategy": "text", "horizontal_strategy": "text"}
        found = [("text", t) for t in pg.find_tables(table_settings=text)]
    cands = []
    for ti, (strategy, table) in enumerate(found):
        rows = [r for r in table.rows]
        if len(rows) < 3:
            continue
        ncol = len(rows[0].cells)
        if ncol < 2 or any(len(r.cells) != ncol for r in rows):
            continue
        texts = [[_text(pg, c) for c in r.cells] for r in rows]
        h = next((i for i, t in enumerate(texts) if sum(_has_words(x) for x in t) >= max(2, ncol / 2)), None)
        if h is None or h > 3:
            continue
        body = range(h + 1, len(rows))
        lcol = next((c for c in range(ncol) if sum(_has_words(texts[r][c]) for r in body) >= 0.6 * len(body)), None)
        if lcol is None:
            continue
        all_cells = [norm(x) for t in texts for x in t]
        headers = {c: texts[h][c] for c in range(ncol)}
        labels = {r: texts[r][lcol] for r in body}
        for r in body:
            lab = labels[r]
            if not _has_words(lab) or len(lab.split()) > MAX_WORDS or list(labels.values()).count(lab) != 1:
                continue
            lab_cell = rows[r].cells[lcol]
            for c in range(ncol):
                hd, cell = headers[c], rows[r].cells[c]
                if c == lcol or not cell or not _has_words(hd) or list(headers.values()).count(hd) != 1:
                    continue
                if len(hd.split()) > 2 * MAX_WORDS or not rows[h].cells[c]:
                    continue
                ws = _words_in(pg, cell)
                ans = clean(" ".join(w["text"] for w in ws))
                if not ans or len(ans.split()) > MAX_WORDS or not norm(ans):
                    continue
                if not (decoded(ans) and decoded(hd) and decoded(lab)):
                    continue
                if all_cells.count(norm(ans)) != 1 or page_text.count(" " + ans + " ") != 1:
                    continue
                hcell = rows[h].cells[c]
                # the value sits on the label's line(s) and under the header's column (text layer geometry)
                lw = _words_in(pg, lab_cell)
                hw = _words_in(pg, hcell)
                if not lw or not hw:
                    continue
                if not all(_apart(words, x, GAP) for x in (ws, lw, hw)):
                    continue
                ly0, ly1 = min(w["top"] for w in lw), max(w["bottom"] for w in lw)
                hx0, hx1 = min(w["x0"] for w in hw), max(w["x1"] for w in hw)
                if not all(w["bottom"] > ly0 and w["top"] < ly1 for w in ws[:1]):
                    continue
                if not any(w["x1"] > hx0 - 2 and w["x0"] < hx1 + 2 for w in ws):
                    continue
                boxes = word_boxes(ws, scale)
                if min(b[3] - b[1] for b in boxes) < MIN_BOX_H:
                    continue
                key_boxes = [[int(v * scale) for v in lab_cell], [int(v * scale) for v in hcell]]
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
                        "strategy": strategy,
                    }
                )
    return rng.sample(cands, min(max_per, len(cands)))


def make(src: Path, out: Path, dpi: int, max_pages: int, max_per: int, seed: int) -> list[dict]:
    """Questions and rendered pages of every PDF under ``src/tabula/`` (sorted, seeded)."""
    import pdfplumber
    from PIL import Image

    (out / "images").mkdir(parents=True, exist_ok=True)
    scale = dpi / 72.0
    manifest = (src / "tabula" / "MANIFEST.txt").read_text().splitlines()
    repo_line = manifest[0]
    questions: list[dict] = []
    for pdf_path in sorted((src / "tabula").glob("*.pdf")):
        stem = pdf_path.stem
        rng = random.Random(f"{seed}/tabula/{stem}")
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
                    picked = page_questions(pg, scale, rng, max_per)
                except Exception as exc:  # noqa: BLE001 - a page pdfplumber cannot read is skipped, named
                    print(f"  skip {pdf_path.name} p{p}: {exc}", file=sys.stderr)
                    continue
                if not picked:
                    continue
                name = f"tabula_{re.sub(r'[^A-Za-z0-9_]+', '_', stem)}_p{p}"
                base = out / "images" / name
                cmd = ["pdftoppm", "-r", str(dpi), "-f", str(p), "-l", str(p), "-png", "-singlefile"]
                subprocess.run([*cmd, str(pdf_path), str(base)], check=True)
                with Image.open(f"{base}.png") as im:
                    w, h = im.size
                for i, x in enumerate(picked):
                    template, wording = rng.choice(WORDINGS)
                    questions.append(
                        {
                            "id": f"{name}_q{i}",
                            "query": wording.format(hd=x["hd"], lab=x["lab"]),
                            "answer": x["answer"],
                            "boxes": x["boxes"],
                            "key": x["key"],
                            "key_boxes": x["key_boxes"],
                            "image": f"images/{name}.png",
                            "doc_type": "pdftable",
                            "paraphrased": False,
                            "alt_boxes": [],
                            "template": f"{template}_{x['strategy']}",
                            "image_size": [w, h],
                            "source": f"tabula:{stem}",
                            "render": {
                                "file": pdf_path.name,
                                "page": p,
                                "dpi": dpi,
                                "table": x["table"],
                                "row": x["row"],
                                "col": x["col"],
                                "strategy": x["strategy"],
                                "repository": repo_line,
                                "path": TABULA_DIR + pdf_path.name,
                            },
                        }
                    )
    lines = {q["id"]: json.dumps(q) + "\n" for q in questions}
    (out / "questions.jsonl").write_text("".join(lines.values()))
    (out / "dev.jsonl").write_text("".join(lines[q["id"]] for q in questions if q["source"] not in HELDOUT))
    (out / "heldout.jsonl").write_text("".join(lines[q["id"]] for q in questions if q["source"] in HELDOUT))
    return questions


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("copy", help="copy tabula-java's top-level test PDFs out of a local git mirror")
    c.add_argument("--git-dir", required=True)
    c.add_argument("--src", required=True, type=Path)
    m = sub.add_parser("make", help="write OUT/questions.jsonl, dev.jsonl, heldout.jsonl and OUT/images/")
    m.add_argument("--src", required=True, type=Path)
    m.add_argument("--out", required=True, type=Path)
    m.add_argument("--dpi", type=int, default=150)
    m.add_argument("--max-pages", type=int, default=2, help="first N pages of each PDF")
    m.add_argument("--max-per-page", type=int, default=4)
    m.add_argument("--seed", type=int, default=17)
    a = p.parse_args(argv)
    if a.cmd == "copy":
        print(f"copied {copy(a.git_dir, a.src)} PDFs to {a.src / 'tabula'}")
        return 0
    qs = make(a.src, a.out, a.dpi, a.max_pages, a.max_per_page, a.seed)
    sources = sorted({q["source"] for q in qs})
    print(f"wrote {a.out / 'questions.jsonl'}: {len(qs)} questions, {len({q['image'] for q in qs})} pages")
    for s in sources:
        n = sum(q["source"] == s for q in qs)
        lines = sum(q["source"] == s and q["render"]["strategy"] == "lines" for q in qs)
        print(f"  {s}: {n} questions ({lines} ruled){' HELD OUT' if s in HELDOUT else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
