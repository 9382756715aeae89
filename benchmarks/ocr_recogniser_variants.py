"""What a cheaper text recogniser would cost in evidence recall: recogniser time on the example invoice against
text-map recall at 11.1% of the tokens on a fixed subset of realdocs-dev, per recogniser variant.

On a 2-core CPU the recogniser's network is most of a first question (``benchmarks/stages.py``: the floor). rapidocr
ships one recogniser (PP-OCRv6 small); its input height (48 px) is fixed in the graph. The variants that can make it
cheaper without another model:

- ``default``: the bundled model, its head sliced to the Latin classes (``OcrConfig()``).
- ``squeeze 0.75`` / ``squeeze 0.5``: lines resized to that share of their proportional width (``OcrConfig.squeeze``;
  the convolutions' cost follows the width).
- ``int8 static`` (and with ``squeeze 0.75``): the same Latin model with onnxruntime's static int8 quantisation
  (QDQ, per-channel int8 weights, uint8 activations calibrated with min-max on the line crops of calibration pages
  that are NOT in the measured subset; opset raised to 13 for per-channel scales). Dynamic int8
  (``benchmarks/ocr_quantised.py``) was 3.5-3.9x slower here: its ConvInteger kernels; static QDQ runs QLinearConv.

Timing: the network alone on the invoice's line batches (the batches ``LineRecognizer`` builds from the detected
lines: 66 lines in 9 width-sorted batches), one onnxruntime thread, process CPU ms (the least of ``--repeat`` runs:
CPU time says how much work it is even on a shared machine) and wall ms beside it. Recall: ``arr_coc.allocate``
(mode "text", the default rules, Qwen2.5-VL grid at realdocs-dev's 1,280-token cap) with each variant's OCR, scored
with realdocs' evidence-cell rule at 11.1% of the tokens, words kept whole (``benchmarks/realdocs_recall.py``'s
``recall_of``). The subset: every ``--every``-th page of realdocs-dev in sorted file-name order (offset 0), all of its
questions; calibration pages: every 25th from offset 2 (never measured).

Example:
    python benchmarks/ocr_recogniser_variants.py --data /work/data/realdocs-dev --workdir /tmp/rec \\
        --every 5 --out results/ocr_recogniser_variants.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def line_crops(detector: Any, image: Image.Image) -> list[np.ndarray]:
    """The detected lines of ``image`` as the reader cuts them (BGR crops)."""
    from arr_coc.reading.ocr.reader import crop_quad

    bgr = np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])
    quads = detector(image).boxes
    if quads is None:
        return []
    return [crop_quad(bgr, q) for q in np.asarray(quads, dtype=np.float32).reshape(-1, 4, 2)]


def build_models(workdir: Path, calibration: list[Path], detector: Any) -> dict[str, Path]:
    """The Latin float32 model (its class list relabelled, for ``charset="all"``) and its static int8 version."""
    import onnx
    from onnx import version_converter
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from arr_coc.reading.ocr.recognition import LineRecognizer, bundled_rec_model, load_rec_model

    workdir.mkdir(parents=True, exist_ok=True)
    blob, characters, _ = load_rec_model(bundled_rec_model(), "latin")
    model = onnx.load_from_string(blob)
    meta = {p.key: p for p in model.metadata_props}
    meta["character"].value = "\n".join(characters[1:-1])  # the kept classes (blank and space are implied)
    fp32 = workdir / "rec_latin_fp32.onnx"
    onnx.save(model, str(fp32))
    op13, pre = workdir / "rec_latin_fp32_op13.onnx", workdir / "rec_latin_fp32_pre.onnx"
    onnx.save(version_converter.convert_version(model, 13), str(op13))  # per-channel DequantizeLinear needs 13
    quant_pre_process(str(op13), str(pre), skip_symbolic_shape=True)
    lines = LineRecognizer(None, "latin")
    batches = [x for page in calibration for _, x, _ in lines.batches(line_crops(detector, Image.open(page)))]
    name = onnx.load(str(pre)).graph.input[0].name

    class Lines(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(batches)

        def get_next(self) -> dict[str, np.ndarray] | None:
            x = next(self.it, None)
            return None if x is None else {name: x}

    int8 = workdir / "rec_latin_int8_static.onnx"
    quantize_static(str(pre), str(int8), Lines(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)  # fmt: skip
    print(f"int8 static: calibrated on {len(batches)} line batches of {len(calibration)} pages", file=sys.stderr)
    return {"fp32": fp32, "int8": int8}


def variants(models: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Variant name -> ``TextReader`` overrides."""
    return {
        "default": {},
        "squeeze 0.75": {"squeeze": 0.75},
        "squeeze 0.5": {"squeeze": 0.5},
        "int8 static": {"rec_model_path": str(models["int8"]), "charset": "all"},
        "int8 static + squeeze 0.75": {"rec_model_path": str(models["int8"]), "charset": "all", "squeeze": 0.75},
    }


def time_network(overrides: dict[str, Any], crops: list[np.ndarray], repeat: int) -> tuple[float, float, int]:
    """(CPU ms, wall ms, input columns) of the recogniser network alone on ``crops``' batches, one thread."""
    from arr_coc.reading.ocr.recognition import LineRecognizer

    rec = LineRecognizer(overrides.get("rec_model_path"), overrides.get("charset", "latin"),
                         overrides.get("squeeze", 1.0), workers=1)  # fmt: skip
    xs = [x for _, x, _ in rec.batches(crops)]
    for x in xs:
        rec.run(x)
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        for x in xs:
            rec.run(x)
        best = min(best, ((time.process_time() - c0) * 1e3, (time.perf_counter() - w0) * 1e3))
    return best[0], best[1], sum(x.shape[0] * x.shape[3] for x in xs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/data/realdocs-dev"))
    parser.add_argument("--workdir", type=Path, required=True, help="models and per-variant OCR caches go here")
    parser.add_argument("--every", type=int, default=5, help="the subset: every N-th page (sorted file names)")
    parser.add_argument("--variants", default="", help="comma-separated variant names (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="use the models already in --workdir")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "ocr_recogniser_variants.md")
    args = parser.parse_args(argv)

    from arr_coc.reading import TextReader
    from arr_coc.training.data import load_jsonl
    from arr_coc.training.evidence import DiskOcrCache
    from benchmarks.realdocs_recall import recall_of

    questions = load_jsonl(args.data)
    pages = sorted({str(q.image_path) for q in questions})
    calibration = [Path(p) for p in pages[2::25]]
    subset = set(pages[:: args.every]) - {str(p) for p in calibration}  # the calibration pages are never measured
    asked = [q for q in questions if str(q.image_path) in subset]
    base = TextReader(cache_items=0)
    detector, _ = base.engine()
    built = {"fp32": args.workdir / "rec_latin_fp32.onnx", "int8": args.workdir / "rec_latin_int8_static.onnx"}
    models = (
        built
        if args.reuse and all(p.is_file() for p in built.values())
        else build_models(args.workdir, calibration, detector)
    )
    chosen = variants(models)
    if args.variants:
        chosen = {k: v for k, v in chosen.items() if k in args.variants.split(",")}
    invoice = line_crops(detector, Image.open(ROOT / "examples" / "invoice.jpg"))
    # the relabelled float32 model with charset "all" reads exactly what the default reads: the variants' baseline
    same = TextReader(rec_model_path=str(models["fp32"]), charset="all", cache_items=0).read(
        Image.open(ROOT / "examples" / "invoice.jpg")
    ) == base.read(Image.open(ROOT / "examples" / "invoice.jpg"))
    print(f"relabelled float32 model reads the invoice as the default does: {same}", file=sys.stderr)
    results: dict[str, dict[str, Any]] = {}
    for name, overrides in chosen.items():
        cpu, wall, columns = time_network(overrides, invoice, args.repeat)
        ocr = DiskOcrCache(args.workdir / f"ocr_{name.replace(' ', '_')}", reader=TextReader(**overrides))
        t0 = time.perf_counter()
        recalls = [recall_of(q, ocr, None)["11.1%"] for q in asked]
        results[name] = {"cpu_ms": cpu, "wall_ms": wall, "columns": columns, "recall": recalls,
                         "seconds": time.perf_counter() - t0}  # fmt: skip
        print(f"{name}: recogniser {cpu:.0f} ms CPU; recall {np.mean(recalls):.3f} on {len(asked)} questions "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)  # fmt: skip
    ref = results.get("default")
    command = "python benchmarks/ocr_recogniser_variants.py " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = [
        "# A cheaper recogniser against evidence recall",
        "",
        f"- command: `{command.strip()}`",
        f"- subset: every {args.every}th page of {args.data} (sorted file names, offset 0): {len(subset)} pages, "
        f"{len(asked)} questions; int8 calibration: {len(calibration)} other pages (every 25th from offset 2, never "
        "measured)",
        f"- recogniser: the network alone on the example invoice's {len(invoice)} detected lines (width-sorted "
        "batches of 8), 1 onnxruntime thread, least of "
        f"{args.repeat} runs; process CPU ms (wall ms in brackets; 2 shared cores, under contention)",
        "- recall: text-map evidence recall at 11.1% of the tokens (realdocs' cell rule, words kept whole), "
        "`arr_coc.allocate(mode='text')` with the default rules, Qwen2.5-VL grid, 1,280-token cap",
        f"- the relabelled float32 model (charset 'all') reads the invoice exactly as the default: {same}",
        "",
        "| recogniser | CPU ms on the invoice | vs default | input columns | recall @ 11.1% | full-hit | "
        "questions lower / higher than default |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        rel = r["cpu_ms"] / ref["cpu_ms"] if ref else float("nan")
        rec = np.asarray(r["recall"])
        base = np.asarray(ref["recall"]) if ref else rec
        diff = f"{int((rec < base - 1e-9).sum())} / {int((rec > base + 1e-9).sum())}"
        lines.append(f"| {name} | {r['cpu_ms']:.0f} ({r['wall_ms']:.0f}) | {rel:.2f}x | {r['columns']} | "
                     f"{rec.mean():.3f} | {(rec == 1.0).mean():.2f} | {diff} |")  # fmt: skip
    report = "\n".join(lines) + "\n"
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    args.out.with_suffix(".json").write_text(json.dumps({"command": command.strip(), "questions": [q.id for q in asked],
                                                         "results": results}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
