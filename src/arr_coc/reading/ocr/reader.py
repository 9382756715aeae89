"""OCR: ``TextReader`` wraps rapidocr (PP-OCR ONNX models bundled with the wheel) and returns ``TextBox`` es in
original-image pixels; a detected line is split after each word ending in ':' or '=' so a key and its value become
separate boxes. ``OcrCache`` keeps each page's result, keyed by a digest of all its pixels
(``arr_coc.caching.page_digest``), so a page is read once."""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from ...caching import LruCache, page_digest, salted_digest
from ..config import OcrConfig, ReadingConfig
from ..errors import INSTALL_HINT, MissingExtraError
from .recognition import LineRecognizer


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


class OcrCache(LruCache[bytes, tuple[TextBox, ...]]):
    """OCR results per page content: a bounded, thread-safe LRU map (``arr_coc.caching.LruCache``) from a pixel
    digest to the page's boxes.

    Document-QA asks several questions about one page; with the cache, the second question costs only matching.
    The key (:meth:`key`) is ``arr_coc.caching.page_digest`` of the page's uint8 RGB pixels (all of them: a mutated
    array or another page is another key), salted with the reader's settings (``TextReader.fingerprint``), so one
    cache can serve readers with different settings. At most ``max_items`` pages are kept (least recently used first
    out); a page's entry is its boxes, a few KiB for a dense page (about 10 KiB for the 67 boxes of the example
    invoice). Threads that miss on the same page at once read it once (:meth:`get_or_read`).

    Args:
        max_items: Pages kept (0: nothing is stored).
    """

    @staticmethod
    def key(pixels: np.ndarray, salt: str = "") -> bytes:
        """16-byte digest of ``pixels`` ((H, W, C) uint8, any memory layout), their shape and ``salt``."""
        return page_digest(np.asarray(pixels), salt)

    def get_or_read(self, key: bytes, read: Callable[[], Sequence[TextBox]]) -> tuple[tuple[TextBox, ...], bool]:
        """The boxes of ``key``: stored, being read by another thread (wait for it), or ``read()`` here and stored
        (``LruCache.get_or_compute``: one page is read once however many threads ask for it at the same time).

        Returns:
            (boxes, whether they came from the cache or another thread's read).
        """
        return self.get_or_compute(key, lambda: tuple(read()))


@dataclass(frozen=True)
class DigestedPicture:
    """A page for ``TextReader.read`` known by a digest of its pixels, whose pixels are fetched only for a page not
    read before (``arr_coc.realizing.digested_pictures``: frames on a GPU are hashed there and copied to the host
    only when new).

    Attributes:
        digest: the page's digest (``arr_coc.caching.frame_digests``): the same pixels always give the same one.
        shape: the page's (height, width, 3).
        pixels: returns the page's (H, W, 3) uint8 RGB pixels; called at most once a read.
    """

    digest: bytes
    shape: tuple[int, int, int]
    pixels: Callable[[], np.ndarray]


@dataclass(frozen=True)
class ReadResult:
    """One ``TextReader.read_timed`` call.

    Attributes:
        boxes: The recognised text (as ``TextReader.read`` returns it).
        cached: Whether the boxes came from the OCR cache.
        timings_ms: ``hash`` (pixel digest), ``detect`` (text detection), ``recognize`` (recognition of the detected
            lines, including cropping and decoding), ``total``; the two OCR stages are 0 on a cache hit.
    """

    boxes: list[TextBox]
    cached: bool
    timings_ms: dict[str, float]


class TextReader:
    """OCR with rapidocr's ``RapidOCR`` (PP-OCR detection + recognition, ONNX on onnxruntime, CPU), with a per-page
    result cache; nothing is imported or loaded until the first ``read``.

    Defaults (``OcrConfig``) are chosen for speed on a small CPU with little loss on documents (measured on generated
    invoices, forms, tables and charts): the 180-degree angle classifier is off (documents are upright), detection
    runs with the longer image side limited to ``det_max_side`` pixels, and rapidocr's INFO logging is silenced.
    One reader can serve several threads: the engine is created under a lock, onnxruntime sessions run concurrently
    and the cache locks.

    Args:
        config: OCR settings (an ``OcrConfig``, or a ``ReadingConfig`` whose ``ocr`` section is used).
        cache: Result cache to use (default: a new ``OcrCache(config.cache_items)`` owned by this reader).
        **overrides: ``OcrConfig`` fields to change, e.g. ``TextReader(det_max_side=960)``.
    """

    def __init__(
        self, config: OcrConfig | ReadingConfig | None = None, cache: OcrCache | None = None, **overrides: Any
    ) -> None:
        if isinstance(config, ReadingConfig):
            config = config.ocr
        config = config if config is not None else OcrConfig()
        if not isinstance(config, OcrConfig):
            raise TypeError(f"config must be an OcrConfig or ReadingConfig, got {type(config).__name__}")
        if "dtype" in overrides and overrides["dtype"] is not None and not isinstance(overrides["dtype"], str):
            overrides["dtype"] = str(overrides["dtype"]).removeprefix("torch.")  # torch.bfloat16 -> "bfloat16"
        if "device" in overrides and overrides["device"] is not None:
            overrides["device"] = str(overrides["device"])
        if overrides:
            allowed = {f.name for f in dataclasses.fields(OcrConfig)}
            unknown = sorted(set(overrides) - allowed)
            if unknown:
                raise TypeError(f"unknown OCR setting(s) {unknown}; allowed: {', '.join(sorted(allowed))}")
            config = dataclasses.replace(config, **overrides)
        self.config = config
        self.cache = cache if cache is not None else OcrCache(config.cache_items)
        self.fingerprint = json.dumps({k: v for k, v in dataclasses.asdict(config).items() if k != "cache_items"},
                                      sort_keys=True, default=str)  # fmt: skip
        self._engine: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the OCR models are loaded."""
        return self._engine is not None

    def _det_params(self) -> dict[str, Any]:
        c = self.config
        p: dict[str, Any] = {
            "Global.log_level": "critical",
            "Global.use_cls": False,
            "Global.use_rec": False,
            "Det.limit_type": "max",
            "Det.limit_side_len": c.det_max_side,
            "Det.box_thresh": c.box_thresh,
        }
        if c.num_threads is not None:
            p["EngineConfig.onnxruntime.intra_op_num_threads"] = int(c.num_threads)
        p.update(c.det_params)
        return p

    def engine(self) -> tuple[Any, Any]:
        """The detector (rapidocr's ``RapidOCR`` with recognition off) and the recogniser (``LineRecognizer`` on
        onnxruntime; ``lines.PageRecognizer`` for ``backend="torch"``: a page's lines cut, recognised and decoded on
        the device in one pass), loaded on first use.

        Raises:
            MissingExtraError: if rapidocr, onnxruntime or onnx is not installed.
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
                    c = self.config
                    if c.backend == "torch":
                        try:
                            import torch

                            from .lines import PageRecognizer
                            from .torch_backend import TorchRapidOCR
                        except ImportError as e:
                            msg = f"backend='torch' needs the onnx package ({e}); {INSTALL_HINT}"
                            raise MissingExtraError(msg) from e
                        device, dtype = torch.device(c.device or "cpu"), getattr(torch, c.dtype or "float32")
                        detector = detect_only(TorchRapidOCR)(
                            params=self._det_params(), device=device, dtype=dtype, det_graphs=c.det_graphs
                        )
                        recognizer = PageRecognizer(
                            c.rec_model_path, c.charset, c.squeeze, device, dtype, script_share=c.script_share
                        )
                    else:
                        detector = detect_only(RapidOCR)(params=self._det_params())
                        recognizer = LineRecognizer(
                            c.rec_model_path, c.charset, c.squeeze, c.rec_batch_size, c.num_threads,
                            script_share=c.script_share,
                        )  # fmt: skip
                    recognizer.load()
                    self._engine = (detector, recognizer)
        return self._engine

    def warmup(self) -> None:
        """Load the detection and recognition models now (about 1 s) instead of on the first ``read``."""
        from PIL import ImageDraw

        img = Image.new("RGB", (160, 48), "white")
        ImageDraw.Draw(img).text((8, 16), "warm up 42", fill="black")
        self._ocr(img)  # not through the cache: a warm-up page is not a user's page

    def read(self, image: Image.Image | np.ndarray | DigestedPicture) -> list[TextBox]:
        """Recognise the text in ``image`` (from the cache when this page was read before).

        Args:
            image: A PIL image (any mode), an ``(H, W)`` / ``(H, W, 3|4)`` uint8 array or a ``DigestedPicture``.

        Returns:
            Boxes in original-image pixels, in rapidocr's reading order (top to bottom, left to right). Empty when
            the image has no text. A new list each call (the cached boxes themselves are immutable).
        """
        return self.read_timed(image).boxes

    def read_timed(self, image: Image.Image | np.ndarray | DigestedPicture) -> ReadResult:
        """``read`` with where the time went (see ``ReadResult``)."""
        if isinstance(image, DigestedPicture):
            return self.read_digest(image.digest, image.shape[:2], image.pixels)
        t0 = time.perf_counter()
        pixels = rgb_pixels(image)  # (H, W, 3) uint8: the page's bytes are copied out of PIL once, for the key
        if pixels.shape[0] < 4 or pixels.shape[1] < 4:
            return ReadResult([], False, {"hash": 0.0, "detect": 0.0, "recognize": 0.0, "total": 0.0})
        key = self.cache.key(pixels, self.fingerprint)
        pil = image if isinstance(image, Image.Image) and image.mode == "RGB" else None
        return self._read_key(key, t0, lambda: pil if pil is not None else Image.fromarray(pixels))

    def read_digest(self, digest: bytes, size: tuple[int, int], picture: Callable[[], np.ndarray]) -> ReadResult:
        """``read_timed`` of a page known by a digest of its pixels (``arr_coc.caching.frame_digests``: on a GPU the
        frames are hashed on the device): the cache is looked up by the digest salted with this reader's settings,
        and ``picture()`` (the page's (H, W, 3) uint8 RGB pixels, e.g. copied from the device) is called only for a
        page not read before.

        Args:
            digest: the page's digest; the same pixels must always give the same digest, and others another.
            size: the page's (height, width) (a page under 4 pixels a side has no text).
            picture: the page's pixels, called at most once.
        """
        t0 = time.perf_counter()
        if size[0] < 4 or size[1] < 4:
            return ReadResult([], False, {"hash": 0.0, "detect": 0.0, "recognize": 0.0, "total": 0.0})
        return self._read_key(salted_digest(digest, self.fingerprint), t0, lambda: Image.fromarray(picture()))

    def _read_key(self, key: bytes, t0: float, pil: Callable[[], Image.Image]) -> ReadResult:
        """The boxes of the page of cache key ``key`` (hashed since ``t0``): cached, or ``pil()`` read here."""
        t1 = time.perf_counter()
        timed: list[float] = []

        def read() -> list[TextBox]:  # only for a page not read before
            boxes, det_ms, _ = self._ocr(pil())
            timed.append(det_ms)
            return boxes

        found, hit = self.cache.get_or_read(key, read)  # one read of a page, however many threads ask at once
        boxes = list(found)
        if hit:
            t = (time.perf_counter() - t0) * 1e3
            return ReadResult(boxes, True, {"hash": (t1 - t0) * 1e3, "detect": 0.0, "recognize": 0.0, "total": t})
        det_ms = timed[0]
        t2 = time.perf_counter()
        return ReadResult(
            boxes, False, {"hash": (t1 - t0) * 1e3, "detect": det_ms, "recognize": (t2 - t1) * 1e3 - det_ms,
                           "total": (t2 - t0) * 1e3}
        )  # fmt: skip

    def _ocr(self, pil: Image.Image) -> tuple[list[TextBox], float, float]:
        """Detect and recognise the text of an RGB picture: (boxes, detection ms, recognition ms)."""
        import cv2  # with rapidocr (the engine is loaded)

        detector, recognizer = self.engine()
        t0 = time.perf_counter()
        # (H, W, 3) BGR, as rapidocr and the models expect: made once for the detector and the recogniser (given a
        # PIL image, rapidocr would copy its pixels out again and swap the channels itself). cvtColor's swap is the
        # array NumPy's [..., ::-1] copy makes, 30 times faster (0.3 against 8 ms on a 1,151 x 1,376 page)
        bgr = cv2.cvtColor(np.asarray(pil), cv2.COLOR_RGB2BGR)
        det = detector(bgr)
        quads = getattr(det, "boxes", None)
        t1 = time.perf_counter()
        if quads is None or len(quads) == 0:
            return [], (t1 - t0) * 1e3, 0.0
        quads = np.asarray(quads, dtype=np.float32).reshape(-1, 4, 2)  # (N, 4, 2) corners in image pixels
        if hasattr(recognizer, "read_page"):  # lines.PageRecognizer: crops, recognition, decoding on the device
            lines = recognizer.read_page(bgr, quads)
        else:  # LineRecognizer (or any callable on crops): OpenCV crops, width-sorted batches
            lines = recognizer([crop_quad(bgr, q) for q in quads])
        out: list[TextBox] = []
        for quad, line in zip(quads, lines, strict=True):
            text = line.text.strip()
            if not text or line.score < self.config.text_score:
                continue
            box = TextBox(text, _quad_to_box(quad), line.score)
            if self.config.split_key_value and (":" in text or "=" in text or "：" in text):
                out.extend(split_after_colons(box, line.text, line.char_x))
            else:
                out.append(box)
        return out, (t1 - t0) * 1e3, (time.perf_counter() - t1) * 1e3


@functools.cache
def detect_only(engine: type) -> type:
    """``engine`` (rapidocr's ``RapidOCR`` or a subclass) as a text detector that cuts no line crops.

    With recognition off, ``RapidOCR.__call__`` still cuts every detected line out of the page
    (``crop_text_regions``: a perspective warp a line, then a resize of each crop back to the original scale) for a
    recogniser it never calls: 66 warps on the example invoice, about a third of the detector's time outside its
    network. The reader cuts its own crops (``crop_quad`` / ``lines.cut_lines``), so the subclass returns none;
    detection, box post-processing and the mapping of boxes to the original image are rapidocr's own, unchanged
    (the same boxes, tested). A subclass overriding one seam, not a patch: other ``RapidOCR`` objects are untouched.
    Its detector stage extracts the boxes with :class:`~arr_coc.reading.ocr.detection.LeanDBPostProcess` (rapidocr's
    DB post-processing with less host time per box, the same boxes bit for bit).
    """

    class DetectOnly(engine):  # type: ignore[misc, valid-type]
        def crop_text_regions(self, img: np.ndarray, det_boxes: np.ndarray) -> list[np.ndarray]:
            return []  # nothing to recognise here: no crops

        def _load_det_model(self) -> Any:
            from rapidocr.ch_ppocr_det.utils import DBPostProcess

            from .detection import LeanDBPostProcess

            stage = super()._load_det_model()
            if type(stage.postprocess_op) is DBPostProcess:  # this engine's own stage: rapidocr's class is untouched
                stage.postprocess_op = LeanDBPostProcess.like(stage.postprocess_op)
            return stage

    DetectOnly.__name__ = DetectOnly.__qualname__ = f"DetectOnly{engine.__name__}"
    return DetectOnly


def crop_quad(image: np.ndarray, quad: np.ndarray) -> np.ndarray:
    """The text line inside ``quad`` (4, 2) (clockwise from top-left), rectified to an upright (h, w, 3) image; tall
    crops (height >= 1.5 width) are turned a quarter, as rapidocr does."""
    import cv2

    quad = np.asarray(quad, dtype=np.float32)
    w = int(max(np.linalg.norm(quad[0] - quad[1]), np.linalg.norm(quad[2] - quad[3])))
    h = int(max(np.linalg.norm(quad[0] - quad[3]), np.linalg.norm(quad[1] - quad[2])))
    w, h = max(w, 1), max(h, 1)
    target = np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)
    m = cv2.getPerspectiveTransform(quad, target)
    crop = cv2.warpPerspective(image, m, (w, h), borderMode=cv2.BORDER_REPLICATE, flags=cv2.INTER_CUBIC)
    return np.rot90(crop) if h >= 1.5 * w else crop


def rgb_pixels(image: Image.Image | np.ndarray) -> np.ndarray:
    """The (H, W, 3) uint8 RGB pixels of a PIL image or of a uint8 ``(H, W)`` / ``(H, W, 3|4)`` array: an RGB array
    as it is (no copy), anything else converted as :func:`to_rgb_pil` converts it.

    Raises:
        TypeError: for another dtype or shape.
    """
    if isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3:
        return image
    return np.asarray(to_rgb_pil(image))


def to_rgb_pil(image: Image.Image | np.ndarray) -> Image.Image:
    """An RGB PIL image from a PIL image or a uint8 ``(H, W)`` / ``(H, W, 3|4)`` array (the text path's input check).

    Raises:
        TypeError: for another dtype or shape.
    """
    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    arr = np.asarray(image)
    if arr.dtype != np.uint8:
        raise TypeError(f"image arrays must be uint8, got {arr.dtype}")
    if arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4)):
        return Image.fromarray(arr).convert("RGB")
    raise TypeError(f"image array must be (H, W) or (H, W, 3|4), got shape {arr.shape}")


# a full-width colon, or a colon right after a CJK character: where a CJK key ends, with or without a space after it
_CJK_KEY_END = re.compile(r"：|(?<=[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]):")


def split_after_colons(line: TextBox, text: str, char_x: Sequence[float]) -> list[TextBox]:
    """Split a line into segments ending at words that end with ':' or '=' (or a CJK key's colon: "金额：¥492.50",
    where no space follows it).

    "Total: $99.00" and "markers = np.zeros(3)" both become a key box and a value box, so the layout rule can put
    the value right of its key. Segments partition the line's box: each boundary lies halfway between the last
    character of one segment and the first of the next (``char_x``: each character's position across the line, as a
    fraction of its width).

    Args:
        line: The whole line's box (its ``text`` is ``text`` stripped).
        text: The recognised string, one ``char_x`` entry per character.
        char_x: Position of each character across the line in [0, 1].
    """
    if len(char_x) != len(text):
        return [line]
    words = []  # character spans of the words; a CJK key's colon ends a word ("日期：2026年" has no space)
    for m in re.finditer(r"\S+", text):
        start = m.start()
        for c in _CJK_KEY_END.finditer(text, m.start(), m.end()):
            if c.end() < m.end():
                words.append((start, c.end()))
                start = c.end()
        words.append((start, m.end()))
    segments: list[list[tuple[int, int]]] = [[]]
    for start, end in words:
        segments[-1].append((start, end))
        if text[end - 1] in ":=：":
            segments.append([])
    segments = [seg for seg in segments if seg]
    if len(segments) < 2:
        return [line]
    x0, y0, x1, y1 = line.box
    width = x1 - x0
    cuts = [x0]
    for left, right in zip(segments[:-1], segments[1:], strict=True):
        mid = (char_x[left[-1][1] - 1] + char_x[right[0][0]]) / 2
        cuts.append(x0 + mid * width)
    cuts.append(x1)
    return [
        TextBox(" ".join(text[s:e] for s, e in seg), (cuts[k], y0, cuts[k + 1], y1), line.confidence)
        for k, seg in enumerate(segments)
    ]
