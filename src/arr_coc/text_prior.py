"""The text path's entry: OCR + query matching -> the text prior of ``mode="text"``, and what to tell the user.

    pictures (the pages as the OCR reads them) ──► OCR boxes ──► query matching ──► prior (T, rows, cols) + word units

:func:`text_prior_maps` turns pictures into the prior the participatory scorer adds (the reading package does the
OCR and the matching); :func:`item_text_prior` is one item's text path as the engine runs it (its pictures known by
their digests, :func:`digested_pictures`, or copied to the host, :func:`pictures_from_frames`); :func:`resolve_mode`
and :func:`ocr_available` say whether the ``[ocr]`` extra is there; :func:`query_notes` says what in a question the
pipeline cannot read.

Example:
    >>> resolve_mode("texture"), query_notes("How much?")
    ('texture', [])
"""

from __future__ import annotations

import functools
import importlib.util
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from PIL import Image

from .attending import WordUnits
from .caching import frame_digests
from .deciding import Scoring
from .model import Relevance
from .query import broken_text_notes, normalize_text

MODES = ("auto", "text", "texture")
Picture = Image.Image | np.ndarray  # what the OCR reads: a PIL image or an (H, W, 3) uint8 RGB array


def ocr_available() -> bool:
    """Whether the ``[ocr]`` extra (rapidocr + onnxruntime) is importable."""
    return all(importlib.util.find_spec(m) is not None for m in ("rapidocr", "onnxruntime"))


def resolve_mode(mode: str) -> str:
    """``"text"`` or ``"texture"`` for a user's ``mode``; ``"text"`` without the ``[ocr]`` extra is an error."""
    mode = str(mode).strip().lower()
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "auto":
        return "text" if ocr_available() else "texture"
    if mode == "text" and not ocr_available():
        from .reading import MissingExtraError

        raise MissingExtraError(
            "mode='text' needs the OCR extra: pip install -e '.[ocr]' in the arr-coc-vis clone (rapidocr, "
            "onnxruntime); or use mode='texture'"
        )
    return mode


def reading_for(text_options: dict[str, Any] | None, realizer: Any = None) -> tuple[Any, Any]:
    """The OCR reader and query matcher of ``realizer``'s text path for ``text_options``, models loaded (once)."""
    from .reading import default_reading

    reading = realizer.reading if realizer is not None else default_reading()
    reading.warmup(semantic=(text_options or {}).get("semantic") is not False)
    return reading.reader, reading.matcher(**(text_options or {}))


def text_prior_maps(
    pictures: Sequence[Picture],
    query: str,
    rows: int,
    cols: int,
    text_options: dict[str, Any] | None = None,
    reader: Any = None,
    realizer: Any = None,
) -> tuple[torch.Tensor, list[list[Any]], list[Any], WordUnits]:
    """The OCR text prior of ``allocate``'s "text" mode, one map per picture (needs the ``[ocr]`` extra).

    Args:
        pictures: RGB pictures covering the grid, PIL images or (H, W, 3) uint8 arrays (their own pixel sizes; boxes
            are mapped to the grid).
        query: the question (normalised here).
        rows, cols: the grid.
        text_options: the matcher's ``{"lexical", "semantic", "layout", "structure", "query_parsing",
            "whole_words"}`` switches.
        reader: the OCR reader (anything with ``read(picture) -> list[TextBox]``, a picture being a PIL image or an
            (H, W, 3) uint8 array; default the realizer's).
        realizer: whose text path (``Realizer.reading``: ``RelevanceConfig.reading``) to use; default the default.

    Returns:
        torch.Tensor of shape (T, rows, cols) in [0, 1], float32 on the CPU (OCR runs on the CPU), the OCR boxes
        of each picture, each picture's structural evidence (``arr_coc.reading.layout.structural_query.Evidence``:
        which budget rule fired) or None, and the words' cells (``QueryMatcher.units``) as indices into the (T * rows *
        cols) raster of all pictures, for a selection that keeps words whole.
    """
    resolve_mode("text")  # a clear error when the [ocr] extra is missing
    shared, matcher = reading_for(text_options, realizer)
    reader = reader or shared
    text = normalize_text(query)
    maps, boxes, evidence, units = [], [], [], []
    for picture in pictures:
        found = reader.read(picture)
        size = picture.size if isinstance(picture, Image.Image) else (picture.shape[1], picture.shape[0])  # (W, H)
        rel, ev = matcher.relevance_and_evidence(found, text, rows, cols, size)
        maps.append(np.asarray(rel, dtype=np.float32))
        boxes.append(found)
        evidence.append(ev)
        units.append(matcher.units(found, rows, cols, size))
    # one picture's units are the page's own (cached, with their selection tables); more are offset into one raster
    joined = WordUnits.join(units, [t * rows * cols for t in range(len(units))]) if units else WordUnits(())
    return torch.from_numpy(np.stack(maps)), boxes, evidence, joined


def query_notes(query: str) -> list[str]:
    """What to tell the user about a question the pipeline cannot read: ``[]`` when every word can be read.

    The OCR and the text path read Chinese, Japanese and Latin-script words and digits
    (``arr_coc.reading.scripts``); words in other scripts (Korean, Arabic, Devanagari, Thai, Cyrillic, ...) and
    punctuation match nothing. A question with no readable word is query-blind, as an empty one is (the caller says
    so for an empty question).

    Example:
        >>> query_notes("How much?"), query_notes("需要支付多少钱？"), len(query_notes("얼마입니까?"))
        ([], [], 1)
    """
    from .reading.scripts import script_notes

    text = str(query or "").strip()
    if not text:
        return []
    return broken_text_notes(text) + script_notes(text)


def digested_pictures(frames: Sequence[torch.Tensor]) -> list[list[Any]]:
    """The pictures of each item's frames (T, 3, H, W) for the built-in OCR reader, known by their digests
    (``arr_coc.reading.ocr.reader.DigestedPicture``): each frame rounded to uint8 on its device and hashed there
    (``arr_coc.caching.frame_digests``: on a GPU only the digests cross to the host, in one sync for all the items); a
    frame's pixels are copied to the host (:func:`pictures_from_frames`) only if the reader has not read that page
    before."""
    from .reading.ocr.reader import DigestedPicture

    u8 = [_uint8_frames(f) for f in frames]
    out = []
    for item, digests in zip(u8, frame_digests(u8, "picture"), strict=True):
        shape = (int(item.shape[2]), int(item.shape[3]), 3)
        fetch = functools.partial(_host_picture, item)
        out.append([DigestedPicture(d, shape, functools.partial(fetch, t)) for t, d in enumerate(digests)])
    return out


def _host_picture(frames: torch.Tensor, t: int) -> np.ndarray:
    return pictures_from_frames(frames[t : t + 1])[0]


def _uint8_frames(frames: torch.Tensor) -> torch.Tensor:
    """Frames as the OCR reads them: uint8, rounded on their device from floats in [0, 1]."""
    if frames.dtype == torch.uint8:
        return frames
    return (frames.float().clamp(0, 1) * 255).round().to(torch.uint8)


def pictures_from_frames(frames: torch.Tensor) -> list[np.ndarray]:
    """The explicit step that leaves the device for OCR: frames (T, 3, H, W) -> T RGB pictures, (H, W, 3) uint8
    arrays (what the OCR cache hashes; the reader makes a PIL image of one only for a page it has not read).

    Each frame is rounded to uint8 ON its device first, so one uint8 copy (a quarter of float32's bytes) crosses to
    the CPU.
    """
    frames = _uint8_frames(frames)  # (T, 3, H, W) on the device
    host = frames.permute(0, 2, 3, 1).contiguous().cpu().numpy()  # (T, H, W, 3): the one device -> host copy
    return list(host)


@dataclass
class TextPrior:
    """What the text path gave one item (:func:`item_text_prior`): the prior and what comes with it."""

    prior: torch.Tensor | None  # (T, rows, cols) on the frames' device, or None (texture mode)
    units: Sequence[np.ndarray] = field(default_factory=list)
    boxes: list[list[Any]] = field(default_factory=list)
    evidence: list[Any] = field(default_factory=list)
    ocr_ms: float = 0.0
    sizes: list[tuple[int, int]] = field(default_factory=list)  # (W, H) of each picture the OCR read

    def scoring(self, rel: Relevance, mode: str) -> Scoring:
        """The item's :class:`~arr_coc.deciding.Scoring` from its relevance."""
        timings = {"ocr": self.ocr_ms, **rel.timings_ms}
        return Scoring(rel.scores, self.units, self.prior, mode, rel, self.boxes, self.evidence, timings, self.sizes)


def item_text_prior(
    frames: torch.Tensor,
    grid: tuple[int, int],
    query: str | None,
    mode: str,
    prior: torch.Tensor | None,
    pictures: Sequence[Picture] | None,
    text_options: dict[str, Any] | None,
    reader: Any,
    realizer: Any,
) -> TextPrior:
    """The text path of one item (mode ``"text"`` without a given prior): OCR + matching -> the prior
    (T, rows, cols) on the frames' device, word units, boxes and evidence; else ``prior`` as given."""
    if not (mode == "text" and prior is None):
        return TextPrior(prior)
    t0 = time.perf_counter()
    # pictures: given, or the frames' digested pictures (digested_pictures), or else copied to the host here
    pics = list(pictures) if pictures is not None else pictures_from_frames(frames)
    prior, boxes, evidence, units = text_prior_maps(pics, query or "", grid[0], grid[1], text_options, reader, realizer)
    sizes = [p.size if isinstance(p, Image.Image) else (int(p.shape[1]), int(p.shape[0])) for p in pics]  # (W, H)
    return TextPrior(prior.to(frames.device), units, boxes, evidence, (time.perf_counter() - t0) * 1e3, sizes)
