"""Evidence recall in Chinese, Japanese, German, French and Spanish: recall at 11.1% per language and source.

Example:
    python benchmarks/languages.py --n 4 --ocr-cache /tmp/ocr-lang --out results/languages.md
    python benchmarks/languages.py --real /data/xfund-dev --ocr-cache /tmp/ocr-lang   # + real pages (realdocs schema)

The pages: ``arr_coc.evaluation.langgen`` (``--n`` pages of each kind: receipt, invoice, form, table, two-column
text, in each language; written once to ``--pages``), plus any realdocs-schema folder given with ``--real`` (its
lines need a ``language``; their ``source`` names the group). Every question runs ``arr_coc.allocate(mode="text")``
on the Qwen2.5-VL grid at realdocs' 1,280-token cap, the answer's cells scored with realdocs' evidence-cell rule, as
``benchmarks/realdocs_recall.py`` does (the kept cells at 11.1% of the tokens, words kept whole). Reported per
language and source: questions, recall and the share of questions with every answer cell kept (full hit), overall
and by kind; and with ``--baseline-charset latin`` the same pages read by the Latin-only recogniser (what the
text path did before issue 45), for comparison.
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


def table(rows: list[tuple[str, str, str, float]], title: str) -> str:
    """Markdown: per (language, source) and kind, n / recall / full hit at 11.1%."""
    groups: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for lang, source, kind, r in rows:
        groups[(lang, source)].append((kind, r))
    kinds = sorted({k for *_, k, _ in rows})
    out = [f"**{title}**", "", f"| language | source | n | recall@11.1% | full hit | {' | '.join(kinds)} |",
           "|---|---|---:|---:|---:|" + "---:|" * len(kinds)]  # fmt: skip
    for (lang, source), vals in sorted(groups.items()):
        rec = [r for _, r in vals]
        per = [np.mean([r for k, r in vals if k == kind]) if any(k == kind for k, _ in vals) else float("nan")
               for kind in kinds]  # fmt: skip
        out.append(f"| {lang} | {source} | {len(vals)} | {np.mean(rec):.3f} | {np.mean([r == 1.0 for r in rec]):.2f} | "
                   + " | ".join(f"{v:.3f}" for v in per) + " |")  # fmt: skip
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4, help="generated pages of each kind in each language")
    parser.add_argument("--languages", nargs="+", default=None, help="languages to generate (default: all)")
    parser.add_argument("--pages", type=Path, default=Path("/tmp/arr-coc-langgen"), help="where the pages go")
    parser.add_argument("--real", type=Path, nargs="*", default=[], help="realdocs-schema folders of real pages")
    parser.add_argument("--ocr-cache", type=Path, default=None, help="OCR boxes per page on disk")
    parser.add_argument("--baseline-charset", default=None, choices=("latin", "all", "auto"),
                        help="also run with this recogniser head (its own cache: <ocr-cache>-<charset>)")  # fmt: skip
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "languages.md")
    args = parser.parse_args(argv)
    from arr_coc.reading import TextReader
    from arr_coc.training.evidence import DiskOcrCache

    langs = args.languages or ["zh", "ja", "de", "fr", "es"]  # langgen.LANGUAGES
    folder = args.pages / f"v2-n{args.n}-{'-'.join(langs)}"  # v2: pages with fine print
    if not (folder / "questions.jsonl").is_file():  # written once (an older checkout can then score the same pages)
        from arr_coc.evaluation import langgen

        langgen.write_folder(langgen.generate(langs, n=args.n), folder)
    items = [(q, line, f"docgen-{line['language']}") for q, line in load(folder)]
    for real in args.real:
        items += [(q, line, line.get("source") or real.name) for q, line in load(real)]
    runs = {"auto": None}
    if args.baseline_charset:
        runs[args.baseline_charset] = args.baseline_charset
    texts, t0 = [], time.time()
    for name, charset in runs.items():
        cache = args.ocr_cache if charset is None or args.ocr_cache is None else Path(f"{args.ocr_cache}-{charset}")
        reader = DiskOcrCache(cache, TextReader(charset=charset) if charset else None)
        rows = []
        for i, (q, line, source) in enumerate(items):
            rows.append((line["language"], source.split("-")[0], line.get("doc_type", "doc"), recall_at(q, reader)))
            if i % 25 == 0:
                print(f"{name}: {i}/{len(items)} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        title = "OCR head: each line in its script (default)" if charset is None else f"OCR head: {charset}"
        texts.append(table(rows, title))
    header = (
        "Recall of the answer's cells at 11.1% of the tokens (Qwen2.5-VL grid, 1,280-token cap, words whole; "
        "realdocs' evidence-cell rule), per language and source; full hit: every answer cell kept. "
        f"Command: `python benchmarks/languages.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
    )
    text = header + "\n\n" + "\n\n".join(texts)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
