"""Evidence recall: the share of an answer's grid cells a token allocation keeps, and the measures around it.

The geometry (which cells of the model's grid an answer box covers), the metrics (recall, full hit, budgets), the
query-blind baselines (random, centre, oracle scores; the stride is :func:`arr_coc.evaluation.allocators.stride_keep`),
the second reader's test (Tesseract reading the answer's neighbourhood with the dropped cells painted white) and the
per-kind aggregate. ``benchmarks/evidence_recall.py`` and ``benchmarks/detail.py`` run them over documents and write
the tables; everything here is a pure function of its arguments (Tesseract apart), tested in
``tests/test_evidence_recall.py``.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from PIL import Image

from ..attending import select
from ..grid import Grid, GridSpec, smart_resize

if TYPE_CHECKING:
    from ..integrations.detail import DetailPlan

FAMILY = "qwen2.5-vl"

MAX_PIXELS = 1280 * 28 * 28

BUDGETS: tuple[tuple[str, float], ...] = (("11.1%", 1 / 9), ("22.2%", 2 / 9), ("33.3%", 1 / 3))

CELL_SHARE = 0.20  # a cell counts if box∩cell >= 20% of the cell ...

BOX_SHARE = 0.20  # ... or >= 20% of the box

DOWNSCALE_RECALL = 0.5  # downscale keeps every cell, each seen coarsely: half-read (benchmarks/detail.py's rule)

Ranker = Callable[[int], np.ndarray]  # k -> kept cell indices, ascending


def grid_of(width: int, height: int) -> Grid:
    """The Qwen2.5-VL grid (max_pixels = 1280*28*28) of a ``width x height`` image."""
    return GridSpec.for_family(FAMILY, max_pixels=MAX_PIXELS).grid_for(height, width)


def overlap_areas(box: tuple[float, float, float, float], width: int, height: int, rows: int, cols: int) -> np.ndarray:
    """(rows, cols) area, in original pixels, of the intersection of ``box`` with each grid cell."""
    x0, y0, x1, y1 = box
    xs = np.arange(cols + 1) * width / cols
    ys = np.arange(rows + 1) * height / rows
    ox = np.clip(np.minimum(xs[1:], x1) - np.maximum(xs[:-1], x0), 0, None)  # (cols,)
    oy = np.clip(np.minimum(ys[1:], y1) - np.maximum(ys[:-1], y0), 0, None)  # (rows,)
    return oy[:, None] * ox[None, :]


def answer_cells(box: tuple[float, float, float, float], width: int, height: int, rows: int, cols: int) -> np.ndarray:
    """Raster indices (ascending) of the cells that hold the answer box.

    A cell counts if its intersection with the box is >= 20% of the cell's area or >= 20% of the box's area; the
    cell with the largest intersection always counts (so a tiny box still has one cell).

    Raises:
        ValueError: if the box does not overlap the image.
    """
    inter = overlap_areas(box, width, height, rows, cols)
    if inter.max() <= 0:
        raise ValueError(f"answer box {box} does not overlap the {width}x{height} image")
    cell_area = (width / cols) * (height / rows)
    box_area = max(box[2] - box[0], 0) * max(box[3] - box[1], 0)
    eps = 1e-9
    mask = (inter >= CELL_SHARE * cell_area - eps) | (inter >= BOX_SHARE * box_area - eps)
    mask &= inter > 0
    mask.flat[int(np.argmax(inter))] = True
    return np.flatnonzero(mask.ravel())


def budget_k(fraction: float, n_tokens: int) -> int:
    """Tokens kept at ``fraction`` of ``n_tokens``: round(f * n), clamped to [1, n]."""
    return max(1, min(n_tokens, round(fraction * n_tokens)))


def evidence_recall(keep: Sequence[int] | np.ndarray, cells: Sequence[int] | np.ndarray) -> float:
    """Share of ``cells`` (the answer cells) that are in ``keep``."""
    cells = np.asarray(cells)
    if cells.size == 0:
        raise ValueError("a sample needs at least one answer cell")
    return float(np.isin(cells, np.asarray(keep)).mean())


def full_hit(keep: Sequence[int] | np.ndarray, cells: Sequence[int] | np.ndarray) -> bool:
    """True when every answer cell is kept."""
    return evidence_recall(keep, cells) == 1.0


def top_k(scores: np.ndarray, units: Sequence[np.ndarray] = ()) -> Ranker:
    """Ranker keeping the k highest ``scores`` (ties to the lower index), via the library's ``select``; each of
    ``units`` (a word's cells, from ``Allocation.units``) kept whole, as ``allocate`` does."""
    flat = torch.from_numpy(np.ascontiguousarray(scores, dtype=np.float32).ravel())
    return lambda k: select(flat, k, units=units).numpy()


def random_scores(rows: int, cols: int, seed: int) -> np.ndarray:
    """Uniform random scores from a generator seeded with ``seed``."""
    return np.random.default_rng(seed).random((rows, cols))


def centre_scores(rows: int, cols: int) -> np.ndarray:
    """Minus each cell centre's distance to the image centre (cells are square on the resized image)."""
    r = np.arange(rows)[:, None] + 0.5 - rows / 2
    c = np.arange(cols)[None, :] + 0.5 - cols / 2
    return -np.hypot(r, c)


def oracle_scores(inter: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Answer cells first (by overlap), then any other overlapping cell, then the rest (ties: raster order)."""
    scores = inter / max(float(inter.max()), 1e-12)
    flat = scores.ravel().copy()
    flat[cells] += 2.0
    return flat.reshape(inter.shape)


def sample_seed(seed: int, sample_id: str) -> int:
    """A per-sample seed that does not depend on Python's hash randomisation."""
    return (seed * 1_000_003 + zlib.crc32(sample_id.encode())) % 2**32


def mask_dropped(image: Image.Image, keep: Sequence[int] | np.ndarray, rows: int, cols: int) -> Image.Image:
    """A copy of ``image`` with every cell not in ``keep`` painted white (cells as in ``answer_cells``)."""
    w, h = image.size
    kept = np.zeros(rows * cols, dtype=bool)
    kept[np.asarray(keep, dtype=np.int64)] = True
    ys = np.minimum((np.arange(h) * rows) // h, rows - 1)  # row of each pixel row: floor(y * rows / H)
    xs = np.minimum((np.arange(w) * cols) // w, cols - 1)
    pix = kept.reshape(rows, cols)[ys[:, None], xs[None, :]]  # (H, W)
    arr = np.asarray(image.convert("RGB")).copy()
    arr[~pix] = 255
    return Image.fromarray(arr)


def downscale_page(image: Image.Image, k: int) -> Image.Image:
    """The page as the downscale baseline shows it to the model (the processor's resize at the largest max_pixels
    giving at most ``k`` tokens), upsampled back to the page's size for the reader."""
    from arr_coc.evaluation.allocators import downscale_max_pixels
    from arr_coc.grid import smart_resize

    w, h = image.size
    lo, hi = downscale_max_pixels(h, w, k, 28, 56 * 56)
    rh, rw = smart_resize(h, w, 28, lo, hi)
    return image.convert("RGB").resize((rw, rh), Image.BICUBIC).resize((w, h), Image.BICUBIC)


def reader_region(
    box: tuple[float, float, float, float], width: int, height: int, rows: int, cols: int
) -> tuple[int, int, int, int]:
    """The answer box padded by one grid cell on every side, clipped to the image (what the second reader reads)."""
    pw, ph = width / cols, height / rows
    return (
        max(0, int(box[0] - pw)),
        max(0, int(box[1] - ph)),
        min(width, int(np.ceil(box[2] + pw))),
        min(height, int(np.ceil(box[3] + ph))),
    )


def _alnum(text: str) -> str:
    return re.sub(r"[^0-9a-z]", "", text.lower())


def answer_found(text: str, answer: str) -> bool:
    """True when the answer's letters and digits (lower case, in order, nothing else) occur in ``text``'s."""
    want = _alnum(answer)
    return bool(want) and want in _alnum(text)


def tesseract_text(image: Image.Image, timeout_s: float = 60.0) -> str:
    """Text Tesseract reads in ``image`` (``--psm 6``: one uniform block; crops under 80 px high are upscaled 2x).

    Raises:
        SystemExit: if the ``tesseract`` binary is not installed.
    """
    exe = shutil.which("tesseract")
    if exe is None:
        raise SystemExit("--second-reader tesseract needs the tesseract binary: apt-get install tesseract-ocr")
    if image.height < 80:
        image = image.resize((image.width * 2, image.height * 2), Image.BICUBIC)
    buf = io.BytesIO()
    image.convert("L").save(buf, format="PNG")
    out = subprocess.run(
        [exe, "stdin", "stdout", "--psm", "6"],
        input=buf.getvalue(),
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    return out.stdout.decode("utf-8", errors="replace")


@dataclass
class SampleResult:
    """One sample's geometry and, per allocator and budget, its recall."""

    id: str
    kind: str
    n_tokens: int
    n_answer_cells: int
    recall: dict[str, dict[str, float]]  # allocator -> budget label -> recall
    seconds: dict[str, float]  # allocator -> seconds spent scoring
    category: str = ""  # DocVQA-style category (docgen.CATEGORIES)
    second: dict[str, bool] | None = None  # second reader: "page" and each allocator -> answer found
    rules: dict[str, str | None] | None = None  # library allocator -> structural rule that fired


def aggregate(
    results: Sequence[SampleResult], allocator: str, kinds: Sequence[str], by: str = "kind"
) -> dict[str, dict[str, dict]]:
    """budget label -> kind (or category, ``by="category"``) and "overall" -> {"recall", "full_hit", "n"} for one
    allocator."""
    out: dict[str, dict[str, dict]] = {}
    for label, _ in BUDGETS:
        out[label] = {}
        for kind in [*kinds, "overall"]:
            vals = [r.recall[allocator][label] for r in results if kind == "overall" or getattr(r, by) == kind]
            if vals:
                out[label][kind] = {
                    "recall": float(np.mean(vals)),
                    "full_hit": float(np.mean([v == 1.0 for v in vals])),
                    "n": len(vals),
                }
    return out


# ----- level of detail: what a reader sees of each token ----------------------------------------------------------


def seen(method: str, n: int, keep: np.ndarray | None, plan: DetailPlan | None, rows: int, cols: int) -> np.ndarray:
    """Per token of the full grid: 1.0 seen at full resolution, 0.5 seen coarsely, 0.0 not seen (the half rule)."""
    out = np.zeros(n)
    if method == "downscale":
        return out + 0.5
    if method == "thumbnail":
        out += 0.5
    if method == "mixed" and plan is not None and plan.mode == "mixed":
        for r0, c0, r1, c1 in plan.blocks:
            block = (np.arange(r0, r1)[:, None] * cols + np.arange(c0, c1)[None, :]).ravel()
            out[block] = 0.5
    fine = keep if plan is None else plan.fine.numpy()
    out[np.asarray(fine, dtype=np.int64)] = 1.0
    return out


def downscaled(
    image: Image.Image, size: tuple[int, int], tokens: int, factor: int = 28, min_pixels: int = 56 * 56
) -> tuple[Image.Image, int]:
    """The page as the downscale baseline shows it (the processor's resize at the largest ``max_pixels`` that gives at
    most ``tokens`` tokens), upsampled back to ``size`` (W, H), and its token count."""
    from .allocators import downscale_max_pixels

    w0, h0 = image.size
    lo, hi = downscale_max_pixels(h0, w0, tokens, factor, min_pixels)
    h, w = smart_resize(h0, w0, factor, lo, hi)
    small = image.resize((w, h), Image.BICUBIC)
    return small.resize(size, Image.BICUBIC), (h // factor) * (w // factor)
