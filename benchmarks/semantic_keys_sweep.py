"""Semantic keys (``reading/matching/semantic_keys.py``) on the paraphrase set's DEVELOPMENT questions: what each
threshold would do, end to end (issue 40, para5).

For each dev question (``benchmarks/paraphrase_set.py``'s sources; held-out questions are never read here): whether
the semantic-key gate opens (English, the question's best lexical score under ``semantic.lexical_strong``), the best
label's similarity to the question read as "What is the <label>?" and its lead over the next label; recall at 11.1%
with semantic keys off (the default) and, for the questions whose gate opens, with them forced on (every label
counts, whatever its similarity). A threshold pair (similarity, margin) fires on the questions whose best label
passes both, so each pair's recall follows from these two runs exactly; the report gives the grid by style and
doc_type, and the label-retrieval figure (how often the printed key is the best label, form questions with key
boxes).

Example:
    python benchmarks/semantic_keys_sweep.py --data /work/data/realdocs-dev --ocr-cache /work/cache/ocr \\
        --out /tmp/semantic_keys.md
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SIMS = (0.3, 0.4, 0.5, 0.6)
MARGINS = (0.0, 0.05, 0.1, 0.15)
FORCED = {"semantic": {"key_weight": 0.9, "key_min_sim": -2.0, "key_margin": -2.0}}  # every gated question fires


def _overlap(a: Sequence[float], b: Sequence[float]) -> float:
    """Share of ``b``'s area inside ``a``."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return ix * iy / max(1e-6, (b[2] - b[0]) * (b[3] - b[1]))


def run(args: argparse.Namespace) -> int:
    from arr_coc.config import RelevanceConfig
    from arr_coc.query import normalize_text
    from arr_coc.reading.matching.lexical import foreign_words
    from arr_coc.reading.matching.semantic_keys import key_similarities
    from arr_coc.realizing import Realizer
    from arr_coc.training.evidence import DiskOcrCache
    from benchmarks.paraphrase_set import load
    from benchmarks.realdocs_recall import recall_of

    raw = {}
    for line in (args.data / "questions.jsonl").read_text().splitlines():
        if line.strip():
            o = json.loads(line)
            raw[o["id"]] = o
    rows = [(p, q) for p, q in load(args.data) if p["split"] == "dev" and p["style"] in args.styles]
    ocr = DiskOcrCache(args.ocr_cache)
    forced = Realizer(RelevanceConfig(reading=FORCED))
    m = forced.reading.matcher()
    recs = []
    for p, q in rows:
        boxes = ocr.read(q.load_image())
        query = m.clip(normalize_text(q.query))
        texts = [b.text for b in boxes]
        lex = m.lexical_scores(boxes, query)
        rec = {"id": p["id"], "style": p["style"], "doc_type": p["doc_type"], "gate": None}
        if (
            query.strip()
            and not foreign_words(query)
            and (not len(lex) or float(lex.max()) < m.config.semantic.lexical_strong)
        ):
            sims = key_similarities(m.embedder, texts, query, m.config.semantic)
            if sims.size and float(sims.max()) >= 0:
                label = [t.strip().rstrip(":").strip().lower() for t in texts]
                best = int(np.argmax(sims))
                others = sims[[lab != label[best] for lab in label]]
                rec["gate"] = [float(sims[best]), float(sims[best] - others.max()) if others.size else 1.0]
                rec["forced"] = recall_of(q, ocr, forced)["11.1%"]
        rec["off"] = recall_of(q, ocr, None)["11.1%"]
        keys = raw[p["rephrases"]].get("key_boxes") or []
        if p["doc_type"] == "realform" and keys:  # label retrieval: is the printed key the best label?
            sims = key_similarities(m.embedder, texts, query, m.config.semantic)
            is_key = [any(_overlap(b.box, k) > 0.3 or _overlap(k, b.box) > 0.3 for k in keys) for b in boxes]
            if any(k and s >= 0 for k, s in zip(is_key, sims, strict=True)):
                rec["key_top1"] = bool(is_key[int(np.argmax(sims))])
        recs.append(rec)

    def recall(r: dict, sim: float, margin: float) -> float:
        g = r["gate"]
        return r["forced"] if g is not None and g[0] >= sim and g[1] >= margin else r["off"]

    groups: dict[str, list[dict]] = defaultdict(list)
    for r in recs:
        groups[f"{r['style']} {r['doc_type']}"].append(r)
        groups[r["style"]].append(r)
        groups["all"].append(r)
    command = "python benchmarks/semantic_keys_sweep.py " + " ".join(sys.argv[1:])
    lines = [
        "# Semantic keys on the paraphrase set's development questions",
        "",
        f"- command: `{command}`",
        f"- {len(recs)} dev questions, {sum(r['gate'] is not None for r in recs)} with the gate open; recall at 11.1%",
        "",
        "| group (n) | off | " + " | ".join(f"{s} / {mg}" for s in SIMS for mg in MARGINS) + " |",
        "|---|---:|" + "---:|" * (len(SIMS) * len(MARGINS)),
    ]
    for name in sorted(groups):
        rs = groups[name]
        cells = [f"{np.mean([recall(r, s, mg) for r in rs]):.3f}" for s in SIMS for mg in MARGINS]
        lines.append(f"| {name} ({len(rs)}) | {np.mean([r['off'] for r in rs]):.3f} | " + " | ".join(cells) + " |")
    lines += ["", "Label retrieval (forms with key boxes): the printed key is the best label for"]
    for st in sorted({r["style"] for r in recs}):
        hits = [r["key_top1"] for r in recs if r["style"] == st and "key_top1" in r]
        lines.append(f"- style {st}: {np.mean(hits):.3f} of {len(hits)}" if hits else f"- style {st}: -")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        Path(args.out).write_text(report)
        Path(args.out).with_suffix(".json").write_text(json.dumps(recs))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="the realdocs-dev folder the paraphrase set rephrases")
    p.add_argument("--ocr-cache", type=Path, default=None)
    p.add_argument("--styles", default="A,B,C", type=lambda s: s.split(","))
    p.add_argument("--out", default=None, help="markdown report; per-question JSON beside it")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
