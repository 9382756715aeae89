"""OCR: ``TextReader`` wraps rapidocr (PP-OCR ONNX models bundled with the wheel) and returns ``TextBox`` es in
original-image pixels; a detected line is split after each word ending in ':' or '=' so a key and its value become
separate boxes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image

from .errors import INSTALL_HINT, MissingExtraError

BACKENDS = ("onnxruntime", "torch")  # what runs the OCR networks (see TextReader)


@dataclass(frozen=True)
class TextBox:
    """One piece of recognised text.

    Attributes:
        text: The recognised string.
        box: ``(x0, y0, x1, y1)`` axis-aligned bounds in ORIGINAL image pixels (x right, y down).
        confidence: Recognition confidence in [0, 1].
    """

    text: str
    box: tuple[float, float, float, float]
    confidence: float = 1.0

    @property
    def height(self) -> float:
        """Box height in pixels (at least 1)."""
        return max(1.0, self.box[3] - self.box[1])

    @property
    def width(self) -> float:
        """Box width in pixels (at least 1)."""
        return max(1.0, self.box[2] - self.box[0])


def _quad_to_box(quad: Any) -> tuple[float, float, float, float]:
    pts = np.asarray(quad, dtype=np.float64).reshape(-1, 2)
    return float(pts[:, 0].min()), float(pts[:, 1].min()), float(pts[:, 0].max()), float(pts[:, 1].max())


class TextReader:
    """Lazy wrapper around rapidocr's ``RapidOCR``; nothing is imported or loaded until the first ``read``.

    Defaults are chosen for speed on a small CPU with little loss on documents (measured on generated invoices,
    forms, tables and charts, see the project notes): the 180-degree angle classifier is off (documents are upright),
    detection runs with the longer image side limited to ``det_max_side`` pixels, and rapidocr's INFO logging is
    silenced.

    Args:
        det_max_side: Longer side (px) the detector sees; larger finds smaller text but costs time. Measured on
            2 cores for a 1000x1300 invoice (whole ``text_relevance``): 0.75 s at 736, 0.93 s at 960; word recall on
            clean renders with 11 px text is ~0.98-0.99 at 640-960, so 736 is the default.
        use_cls: Run the text-direction classifier (only needed for upside-down text).
        text_score: Drop recognitions below this confidence.
        box_thresh: Detector box threshold (rapidocr's ``Det.box_thresh``).
        split_key_value: Split a detected line after each word ending in ':' so key and value become separate boxes.
        num_threads: onnxruntime intra-op threads (``None``: onnxruntime's default, all cores). The torch backend
            uses torch's own thread setting (``torch.set_num_threads``), which this class leaves alone.
        params: Extra rapidocr parameters (dotted keys such as ``"Det.unclip_ratio"``), applied last.
        backend: What runs the OCR networks: ``"onnxruntime"`` (rapidocr's default, the fast choice on a CPU) or
            ``"torch"`` (the same ONNX graphs translated by ``arr_coc.onnx_torch``, on ``device`` in ``dtype``; the
            choice for a GPU, where a page costs milliseconds). Pre- and post-processing are rapidocr's in both.
        device: Torch device for ``backend="torch"`` (default ``"cpu"``).
        dtype: Torch dtype for ``backend="torch"``: a ``torch.dtype`` or its name (default float32; bfloat16 reads
            the same text on clean pages, see ``tests/test_onnx_torch.py``).
    """

    def __init__(
        self,
        det_max_side: int = 736,
        use_cls: bool = False,
        text_score: float = 0.5,
        box_thresh: float = 0.5,
        split_key_value: bool = True,
        num_threads: int | None = None,
        params: dict[str, Any] | None = None,
        backend: str = "onnxruntime",
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
    ) -> None:
        if det_max_side < 32:
            raise ValueError(f"det_max_side must be at least 32 px, got {det_max_side}")
        if not 0.0 <= text_score <= 1.0:
            raise ValueError(f"text_score must be in [0, 1], got {text_score}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        if backend == "onnxruntime" and (device is not None or dtype is not None):
            raise ValueError("device and dtype apply to backend='torch' only (onnxruntime runs rapidocr's CPU session)")
        self.backend = backend
        self.device = torch.device(device if device is not None else "cpu")
        self.dtype = _torch_dtype(dtype if dtype is not None else torch.float32)
        self.det_max_side = int(det_max_side)
        self.use_cls = bool(use_cls)
        self.text_score = float(text_score)
        self.box_thresh = float(box_thresh)
        self.split_key_value = bool(split_key_value)
        self.num_threads = num_threads
        self.params = dict(params or {})
        self._engine: Any = None
        self._lock = threading.Lock()

    def _rapidocr_params(self) -> dict[str, Any]:
        p: dict[str, Any] = {
            "Global.log_level": "critical",
            "Global.use_cls": self.use_cls,
            "Global.text_score": self.text_score,
            "Det.limit_type": "max",
            "Det.limit_side_len": self.det_max_side,
            "Det.box_thresh": self.box_thresh,
        }
        if self.num_threads is not None:
            p["EngineConfig.onnxruntime.intra_op_num_threads"] = int(self.num_threads)
        p.update(self.params)
        return p

    def engine(self) -> Any:
        """The underlying ``RapidOCR`` instance, created on first use.

        Raises:
            MissingExtraError: if rapidocr or onnxruntime is not installed.
        """
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    try:
                        import onnxruntime  # noqa: F401  (rapidocr needs it; fail with our message, not theirs)
                        from rapidocr import RapidOCR
                    except ImportError as e:
                        raise MissingExtraError(
                            f"text-aware relevance needs rapidocr and onnxruntime ({e}); {INSTALL_HINT}"
                        ) from e
                    logging.getLogger("RapidOCR").setLevel(logging.CRITICAL)
                    if self.backend == "torch":
                        try:
                            from .torch_backend import TorchRapidOCR
                        except ImportError as e:
                            msg = f"backend='torch' needs the onnx package ({e}); {INSTALL_HINT}"
                            raise MissingExtraError(msg) from e
                        self._engine = TorchRapidOCR(params=self._rapidocr_params(), device=self.device,
                                                     dtype=self.dtype)
                    else:
                        self._engine = RapidOCR(params=self._rapidocr_params())
        return self._engine

    def warmup(self) -> None:
        """Load the detection and recognition models now (about 1 s) instead of on the first ``read``."""
        from PIL import ImageDraw

        img = Image.new("RGB", (160, 48), "white")
        ImageDraw.Draw(img).text((8, 16), "warm up 42", fill="black")
        self.read(img)

    def read(self, image: Image.Image | np.ndarray) -> list[TextBox]:
        """Recognise the text in ``image``.

        Args:
            image: A PIL image (any mode) or an ``(H, W)`` / ``(H, W, 3)`` uint8 RGB array.

        Returns:
            Boxes in original-image pixels, in rapidocr's reading order (top to bottom, left to right). Empty when
            the image has no text.
        """
        pil = _to_rgb_pil(image)
        if pil.width < 4 or pil.height < 4:
            return []
        result = self.engine()(pil, return_word_box=self.split_key_value)
        txts = getattr(result, "txts", None)
        quads = getattr(result, "boxes", None)
        if not txts or quads is None or len(quads) == 0:
            return []
        scores = getattr(result, "scores", None) or [1.0] * len(txts)
        words = getattr(result, "word_results", None) or ()
        # rapidocr drops empty word lists when it filters by score, so words are only trusted when aligned 1:1
        words_aligned = len(words) == len(txts)
        out: list[TextBox] = []
        for i, (txt, quad, score) in enumerate(zip(txts, quads, scores, strict=False)):
            text = str(txt).strip()
            if not text:
                continue
            line = TextBox(text, _quad_to_box(quad), float(score))
            if self.split_key_value and words_aligned and ":" in text:
                out.extend(_split_after_colons(line, words[i]))
            else:
                out.append(line)
        return out


def _torch_dtype(dtype: torch.dtype | str) -> torch.dtype:
    """``torch.bfloat16`` or ``"bfloat16"`` -> ``torch.bfloat16``; anything but a floating-point dtype is an error."""
    resolved = getattr(torch, dtype, None) if isinstance(dtype, str) else dtype
    if not isinstance(resolved, torch.dtype) or not resolved.is_floating_point:
        raise ValueError(f"dtype must be a floating-point torch dtype (float32, bfloat16, float16), got {dtype!r}")
    return resolved


def _to_rgb_pil(image: Image.Image | np.ndarray) -> Image.Image:
    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    arr = np.asarray(image)
    if arr.dtype != np.uint8:
        raise TypeError(f"image arrays must be uint8, got {arr.dtype}")
    if arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4)):
        return Image.fromarray(arr).convert("RGB")
    raise TypeError(f"image array must be (H, W) or (H, W, 3|4), got shape {arr.shape}")


def _split_after_colons(line: TextBox, words: Sequence[Any]) -> list[TextBox]:
    """Split a line into segments ending at words that end with ':' or '=' (uses rapidocr word boxes).

    "Total: $99.00" and "markers = np.zeros(3)" both become a key box and a value box, so the layout rule can put
    the value right of its key.
    """
    parsed: list[tuple[str, tuple[float, float, float, float]]] = []
    for w in words:
        try:
            txt, _score, quad = w[0], w[1], w[2]
        except (TypeError, IndexError):
            return [line]
        if quad is None:
            return [line]
        parsed.append((str(txt), _quad_to_box(quad)))
    if len(parsed) < 2:
        return [line]
    segments: list[list[tuple[str, tuple[float, float, float, float]]]] = [[]]
    for txt, box in parsed:
        segments[-1].append((txt, box))
        if txt.endswith((":", "=")):
            segments.append([])
    segments = [s for s in segments if s]
    if len(segments) < 2:
        return [line]
    y0, y1 = line.box[1], line.box[3]
    out = []
    for seg in segments:
        text = " ".join(t for t, _ in seg).strip()
        x0 = min(b[0] for _, b in seg)
        x1 = max(b[2] for _, b in seg)
        out.append(TextBox(text, (x0, y0, x1, y1), line.confidence))
    return out
