"""Annotated questions for the evidence objective: one schema for real documents, users' own data and docgen.

The schema is realdocs-dev's (``/work/shared/realdocs-dev/README.md``), one JSON object a line::

    {"id", "query", "boxes": [[x0, y0, x1, y1], ...], "image": path relative to the file, "doc_type",
     "paraphrased", "template", ...}

``boxes`` are the answer's evidence boxes in original pixels. Only ``id``, ``query``, ``boxes`` and ``image`` are
required; ``doc_type`` defaults to "doc", ``paraphrased`` to false, ``template`` to "". The evidence cells of a
question are realdocs' rule (``score.py``): every cell a box covers by >= 25% of the cell's area plus the cell holding
each box's centre.

Folds are by SOURCE by default (``source_folds``): every question of one source (the PDF collection or file
family, the receipt's issuer, the form's producer, the docgen generator) is in the same fold, so a held-out fold
holds documents whose source the model never saw, as a user's new documents will be. ``source`` is the JSON's
``"source"`` when it is a string, otherwise derived from realdocs-dev's fields (``derive_sources``). Document-level
folds (``folds``: every question of one page in one fold) are kept as an option; they share sources across folds
and overestimate unseen documents (issue 26: 0.98-1.00 on tables in folds, 0.78 on new tables).
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..grid import GridSpec

FAMILY = "qwen2.5-vl"
MAX_PIXELS = 1280 * 28 * 28  # 1,003,520: the grid realdocs-dev's README scores on
MIN_OVERLAP = 0.25  # realdocs' evidence-cell rule


@dataclass
class Question:
    """One annotated question.

    Attributes:
        id: unique id.
        query: the question.
        boxes: evidence boxes ``(x0, y0, x1, y1)`` in original pixels.
        doc: the document (page) it belongs to; folds never split a document.
        doc_type: e.g. "realform", "realreceipt", "realtable", or a docgen kind.
        paraphrased: the query shares no content word with the printed key.
        template: the wording's template name.
        origin: "jsonl" (realdocs schema) or "docgen".
        source: the source the document comes from (folds never split a source; see ``derive_sources``).
        image_path: the page on disk (None for generated pages, which carry ``image``).
        image: the page, when generated in memory.
    """

    id: str
    query: str
    boxes: list[tuple[float, float, float, float]]
    doc: str
    doc_type: str = "doc"
    paraphrased: bool = False
    template: str = ""
    origin: str = "jsonl"
    source: str = ""
    cell_rule: str = "realdocs"  # evidence cells: "realdocs" (score.py) or "docgen" (benchmarks/evidence_recall.py)
    image_path: Path | None = None
    image: Image.Image | None = field(default=None, repr=False)

    def load_image(self) -> Image.Image:
        """The page as RGB."""
        if self.image is not None:
            return self.image.convert("RGB")
        if self.image_path is None:
            raise ValueError(f"question {self.id} has neither an image nor an image path")
        with Image.open(self.image_path) as im:
            return im.convert("RGB")


def load_jsonl(path: str | Path) -> list[Question]:
    """Questions of a realdocs-schema JSONL file (a folder means ``folder/questions.jsonl``).

    Raises:
        ValueError: for a missing file or folder, a file without questions, or naming the line (``path:n``) when a
            line is not JSON, lacks a required field or its boxes are malformed.
    """
    path = Path(path)
    if not path.exists():
        raise ValueError(f"--data {str(path)!r} does not exist (give a questions .jsonl file or a folder holding one)")
    if path.is_dir():
        if not (path / "questions.jsonl").is_file():
            raise ValueError(f"--data folder {str(path)!r} has no questions.jsonl")
        path = path / "questions.jsonl"
    out: list[Question] = []
    objs: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{n}: not JSON ({err.msg} at column {err.colno})") from None
        if not isinstance(q, dict):
            raise ValueError(f"{path}:{n}: a line must be a JSON object with id, query, boxes, image")
        missing = [k for k in ("id", "query", "boxes", "image") if k not in q]
        if missing:
            raise ValueError(f"{path}:{n}: missing field(s) {missing} (need id, query, boxes, image)")
        try:
            boxes = [tuple(float(v) for v in b) for b in q["boxes"]]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{n}: boxes must be [[x0, y0, x1, y1], ...]") from exc
        if not boxes or any(len(b) != 4 for b in boxes):
            raise ValueError(f"{path}:{n}: boxes must be a non-empty list of [x0, y0, x1, y1]")
        image = Path(q["image"])
        image = image if image.is_absolute() else path.parent / image
        out.append(
            Question(
                str(q["id"]),
                str(q["query"]),
                boxes,
                doc=str(q["image"]),
                doc_type=str(q.get("doc_type", "doc")),
                paraphrased=bool(q.get("paraphrased", False)),
                template=str(q.get("template", "")),
                origin="jsonl",
                image_path=image,
            )
        )
        objs.append(q)
    if not out:
        raise ValueError(f"{path} holds no questions (it is empty or has blank lines only)")
    for question, source in zip(out, derive_sources(objs), strict=True):
        question.source = source
    return out


def _bates_range(file: str) -> str:
    """FUNSD's file name is the scanned page's Bates number (tobacco-litigation documents); its leading digits name
    the producing party's numbering range: the first 4 of a 10-digit number, the first 2 otherwise (a proxy for the
    form's producer; the number's length separates numbering schemes)."""
    stem = re.split(r"[_.]", Path(file).name)[0]
    return f"{len(stem)}d{stem[: 4 if len(stem) == 10 else 2]}"


def _pdf_family(file: str) -> str:
    """A table PDF's file family: the ICDAR 2013 competition PDFs by region, otherwise the file itself."""
    stem = Path(file).stem
    m = re.match(r"(?:cam_|jsv_)?(eu|us)-\d+$", stem)
    return f"icdar2013-{m.group(1)}" if m else stem


def _issuer(name: str) -> str:
    """A receipt issuer's key: the first two words of its name, upper-case alphanumerics."""
    words = re.findall(r"[A-Z0-9]+", name.upper())
    return " ".join(words[:2]) or "?"


def derive_sources(objs: Sequence[dict[str, Any]]) -> list[str]:
    """The source of each realdocs-schema question (``objs``: the JSON objects of one file), reproducibly:

    * the object's ``"source"`` when it is a string (datasets that know their source say it);
    * realform (FUNSD): ``funsd:<Bates range>`` of the page's file (``_bates_range``);
    * realreceipt (SROIE): ``sroie:<issuer>``, the first two words of the page's answer to its company question,
      or ``sroie:file:<file>`` when the page has no company question;
    * realtable: ``pdf:<family>`` of ``render.source`` (``_pdf_family``);
    * anything else: the page (``image``) itself, i.e. document-level.
    """
    company: dict[str, str] = {}
    for q in objs:
        if q.get("doc_type") == "realreceipt" and q.get("key") == "company" and q.get("answer"):
            company.setdefault(str(q["image"]), _issuer(str(q["answer"])))
    out = []
    for q in objs:
        render = q.get("render") if isinstance(q.get("render"), dict) else {}
        doc_type = q.get("doc_type")
        if isinstance(q.get("source"), str) and q["source"]:
            out.append(str(q["source"]))
        elif doc_type == "realform" and render.get("file"):
            out.append(f"funsd:{_bates_range(str(render['file']))}")
        elif doc_type == "realreceipt":
            out.append(
                f"sroie:{company[str(q['image'])]}" if str(q["image"]) in company else f"sroie:file:{q['image']}"
            )
        elif doc_type == "realtable" and render.get("source"):
            out.append(f"pdf:{_pdf_family(str(render['source']))}")
        else:
            out.append(f"page:{q['image']}")
    return out


def _docgen() -> Any:
    """The docgen module (shipped in the package as ``arr_coc.evaluation.docgen``)."""
    from ..evaluation import docgen

    return docgen


def docgen_questions(split: str, n_per_kind: int, seed: int = 0) -> list[Question]:
    """Generated questions of docgen's ``split`` ("dev" trains; "test" is only ever evaluated on)."""
    docgen = _docgen()
    out = []
    for s in docgen.generate(split, n_per_kind, seed):
        out.append(
            Question(
                f"docgen/{s.id}",
                s.query,
                [tuple(float(v) for v in s.answer_box)],
                doc=f"docgen/{s.id}",
                doc_type=s.kind,
                paraphrased=bool(s.paraphrased),
                template="docgen",
                origin="docgen",
                source=f"docgen:{s.kind}",  # one generator per kind: its templates, fonts and wordings
                image=s.image,
            )
        )
    return out


def folds(questions: Sequence[Question], k: int = 5, seed: int = 0) -> list[int]:
    """Fold (0..k-1) of each question: by document, pages dealt round-robin per doc_type in a seeded order."""
    docs: dict[str, list[str]] = {}
    for q in questions:
        docs.setdefault(q.doc_type, [])
        if q.doc not in docs[q.doc_type]:
            docs[q.doc_type].append(q.doc)
    fold_of: dict[str, int] = {}
    rng = random.Random(seed)
    for doc_type in sorted(docs):
        pages = sorted(docs[doc_type])
        rng.shuffle(pages)
        for i, page in enumerate(pages):
            fold_of[page] = i % k
    return [fold_of[q.doc] for q in questions]


def source_folds(questions: Sequence[Question], k: int = 5, seed: int = 0) -> list[int]:
    """Fold (0..k-1) of each question, grouped by ``Question.source`` (no source in two folds; a question without a
    source is its own page's source).

    Within each doc_type, sources are dealt largest first (ties in a seeded order) to the fold holding the fewest of
    that doc_type's questions so far, so the folds are balanced per doc_type; a source holding at least 1/k of its
    doc_type's questions gets a fold of its own for that doc_type (leave-one-source-out for the large ones). A
    doc_type with fewer than k sources is absent from some folds (when held out, none of its sources is trained on).
    """
    size: dict[str, int] = {}
    kind: dict[str, str] = {}
    for q in questions:
        src = q.source or f"page:{q.doc}"
        size[src] = size.get(src, 0) + 1
        kind.setdefault(src, q.doc_type)
    rng = random.Random(seed)
    fold_of: dict[str, int] = {}
    for doc_type in sorted(set(kind.values())):
        sources = sorted(s for s in kind if kind[s] == doc_type)
        rng.shuffle(sources)
        sources.sort(key=lambda s: -size[s])  # stable: the shuffle breaks ties
        load = [0] * k
        for s in sources:
            f = min(range(k), key=lambda i: (load[i], i))
            fold_of[s] = f
            load[f] += size[s]
    return [fold_of[q.source or f"page:{q.doc}"] for q in questions]


def grid_of(width: int, height: int) -> tuple[int, int]:
    """(rows, cols) of the Qwen2.5-VL grid at ``MAX_PIXELS`` for a ``width x height`` page."""
    g = GridSpec.for_family(FAMILY, max_pixels=MAX_PIXELS).grid_for(height, width)
    return g.rows, g.cols


def evidence_cells(boxes: Sequence[Sequence[float]], size: tuple[int, int], rows: int, cols: int) -> np.ndarray:
    """Raster indices (ascending) of the evidence cells of ``boxes`` (realdocs' rule, ``score.py``): cells a box
    covers by >= 25% of the cell's area, plus the cell holding each box's centre. The grid is a plain stretch of the
    page (cell (r, c) spans x in [c W / cols, (c + 1) W / cols), y likewise)."""
    w0, h0 = float(size[0]), float(size[1])
    cw, ch = w0 / cols, h0 / rows  # a cell in original pixels (square on the resized image)
    out: set[int] = set()
    for b in boxes:
        x0, y0, x1, y1 = (float(v) for v in b)
        c_lo, c_hi = max(0, int(x0 // cw)), min(cols - 1, int(math.ceil(x1 / cw)) - 1)
        r_lo, r_hi = max(0, int(y0 // ch)), min(rows - 1, int(math.ceil(y1 / ch)) - 1)
        for r in range(r_lo, r_hi + 1):
            oy = (min(y1, (r + 1) * ch) - max(y0, r * ch)) / ch
            if oy <= 0:
                continue
            for c in range(c_lo, c_hi + 1):
                ox = (min(x1, (c + 1) * cw) - max(x0, c * cw)) / cw
                if ox > 0 and ox * oy >= MIN_OVERLAP - 1e-9:
                    out.add(r * cols + c)
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        out.add(min(rows - 1, max(0, int(cy // ch))) * cols + min(cols - 1, max(0, int(cx // cw))))
    return np.array(sorted(out), dtype=np.int64)


def box_labels(ocr_boxes: Sequence[Any], answer_boxes: Sequence[Sequence[float]], share: float = 0.3) -> np.ndarray:
    """(N,) 1.0 for each OCR box that overlaps an evidence box by at least ``share`` of the smaller one's area."""
    out = np.zeros(len(ocr_boxes), dtype=np.float32)
    for i, tb in enumerate(ocr_boxes):
        x0, y0, x1, y1 = tb.box
        a = max(x1 - x0, 1e-6) * max(y1 - y0, 1e-6)
        for bx0, by0, bx1, by1 in answer_boxes:
            inter = max(0.0, min(x1, bx1) - max(x0, bx0)) * max(0.0, min(y1, by1) - max(y0, by0))
            b = max(bx1 - bx0, 1e-6) * max(by1 - by0, 1e-6)
            if inter >= share * min(a, b):
                out[i] = 1.0
                break
    return out


def docgen_cells(box: Sequence[float], size: tuple[int, int], rows: int, cols: int, share: float = 0.2) -> np.ndarray:
    """Raster indices of docgen's answer cells (``benchmarks/evidence_recall.py``): box∩cell >= 20% of the cell or
    of the box, plus the cell of largest overlap."""
    x0, y0, x1, y1 = (float(v) for v in box)
    w, h = float(size[0]), float(size[1])
    xs = np.arange(cols + 1) * w / cols
    ys = np.arange(rows + 1) * h / rows
    ox = np.clip(np.minimum(xs[1:], x1) - np.maximum(xs[:-1], x0), 0, None)  # (cols,)
    oy = np.clip(np.minimum(ys[1:], y1) - np.maximum(ys[:-1], y0), 0, None)  # (rows,)
    inter = oy[:, None] * ox[None, :]  # (rows, cols)
    if inter.max() <= 0:
        return np.zeros(0, dtype=np.int64)
    cell_area, box_area = (w / cols) * (h / rows), max(x1 - x0, 0) * max(y1 - y0, 0)
    mask = ((inter >= share * cell_area - 1e-9) | (inter >= share * box_area - 1e-9)) & (inter > 0)
    mask.flat[int(np.argmax(inter))] = True
    return np.flatnonzero(mask.ravel())


def question_cells(q: Question, size: tuple[int, int], rows: int, cols: int) -> np.ndarray:
    """The evidence cells of ``q`` under its benchmark's rule."""
    if q.cell_rule == "docgen":
        return docgen_cells(q.boxes[0], size, rows, cols)
    return evidence_cells(q.boxes, size, rows, cols)


def decoded_text(s: str) -> bool:
    """Whether a PDF reader (pdfplumber) decoded ``s``: a glyph without a Unicode mapping comes out as ``(cid:N)``,
    text no reader sees on the page, so a question quoting it (or an answer holding it) cannot be asked."""
    return "(cid:" not in s
