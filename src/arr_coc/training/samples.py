"""The answer objective's data: samples (an image, a question, the reference answer, its boxes) read from JSONL,
and the evidence cells their boxes cover on a grid (:mod:`arr_coc.training.answer` trains on them).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CELL_SHARE = 0.2  # evidence cell: the box covers at least this share of the cell ...
BOX_SHARE = 0.2  # ... or the cell at least this share of the box (benchmarks/evidence_recall.py's rule)
Log = Callable[[str], None]


@dataclass
class AnswerSample:
    """One training example: an image, a question about it and the reference answer.

    Attributes:
        id: the sample's id (for messages).
        image: a path (absolute, or as given), a PIL image or anything ``arr_coc.io.load_image`` accepts.
        query: the question.
        answer: the reference answer (the tokens whose loss is trained on).
        boxes: answer boxes [x0, y0, x1, y1] in the image's pixels (for the evidence objective), may be empty.
    """

    id: str
    image: Any
    query: str
    answer: str
    boxes: list[tuple[float, float, float, float]] = field(default_factory=list)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def parse_sample(record: Any, base: Path, where: str = "") -> AnswerSample:
    """An :class:`AnswerSample` from one JSON record; ``image`` is resolved against ``base`` (the file's folder).
    A record without ``id`` is named ``where`` (e.g. ``data.jsonl:12``): ids must be unique, as a run caches per id.

    Raises:
        ValueError: naming the missing or malformed field.
    """
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    missing = [k for k in ("image", "query", "answer") if not isinstance(record.get(k), str) or not record[k].strip()]
    if missing:
        raise ValueError(f"needs non-empty string fields image, query, answer; missing or empty: {', '.join(missing)}")
    boxes = []
    for box in record.get("boxes") or []:
        if not isinstance(box, (list, tuple)) or len(box) != 4 or not all(isinstance(v, (int, float)) for v in box):
            raise ValueError(f"boxes must be [[x0, y0, x1, y1], ...] in pixels, got {box!r}")
        x0, y0, x1, y1 = (float(v) for v in box)
        if not (x1 > x0 and y1 > y0):
            raise ValueError(f"box {box!r} is empty (needs x1 > x0 and y1 > y0)")
        boxes.append((x0, y0, x1, y1))
    image = Path(record["image"]).expanduser()
    return AnswerSample(
        id=str(record["id"]) if record.get("id") is not None else where or record["image"],
        image=image if image.is_absolute() else base / image,
        query=record["query"].strip(),
        answer=record["answer"].strip(),
        boxes=boxes,
    )


def load_samples(path: str | Path, log: Log = _stderr, limit: int | None = None) -> list[AnswerSample]:
    """Samples of a JSONL file; unusable lines are skipped with one line each through ``log``.

    Images are not opened here (that happens once per sample when it is first used, see :class:`AnswerTrainer`).

    Raises:
        FileNotFoundError: the file does not exist.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"--data {path} is not a file (a JSONL of {{id, image, query, answer[, boxes]}})")
    samples: list[AnswerSample] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                sample = parse_sample(json.loads(line), path.parent, f"{path.name}:{n}")
                if sample.id in seen:
                    log(f"{path.name}:{n}: id {sample.id!r} seen before; this line is named {path.name}:{n}")
                    sample.id = f"{path.name}:{n}"
                seen.add(sample.id)
                samples.append(sample)
            except (ValueError, json.JSONDecodeError) as err:
                log(f"skipped {path.name}:{n}: {err}")
            if limit is not None and len(samples) >= limit:
                break
    return samples


def evidence_cells(
    boxes: Sequence[tuple[float, float, float, float]], width: int, height: int, rows: int, cols: int
) -> np.ndarray:
    """Raster indices (ascending) of the grid cells that hold any of ``boxes`` (``benchmarks/evidence_recall.py``).

    Cell (r, c) covers x in [c * W / cols, (c + 1) * W / cols), y likewise (the processor's resize is a stretch).
    A box with no overlap with the image contributes nothing.
    """
    xs = np.arange(cols + 1) * width / cols
    ys = np.arange(rows + 1) * height / rows
    cell_area = (width / cols) * (height / rows)
    keep = np.zeros((rows, cols), dtype=bool)
    for x0, y0, x1, y1 in boxes:
        ox = np.clip(np.minimum(xs[1:], x1) - np.maximum(xs[:-1], x0), 0, None)  # (cols,)
        oy = np.clip(np.minimum(ys[1:], y1) - np.maximum(ys[:-1], y0), 0, None)  # (rows,)
        inter = oy[:, None] * ox[None, :]  # (rows, cols)
        if inter.max() <= 0:
            continue
        box_area = (x1 - x0) * (y1 - y0)
        mask = (inter >= CELL_SHARE * cell_area - 1e-9) | (inter >= BOX_SHARE * box_area - 1e-9)
        mask &= inter > 0
        mask.flat[int(np.argmax(inter))] = True
        keep |= mask
    return np.flatnonzero(keep.ravel())
