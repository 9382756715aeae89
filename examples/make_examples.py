"""Draw the shipped example images beside ``invoice.jpg``: a bar chart and a shop receipt.

    python examples/make_examples.py            # writes examples/chart.jpg and examples/receipt.jpg

Both come from the evidence-recall benchmark's document generator (``benchmarks/docgen.py``, dev split: the
templates the rules were written on, not the held-out test split), so each has a known question and answer box:

- ``chart.jpg``: "Visitors per day", five labelled bars with their values; "What value is shown for Thu?" -> 40.
- ``receipt.jpg``: a grocery receipt (items, subtotal, tax, amount due); "How much did the pasta cost?" -> 14.14.

The drawings are a pure function of the generator's seed and the installed fonts (DejaVu on the dev split).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (file name, docgen kind, sample index on the dev split, save options)
EXAMPLES: list[tuple[str, str, int, dict]] = [
    ("chart.jpg", "bar_chart", 0, {"quality": 85, "optimize": True}),
    ("receipt.jpg", "receipt", 3, {"quality": 85, "optimize": True}),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "examples", help="folder to write the images to")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks.docgen import make_sample

    args.out.mkdir(parents=True, exist_ok=True)
    for name, kind, index, options in EXAMPLES:
        sample = make_sample("dev", kind, index)
        path = args.out / name
        sample.image.save(path, **options)
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB): {sample.query!r} -> {sample.answer!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
