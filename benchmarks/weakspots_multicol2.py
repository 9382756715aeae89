"""A second, differently made set of generated multi-column section questions (issue 40, round 4).

Example:
    python benchmarks/weakspots_multicol2.py make --out /work/data/weakspots/multicol2 --pages 7 \\
        --gt-ocr /work/cache/weakspots/gtocr-mc2
    python benchmarks/realdocs_recall.py --data /work/data/weakspots/multicol2/questions.jsonl \\
        --ocr-cache /work/cache/weakspots/ocr-mc2 --relevance learned --out X.md
    python benchmarks/weakspots_multicol2.py report --data /work/data/weakspots/multicol2 --results X.json

Round 1's generator (``benchmarks/weakspots_data.py multicol``) draws the page the section rule was developed on:
a bold title, headings on their own line at the column's left edge, ragged prose in docgen's vocabulary, a heading
never within three lines of a column's foot, nothing else on the page. The hidden set is drawn by someone else's
generator, so this one differs on purpose (everything below was written down before the first measurement):

- 3 columns as well as 2, gutters down to 14 px;
- sections that run across a column break, and headings allowed to start low in a column (two lines above the
  foot): a section may hold one line in one column and go on in the next;
- heading styles: numbered "3.2", unnumbered, ALL CAPS, small caps (capitals of two sizes on one baseline), bold
  run-in heads ("Results." starting a paragraph, the text following on the same line), centred headings;
- a wide block above the columns: title, authors, an "Abstract" paragraph running across the full width;
- a figure box (drawn bars, axis numbers) or a table box (rules, labels, numbers) inside a column, with a caption,
  at the top of a column (a float interrupting a section that crosses the column break);
- footnotes at a column's foot (smaller font, a short rule above, a marker after a word in the text);
- a running page header (journal, volume, year, pages) with a rule, and a footer with the page number;
- justified text (the words of every line but a paragraph's last spread to the column's width), paragraph indents;
- other fonts: DejaVu Serif / Sans (Condensed), Liberation Serif / Sans / Sans Narrow;
- years in most sections AND in the header, the abstract, footnotes and captions, so only the section's extent
  tells which year is meant; a vocabulary of its own (not docgen's), where section titles' words recur in prose.

Questions of the hidden set's four kinds, answer boxes the renderer's ink box of the word: ``sec_year`` (the
section prints exactly one year), ``sec_after`` / ``sec_before`` (a word once in its section, printed elsewhere
with a different neighbour), ``sec_last`` (the section's last word of prose). Wordings: round 1's and new ones.

Sources are the styles (``STYLES``); ``GROUPS`` says which are development, which is held out (measured once at the
end) and which is added last (measured once, never read before its figures).
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

from PIL import Image, ImageFont  # noqa: E402

from arr_coc.evaluation import docgen  # noqa: E402

F = "/usr/share/fonts/truetype/"
FONTS = {  # face -> (regular, bold, italic)
    "dejavu-serif": ("dejavu/DejaVuSerif.ttf", "dejavu/DejaVuSerif-Bold.ttf", "dejavu/DejaVuSerif-Italic.ttf"),
    "dejavu-sans": ("dejavu/DejaVuSans.ttf", "dejavu/DejaVuSans-Bold.ttf", "dejavu/DejaVuSans-Oblique.ttf"),
    "dejavu-cond": (
        "dejavu/DejaVuSerifCondensed.ttf",
        "dejavu/DejaVuSerifCondensed-Bold.ttf",
        "dejavu/DejaVuSerifCondensed-Italic.ttf",
    ),
    "lib-serif": (
        "liberation/LiberationSerif-Regular.ttf",
        "liberation/LiberationSerif-Bold.ttf",
        "liberation/LiberationSerif-Italic.ttf",
    ),
    "lib-sans": (
        "liberation/LiberationSans-Regular.ttf",
        "liberation/LiberationSans-Bold.ttf",
        "liberation/LiberationSans-Italic.ttf",
    ),
    "lib-narrow": (
        "liberation/LiberationSansNarrow-Regular.ttf",
        "liberation/LiberationSansNarrow-Bold.ttf",
        "liberation/LiberationSansNarrow-Italic.ttf",
    ),
}
HEAD_STYLES = ("numbered", "caps", "runin", "centred", "smallcaps", "plain")
# source -> style: columns, heading style, faces, gutter range, the page furniture drawn
STYLES: dict[str, dict] = {
    "m2-serif-num": dict(ncol=(2,), head=("numbered",), face=("dejavu-serif",), gutter=(28, 45), float="table"),
    "m2-sans-caps3": dict(ncol=(3,), head=("caps",), face=("dejavu-sans",), gutter=(14, 24), float="figure"),
    "m2-lib-runin": dict(ncol=(2,), head=("runin",), face=("lib-serif",), gutter=(22, 40), float="table"),
    "m2-lib-centre": dict(ncol=(2, 3), head=("centred", "plain"), face=("lib-sans",), gutter=(20, 40), float="figure"),
    "m2-smallcaps3": dict(ncol=(3,), head=("smallcaps",), face=("dejavu-cond",), gutter=(14, 22), float="figure"),
    "m2-mixed": dict(
        ncol=(2, 3), head=HEAD_STYLES, face=("lib-narrow", "lib-serif", "dejavu-sans"), gutter=(14, 40), float="any"
    ),  # fmt: skip
}
GROUPS = {
    "dev": ("m2-serif-num", "m2-sans-caps3", "m2-lib-runin", "m2-lib-centre"),
    "heldout": ("m2-smallcaps3",),  # measured once, at the end
    "last": ("m2-mixed",),  # added last, measured once, never read before its figures
}

NOUNS = (
    "meadow", "granary", "ferry", "orchard", "quarry", "lantern", "cellar", "parish", "tannery", "causeway",
    "brewery", "lighthouse", "foundry", "marsh", "pasture", "mill", "chapel", "warehouse", "bridge", "canal",
    "terrace", "vineyard", "kiln", "smithy", "archive", "ledger", "survey", "census", "harvest", "cargo",
)  # fmt: skip
ADJS = (
    "northern", "flooded", "narrow", "ancient", "wealthy", "quiet", "rural", "coastal", "upper", "eastern",
    "crowded", "wooden", "modest", "seasonal", "distant", "local",
)  # fmt: skip
VERBS = (
    "replaced", "supplied", "surveyed", "divided", "supported", "recorded", "expanded", "drained", "served",
    "taxed", "protected", "joined",
)  # fmt: skip
TEMPLATES = (
    "The {a} {n} {v} the {n} and the {n}.",
    "Most of the {n} was {v} by the {a} {n}.",
    "Records of the {n} show that the {n} {v} the {a} {n}.",
    "A {a} {n} {v} each {n} near the {n}.",
    "Later the {n} {v} the {a} {n} of the {n}.",
    "Several {a} {n} owners {v} the {n}.",
)
YEAR_TEMPLATES = (
    "In {y} the {a} {n} {v} the {n}.",
    "The {n} {v} the {a} {n} until {y}.",
    "A survey of {y} found that the {n} {v} the {n}.",
)
HEADINGS = (
    "Field Sites", "Sampling Design", "River Trade", "Parish Records", "Grain Prices", "Land Tenure",
    "Harbour Works", "Mill Ownership", "Census Methods", "Error Analysis", "Seasonal Labour", "Canal Finance",
    "Quarry Output", "Limitations", "Market Towns", "Ferry Routes", "Tithe Maps", "Flood Defences",
    "Cellar Inventories", "Kiln Sites",
)  # fmt: skip
TITLES = ("Rural Economies of the Lower Valley", "Trade and Settlement on the Eastern Estuary",
          "A Quantitative History of Parish Industry")  # fmt: skip
JOURNALS = ("Journal of Regional History", "Economic Survey Quarterly", "Annals of Rural Studies")
QUESTIONS = {  # kind -> wordings ({h} heading, {w} word): round 1's and new ones
    "sec_year": (
        "Which year is mentioned in the section titled '{h}'?",
        "What year does the '{h}' section give?",
        "Which year does the section called {h} mention?",
    ),
    "sec_after": (
        "In the section titled '{h}', which word comes right after '{w}'?",
        "What is the next word after '{w}' in the {h} section?",
        "Under the heading '{h}', what word follows '{w}'?",
    ),
    "sec_before": (
        "Which word precedes \u201c{w}\u201d in the section headed \u201c{h}\u201d?",
        "In the {h} section, what word comes just before '{w}'?",
    ),
    "sec_last": (
        "What is the last word of the section titled '{h}'?",
        "With which word does the '{h}' section close?",
        "What is the final word of the '{h}' section?",
    ),
}
YEAR_RE = re.compile(r"1[5-9]\d\d|20\d\d")


def _font(face: str, kind: int, size: float) -> ImageFont.FreeTypeFont:
    return docgen._font(F + FONTS[face][kind], int(round(size)))


def _fill(rng: random.Random, tpl: str, year: int | None = None) -> list[str]:
    pick = {"a": ADJS, "n": NOUNS, "v": VERBS}
    s = re.sub(r"\{(\w)\}", lambda m: str(year) if m.group(1) == "y" else rng.choice(pick[m.group(1)]), tpl)
    return s.split()


def _sentence(rng: random.Random, year: int | None = None) -> list[str]:
    return _fill(rng, rng.choice(YEAR_TEMPLATES) if year is not None else rng.choice(TEMPLATES), year)


class Page:
    """One drawn page: the canvas, its body words ``(text, box, section)`` and its sections."""

    def __init__(self, rng: random.Random, style: dict) -> None:
        self.rng = rng
        self.ncol = rng.choice(style["ncol"])
        self.head = rng.choice(style["head"])
        self.face = rng.choice(style["face"])
        fl = style["float"]
        self.float = rng.choice(("figure", "table")) if fl == "any" else fl
        w = rng.randint(1500, 1700)
        h = int(w * 1.294)
        self.cv = docgen._Canvas.blank(w, h, docgen._paper(rng))
        self.ink = docgen._ink(rng)
        self.fs = rng.randint(17, 20) if self.ncol == 3 else rng.randint(18, 22)
        self.font = _font(self.face, 0, self.fs)
        self.bold = _font(self.face, 1, self.fs)
        self.line_h = self.fs * rng.uniform(1.3, 1.45)
        self.m = rng.randint(70, 100)
        self.gutter = rng.randint(*style["gutter"])
        self.justify = rng.random() < 0.75
        self.size = (w, h)
        self.words: list[tuple[str, tuple, int]] = []
        self.sections: list[dict] = []
        self.no_ask: set[int] = set()  # word ids carrying a footnote marker
        self.years = rng.sample(range(1780, 2016), 24)

    # ------------------------------------------------------------------ furniture
    def furniture(self) -> float:
        """Header, footer, title and abstract; returns the columns' top."""
        rng, cv, ink, m, (w, h) = self.rng, self.cv, self.ink, self.m, self.size
        small = _font(self.face, 2, self.fs * 0.8)
        y0 = m * 0.5
        year = self.years.pop()
        cv.text((m, y0), f"{rng.choice(JOURNALS)} {rng.randint(3, 40)} ({year})", small, ink)
        right = f"pp. {rng.randint(100, 400)}-{rng.randint(401, 600)}"
        cv.text((w - m - small.getlength(right), y0), right, small, ink)
        cv.draw.line((m, y0 + self.fs * 1.2, w - m, y0 + self.fs * 1.2), fill=ink, width=1)
        num = str(rng.randint(2, 300))
        cv.text(((w - small.getlength(num)) / 2, h - m * 0.6), num, small, ink)
        y = m + self.fs * 0.8
        tfont = _font(self.face, 1, self.fs * 1.9)
        title = rng.choice(TITLES)
        cv.text(((w - tfont.getlength(title)) / 2, y), title, tfont, ink)
        y += self.fs * 3.0
        authors = "A. Marrow, T. Quill and R. Fenwick"
        cv.text(((w - self.font.getlength(authors)) / 2, y), authors, self.font, ink)
        y += self.fs * 2.2
        if rng.random() < 0.85:  # a wide abstract across the columns
            ab = _font(self.face, 1, self.fs * 0.95)
            cv.text(((w - ab.getlength("Abstract")) / 2, y), "Abstract", ab, ink)
            y += self.line_h * 1.3
            toks = [t for _ in range(3) for t in _sentence(rng)] + _sentence(rng, self.years.pop())
            afont = _font(self.face, 2 if rng.random() < 0.5 else 0, self.fs * 0.92)
            inset = m + self.fs * 2
            y = self._paragraph(toks, inset, w - inset, y, afont, None, section=None, indent=0)
        return y + self.line_h * 1.2

    # ------------------------------------------------------------------ text
    def _paragraph(self, toks, x0, x1, y, font, flow, section, indent, lead=None):
        """Lay ``toks`` out justified (or ragged) from ``x0`` to ``x1``; with ``flow`` the columns go on when the
        column ends. ``lead``: (text, font) of a run-in head drawn first on the paragraph's first line. Returns y."""
        space = font.getlength(" ")
        items: list[tuple[str, ImageFont.FreeTypeFont]] = []
        if lead is not None:
            items.append(lead)
        items += [(t, font) for t in toks]
        lines: list[list] = []
        cur: list = []
        width = x1 - x0
        used = indent
        for text, f in items:
            wl = f.getlength(text)
            if cur and used + space + wl > width:
                lines.append(cur)
                cur, used = [], 0
            cur.append((text, f, wl))
            used += (space if len(cur) > 1 else 0) + wl
        if cur:
            lines.append(cur)
        for n, ln in enumerate(lines):
            if flow is not None:
                x0, x1, y = flow(y)
            start = x0 + (indent if n == 0 else 0)
            natural = sum(wl for _, _, wl in ln) + space * (len(ln) - 1)
            gap = space
            if self.justify and n < len(lines) - 1 and len(ln) > 1:
                gap = space + (x1 - start - natural) / (len(ln) - 1)
            x = start
            for text, f, wl in ln:
                core, punct = (text[:-1], text[-1]) if text[-1] in ".,:" and len(text) > 1 else (text, "")
                box = self.cv.text((x, y), core, f, self.ink)
                if section is not None and f is font:
                    self.words.append((core, box, section))
                    self.sections[section]["words"].append(len(self.words) - 1)
                if punct:
                    self.cv.text((x + f.getlength(core), y), punct, f, self.ink)
                x += wl + gap
            y += self.line_h
        return y

    def draw(self) -> None:
        rng, m, (w, h) = self.rng, self.m, self.size
        top = self.furniture()
        foot = h - m * 1.1
        ncol = self.ncol
        col_w = (w - 2 * m - self.gutter * (ncol - 1)) / ncol
        xs = [m + c * (col_w + self.gutter) for c in range(ncol)]
        feet = [foot] * ncol
        # a footnote at the foot of one column, its marker after a word of that column
        note_col = rng.randrange(ncol)
        nfont = _font(self.face, 0, self.fs * 0.75)
        note = ["1"] + _sentence(rng, self.years.pop())[:9]
        note_lines = 2 if nfont.getlength(" ".join(note)) > col_w else 1
        feet[note_col] = foot - note_lines * self.fs * 1.05 - self.fs * 1.2
        self.note = (note_col, note, nfont, feet[note_col])
        floats = {c: rng.random() < 0.6 for c in range(1, ncol)}
        if not any(floats.values()):
            floats[rng.randrange(1, ncol)] = True
        state = {"col": 0}

        def flow(y: float) -> tuple[float, float, float]:
            c = state["col"]
            if y + self.line_h > feet[c]:
                c += 1
                if c >= ncol:
                    raise StopIteration
                state["col"] = c
                y = top
                if floats.get(c):
                    y = self._float(xs[c], xs[c] + col_w, y)
            return xs[state["col"]], xs[state["col"]] + col_w, y

        y = top
        heads = rng.sample(HEADINGS, len(HEADINGS))
        subs = rng.random() < 0.6
        try:
            for s_i, heading in enumerate(heads):
                c = state["col"]
                if y + self.line_h * 2.2 > feet[c]:  # a heading may start low: two lines above the foot
                    y = feet[c] + 1
                    x0, x1, y = flow(y)
                if y > top + 1:
                    y += self.line_h * 0.6
                label = heading
                if self.head == "numbered":  # "3.2 Title" (two a section) or "3 Title", numbered in order
                    label = f"{s_i // 2 + 2}.{s_i % 2 + 1} {heading}" if subs else f"{s_i + 2} {heading}"
                shown = heading.upper() if self.head == "caps" else heading
                self.sections.append({"heading": heading, "words": [], "complete": False})
                n_par = rng.randint(1, 3)
                n_sent = rng.randint(3, 7)
                year_at = rng.randrange(n_sent) if rng.random() < 0.85 else None
                sents = [_sentence(rng, self.years.pop() if k == year_at else None) for k in range(n_sent)]
                cut = sorted(rng.sample(range(1, n_sent), min(n_par - 1, n_sent - 1))) if n_par > 1 else []
                pars = [sum(sents[a:b], []) for a, b in zip([0, *cut], [*cut, n_sent], strict=True)]
                lead = None
                if self.head == "runin":
                    lead = (shown + ".", self.bold)
                else:
                    x0, x1, y = flow(y)
                    y = self._heading(label if self.head != "caps" else label.upper(), x0, x1, y)
                for p_i, toks in enumerate(pars):
                    y = self._paragraph(toks, 0, col_w, y, self.font, flow, s_i, self.fs * 1.5 if p_i or lead else 0,
                                        lead=lead if p_i == 0 else None)  # fmt: skip
                self.sections[-1]["complete"] = True
                y += self.line_h * 0.4
        except StopIteration:
            pass
        self._footnote(xs, col_w)

    def _heading(self, label: str, x0: float, x1: float, y: float) -> float:
        cv, ink, fs = self.cv, self.ink, self.fs
        if self.head == "smallcaps":
            big, small = _font(self.face, 0, fs * 1.1), _font(self.face, 0, fs * 0.85)
            x, base = x0, y + fs * 1.0
            for k, word in enumerate(label.split()):
                if k:
                    x += big.getlength(" ")
                cv.text((x, base), word[0].upper(), big, ink, anchor="ls")
                x += big.getlength(word[0].upper())
                if len(word) > 1:
                    cv.text((x, base), word[1:].upper(), small, ink, anchor="ls")
                    x += small.getlength(word[1:].upper())
            return y + self.line_h * 1.5
        font = _font(self.face, 1, fs * (1.25 if self.head in ("centred", "plain") else 1.0))
        x = x0
        if self.head == "centred":
            x = x0 + max(0.0, (x1 - x0 - font.getlength(label)) / 2)
        cv.text((x, y), label, font, ink)
        return y + self.line_h * 1.5

    def _float(self, x0: float, x1: float, y: float) -> float:
        """A figure or table box with its caption at the top of a column; returns the y below it."""
        cv, ink, rng = self.cv, self.ink, self.rng
        small = _font(self.face, 0, self.fs * 0.8)
        n = rng.randint(1, 4)
        if self.float == "table":
            cap = f"Table {n}: {rng.choice(NOUNS).title()} counts by {rng.choice(NOUNS)} in {self.years.pop()}."
            y = self._caption(cap, x0, x1, y, small)
            cv.draw.line((x0, y, x1, y), fill=ink, width=2)
            y += 6
            cols = [x0 + 4, x0 + (x1 - x0) * 0.45, x0 + (x1 - x0) * 0.72]
            for r in range(5):
                cells = (
                    ["Site", "Before", "After"]
                    if r == 0
                    else [rng.choice(NOUNS).title(), str(rng.randint(10, 999)), str(rng.randint(10, 999))]
                )
                for cx, t in zip(cols, cells, strict=True):
                    cv.text((cx, y), t, small, ink)
                y += self.fs * 1.25
                if r == 0:
                    cv.draw.line((x0, y - 3, x1, y - 3), fill=ink, width=1)
            cv.draw.line((x0, y + 2, x1, y + 2), fill=ink, width=2)
            return y + self.line_h
        hgt = self.line_h * rng.randint(6, 9)
        cv.draw.rectangle((x0 + 20, y, x1 - 6, y + hgt), outline=ink, width=1)
        nb = rng.randint(3, 6)
        bw = (x1 - x0 - 60) / (nb * 1.6)
        for b in range(nb):
            bx = x0 + 40 + b * bw * 1.6
            bh = hgt * rng.uniform(0.2, 0.85)
            cv.draw.rectangle((bx, y + hgt - bh, bx + bw, y + hgt - 2), fill=(120, 120, 120))
        for k, lab in enumerate(("0", "50", "100")):
            cv.text((x0, y + hgt - k * hgt / 2.2 - self.fs * 0.6), lab, small, ink)
        y += hgt + 8
        cap = f"Figure {n}: Share of {rng.choice(NOUNS)} land per {rng.choice(NOUNS)}, {self.years.pop()}."
        return self._caption(cap, x0, x1, y, small) + self.line_h * 0.8

    def _caption(self, text: str, x0: float, x1: float, y: float, font) -> float:
        line: list[str] = []
        for t in text.split():
            if line and font.getlength(" ".join([*line, t])) > x1 - x0:
                self.cv.text((x0, y), " ".join(line), font, self.ink)
                y += self.fs * 1.1
                line = []
            line.append(t)
        if line:
            self.cv.text((x0, y), " ".join(line), font, self.ink)
            y += self.fs * 1.1
        return y + 4

    def _footnote(self, xs: list[float], col_w: float) -> None:
        col, note, nfont, top = self.note
        x0 = xs[col]
        self.cv.draw.line((x0, top + self.fs * 0.4, x0 + col_w * 0.3, top + self.fs * 0.4), fill=self.ink, width=1)
        y = top + self.fs * 0.8
        # the marker: after a body word on the note's column (that word is never asked)
        cands = [k for k, (_, b, _) in enumerate(self.words) if xs[col] <= b[0] < xs[col] + col_w and b[3] < top]
        if cands:
            k = self.rng.choice(cands)
            b = self.words[k][1]
            self.cv.text((b[2] + 1, b[1] - self.fs * 0.25), "1", nfont, self.ink)
            self.no_ask.add(k)
            if k + 1 < len(self.words):
                self.no_ask.add(k + 1)
        line: list[str] = []
        for t in note:
            if line and nfont.getlength(" ".join([*line, t])) > col_w:
                self.cv.text((x0, y), " ".join(line), nfont, self.ink)
                y += self.fs * 1.0
                line = []
            line.append(t)
        if line:
            self.cv.text((x0, y), " ".join(line), nfont, self.ink)


def _norm(t: str) -> str:
    return re.sub(r"\W", "", t.lower())


def question(rng: random.Random, page: Page, kind: str) -> tuple[str, str, tuple] | None:
    """(query, answer, answer box) of ``kind`` on ``page`` (None when no section fits); sections that cross a
    column break are preferred."""
    words, secs = page.words, page.sections
    done = [s for s in secs if s["complete"] and len(s["words"]) > 4]
    if not done:
        return None

    def crosses(s: dict) -> bool:
        xs = [words[k][1][0] for k in s["words"]]
        return max(xs) - min(xs) > page.size[0] / (page.ncol + 1)

    tpl = rng.choice(QUESTIONS[kind])
    if kind == "sec_last":
        pool = [s for s in done if crosses(s)] if rng.random() < 0.6 else done
        s = rng.choice(pool or done)
        k = s["words"][-1]
        return tpl.format(h=s["heading"]), words[k][0], words[k][1]
    if kind == "sec_year":
        cands = []
        for s in done:
            ys = [k for k in s["words"] if YEAR_RE.fullmatch(words[k][0])]
            if len(ys) == 1 and ys[0] not in page.no_ask:
                cands.append((s, ys[0]))
        if not cands:
            return None
        s, k = rng.choice(cands)
        return tpl.format(h=s["heading"]), words[k][0], words[k][1]
    step = 1 if kind == "sec_after" else -1
    norm = [_norm(t) for t, _, _ in words]
    cands = []
    for s in done:
        ids = s["words"]
        for pos, k in enumerate(ids):
            j = pos + step
            if not (0 <= j < len(ids)) or len(norm[k]) < 3 or norm[k] in ("the", "and", "was", "that"):
                continue
            if k in page.no_ask or ids[j] in page.no_ask or sum(norm[i] == norm[k] for i in ids) != 1:
                continue
            nb = norm[ids[j]]
            elsewhere = [i for i in range(len(words)) if norm[i] == norm[k] and words[i][2] != words[k][2]]
            if any(0 <= i + step < len(words) and norm[i + step] != nb for i in elsewhere):
                cands.append((s, k, ids[j]))
    if not cands:
        return None
    s, k, a = rng.choice(cands)
    return tpl.format(h=s["heading"], w=words[k][0]), words[a][0], words[a][1]


def make(out: Path, pages: int, seed: int = 41, gt_ocr: Path | None = None) -> list[dict]:
    """Write ``pages`` pages of every style and their questions (one of each kind a page where one exists)."""
    from weakspots_data import text_lines

    (out / "images").mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for source, style in STYLES.items():
        for p in range(pages):
            rng = random.Random(f"multicol2|{source}|{p}|{seed}")
            page = Page(rng, style)
            page.draw()
            qs = []
            for kind in ("sec_year", "sec_after", "sec_before", "sec_last"):
                got = question(rng, page, kind)
                if got is not None:
                    qs.append((kind, *got))
            name = f"images/{source}_{p:03d}.png"
            look = random.Random(f"multicol2-look|{source}|{p}|{seed}")
            state = look.getstate()
            angle = look.uniform(-1.2, 1.2)  # _scan_look's first draw: the page's rotation
            image = None
            for i, (kind, query, answer, box) in enumerate(qs):
                look.setstate(state)
                image, rbox = docgen._scan_look(page.cv.image, box, look, rotate=True)
                group = next(g for g, ss in GROUPS.items() if source in ss)
                rows.append(
                    dict(
                        id=f"{source}/{p}/{i}",
                        query=query,
                        answer=answer,
                        boxes=[list(rbox)],
                        key="",
                        key_boxes=[],
                        image=name,
                        doc_type="multicol_section",
                        paraphrased=False,
                        alt_boxes=[],
                        template=f"{kind}_{_template_index(query, kind)}",
                        image_size=list(image.size),
                        render={"kind": kind, "head": page.head, "ncol": page.ncol, "face": page.face},
                        source=source,
                        group=group,
                    )  # fmt: skip
                )
            if image is None:
                continue
            image.save(out / name)
            if gt_ocr is not None:
                from arr_coc.training.evidence import DiskOcrCache

                lines = text_lines(page.cv.items, angle, page.cv.image.size)
                path = DiskOcrCache(gt_ocr).path(Image.open(out / name).convert("RGB"))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(lines))
    with open(out / "questions.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return rows


def _template_index(query: str, kind: str) -> int:
    for n, tpl in enumerate(QUESTIONS[kind]):
        pat = re.escape(tpl).replace(re.escape("{h}"), ".+").replace(re.escape("{w}"), ".+")
        if re.fullmatch(pat, query):
            return n
    raise ValueError(f"no template of {kind} matches {query!r}")


def report(folder: Path, results: Sequence[Path], groups: Sequence[str]) -> str:
    """Markdown: recall at 11.1% per group (mean [min-max over its sources]) and per source and kind, for each
    allocator of the ``realdocs_recall.py`` JSON outputs (merged: one may hold some groups, another the rest)."""
    import numpy as np

    meta = {}
    for line in (folder / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        meta[q["id"]] = (q["group"], q["source"], q["render"]["kind"])
    recs: dict[str, dict] = {}
    for res in results:
        for r in json.loads(Path(res).read_text())["questions"]:
            recs[r["id"]] = {k: v["11.1%"] for k, v in r.items() if isinstance(v, dict)}
    allocs = sorted({a for rec in recs.values() for a in rec}, key=lambda a: a != "rules")
    out = ["| group (questions, sources) | " + " | ".join(allocs) + " |", "|---|" + "---:|" * len(allocs)]
    for g in groups:
        ids = [i for i in recs if meta[i][0] == g]
        if not ids:
            continue
        srcs = sorted({meta[i][1] for i in ids})
        cells = []
        for a in allocs:
            per = [np.mean([recs[i][a] for i in ids if meta[i][1] == s]) for s in srcs]
            cells.append(f"{np.mean([recs[i][a] for i in ids]):.3f} [{min(per):.2f}-{max(per):.2f}]")
        out.append(f"| {g} ({len(ids)}, {len(srcs)}) | " + " | ".join(cells) + " |")
    out += ["", "| source | kind | n | " + " | ".join(allocs) + " |", "|---|---|---:|" + "---:|" * len(allocs)]
    for s in sorted({meta[i][1] for i in recs}):
        for kind in QUESTIONS:
            ids = [i for i in recs if meta[i][1] == s and meta[i][2] == kind]
            if ids:
                vals = " | ".join(f"{np.mean([recs[i][a] for i in ids]):.3f}" for a in allocs)
                out.append(f"| {s} | {kind} | {len(ids)} | {vals} |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make", help="draw the pages and write questions.jsonl")
    mk.add_argument("--out", type=Path, required=True)
    mk.add_argument("--pages", type=int, default=7, help="pages per source (style)")
    mk.add_argument("--seed", type=int, default=41)
    mk.add_argument("--gt-ocr", type=Path, default=None, help="write the drawn lines as OCR boxes into this folder")
    sp = sub.add_parser("split", help="write one questions file per group (<out>/<group>.jsonl)")
    sp.add_argument("--data", type=Path, required=True)
    rp = sub.add_parser("report", help="per-group and per-source table of realdocs_recall.py outputs")
    rp.add_argument("--data", type=Path, required=True)
    rp.add_argument("--results", type=Path, nargs="+", required=True)
    rp.add_argument("--groups", nargs="+", default=list(GROUPS))
    args = p.parse_args(argv)
    if args.cmd == "make":
        rows = make(args.out, args.pages, args.seed, args.gt_ocr)
        counts: dict[str, int] = {}
        for r in rows:
            counts[f"{r['source']} {r['render']['kind']}"] = counts.get(f"{r['source']} {r['render']['kind']}", 0) + 1
        print(json.dumps(counts, indent=1))
        print(f"{len(rows)} questions -> {args.out}")
    elif args.cmd == "split":
        rows = [json.loads(x) for x in (args.data / "questions.jsonl").read_text().splitlines()]
        for g in GROUPS:
            with open(args.data / f"{g}.jsonl", "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows if r["group"] == g)
    else:
        print(report(args.data, args.results, args.groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
