"""Kept sets of ``arr_coc.allocate`` on the example images, to show a refactor keeps exactly the same tokens.

Every example image (``examples/*.jpg`` but the heatmap) x 4 questions (one empty) x texture and text mode x budgets
0.11, "adaptive" and 64 x Qwen2.5-VL and Qwen3-VL grids: 192 allocations, each with its kept indices and its
``Allocation.select(64)``. Run it once on the old checkout and once on the new one, then compare the two files.

With ``--realdocs DIR`` (a realdocs-schema folder, e.g. ``../shared/realdocs-dev`` generated) it records instead
every question's text-mode allocation as ``benchmarks/realdocs_recall.py`` makes it (words whole, ``--ocr-cache``
for the boxes): ``allocate``'s keep, a digest of the score map and the kept sets at 11.1 / 22.2 / 33.3%.

Example:
    git worktree add /tmp/old <old commit>
    (cd /tmp/old && PYTHONPATH=src python "$OLDPWD/benchmarks/kept_sets.py" --out /tmp/before.json)
    PYTHONPATH=src python benchmarks/kept_sets.py --out /tmp/after.json --compare /tmp/before.json
    PYTHONPATH=src python benchmarks/kept_sets.py --realdocs /data/realdocs-dev --ocr-cache /tmp/ocr --out /tmp/rd.json

``--relevance NAME`` allocates with that relevance (``rules``: the default before issue 40 item 4, to compare with
kept sets recorded before it) instead of the default one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

QUERIES = ("How much must be paid?", "What is the total?", "What is in the top left corner?", "")
BUDGETS = (0.11, "adaptive", 64)
FAMILIES = ("qwen2.5-vl", "qwen3-vl")


def kept_sets(examples: Path, realizer: object | None = None) -> dict[str, dict[str, list[int]]]:
    """``{"<image>|<mode>|<query>|<budget>|<family>": {"keep": [...], "select64": [...]}}`` (``realizer``: the
    relevance, ``--relevance``; None: the default one)."""
    import arr_coc

    out = {}
    for path in sorted(examples.glob("*.jpg")):
        if "heatmap" in path.name:
            continue
        for mode in ("texture", "text"):
            for query in QUERIES:
                for budget in BUDGETS:
                    for family in FAMILIES:
                        a = arr_coc.allocate(str(path), query, budget, family=family, mode=mode, realizer=realizer)
                        key = f"{path.name}|{mode}|{query}|{budget}|{family}"
                        out[key] = {"keep": a.keep.tolist(), "select64": a.select(64).tolist()}
    return out


def realdocs_kept_sets(
    data: Path, ocr_cache: Path | None, realizer: object | None = None
) -> dict[str, dict[str, object]]:
    """``{question id: {"keep", "scores" (sha1 of the score map's bytes), "11.1%", "22.2%", "33.3%"}}``."""
    import hashlib

    import numpy as np
    import torch

    import arr_coc
    from arr_coc.attending import select
    from arr_coc.training.data import FAMILY, MAX_PIXELS, load_jsonl
    from arr_coc.training.evidence import BUDGETS, DiskOcrCache

    ocr = DiskOcrCache(ocr_cache)
    out: dict[str, dict[str, object]] = {}
    for q in load_jsonl(data):
        a = arr_coc.allocate(
            q.load_image(),
            q.query,
            BUDGETS[-1][1],
            family=FAMILY,
            max_pixels=MAX_PIXELS,
            mode="text",
            reader=ocr,
            realizer=realizer,
        )
        flat = torch.as_tensor(np.asarray(a.scores, dtype=np.float32)).ravel()
        rec: dict[str, object] = {
            "keep": a.keep.tolist(),
            "scores": hashlib.sha1(np.ascontiguousarray(a.scores).tobytes()).hexdigest(),
        }
        for label, frac in BUDGETS:
            rec[label] = select(flat, max(1, min(flat.numel(), round(frac * flat.numel()))), units=a.units).tolist()
        out[q.id] = rec
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=Path, default=Path("examples"))
    parser.add_argument("--out", type=Path, required=True, help="where to write this checkout's kept sets (JSON)")
    parser.add_argument("--compare", type=Path, default=None, help="an earlier run's JSON to compare with")
    parser.add_argument("--realdocs", type=Path, default=None, help="a realdocs-schema folder instead of the examples")
    parser.add_argument("--ocr-cache", type=Path, default=None, help="with --realdocs: folder caching the OCR boxes")
    parser.add_argument(
        "--relevance", default=None, help="a relevance name or folder (e.g. rules: the default before issue 40 item 4)"
    )
    args = parser.parse_args(argv)
    realizer = None
    if args.relevance:
        from arr_coc.realizing import Realizer

        realizer = Realizer.from_pretrained(args.relevance)
    sets = (
        realdocs_kept_sets(args.realdocs, args.ocr_cache, realizer)
        if args.realdocs
        else kept_sets(args.examples, realizer)
    )
    args.out.write_text(json.dumps(sets))
    print(f"{len(sets)} allocations -> {args.out}")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text())
    differ = sorted(k for k in sets.keys() | before.keys() if sets.get(k) != before.get(k))
    print(f"compared with {args.compare}: {len(differ)} of {len(sets)} allocations differ")
    for key in differ[:20]:
        print("  differs:", key)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
