"""OCR output and text-mode kept sets, dumped per page and question, and two dumps compared (before / after a change).

``dump`` reads the example images and the first ``--pages`` realdocs-dev pages at the size ``allocate`` gives the
OCR (Qwen2.5-VL grid, 1,280-token cap) and writes each page's boxes (text, box, confidence) and, for the example
items (``examples/items.jsonl``) and the first question of each realdocs-dev page, the kept token indices of
``allocate(mode="text")``. ``compare`` counts what differs: pages whose boxes differ, boxes whose text differs, the
largest box-coordinate and confidence differences, and kept sets that differ.

Example:
    PYTHONPATH=/work/main/src python benchmarks/ocr_exactness.py dump --out before.jsonl --pages 40
    PYTHONPATH=src python benchmarks/ocr_exactness.py dump --out after.jsonl --pages 40
    PYTHONPATH=src python benchmarks/ocr_exactness.py dump --out torch.jsonl --pages 40 --backend torch
    python benchmarks/ocr_exactness.py compare before.jsonl after.jsonl
    python benchmarks/ocr_exactness.py detector --pages 300   # box extraction: ours against rapidocr's, each page

``detector`` runs the detector once a page and gives its probability map to both box extractions (the project's
``LeanDBPostProcess`` and rapidocr's ``DBPostProcess`` with the same settings): boxes and scores compared exactly,
and the host milliseconds of each.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDOCS = Path("/work/data/realdocs-dev")


def items(pages: int) -> list[dict]:
    """The example items and the first question of each of the first ``pages`` realdocs-dev pages."""
    out = [
        {**json.loads(line), "image": str(ROOT / "examples" / json.loads(line)["image"])}
        for line in (ROOT / "examples" / "items.jsonl").read_text().splitlines()
        if line.strip()
    ]
    if pages and (REALDOCS / "questions.jsonl").is_file():
        seen: set[str] = set()
        for line in (REALDOCS / "questions.jsonl").read_text().splitlines():
            q = json.loads(line)
            if q["image"] in seen:
                continue
            seen.add(q["image"])
            out.append({"id": q["id"], "image": str(REALDOCS / q["image"]), "query": q["query"]})
            if len(seen) >= pages:
                break
    return out


def dump(args: argparse.Namespace) -> int:
    import arr_coc
    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.reading import TextReader

    opts = {"backend": args.backend, "device": args.device} if args.backend == "torch" else {}
    reader = TextReader(cache_items=256, **opts)
    spec = GridSpec.for_family("qwen2.5-vl", None, 1280 * 28 * 28)
    with open(args.out, "w") as f:
        done: set[str] = set()
        for item in items(args.pages):
            if item["image"] not in done:
                done.add(item["image"])
                img, _ = load_image_with_size(item["image"], target_pixels=spec.max_pixels)
                boxes = [[b.text, list(b.box), b.confidence] for b in reader.read(img)]
                f.write(json.dumps({"kind": "ocr", "image": item["image"], "boxes": boxes}) + "\n")
            a = arr_coc.allocate(item["image"], item["query"], budget=item.get("budget", 0.111), mode="text",
                                 reader=reader)  # fmt: skip
            f.write(json.dumps({"kind": "keep", "id": item["id"], "keep": a.keep.tolist()}) + "\n")
            f.flush()
            print(item["id"], file=sys.stderr, flush=True)
    return 0


def compare(args: argparse.Namespace) -> int:
    def load(path: str) -> tuple[dict, dict]:
        ocr, keep = {}, {}
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            if r["kind"] == "ocr":
                ocr[r["image"]] = r["boxes"]
            else:
                keep[r["id"]] = r["keep"]
        return ocr, keep

    (ocr_a, keep_a), (ocr_b, keep_b) = load(args.a), load(args.b)
    pages = sorted(set(ocr_a) & set(ocr_b))
    pages_diff = boxes_a = boxes_diff = count_diff = 0
    max_xy = max_conf = 0.0
    examples = []
    for p in pages:
        a, b = ocr_a[p], ocr_b[p]
        boxes_a += len(a)
        if a != b:
            pages_diff += 1
        if len(a) != len(b):
            count_diff += 1
            continue
        for (ta, ba, ca), (tb, bb, cb) in zip(a, b, strict=True):
            if ta != tb:
                boxes_diff += 1
                if len(examples) < args.show:
                    examples.append(f"{Path(p).name}: {ta!r} -> {tb!r}")
            max_xy = max(max_xy, max(abs(x - y) for x, y in zip(ba, bb, strict=True)))
            max_conf = max(max_conf, abs(ca - cb))
    ids = sorted(set(keep_a) & set(keep_b))
    keep_diff = [i for i in ids if keep_a[i] != keep_b[i]]
    print(
        "| pages | pages with any difference | pages with another box count | boxes (A) | boxes with other text "
        "| max box coordinate difference (px) | max confidence difference | questions | kept sets that differ |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {len(pages)} | {pages_diff} | {count_diff} | {boxes_a} | {boxes_diff} | {max_xy:.3g} | {max_conf:.3g} "
        f"| {len(ids)} | {len(keep_diff)} |"
    )
    for e in examples:
        print("   ", e)
    if keep_diff:
        print("kept sets differ:", ", ".join(keep_diff[: args.show]))
    return 0


def detector(args: argparse.Namespace) -> int:
    """The detector's box extraction on real pages: the project's ``LeanDBPostProcess`` against rapidocr's own
    ``DBPostProcess`` (same settings) on each page's probability map, boxes and scores compared exactly, and the host
    ms of each (median of ``--repeat`` a page)."""
    import statistics
    import time

    import cv2
    import numpy as np
    from rapidocr.ch_ppocr_det.utils import DBPostProcess

    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.reading import TextReader

    spec = GridSpec.for_family("qwen2.5-vl", None, 1280 * 28 * 28)
    pages = list(dict.fromkeys(item["image"] for item in items(args.pages)))
    engine, _ = TextReader().engine()
    engine(np.zeros((64, 64, 3), np.uint8))  # the detector stage is loaded on the first call
    stage = engine.text_det
    lean = stage.postprocess_op
    ref = DBPostProcess.__new__(DBPostProcess)  # rapidocr's class with the detector's own settings
    ref.__dict__.update(vars(lean))
    maps: list[tuple[np.ndarray, tuple[int, int]]] = []

    def capture(pred: np.ndarray, shape: tuple[int, int]) -> tuple:  # this stage only, for this run
        maps.append((pred.copy(), shape))
        return lean(pred, shape)

    stage.postprocess_op = capture
    n_boxes = differ = 0
    ms: dict[str, list[float]] = {"rapidocr": [], "lean": []}
    for image in pages:
        img, _ = load_image_with_size(image, target_pixels=spec.max_pixels)
        maps.clear()
        engine(cv2.cvtColor(np.asarray(img), cv2.COLOR_RGB2BGR))
        pred, shape = maps[0]
        (boxes_a, scores_a), (boxes_b, scores_b) = ref(pred, shape), lean(pred, shape)
        n_boxes += len(boxes_a)
        same = boxes_a.dtype == boxes_b.dtype and np.array_equal(boxes_a, boxes_b) and scores_a == scores_b
        differ += not same
        for name, post in (("rapidocr", ref), ("lean", lean)):
            runs = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                post(pred, shape)
                runs.append(1000 * (time.perf_counter() - start))
            ms[name].append(statistics.median(runs))
    print("| pages | boxes | pages whose boxes or scores differ | host ms a page, rapidocr's (median, sum) | "
          "LeanDBPostProcess (median, sum) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|")
    print(f"| {len(pages)} | {n_boxes} | {differ} | {statistics.median(ms['rapidocr']):.1f}, "
          f"{sum(ms['rapidocr']):,.0f} | {statistics.median(ms['lean']):.1f}, {sum(ms['lean']):,.0f} |")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="write OCR boxes and kept sets")
    d.add_argument("--out", required=True)
    d.add_argument("--pages", type=int, default=40, help="realdocs-dev pages (0: the examples only)")
    d.add_argument("--backend", default="onnxruntime", choices=("onnxruntime", "torch"))
    d.add_argument("--device", default="cpu", help="torch device for --backend torch")
    c = sub.add_parser("compare", help="count the differences of two dumps")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--show", type=int, default=10, help="differing texts to print")
    t = sub.add_parser("detector", help="the box extraction, ours against rapidocr's, on each page's map")
    t.add_argument("--pages", type=int, default=40, help="realdocs-dev pages (0: the examples only)")
    t.add_argument("--repeat", type=int, default=3, help="timed runs a page and extraction (median)")
    args = parser.parse_args(argv)
    return {"dump": dump, "compare": compare, "detector": detector}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
