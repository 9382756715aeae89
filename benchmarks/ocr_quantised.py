"""The recogniser's network time in float32 and with onnxruntime's dynamic int8 quantisation (CPU, one thread).

A smaller recogniser would lower the OCR floor on a CPU. The cheapest one to try is the same network with int8
weights (``onnxruntime.quantization.quantize_dynamic``) after slicing its head to the Latin classes, as
``LineRecognizer`` does. This script writes both models under ``--workdir`` and times one batch of lines on each
(process CPU ms, the fastest of ``--repeat`` runs, one onnxruntime thread). On the 2-core development machine the
int8 model was 3.5x slower (its ``ConvInteger`` kernels), so its recall was not measured.

Example:
    python benchmarks/ocr_quantised.py --workdir /tmp/rec --lines 8 --width 480
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from arr_coc.reading.ocr.recognition import bundled_rec_model, load_rec_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--lines", type=int, default=8)
    parser.add_argument("--width", type=int, default=480)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    blob, _, _ = load_rec_model(bundled_rec_model(), "latin")
    fp32, int8 = args.workdir / "rec_latin_fp32.onnx", args.workdir / "rec_latin_int8.onnx"
    onnx.save(onnx.load_from_string(blob), str(fp32))
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    x = np.random.default_rng(0).uniform(-1, 1, (args.lines, 3, 48, args.width)).astype(np.float32)
    print(f"| model | MB | CPU ms, {args.lines} lines x {args.width} px, 1 thread |")
    print("|---|---:|---:|")
    for name, path in (("float32 (Latin head)", fp32), ("int8 dynamic", int8)):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        feed = {sess.get_inputs()[0].name: x}
        sess.run(None, feed)
        best = float("inf")
        for _ in range(args.repeat):
            c0 = time.process_time()
            sess.run(None, feed)
            best = min(best, time.process_time() - c0)
        print(f"| {name} | {path.stat().st_size / 1e6:.1f} | {best * 1e3:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
