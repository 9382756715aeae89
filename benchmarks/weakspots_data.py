"""Development data for relevance where it is weak (issue 40): multi-column section questions, grouped by source.

Example:
    python benchmarks/weakspots_data.py multicol --out /work/data/weakspots/multicol --pages 16

``multicol`` draws multi-column article pages (title, headed sections whose text flows down a column and on into
the next one, a year in most sections) and asks the three kinds of question that a section's heading decides:

- ``sec_year``: the year printed in a named section ("Which year is mentioned in the section titled 'Harbour'?");
  every other section prints another year, so only the section's extent tells which one is meant;
- ``sec_after`` / ``sec_before``: the word right after / before a word inside a named section, a word that is
  printed in other sections too (followed by another word there), so the page-wide first occurrence is wrong;
- ``sec_last``: a section's last word (the section may end in the next column).

Each *source* is one layout style (columns, heading form, fonts); folds and the final check hold out whole sources.
``mc-test3`` (three columns, the docgen test fonts, headings at body size in capitals, a rule under each) is the
source added last and never tuned on. Answer boxes are the drawn word's ink box (exact), after docgen's scan look
(slight rotation, blur, noise). Output: realdocs-dev's schema (``questions.jsonl`` + ``images/``) plus ``source``.
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
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from PIL import Image  # noqa: E402

from arr_coc.evaluation import docgen  # noqa: E402

# source -> layout style. "split" picks docgen's font set and vocabulary.
STYLES: dict[str, dict] = {
    "mc-bold2": dict(split="dev", ncol=2, head="bold", head_scale=1.35, numbered=False, caps=False, rule=False),
    "mc-num2": dict(split="dev", ncol=2, head="bold", head_scale=1.0, numbered=True, caps=False, rule=False),
    "mc-caps3": dict(split="dev", ncol=3, head="bold", head_scale=1.15, numbered=False, caps=True, rule=False),
    "mc-plain2": dict(split="test", ncol=2, head="regular", head_scale=1.3, numbered=False, caps=False, rule=False),
    "mc-test3": dict(split="test", ncol=3, head="regular", head_scale=1.0, numbered=False, caps=True, rule=True),
}
HELD_OUT = "mc-test3"  # added last, never tuned on

YEAR_TEMPLATES = (
    "In {y} the {a} {n} {v} the {n}.",
    "The {n} was rebuilt in {y} after the {n} {v} it.",
    "By {y} the {a} {n} {v} most of the {n}.",
)
QUESTIONS = {  # kind -> wordings; {h}: heading, {w}: the word
    "sec_year": (
        "Which year is mentioned in the section titled '{h}'?",
        "In what year, according to the section headed \u201c{h}\u201d?",
        "What year does the '{h}' section give?",
    ),
    "sec_after": (
        "In the section titled '{h}', which word comes right after '{w}'?",
        "Which word follows '{w}' in the section headed \u201c{h}\u201d?",
        "What is the next word after '{w}' in the {h} section?",
    ),
    "sec_before": (
        "In the section titled '{h}', which word comes right before '{w}'?",
        "Which word precedes \u201c{w}\u201d in the section headed \u201c{h}\u201d?",
    ),
    "sec_last": (
        "What is the last word of the section titled '{h}'?",
        "How does the section headed \u201c{h}\u201d end?",
        "With which word does the '{h}' section close?",
    ),
}


def _sentence(rng: random.Random, vocab: dict, year: int | None) -> list[str]:
    pick = {"a": "adj", "n": "noun", "v": "verb"}
    tpl = rng.choice(YEAR_TEMPLATES) if year is not None else rng.choice(vocab["templates"])
    out = re.sub(r"\{(\w)\}", lambda m: str(year) if m.group(1) == "y" else rng.choice(vocab[pick[m.group(1)]]), tpl)
    return out.split()


def article(rng: random.Random, style: dict) -> dict:
    """Draw one page; returns the canvas, its words (text, box, section) and sections (heading, box, word ids)."""
    split = style["split"]
    fonts = docgen._Fonts(rng, split)
    vocab = docgen.PROSE[split]
    ncol = style["ncol"]
    w = rng.randint(1100, 1500) if ncol == 2 else rng.randint(1350, 1600)
    h = min(1800, int(w * rng.uniform(1.25, 1.4)))
    cv = docgen._Canvas.blank(w, h, docgen._paper(rng))
    ink = docgen._ink(rng)
    fs = rng.randint(18, 23)
    font = fonts.reg(fs)
    hsize = int(fs * style["head_scale"])
    head_font = fonts.bold(hsize) if style["head"] == "bold" else fonts.reg(hsize)
    m = rng.randint(60, 90)
    gutter = rng.randint(35, 60)
    title = rng.choice(vocab["titles"])
    title_box = cv.text((m, m), title, fonts.bold(int(fs * 2.0)), ink)
    top = title_box[3] + fs * 2.2
    foot = h - m
    col_w = (w - 2 * m - gutter * (ncol - 1)) / ncol
    line_h = fs * 1.45
    space = font.getlength(" ")
    words: list[tuple[str, tuple, int]] = []  # (text, box, section index)
    sections: list[dict] = []
    years = rng.sample(range(1820, 2016), 12)
    col, y = 0, float(top)
    headings = rng.sample(vocab["headings"], len(vocab["headings"]))
    full = False
    for s_i, heading in enumerate(headings):
        if style["caps"]:
            heading = heading.upper()
        label = f"{s_i + 1}. {heading}" if style["numbered"] else heading
        xl = m + col * (col_w + gutter)
        if y + line_h * 3 > foot:
            col += 1
            if col >= ncol:
                break
            xl, y = m + col * (col_w + gutter), float(top)
        if y > top:
            y += line_h * 0.7
        hbox = cv.text((xl, y), label, head_font, ink)
        if style["rule"]:
            cv.draw.line((xl, hbox[3] + 4, xl + col_w, hbox[3] + 4), fill=ink, width=1)
        sections.append({"heading": heading, "label": label, "box": hbox, "words": [], "complete": False})
        y += line_h * 1.4
        n_sent = rng.randint(3, 7) + (rng.randint(1, 3) if ncol == 3 else 0)
        year_at = rng.randrange(n_sent) if rng.random() < 0.85 else None
        x = xl
        for k in range(n_sent):
            sent = _sentence(rng, vocab, years[s_i] if k == year_at else None)
            for tok in sent:
                core, punct = (tok[:-1], tok[-1]) if tok[-1] in ".," else (tok, "")
                wlen = font.getlength(core)
                if x + wlen + font.getlength(punct) > xl + col_w and x > xl:
                    x, y = xl, y + line_h
                if y + line_h > foot:
                    col += 1
                    if col >= ncol:
                        full = True
                        break
                    xl = m + col * (col_w + gutter)
                    x, y = xl, float(top)
                box = cv.text((x, y), core, font, ink)
                words.append((core, box, s_i))
                sections[-1]["words"].append(len(words) - 1)
                x += wlen
                if punct:
                    cv.text((x, y), punct, font, ink)
                    x += font.getlength(punct)
                x += space
            if full:
                break
        if full:
            break
        sections[-1]["complete"] = True
        y += line_h * 1.2
    return {"canvas": cv, "words": words, "sections": sections, "size": (w, h)}


def text_lines(items: list[tuple[str, tuple]], angle: float, size: tuple[int, int]) -> list[list]:
    """The page's printed lines as an OCR reader would box them: ``[text, [x0, y0, x1, y1], 1.0]`` from the drawn
    items (drawing order: a new line starts where an item does not continue the previous one to its right on the
    same baseline), boxes rotated with the page (``docgen._rotate_box``)."""
    lines: list[list] = []
    for text, box in items:
        if lines:
            _, lb = lines[-1]
            mid = (box[1] + box[3]) / 2
            if -0.3 * (lb[3] - lb[1]) <= box[0] - lb[2] < 0.8 * (lb[3] - lb[1]) + 4 and lb[1] <= mid <= lb[3]:
                sep = "" if re.fullmatch(r"[.,;:]", text) else " "
                lines[-1] = (lines[-1][0] + sep + text, (lb[0], min(lb[1], box[1]), box[2], max(lb[3], box[3])))
                continue
        lines.append((text, tuple(box)))
    return [[t, list(docgen._rotate_box(b, angle, size)), 1.0] for t, b in lines]


def _norm(t: str) -> str:
    return re.sub(r"\W", "", t.lower())


def question(rng: random.Random, page: dict, kind: str) -> tuple[str, str, tuple] | None:
    """(query, answer, answer box) of ``kind`` on ``page``, or None when the page has no fitting unit."""
    words, sections = page["words"], page["sections"]
    done = [s for s in sections if s["complete"] and s["words"]]
    if not done:
        return None
    tpl = rng.choice(QUESTIONS[kind])
    if kind == "sec_last":
        s = rng.choice(done)
        k = s["words"][-1]
        return tpl.format(h=s["heading"]), words[k][0], words[k][1]
    if kind == "sec_year":
        cands = [(s, k) for s in done for k in s["words"] if re.fullmatch(r"1[89]\d\d|20[01]\d", words[k][0])]
        n_years = sum(1 for t, _, _ in words if re.fullmatch(r"1[89]\d\d|20[01]\d", t))
        if not cands or n_years < 3:
            return None
        s, k = rng.choice(cands)
        return tpl.format(h=s["heading"]), words[k][0], words[k][1]
    # sec_after / sec_before: a word once in its section, printed elsewhere too with a different neighbour
    step = 1 if kind == "sec_after" else -1
    norm = [_norm(t) for t, _, _ in words]
    cands = []
    for s in done:
        ids = s["words"]
        for pos, k in enumerate(ids):
            j = pos + step
            if not (0 <= j < len(ids)) or len(norm[k]) < 3 or norm[k] in ("the", "and"):
                continue
            if sum(norm[i] == norm[k] for i in ids) != 1:
                continue
            nb = norm[ids[j]]
            elsewhere = [
                i
                for i in range(len(words))
                if norm[i] == norm[k] and words[i][2] != words[k][2] and 0 <= i + step < len(words)
            ]
            if elsewhere and any(norm[i + step] != nb for i in elsewhere):
                cands.append((s, k, ids[j]))
    if not cands:
        return None
    s, k, a = rng.choice(cands)
    return tpl.format(h=s["heading"], w=words[k][0]), words[a][0], words[a][1]


def make_multicol(out: Path, pages: int, seed: int = 17, gt_ocr: Path | None = None) -> list[dict]:
    """Write ``pages`` pages of every style and their questions (one of each kind a page where one exists);
    ``gt_ocr``: also write each page's drawn text lines as its OCR boxes into that ``DiskOcrCache`` folder (exact
    reading, for fast development runs; the reported figures use the real OCR)."""
    (out / "images").mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for source, style in STYLES.items():
        for p in range(pages):
            rng = random.Random(f"weakspots|{source}|{p}|{seed}")
            page = article(rng, style)
            image = page["canvas"].image
            for kind in ("sec_year", "sec_after", "sec_before", "sec_last"):
                if kind == "sec_before" and p % 2 == 0 or kind == "sec_after" and p % 2 == 1:
                    continue  # one of after/before a page
                got = question(rng, page, kind)
                if got is None:
                    continue
                query, answer, box = got
                rows.append(
                    dict(
                        query=query,
                        answer=answer,
                        box=box,
                        kind=kind,
                        source=source,
                        page=p,
                        template=f"{kind}_{QUESTIONS[kind].index(query_template(query, kind))}",
                    )
                )
                rows[-1]["image_obj"] = image
                rows[-1]["items"] = page["canvas"].items
    # the scan look (one draw a page: the same transform for every question of it)
    out_rows: list[dict] = []
    by_page: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        by_page.setdefault((r["source"], r["page"]), []).append(r)
    for (source, p), rs in by_page.items():
        name = f"images/{source}_{p:03d}.png"
        look = random.Random(f"weakspots-look|{source}|{p}|{seed}")
        state = look.getstate()
        image = None
        angle = look.uniform(-1.2, 1.2)  # _scan_look's first draw: the page's rotation
        lines = text_lines(rs[0]["items"], angle, rs[0]["image_obj"].size)
        for i, r in enumerate(rs):
            look.setstate(state)  # same rotation and noise for each question's box
            image, box = docgen._scan_look(r["image_obj"], r["box"], look, rotate=True)
            out_rows.append(
                dict(
                    id=f"{source}/{p}/{i}",
                    query=r["query"],
                    answer=r["answer"],
                    boxes=[list(box)],
                    key="",
                    key_boxes=[],
                    image=name,
                    doc_type="multicol_section",
                    paraphrased=False,
                    alt_boxes=[],
                    template=r["template"],
                    image_size=list(image.size),
                    render={"kind": r["kind"]},
                    source=source,
                )
            )
        image.save(out / name)
        if gt_ocr is not None:  # the drawn lines as the page's OCR boxes (DiskOcrCache's file for this image)
            from arr_coc.training.evidence import DiskOcrCache

            path = DiskOcrCache(gt_ocr).path(Image.open(out / name).convert("RGB"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(lines))
    with open(out / "questions.jsonl", "w") as f:
        for r in out_rows:
            f.write(json.dumps(r) + "\n")
    return out_rows


def query_template(query: str, kind: str) -> str:
    """The wording template a query was drawn from."""
    for tpl in QUESTIONS[kind]:
        pat = re.escape(tpl).replace(re.escape("{h}"), ".+").replace(re.escape("{w}"), ".+")
        if re.fullmatch(pat, query):
            return tpl
    raise ValueError(f"no template of {kind} matches {query!r}")


def report(data: Sequence[Path], results: Sequence[Path], held_out: Sequence[str]) -> str:
    """Markdown: recall at 11.1% by kind (``render.kind`` or doc_type) and source, for each allocator of
    ``benchmarks/realdocs_recall.py``'s JSON outputs (one a data folder, in order); sources in ``held_out`` are
    pooled apart (the final check) from the others (development), whose spread over sources is given."""
    import numpy as np

    rows: list[tuple[str, str, str, dict]] = []  # (kind, source, allocator... recalls)
    for folder, res in zip(data, results, strict=True):
        meta = {}
        for line in (folder / "questions.jsonl").read_text().splitlines():
            q = json.loads(line)
            meta[q["id"]] = ((q.get("render") or {}).get("kind") or q["doc_type"], q.get("source", ""))
        for r in json.loads(res.read_text())["questions"]:
            kind, source = meta[r["id"]]
            rows.append((kind, source, r["doc_type"], {k: v["11.1%"] for k, v in r.items() if isinstance(v, dict)}))
    allocs = sorted({a for *_, rec in rows for a in rec}, key=lambda a: a != "rules")
    kinds = sorted({r[0] for r in rows})
    out = [
        "| kind | allocator | development sources (n): mean [min-max over sources] | held-out source (n) | gap |",
        "|---|---|---:|---:|---:|",
    ]
    for kind in kinds:
        for a in allocs:
            dev = [(s, rec[a]) for k, s, _, rec in rows if k == kind and s not in held_out and a in rec]
            ho = [rec[a] for k, s, _, rec in rows if k == kind and s in held_out and a in rec]
            per = [np.mean([v for s2, v in dev if s2 == s]) for s in sorted({s for s, _ in dev})]
            d = np.mean([v for _, v in dev]) if dev else float("nan")
            h = np.mean(ho) if ho else float("nan")
            spread = f"[{min(per):.3f}-{max(per):.3f}]" if per else ""
            out.append(f"| {kind} | {a} | {d:.3f} ({len(dev)}) {spread} | {h:.3f} ({len(ho)}) | {h - d:+.3f} |")
    srcs = sorted({r[1] for r in rows})
    out += ["", "| source | kind | n | " + " | ".join(allocs) + " |", "|---|---|---:|" + "---:|" * len(allocs)]
    for s in srcs:
        for kind in kinds:
            recs = [rec for k, s2, _, rec in rows if k == kind and s2 == s]
            if recs:
                vals = " | ".join(f"{np.mean([r[a] for r in recs if a in r]):.3f}" for a in allocs)
                tag = " (held out)" if s in held_out else ""
                out.append(f"| {s}{tag} | {kind} | {len(recs)} | {vals} |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    mc = sub.add_parser("multicol", help="generated multi-column section questions")
    mc.add_argument("--out", type=Path, required=True)
    mc.add_argument("--pages", type=int, default=16, help="pages per source (style)")
    mc.add_argument("--seed", type=int, default=17)
    mc.add_argument("--gt-ocr", type=Path, default=None, help="write the drawn lines as OCR boxes into this folder")
    rp = sub.add_parser("report", help="per-kind, per-source table of realdocs_recall.py outputs")
    rp.add_argument("--data", type=Path, nargs="+", required=True, help="data folders (questions.jsonl)")
    rp.add_argument("--results", type=Path, nargs="+", required=True, help="realdocs_recall.py JSON, one a folder")
    rp.add_argument("--held-out", nargs="*", default=[HELD_OUT], help="sources of the final check")
    args = p.parse_args(argv)
    if args.cmd == "report":
        print(report(args.data, args.results, args.held_out))
    if args.cmd == "multicol":
        rows = make_multicol(args.out, args.pages, args.seed, args.gt_ocr)
        counts: dict[str, int] = {}
        for r in rows:
            counts[f"{r['source']} {r['render']['kind']}"] = counts.get(f"{r['source']} {r['render']['kind']}", 0) + 1
        print(json.dumps(counts, indent=1))
        print(f"{len(rows)} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
