"""The error raised when the optional OCR extra is missing (shared by the OCR and the embedding modules)."""

from __future__ import annotations

INSTALL_HINT = "install with `pip install -e '.[ocr]' in the arr-coc-vis clone`, or use mode='texture'"


class MissingExtraError(ImportError):
    """The optional OCR extra (rapidocr, onnxruntime, the MiniLM model) is not installed."""
