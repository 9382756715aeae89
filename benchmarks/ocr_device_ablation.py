"""Why the device OCR path reads some lines differently: batch padding vs crop interpolation, on one page.

For one page the CPU default (OpenCV crops, width-sorted batches of 8) is compared with three variants, counting the
lines whose text differs: OpenCV crops in ONE batch padded to the widest line (padding alone), the device crops
(``lines.cut_lines``) in the CPU's width-sorted batches (interpolation alone), and the device crops in one batch
(what ``backend="torch"`` runs). All variants use the same onnxruntime recogniser, so only the inputs differ.

Example:
    python benchmarks/ocr_device_ablation.py examples/invoice.jpg
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from PIL import Image


def main(argv: list[str] | None = None) -> int:
    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.reading import TextReader
    from arr_coc.reading.ocr.lines import cut_lines, line_geometry, page_tensor
    from arr_coc.reading.ocr.reader import crop_quad
    from arr_coc.reading.ocr.recognition import best_path, decode_lines

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("image")
    parser.add_argument("--show", type=int, default=10, help="differing lines to print")
    args = parser.parse_args(argv)
    spec = GridSpec.for_family("qwen2.5-vl", None, 1280 * 28 * 28)
    img, _ = load_image_with_size(Image.open(args.image).convert("RGB"), target_pixels=spec.max_pixels)
    det, rec = TextReader(num_threads=1).engine()
    quads = np.asarray(det(img).boxes, dtype=np.float32).reshape(-1, 4, 2)
    bgr = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    crops = [crop_quad(bgr, q) for q in quads]
    g = line_geometry(quads)
    width = max(8, int(g.own.max()))
    with torch.inference_mode():
        device_crops = cut_lines(page_tensor(bgr, torch.device("cpu"), torch.float32), g, width).numpy()
    opencv_crops = np.stack([rec._prepare(c, width)[0] for c in crops])

    def one_batch(x: np.ndarray) -> list[str]:
        return [ln.text for ln in decode_lines(best_path(rec.run(x)), rec.characters, width, g.own)]

    def sorted_batches(x: np.ndarray) -> list[str]:
        out = [""] * len(crops)
        for idx, xb, owns in rec.batches(crops):  # the CPU's batches, filled with ``x``'s lines
            xs = np.zeros_like(xb)
            for j, i in enumerate(idx):
                xs[j, :, :, : owns[j]] = x[i, :, :, : owns[j]]
            for i, ln in zip(idx, decode_lines(best_path(rec.run(xs)), rec.characters, xb.shape[3], owns), strict=True):
                out[i] = ln.text
        return out

    base = [ln.text for ln in rec(crops)]
    variants = {
        "OpenCV crops, one batch (padding)": one_batch(opencv_crops),
        "device crops, width-sorted batches (interpolation)": sorted_batches(device_crops),
        "device crops, one batch (backend='torch')": one_batch(device_crops),
    }
    print(f"{args.image}: {len(crops)} lines; lines whose text differs from the CPU default")
    print("| variant | lines that differ |\n|---|---:|")
    for name, texts in variants.items():
        print(f"| {name} | {sum(a != b for a, b in zip(base, texts, strict=True))} |")
    shown = 0
    for a, b in zip(base, variants["device crops, one batch (backend='torch')"], strict=True):
        if a != b and shown < args.show:
            print(f"    {a!r} -> {b!r}", file=sys.stderr)
            shown += 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
