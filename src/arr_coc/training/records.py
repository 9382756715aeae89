"""The evidence objective's records: each question's OCR boxes (cached on disk), their features and labels, and the
recall a box scorer's scores give (the steps ``extract`` and ``recall`` of :mod:`arr_coc.training.evidence`).

Example::

    records = extract(questions, matcher, DiskOcrCache("/tmp/ocr"))
    recall_at(records[0], rule_scores(records[0]))   # {"11.1%": ..., "22.2%": ..., "33.3%": ...}
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..reading.matching.learned import FEATURES, box_features
from .data import Question, box_labels, grid_of, question_cells

BUDGETS: tuple[tuple[str, float], ...] = (("11.1%", 1 / 9), ("22.2%", 2 / 9), ("33.3%", 1 / 3))
RULE = FEATURES.index("rule")


# --------------------------------------------------------------------------------------------------- OCR cache


class DiskOcrCache:
    """OCR boxes per page on disk, one JSON file per page named by a blake2b hash of its RGB pixels and shape (the
    format of ``benchmarks/evidence_recall.py --ocr-cache``, so the two share a folder). Without a folder, OCR runs
    every time."""

    def __init__(self, folder: str | Path | None, reader: Any = None) -> None:
        self.folder = Path(folder) if folder is not None else None
        self._reader = reader

    def path(self, image: Any) -> Path | None:
        """The page's cache file (None without a folder)."""
        if self.folder is None:
            return None
        arr = np.asarray(image)
        return (
            self.folder
            / f"{hashlib.blake2b(arr.tobytes() + repr(arr.shape).encode(), digest_size=16).hexdigest()}.json"
        )

    def read(self, image: Any) -> list:
        from ..reading import TextBox, shared_reader

        path = self.path(image)
        if path is not None:
            if path.exists():
                return [TextBox(t, tuple(b), c) for t, b, c in json.loads(path.read_text())]
        reader = self._reader or shared_reader(warm=True)
        boxes = reader.read(image)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps([[b.text, list(b.box), b.confidence] for b in boxes]))
        return boxes


# --------------------------------------------------------------------------------------------------- records


@dataclass
class Record:
    """One question, ready for training and scoring."""

    question: Question
    feats: np.ndarray  # (N, F) float32
    labels: np.ndarray  # (N,) 1 for evidence boxes
    boxes: list  # N TextBox
    size: tuple[int, int]  # (W, H) original
    rows: int
    cols: int
    cells: np.ndarray  # evidence cells (raster indices)
    units: list[np.ndarray]  # cells of each word
    ev_map: np.ndarray | None  # (rows, cols) structural evidence map, None when no rule fired
    damp: float  # structure.evidence_damp


def _cache_path(folder: Path | None, q: Question) -> Path | None:
    if folder is None:
        return None
    key = json.dumps([q.id, q.query, q.boxes, q.cell_rule, FEATURES])
    return folder / f"{hashlib.blake2b(key.encode(), digest_size=12).hexdigest()}.pkl"


def extract(
    questions: Sequence[Question],
    matcher: Any,
    ocr: DiskOcrCache,
    log: Callable[[str], None] | None = None,
    cache: str | Path | None = None,
    cached_only: bool = False,
) -> list[Record]:
    """Features, labels and scoring geometry of each question (questions without an evidence cell are skipped).

    With ``cache`` (a folder), each question's record is kept on disk (keyed by the question and the feature list)
    and reused: a second run with the same data skips OCR and MiniLM. Delete the folder after changing the rules.
    ``cached_only``: skip questions whose page has no OCR cache entry yet (no OCR runs)."""
    import dataclasses
    import pickle

    folder = Path(cache) if cache is not None else None
    from ..query import normalize_text
    from ..reading import TextBox, paint_boxes

    out: list[Record] = []
    pages: dict[str, tuple[Any, list] | None] = {}
    t0 = time.perf_counter()
    for n, q in enumerate(questions):
        path = _cache_path(folder, q)
        if path is not None and path.exists():
            rec = pickle.loads(path.read_bytes())
            rec.question = q
            out.append(rec)
            continue
        if q.doc not in pages:
            pages.clear()  # questions of one page are adjacent; keep one page in memory
            page = q.load_image()
            if cached_only and not (ocr.path(page) is not None and ocr.path(page).exists()):
                pages[q.doc] = None
                continue
            pages[q.doc] = (page.size, ocr.read(page))
        if pages[q.doc] is None:
            continue
        size, boxes = pages[q.doc]
        rows, cols = grid_of(*size)
        query = normalize_text(q.query)
        layout = matcher.layout_of(boxes) if boxes else None
        ev = matcher.evidence(boxes, query, layout)
        feats = box_features(matcher, boxes, query, layout, ev, size)
        ev_map = None
        if ev is not None and ev.regions:
            regions = [TextBox("", r) for r in ev.regions]
            ev_map = paint_boxes(regions, ev.weights or [1.0] * len(regions), rows, cols, size)
        cells = question_cells(q, size, rows, cols)
        out.append(
            Record(
                q,
                feats,
                box_labels(boxes, q.boxes),
                boxes,
                size,
                rows,
                cols,
                cells,
                list(matcher.units(boxes, rows, cols, size)),  # plain arrays in the pickled cache
                ev_map,
                matcher.evidence_damp,
            )
        )
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pickle.dumps(dataclasses.replace(out[-1], question=dataclasses.replace(q, image=None))))
        if log is not None and ((n + 1) % 100 == 0 or n + 1 == len(questions)):
            log(f"  features {n + 1}/{len(questions)}, {time.perf_counter() - t0:.0f} s")
    return out


# --------------------------------------------------------------------------------------------------- scoring


def text_map(record: Record, box_scores: np.ndarray) -> np.ndarray:
    """(rows, cols) map the box scores paint, with the structural budget rule (evidence first, the rest damped)."""
    from ..reading import paint_boxes

    out = paint_boxes(record.boxes, box_scores, record.rows, record.cols, record.size)
    if record.ev_map is not None:
        out = np.where(record.ev_map > 0, record.ev_map, record.damp * out).astype(np.float32)
    return out


def recall_at(
    record: Record, box_scores: np.ndarray, budgets: Sequence[tuple[str, float]] = BUDGETS
) -> dict[str, float]:
    """Evidence recall at each budget of the cells kept by top-k of ``text_map`` (whole words; ties: lower index)."""
    from ..attending import select

    flat = torch.from_numpy(text_map(record, box_scores).ravel())
    n = record.rows * record.cols
    out = {}
    for label, frac in budgets:
        k = max(1, min(n, round(frac * n)))
        keep = select(flat, k, units=record.units).numpy()
        out[label] = float(np.isin(record.cells, keep).mean())
    return out


def rule_scores(record: Record) -> np.ndarray:
    """The rules' own per-box scores (the ``rule`` feature)."""
    return record.feats[:, RULE]
