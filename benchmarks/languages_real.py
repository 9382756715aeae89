"""Real typeset pages in Chinese, Japanese, German, French and Spanish with exact answer boxes: the Debian Reference
(Osamu Aoki et al., GPL-2+), whose translations Debian ships as PDFs (``debian-reference-<language>``), pages
rendered and questions made from the PDF's text layer, in the realdocs schema (``benchmarks/languages.py --real``).

Other books (``--sources devref maintguide``; each book a source of its own, so the figure is not one book's):
Debian's Developer's Reference (``developers-reference-{de,fr,ja}``, GPL-2) and the New Maintainers' Guide
(``maint-guide-{de,es,fr,ja,zh-cn}``, GPL-2+), the PDFs those packages ship.

Steps:
    fetch   ``apt-get download`` the books' packages (``debian-reference-{zh-cn,ja,de,fr,es}``, ...) and
            ``dpkg-deb -x`` them into ``--debs``
    make    per language ``--pages`` pages drawn (seeded) from the body of the book (not the first or last 15
            pages), ``--per-page`` questions a page: a printed line of at least 6 words (CJK: 12 characters); the
            question quotes its first 3 words (CJK: 6 characters) and asks, in the page's language, what follows;
            the answer is the next 3 words (6 characters), both unique on the page; a Latin-script line
            only when it holds more of its language's function words than of English's (the translations leave some
            passages in English); evidence boxes = the answer's
            characters from the text layer (one box a word; a CJK answer one box), scaled to the page rendered by
            pdftoppm at ``--dpi``; a line with a character past the page's edge (cut off by the render) is not used

The question is a reading one ("What follows «...» on the page?"): the page's own words, in its script, locate the
answer. It measures whether the text path reads real typeset text in each script (OCR head, tokens, CJK bigrams)
and keeps the answer's words, not whether it understands a paraphrase.

Each line carries ``language``, ``source`` ("debianref-<language>", "devref-...": the book is the source) and
``render`` (file, page, dpi, package, version, licence). Nothing of the PDFs goes into this repository.

Example::

    python benchmarks/languages_real.py fetch --debs /tmp/debref
    python benchmarks/languages_real.py make --debs /tmp/debref --out /tmp/lang-real --pages 8 --per-page 3
    python benchmarks/languages_real.py make --debs /tmp/debref --out /tmp/lang-real1 --seed 1 --exclude /tmp/lang-real
    python benchmarks/languages.py --dev-seeds --test-seeds --real /tmp/lang-real --ocr-cache /tmp/lang-ocr
    python benchmarks/languages_real.py fetch --debs /tmp/books --sources devref maintguide   # + --sources on make
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

PACKAGES = {lang: f"debian-reference-{pkg}" for lang, pkg in
            (("zh", "zh-cn"), ("ja", "ja"), ("de", "de"), ("fr", "fr"), ("es", "es"))}  # fmt: skip
# the other books: (source, language) -> (package, the PDF inside it); each book is a source of its own (its
# authors, translators and typesetting), so the figure is not one book's
BOOKS = {
    ("devref", "de"): ("developers-reference-de", "usr/share/developers-reference/de/developers-reference.pdf"),
    ("devref", "fr"): ("developers-reference-fr", "usr/share/developers-reference/fr/developers-reference.pdf"),
    ("devref", "ja"): ("developers-reference-ja", "usr/share/developers-reference/ja/developers-reference.pdf"),
    ("maintguide", "de"): ("maint-guide-de", "usr/share/doc/maint-guide-de/maint-guide.de.pdf"),
    ("maintguide", "es"): ("maint-guide-es", "usr/share/doc/maint-guide-es/maint-guide.es.pdf"),
    ("maintguide", "fr"): ("maint-guide-fr", "usr/share/doc/maint-guide-fr/maint-guide.fr.pdf"),
    ("maintguide", "ja"): ("maint-guide-ja", "usr/share/doc/maint-guide-ja/maint-guide.ja.pdf"),
    ("maintguide", "zh"): ("maint-guide-zh-cn", "usr/share/doc/maint-guide-zh-cn/maint-guide.zh-cn.pdf"),
}
SOURCES = ("debianref", "devref", "maintguide")
LICENCES = {"debianref": "GPL-2+", "devref": "GPL-2", "maintguide": "GPL-2+"}
WORDING = {
    "zh": "「{key}」后面写的是什么？",
    "ja": "「{key}」の後に何と書いてありますか？",
    "de": "Was steht nach „{key}“?",
    "fr": "Qu'est-ce qui suit « {key} » ?",
    "es": "¿Qué viene después de «{key}»?",
}
KEY_WORDS, ANSWER_WORDS = 3, 3  # Latin script: words quoted, words answered
KEY_CHARS, ANSWER_CHARS = 6, 6  # CJK: characters quoted, characters answered
MIN_BOX_H = 8  # pixels: a smaller answer is not legible at the grid's resolution
# function words: a Latin-script line counts as the page's language when it holds more of that language's than of
# English's (the translations leave some passages in English)
FUNCTION_WORDS = {
    "de": set("der die das und ist nicht mit für von den dem des ein eine zu auf sie wird werden sind oder".split()),
    "fr": set("le la les des est une pour dans et du un que qui sur pas sont avec ou par ce cette vous".split()),
    "es": set("el la los las de que y en para una por con del es se no su al como lo".split()),
    "en": set("the is and to of you which for this that with are be it can as by or not an".split()),
}
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def pdf_of(debs: Path, lang: str, source: str = "debianref") -> Path:
    if source != "debianref":
        return debs / "x" / BOOKS[(source, lang)][1]
    pkg = PACKAGES[lang]
    return debs / "x" / "usr" / "share" / "debian-reference" / f"debian-reference.{pkg.split('-', 2)[2]}.pdf"


def books(sources: Sequence[str]) -> list[tuple[str, str, str]]:
    """(source, language, package) of every book of ``sources``, the Debian Reference's in its first order."""
    out = [("debianref", lang, pkg) for lang, pkg in PACKAGES.items()] if "debianref" in sources else []
    return out + [(src, lang, pkg) for (src, lang), (pkg, _) in BOOKS.items() if src in sources]


def fetch(debs: Path, sources: Sequence[str] = ("debianref",)) -> None:
    """``apt-get download`` the packages into ``debs`` and unpack them into ``debs/x``."""
    debs.mkdir(parents=True, exist_ok=True)
    for _, _, pkg in books(sources):
        subprocess.run(["apt-get", "download", pkg], cwd=debs, check=True, capture_output=True)
        for deb in sorted(debs.glob(f"{pkg}_*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(debs / "x")], check=True)


def _box(chars: list[dict], scale: float) -> list[int]:
    """The pixel box covering ``chars`` (top-left rounded down, bottom-right up)."""
    x0, top = min(c["x0"] for c in chars), min(c["top"] for c in chars)
    x1, bottom = max(c["x1"] for c in chars), max(c["bottom"] for c in chars)
    return [int(x0 * scale), int(top * scale), int(x1 * scale + 0.999), int(bottom * scale + 0.999)]


def line_questions(pg, lang: str, scale: float) -> list[dict]:
    """Candidate questions of one pdfplumber page: (key, answer, answer boxes) per printed line."""
    lines = pg.extract_text_lines(x_tolerance=1.5, return_chars=True)
    text = " ".join(ln["text"] for ln in lines)
    all_words = pg.extract_words(x_tolerance=1.5)  # spaces are gaps in a PDF, not characters
    out = []
    for ln in lines:
        chars = [c for c in ln["chars"] if c.get("text")]
        if any(c["x1"] > pg.width or c["bottom"] > pg.height or c["x0"] < 0 or c["top"] < 0 for c in chars):
            continue  # text past the page's edge (cut off by the render): not on the page image
        if lang in ("zh", "ja"):
            solid = [c for c in chars if not c["text"].isspace()]
            if len(solid) < KEY_CHARS + ANSWER_CHARS:
                continue
            key_chars, ans_chars = solid[:KEY_CHARS], solid[KEY_CHARS : KEY_CHARS + ANSWER_CHARS]
            key, ans = "".join(c["text"] for c in key_chars), "".join(c["text"] for c in ans_chars)
            if len(_CJK.findall(key)) < 2 or len(_CJK.findall(ans)) < 2:
                continue
            boxes = [_box(ans_chars, scale)]
        else:
            words = sorted(
                (w for w in all_words if abs(w["top"] - ln["top"]) < 2 and ln["x0"] - 1 <= w["x0"] <= ln["x1"] + 1),
                key=lambda w: w["x0"],
            )
            if len(words) < KEY_WORDS + ANSWER_WORDS:
                continue
            low = [w["text"].lower() for w in words]
            if sum(t in FUNCTION_WORDS[lang] for t in low) <= sum(t in FUNCTION_WORDS["en"] for t in low):
                continue  # a passage left in English
            key = " ".join(w["text"] for w in words[:KEY_WORDS])
            ans_words = words[KEY_WORDS : KEY_WORDS + ANSWER_WORDS]
            ans = " ".join(w["text"] for w in ans_words)
            if not re.search(r"[^\W\d_]{3}", key) or not re.search(r"[^\W\d_]{3}", ans):
                continue
            boxes = [_box([w], scale) for w in ans_words]
        if any(q in key for q in "«»「」“”„\"'"):
            continue
        if text.count(key) != 1 or text.count(ans) != 1 or "(cid:" in key + ans:
            continue
        if min(b[3] - b[1] for b in boxes) < MIN_BOX_H:
            continue
        out.append({"key": key, "answer": ans, "boxes": boxes})
    return out


def make(
    debs: Path,
    out: Path,
    n_pages: int,
    per_page: int,
    dpi: int,
    seed: int,
    exclude: Path | None = None,
    sources: Sequence[str] = ("debianref",),
) -> list[dict]:
    """Pages and questions of every language's book of ``sources`` (seeded); pages already in ``exclude`` (another
    set's folder) are not drawn again."""
    import pdfplumber
    from PIL import Image

    (out / "images").mkdir(parents=True, exist_ok=True)
    scale = dpi / 72.0
    questions: list[dict] = []
    for source, lang, pkg in books(sources):
        path = pdf_of(debs, lang, source)
        version = next((p.name.split("_")[1] for p in debs.glob(f"{pkg}_*.deb")), "?")
        rng = random.Random(f"{seed}/{lang}" if source == "debianref" else f"{seed}/{source}/{lang}")
        with pdfplumber.open(path) as pdf:
            order = list(range(15, len(pdf.pages) - 15))
            rng.shuffle(order)
            done = 0
            for p in order:
                if done >= n_pages:
                    break
                if exclude is not None and (exclude / "images" / f"{source}_{lang}_p{p + 1}.png").is_file():
                    continue
                cands = line_questions(pdf.pages[p], lang, scale)
                if len(cands) < per_page:
                    continue
                picked = rng.sample(cands, per_page)
                name = f"{source}_{lang}_p{p + 1}"
                base = out / "images" / name
                cmd = ["pdftoppm", "-r", str(dpi), "-f", str(p + 1), "-l", str(p + 1), "-png", "-singlefile",
                       str(path), str(base)]  # fmt: skip
                subprocess.run(cmd, check=True)
                with Image.open(f"{base}.png") as im:
                    w, h = im.size
                for i, x in enumerate(picked):
                    questions.append(
                        {
                            "id": f"{name}_q{i}",
                            "query": WORDING[lang].format(key=x["key"]),
                            "answer": x["answer"],
                            "boxes": x["boxes"],
                            "key": x["key"],
                            "image": f"images/{name}.png",
                            "doc_type": "book",
                            "paraphrased": False,
                            "alt_boxes": [],
                            "image_size": [w, h],
                            "language": lang,
                            "source": f"{source}-{lang}",
                            "render": {
                                "file": path.name,
                                "page": p + 1,
                                "dpi": dpi,
                                "package": pkg,
                                "version": version,
                                "licence": LICENCES[source],
                            },  # fmt: skip
                        }
                    )
                done += 1
        print(f"{source} {lang}: {done} pages", file=sys.stderr)
    (out / "questions.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions))
    return questions


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="apt-get download and unpack the Debian Reference packages")
    f.add_argument("--debs", type=Path, required=True)
    m = sub.add_parser("make", help="render pages and write questions.jsonl")
    m.add_argument("--debs", type=Path, required=True)
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--pages", type=int, default=8, help="pages per language")
    m.add_argument("--per-page", type=int, default=3)
    m.add_argument("--dpi", type=int, default=120)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--exclude", type=Path, default=None, help="another set's folder: its pages are not drawn")
    for q in (f, m):
        q.add_argument("--sources", nargs="+", default=["debianref"], choices=SOURCES, help="books (default: one)")
    args = p.parse_args(argv)
    if args.cmd == "fetch":
        fetch(args.debs, args.sources)
    else:
        qs = make(args.debs, args.out, args.pages, args.per_page, args.dpi, args.seed, args.exclude, args.sources)
        print(f"{len(qs)} questions in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
