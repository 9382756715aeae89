"""Draw the shipped example images beside ``invoice.jpg``: a bar chart and a shop receipt.

    python examples/make_examples.py            # writes examples/chart.jpg and examples/receipt.jpg
    python examples/make_examples.py --video    # writes examples/pages.mp4 from the shipped pages (needs OpenCV)

Both come from the evidence-recall benchmark's document generator (``benchmarks/docgen.py``, dev split: the
templates the rules were written on, not the held-out test split), so each has a known question and answer box:

- ``chart.jpg``: "Visitors per day", five labelled bars with their values; "What value is shown for Thu?" -> 40.
- ``receipt.jpg``: a grocery receipt (items, subtotal, tax, amount due); "How much did the pasta cost?" -> 14.14.
- ``pages.mp4``: a 2-second clip of the invoice, receipt, chart and invoice again (224x224, 2 frames/s, MPEG-4 Part 2),
  the video request of ``docs/serving-vllm.md`` (OpenCV, in the ``[ocr]`` extra, writes it).

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
    parser.add_argument("--video", action="store_true", help="write pages.mp4 from the shipped pages instead")
    args = parser.parse_args(argv)
    if args.video:
        return write_video(args.out / "pages.mp4")
    sys.path.insert(0, str(ROOT))
    from benchmarks.docgen import make_sample

    args.out.mkdir(parents=True, exist_ok=True)
    for name, kind, index, options in EXAMPLES:
        sample = make_sample("dev", kind, index)
        path = args.out / name
        sample.image.save(path, **options)
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB): {sample.query!r} -> {sample.answer!r}")
    return 0


def write_video(path: Path, pages: tuple[str, ...] = ("invoice.jpg", "receipt.jpg", "chart.jpg", "invoice.jpg")) -> int:
    """A short clip of the shipped pages, one frame each at 2 frames/s, 224x224."""
    import cv2
    import numpy as np
    from PIL import Image

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 2.0, (224, 224))
    for name in pages:
        rgb = np.asarray(Image.open(ROOT / "examples" / name).convert("RGB").resize((224, 224)))
        writer.write(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    writer.release()
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB): {len(pages)} frames")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
