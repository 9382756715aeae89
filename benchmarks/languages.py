"""Evidence recall in Chinese, Japanese, German, French and Spanish: recall at 11.1% per language and source, on a
development and a test range of generated pages.

Example:
    python benchmarks/languages.py --n 4 --dev-seeds 1 --test-seeds 101 --ocr-cache /tmp/ocr-lang
    python benchmarks/languages.py --n 4 --dev-seeds 1 --test-seeds --misses   # tune on the dev range alone
    python benchmarks/languages.py --real /data/xfund-dev --ocr-cache /tmp/ocr-lang   # + real pages (realdocs schema)

The pages: ``arr_coc.evaluation.langgen`` (``--n`` pages of each kind: receipt, invoice, form, table, two-column
text, in each language, for each seed; a third of the form, invoice and receipt pages asked in paraphrase; written
once to ``--pages``). The seeds make two disjoint ranges of pages: ``--dev-seeds`` (the pages one looks at and tunes
on; ``--misses`` lists their misses) and ``--test-seeds`` (measured once at the end, never tuned on; an empty list
skips them). Any realdocs-schema folder given with ``--real`` joins the dev range (its lines need a ``language``;
their ``source`` names the group). Every question runs ``arr_coc.allocate(mode="text")`` on the Qwen2.5-VL grid at
realdocs' 1,280-token cap, the answer's cells scored with realdocs' evidence-cell rule, as
``benchmarks/realdocs_recall.py`` does (the kept cells at 11.1% of the tokens, words kept whole). Reported per
language, dev and test side by side: questions, pages, recall with a 95% interval (bootstrap over pages, 2,000
draws), the share of questions with every answer cell kept (full hit); then per kind and for the paraphrased
questions. With ``--baseline-charset latin`` the same pages are also read by the Latin-only recogniser (what the text
path did before issue 45), for comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


def recall_at(q, reader, realizer=None) -> float:
    """Recall at 11.1% of ``allocate``'s scores (words whole) for one question (``realdocs_recall.recall_of``)."""
    import arr_coc
    from arr_coc.attending import select
    from arr_coc.training.data import FAMILY, MAX_PIXELS, evidence_cells
    from arr_coc.training.evidence import BUDGETS

    page = q.load_image()
    alloc = arr_coc.allocate(
        page, q.query, BUDGETS[0][1], family=FAMILY, max_pixels=MAX_PIXELS, mode="text", realizer=realizer,
        reader=reader,
    )  # fmt: skip
    rows, cols = alloc.grid
    cells = evidence_cells(q.boxes, page.size, rows, cols)
    flat = torch.as_tensor(np.asarray(alloc.scores, dtype=np.float32)).ravel()
    k = max(1, min(rows * cols, round(BUDGETS[0][1] * rows * cols)))
    keep = select(flat, k, units=list(alloc.units)).numpy()
    return float(np.isin(cells, keep).mean())


def load(folder: Path) -> list[tuple[object, dict]]:
    """(Question, its JSON line) of a realdocs-schema folder."""
    from arr_coc.training.data import load_jsonl

    questions = load_jsonl(folder)
    lines = [json.loads(s) for s in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines() if s]
    return list(zip(questions, lines, strict=True))


Row = tuple[str, str, str, str, bool, float]  # language, source, kind, page, paraphrased, recall


def interval(rows: list[Row], draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of the mean recall, resampling pages (a page's questions move together)."""
    pages: dict[str, list[float]] = defaultdict(list)
    for *_, page, _, r in rows:
        pages[page].append(r)
    sums = np.array([sum(v) for v in pages.values()])
    counts = np.array([len(v) for v in pages.values()])
    pick = np.random.default_rng(seed).integers(0, len(sums), size=(draws, len(sums)))
    means = sums[pick].sum(1) / counts[pick].sum(1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def _cell(rows: list[Row], spread: bool = True) -> str:
    if not rows:
        return "-"
    mean = float(np.mean([r[-1] for r in rows]))
    if not spread:
        return f"{mean:.3f} ({len(rows)})"
    lo, hi = interval(rows)
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def split_table(splits: dict[str, list[Row]], title: str) -> str:
    """Markdown: per (language, source), each split side by side (questions / pages, recall and its 95% interval,
    full hit); then per kind and for paraphrased questions, recall (questions)."""
    names = list(splits)
    groups = sorted({(r[0], r[1]) for rows in splits.values() for r in rows})
    head = " | ".join(f"{n} questions / pages | {n} recall@11.1% [95%] | {n} full hit" for n in names)
    out = [f"**{title}**", "", f"| language | source | {head} |", "|---|---|" + "---:|---:|---:|" * len(names)]
    for lang, source in groups:
        cells = []
        for n in names:
            rows = [r for r in splits[n] if (r[0], r[1]) == (lang, source)]
            pages = len({r[3] for r in rows})
            full = f"{np.mean([r[-1] == 1.0 for r in rows]):.2f}" if rows else "-"
            cells.append(f"{len(rows)} / {pages} | {_cell(rows)} | {full}")
        out.append(f"| {lang} | {source} | {' | '.join(cells)} |")
    kinds = sorted({r[2] for rows in splits.values() for r in rows})
    out += [
        "",
        "Per kind, recall@11.1% (questions); paraphrased: the questions worded without the printed key's words:",
        "",
    ]
    cols = [(n, k) for k in [*kinds, "paraphrased"] for n in names]
    out.append("| language | source | " + " | ".join(f"{k} {n}" for n, k in cols) + " |")
    out.append("|---|---|" + "---:|" * len(cols))
    for lang, source in groups:
        cells = []
        for n, k in cols:
            rows = [
                r for r in splits[n] if (r[0], r[1]) == (lang, source) and (r[4] if k == "paraphrased" else r[2] == k)
            ]
            cells.append(_cell(rows, spread=False))
        out.append(f"| {lang} | {source} | {' | '.join(cells)} |")
    return "\n".join(out)


def page_folder(root: Path, n: int, seed: int, langs: list[str]) -> Path:
    """The folder of the pages of one seed, written once (an older checkout can then score the same pages)."""
    tag = f"v2-n{n}-{'-'.join(langs)}" if seed == 0 else f"v2-n{n}-s{seed}-{'-'.join(langs)}"  # v2: fine print
    folder = root / tag
    if not (folder / "questions.jsonl").is_file():
        from arr_coc.evaluation import langgen

        langgen.write_folder(langgen.generate(langs, n=n, seed=seed), folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4, help="generated pages of each kind in each language, per seed")
    parser.add_argument("--dev-seeds", type=int, nargs="*", default=[1], help="seeds of the development pages")
    parser.add_argument("--test-seeds", type=int, nargs="*", default=[101], help="seeds of the test pages")
    parser.add_argument("--languages", nargs="+", default=None, help="languages to generate (default: all)")
    parser.add_argument("--pages", type=Path, default=Path("/tmp/arr-coc-langgen"), help="where the pages go")
    parser.add_argument("--real", type=Path, nargs="*", default=[], help="realdocs-schema folders of real pages")
    parser.add_argument("--ocr-cache", type=Path, default=None, help="OCR boxes per page on disk")
    parser.add_argument("--baseline-charset", default=None, choices=("latin", "all", "auto"),
                        help="also run with this recogniser head (its own cache: <ocr-cache>-<charset>)")  # fmt: skip
    parser.add_argument("--relevance", default=None, help="also run with this relevance (Realizer.from_pretrained)")
    parser.add_argument("--misses", action="store_true", help="list the dev questions not fully kept (stderr)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "languages.md")
    args = parser.parse_args(argv)
    from arr_coc.reading import TextReader
    from arr_coc.training.evidence import DiskOcrCache

    langs = args.languages or ["zh", "ja", "de", "fr", "es"]  # langgen.LANGUAGES
    if set(args.dev_seeds) & set(args.test_seeds):
        parser.error("the dev and test seeds must differ")
    ranges = {"dev": args.dev_seeds, "test": args.test_seeds}
    items: dict[str, list] = {}
    for name, seeds in ranges.items():
        if seeds:
            items[name] = [
                (q, line, f"docgen-{line['language']}", seed)
                for seed in seeds
                for q, line in load(page_folder(args.pages, args.n, seed, langs))
            ]
    for real in args.real:
        items.setdefault("dev", []).extend(
            (q, line, line.get("source") or real.name, real.name) for q, line in load(real)
        )
    runs: dict[str, str | None] = {"auto": None}
    if args.baseline_charset:
        runs[args.baseline_charset] = args.baseline_charset
    realizers = {"auto": None}
    if args.relevance:  # the same pages, OCR and reader, scored by another relevance (issue 40 item 4)
        from arr_coc.realizing import Realizer

        runs[f"relevance {args.relevance}"] = None
        realizers[f"relevance {args.relevance}"] = Realizer.from_pretrained(args.relevance).eval()
    texts, t0 = [], time.time()
    for run, charset in runs.items():
        cache = args.ocr_cache if charset is None or args.ocr_cache is None else Path(f"{args.ocr_cache}-{charset}")
        reader = DiskOcrCache(cache, TextReader(charset=charset) if charset else None)
        splits: dict[str, list[Row]] = {}
        for name, its in items.items():
            rows: list[Row] = []
            for i, (q, line, source, seed) in enumerate(its):
                r = recall_at(q, reader, realizers.get(run))
                page = f"{seed}/{line['image']}"
                rows.append((line["language"], source.split("-")[0], line.get("doc_type", "doc"), page,
                             bool(line.get("paraphrased")), r))  # fmt: skip
                if args.misses and name == "dev" and r < 1.0:
                    print(f"miss {r:.2f} {page} {line['query']!r} -> {line['answer']!r}", file=sys.stderr, flush=True)
                if i % 25 == 0:
                    print(f"{run} {name}: {i}/{len(its)} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
            splits[f"{name} (seeds {' '.join(map(str, ranges.get(name) or [])) or 'real'})"] = rows
        title = "OCR head: each line in its script (default)" if charset is None else f"OCR head: {charset}"
        title = f"{title}, {run}" if run.startswith("relevance") else title
        texts.append(split_table(splits, title))
    header = (
        "Recall of the answer's cells at 11.1% of the tokens (Qwen2.5-VL grid, 1,280-token cap, words whole; "
        "realdocs' evidence-cell rule), per language and source, dev and test pages side by side; full hit: every "
        "answer cell kept; [95%]: bootstrap over pages. "
        f"Command: `python benchmarks/languages.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
    )
    text = header + "\n\n" + "\n\n".join(texts)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
