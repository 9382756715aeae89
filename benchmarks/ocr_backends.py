"""OCR network time per page: rapidocr's onnxruntime sessions against the torch translation.

The translation is ``arr_coc.reading.ocr.onnx_torch``.

For each page, rapidocr runs once with the project's OCR settings (longer side 736 px, no angle classifier) while the
detector's input and the recogniser's batches are recorded; then each backend runs exactly those tensors ``--repeat``
times (median). "det ms" is the detection network on the page, "rec ms" the recognition network summed over the
page's batches, "page ms" the whole ``engine(image)`` call (pre/post-processing included); all wall-clock. The CPU
column is this process's CPU time for the same calls: on a shared, busy machine it is the steadier figure (with
``--threads 1`` it is what an idle core would take). Torch timings include the host->device copy and the copy of the
output back (what rapidocr's numpy post-processing needs).

Example:
    python benchmarks/ocr_backends.py --repeat 3 --out results/ocr_backends.md
    python benchmarks/ocr_backends.py --device cuda --dtype bfloat16   # on a GPU: onnxruntime CPU vs torch CUDA
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
OCR_PARAMS = {
    "Global.log_level": "critical",
    "Global.use_cls": False,
    "Det.limit_type": "max",
    "Det.limit_side_len": 736,
}  # what TextReader uses by default


class _Recorder:
    """Wraps a rapidocr session and keeps every input it is called with (for replay)."""

    def __init__(self, session: Any) -> None:
        self.session, self.inputs = session, []

    def __call__(self, x: np.ndarray) -> np.ndarray:
        self.inputs.append(x.copy())
        return self.session(x)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


def _pages() -> list[tuple[str, np.ndarray]]:
    from skimage import data

    return [
        ("examples/invoice.jpg", np.asarray(Image.open(ROOT / "examples" / "invoice.jpg").convert("RGB"))),
        ("skimage.data.page()", np.asarray(Image.fromarray(data.page()).convert("RGB"))),
    ]


def _replay(session: Any, inputs: list[np.ndarray]) -> None:
    for x in inputs:
        session(x)


def _median_ms(fn: Any, repeat: int) -> tuple[float, float]:
    """Median wall-clock ms and median CPU ms of this process (all its threads) over ``repeat`` calls of ``fn``."""
    fn()  # warm-up (first-call allocations, cuDNN algorithm choice)
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measurement (median reported)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for onnxruntime and torch")
    parser.add_argument("--device", default="cpu", help="torch device for the torch backend (cpu, cuda, ...)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "ocr_backends.md")
    args = parser.parse_args(argv)

    import torch
    from rapidocr import RapidOCR

    from arr_coc.reading.ocr.torch_backend import TorchOcrSession, TorchRapidOCR

    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    ort_params = {**OCR_PARAMS, "EngineConfig.onnxruntime.intra_op_num_threads": args.threads}
    ort_engine = RapidOCR(params=ort_params)
    torch_engine = TorchRapidOCR(params=ort_params, device=args.device, dtype=dtype)
    det_ort, rec_ort = ort_engine._load_det_model(), ort_engine._load_rec_model()
    det_torch, rec_torch = torch_engine._load_det_model(), torch_engine._load_rec_model()
    assert isinstance(det_torch.session, TorchOcrSession) and isinstance(rec_torch.session, TorchOcrSession)

    backends = [
        ("onnxruntime", "cpu float32", ort_engine, det_ort.session, rec_ort.session),
        ("torch", f"{args.device} {args.dtype}", torch_engine, det_torch.session, rec_torch.session),
    ]
    rows = []
    for name, page in _pages():
        det_ort.session, rec_ort.session = _Recorder(det_ort.session), _Recorder(rec_ort.session)
        reference = ort_engine(page)
        det_inputs, rec_inputs = det_ort.session.inputs, rec_ort.session.inputs
        det_ort.session, rec_ort.session = det_ort.session.session, rec_ort.session.session
        same_text = list(torch_engine(page).txts or ()) == list(reference.txts or ())
        for backend, where, engine, det, rec in backends:
            det_ms, det_cpu = _median_ms(partial(_replay, det, det_inputs), args.repeat)
            rec_ms, rec_cpu = _median_ms(partial(_replay, rec, rec_inputs), args.repeat)
            page_ms, page_cpu = _median_ms(partial(engine, page), args.repeat)
            rows.append({"page": name, "size": f"{page.shape[1]}x{page.shape[0]}",
                         "det_input": "x".join(map(str, det_inputs[0].shape[2:][::-1])),
                         "lines": sum(len(x) for x in rec_inputs), "batches": len(rec_inputs),
                         "backend": backend, "where": where, "det_ms": det_ms, "rec_ms": rec_ms, "page_ms": page_ms,
                         "det_cpu_ms": det_cpu, "rec_cpu_ms": rec_cpu, "page_cpu_ms": page_cpu,
                         "same_text": same_text})  # fmt: skip
            print(rows[-1], file=sys.stderr)

    header = (
        f"OCR networks per page, median of {args.repeat}, {args.threads} CPU threads "
        f"(torch {torch.__version__}, {torch.get_num_threads()} threads)\n\n"
        "| page | det input | text lines (batches) | backend | device dtype | det ms | rec ms | page ms "
        "| det / rec / page CPU ms | same text as onnxruntime |\n|---|---|---|---|---|---:|---:|---:|---:|---|"
    )
    lines = [
        f"| {r['page']} ({r['size']}) | {r['det_input']} | {r['lines']} ({r['batches']}) | {r['backend']} "
        f"| {r['where']} | {r['det_ms']:.0f} | {r['rec_ms']:.0f} | {r['page_ms']:.0f} "
        f"| {r['det_cpu_ms']:.0f} / {r['rec_cpu_ms']:.0f} / {r['page_cpu_ms']:.0f} "
        f"| {'yes' if r['same_text'] else 'NO'} |"
        for r in rows
    ]
    table = "\n".join([header, *lines])
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
