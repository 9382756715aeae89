"""The OCR of one page on the torch backend, end to end: median wall ms of ``TextReader._ocr`` (detection + line
recognition, every host step around the networks included) and of an uncached ``read_timed`` (the page digest too).

Page: ``examples/invoice.jpg`` at the size ``allocate`` gives the OCR (Qwen2.5-VL grid, 1,280-token cap). It measures
whichever ``arr_coc`` is importable, so two checkouts compare in the same minutes on the same machine:

    python benchmarks/ocr_page.py --device cuda --runs 30                                  # this checkout
    PYTHONPATH=<other checkout>/src python benchmarks/ocr_page.py --device cuda --runs 30  # another one

(on a GPU, the goal is <= 40 ms a page; ``--dtype float32``, the default, as the library reads: bfloat16
misreads, see ``OcrConfig.dtype``). The last line lists the first recognised texts, to see both read the same page.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="float32", help="float32 (the library's default), float16 or bfloat16")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--max-groups", type=int, default=None, help="network calls a page at most (default: the library's)")
    p.add_argument("--agree", action="store_true", help="also count the texts read as onnxruntime (CPU) reads them")
    p.add_argument("--no-fuse", action="store_true",
                   help="run the networks' GELU / LayerNorm chains as exported (OnnxModule(fuse=False); Identity "
                        "nodes are skipped either way: they launch nothing), to compare")  # fmt: skip
    p.add_argument("--det-graphs", type=int, default=None,
                   help="page sizes the detector holds CUDA graphs for (default: the library's; 0: eager)")  # fmt: skip
    args = p.parse_args(argv)
    import arr_coc

    if args.no_fuse:  # this process's OnnxModules, before any is built; the library's default is fuse=True
        import functools

        from arr_coc.reading.ocr import onnx_torch

        onnx_torch.OnnxModule.__init__ = functools.partialmethod(onnx_torch.OnnxModule.__init__, fuse=False)  # type: ignore[method-assign]
    from arr_coc.grid import GridSpec
    from arr_coc.io import load_image_with_size
    from arr_coc.reading import TextReader

    on_gpu = args.device.startswith("cuda")
    dtype = args.dtype
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    spec = GridSpec.for_family("qwen2.5-vl", None, 1280 * 28 * 28)
    page = Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB")
    img, _ = load_image_with_size(page, target_pixels=spec.max_pixels)
    graphs = {} if args.det_graphs is None else {"det_graphs": args.det_graphs}
    reader = TextReader(backend="torch", device=args.device, dtype=dtype, **graphs)
    reader.warmup()
    if args.max_groups is not None:
        reader.engine()[1].max_groups = args.max_groups  # the PageRecognizer's width groups (lines.width_groups)
    for _ in range(min(3, args.runs)):
        reader._ocr(img)
    rows = []
    for _ in range(args.runs):
        sync()
        t = time.perf_counter()
        boxes, det_ms, rec_ms = reader._ocr(img)
        sync()
        rows.append(((time.perf_counter() - t) * 1e3, det_ms, rec_ms))
    reads = []
    for _ in range(args.runs):
        reader.cache.clear()
        sync()
        t = time.perf_counter()
        reader.read_timed(img)
        sync()
        reads.append((time.perf_counter() - t) * 1e3)
    med = [statistics.median(r[i] for r in rows) for i in range(3)]
    print(
        f"{arr_coc.__file__}: {len(boxes)} boxes; _ocr median {med[0]:.1f} ms (detect {med[1]:.1f}, recognise "
        f"{med[2]:.1f}), min {min(r[0] for r in rows):.1f}; uncached read_timed median {statistics.median(reads):.1f} "
        f"ms over {args.runs} runs ({args.device} {dtype}{', graphs unfused' if args.no_fuse else ''})"
    )
    print("texts:", [b.text for b in boxes][:8])
    det = reader.engine()[0].text_det.session
    if hasattr(det, "graphs") and on_gpu:  # what the detector's graphs hold: reserved memory with and without them
        sync()
        torch.cuda.empty_cache()
        held = torch.cuda.memory_reserved(args.device)
        captured, replays = det.graphs.captured, det.graphs.replays
        det.graphs.clear()
        torch.cuda.empty_cache()
        held = (held - torch.cuda.memory_reserved(args.device)) / 2**20
        print(f"detector graphs: {captured} page size(s) captured, {replays} replays, {held:.1f} MiB held")
    if args.agree:  # what the CPU default (onnxruntime, float32) reads, text for text
        from collections import Counter

        ref = Counter(b.text for b in TextReader()._ocr(img)[0])
        same = sum((Counter(b.text for b in boxes) & ref).values())
        print(f"{same} of onnxruntime's {sum(ref.values())} texts read the same ({len(boxes)} boxes here)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
