"""Benchmark samples from local files, in the layouts users actually have (nothing is downloaded).

``--data PATH`` may be:

* **a saved dataset folder**: what ``datasets.Dataset.save_to_disk`` / ``DatasetDict.save_to_disk`` writes
  (``state.json`` + ``dataset_info.json``, or ``dataset_dict.json`` with one folder a split), read with
  ``datasets.load_from_disk``. A ``DatasetDict`` gives the task's split (``--split`` to choose another).
* **parquet files**: one ``.parquet`` file, or a folder holding them at any depth, e.g. a download of the Hugging
  Face dataset repository (``hf download lmms-lab/DocVQA --repo-type dataset --local-dir DocVQA``):
  ``DocVQA/validation-00000-of-00006.parquet``, ``data/test-00000-of-00001.parquet``, or the parquet converter's
  ``default/validation/0000.parquet``. Files of the task's configuration folder (``DocVQA/`` vs
  ``InfographicVQA/``) and split are picked; a folder whose file names name no split is read whole.
* **a JSONL file** (any task; ``--task jsonl`` for your own data): one object a line,
  ``{"id": ..., "image": "path/relative/to/the/jsonl.png", "question": "...", "answers": ["...", ...]}``
  (``answers`` may be one string); other keys are kept as the sample's ``meta``.

Which columns each benchmark needs is in :mod:`arr_coc.evaluation.tasks`. The ``docgen`` task needs no files:
it draws the evidence-recall benchmark's documents (:mod:`arr_coc.evaluation.docgen`) with their exact answers.

Errors: an unknown layout, a missing file or a missing column raises :class:`DatasetError` naming the file and
what was expected, before anything runs. A single bad sample (unreadable row or JSON line, a missing question or
answer, an image that does not decode, a duplicate id) becomes a :class:`BadSample`; the run records it and goes
on. Images are decoded lazily (:meth:`Sample.load_image`), with ``arr_coc.io.load_image``'s checks.

Example:
    >>> from arr_coc.evaluation.datasets import open_dataset          # doctest: +SKIP
    >>> ds = open_dataset("docvqa", "DocVQA/")                         # doctest: +SKIP
    >>> next(iter(ds)).question                                        # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .tasks import TaskSpec, get_task

SPLIT_NAMES = ("train", "validation", "val", "test", "dev")
DOCGEN_PER_KIND = 4  # documents of each docgen kind without --limit (7 kinds: 28 samples)


class DatasetError(ValueError):
    """The data cannot be read as the task expects; the message names the file and what was expected."""


@dataclass
class Sample:
    """One question about one image.

    Attributes:
        id: unique id (the dataset's id column, else ``"row-N"`` / ``"line-N"``).
        question: the question as stored (the task builds the prompt from it).
        answers: the reference answers.
        image: what the image is read from: encoded bytes, a file path, or a PIL image.
        meta: extra columns kept for scoring and reporting (e.g. OCRBench's ``dataset``).
        where: file (and row / line) the sample comes from, for error messages.
    """

    id: str
    question: str
    answers: list[str]
    image: Any
    meta: dict[str, Any] = field(default_factory=dict)
    where: str = ""

    def load_image(self) -> Any:
        """The image as an RGB ``PIL.Image`` (EXIF orientation applied, transparency on white).

        Raises:
            ValueError: when the image is missing or does not decode (the message names the sample).
        """
        from ..io import load_image

        if self.image is None:
            raise ValueError(f"sample {self.id!r} ({self.where}) has no image")
        try:
            return load_image(self.image)
        except ValueError as err:
            raise ValueError(f"sample {self.id!r} ({self.where}): {err}") from None


@dataclass
class BadSample:
    """A sample that could not be read; the run records ``error`` under ``id`` and goes on."""

    id: str
    error: str


class LocalDataset:
    """The samples of one task from one local source, read lazily in file order.

    Args:
        task: the task (columns, split).
        kind: ``"saved"``, ``"parquet"``, ``"jsonl"`` or ``"docgen"``.
        files: the files read (parquet / jsonl), or the saved dataset's folder.
        length: number of samples (rows / lines), known without reading the images.
        rows: a function returning an iterator of :class:`Sample` / :class:`BadSample`.
    """

    def __init__(self, task: TaskSpec, kind: str, files: list[Path], length: int, rows: Any) -> None:
        self.task = task
        self.kind = kind
        self.files = files
        self.length = length
        self._rows = rows

    def __len__(self) -> int:
        return self.length

    def __iter__(self) -> Iterator[Sample | BadSample]:
        seen: set[str] = set()
        for item in self._rows():
            if isinstance(item, Sample):
                if item.id in seen:
                    item = BadSample(item.id, f"duplicate id {item.id!r} ({item.where}); only the first is evaluated")
                    yield item
                    continue
                seen.add(item.id)
            yield item

    def describe(self) -> str:
        """One line: what was read."""
        if self.kind == "docgen":
            return f"{self.length} documents drawn by arr_coc.evaluation.docgen"
        where = str(self.files[0]) + (f" and {len(self.files) - 1} more" if len(self.files) > 1 else "")
        return f"{self.length} samples in {self.kind} {where}"


# ----- building samples from a row ---------------------------------------------------------------------------------
def _text_list(value: Any) -> list[str] | None:
    """A row's answers as a list of strings, or ``None`` if it holds none."""
    if value is None:
        return None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [str(value)]
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    return None


def _image_source(value: Any, root: Path | None) -> Any:
    """What to decode: bytes, a path (relative ones against ``root``) or an image object."""
    if isinstance(value, dict):  # datasets.Image storage: {"bytes": b"...", "path": "..."}
        if value.get("bytes"):
            return value["bytes"]
        value = value.get("path")
    if isinstance(value, str) and value:
        path = Path(value)
        return path if path.is_absolute() or root is None else root / path
    return value or None


def _sample(task: TaskSpec, row: dict[str, Any], number: int, where: str, root: Path | None) -> Sample | BadSample:
    """One row (a dict of column values) as a :class:`Sample`, or a :class:`BadSample` saying what is wrong."""
    raw_id = row.get(task.id_column) if task.id_column else None
    sample_id = str(raw_id) if raw_id not in (None, "") else f"row-{number}"
    question = row.get(task.question_column)
    if not isinstance(question, str) or not question.strip():
        return BadSample(sample_id, f"{where}: no question in column {task.question_column!r}")
    answers = _text_list(row.get(task.answers_column))
    if not answers:
        return BadSample(sample_id, f"{where}: no reference answer in column {task.answers_column!r}")
    meta = {c: row.get(c) for c in task.meta_columns}
    image = _image_source(row.get(task.image_column), root)
    return Sample(sample_id, question, answers, image, meta, where)


def _check_columns(task: TaskSpec, names: list[str], where: str) -> None:
    missing = [c for c in task.columns if c not in names]
    if missing:
        raise DatasetError(
            f"{where} has no column {', '.join(repr(c) for c in missing)}, which the {task.name} task needs "
            f"(expected the columns of {task.source or 'the task'}: {', '.join(task.columns)}; found: "
            f"{', '.join(names) or 'none'})"
        )


# ----- layouts -----------------------------------------------------------------------------------------------------
def open_dataset(
    task: str | TaskSpec, data: str | Path | None = None, split: str | None = None, limit: int | None = None
) -> LocalDataset:
    """Open the local copy of ``task`` at ``data`` (see the module docstring for the layouts).

    Args:
        task: a task name (``docvqa``, ``infovqa``, ``chartqa``, ``textvqa``, ``ocrbench``, ``jsonl``, ``docgen``)
            or a :class:`TaskSpec`.
        data: the file or folder; ``None`` only for ``docgen``.
        split: which split to read (default: the task's, e.g. ``validation`` for DocVQA; for ``docgen`` ``dev`` or
            ``test``).
        limit: ``docgen`` only: draw enough documents for this many samples (default 4 of each of the 7 kinds).

    Raises:
        DatasetError: unknown layout, missing file, missing column, no file of the split.
    """
    spec = get_task(task) if isinstance(task, str) else task
    if spec.name == "docgen":
        return _docgen(spec, split or spec.split, limit)
    if data is None:
        raise DatasetError(
            f"the {spec.name} task needs --data: a saved dataset folder, parquet file(s) or a JSONL file"
        )
    path = Path(data).expanduser()
    if not path.exists():
        raise DatasetError(f"{path} does not exist (expected a saved dataset folder, parquet file(s) or a .jsonl file)")
    if path.is_file():
        if path.suffix == ".parquet":
            return _parquet(spec, [path], split)
        if path.suffix in (".jsonl", ".json") or spec.name == "jsonl":
            return _jsonl(spec, path)
        raise DatasetError(f"{path}: unknown file type {path.suffix!r}; expected a .parquet or a .jsonl file")
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        return _saved(spec, path, split)
    parquet = sorted(path.rglob("*.parquet"))
    if parquet:
        return _parquet(spec, _pick_parquet(spec, path, parquet, split), split)
    jsonl = sorted(path.glob("*.jsonl"))
    if len(jsonl) == 1:
        return _jsonl(spec, jsonl[0])
    raise DatasetError(
        f"{path}: unknown layout. Expected a folder written by datasets' save_to_disk (state.json or "
        "dataset_dict.json), a folder of .parquet files (a download of the Hugging Face dataset), one .parquet file "
        "or one .jsonl file"
    )


def _split_of(file: Path, root: Path) -> str | None:
    """The split a parquet file belongs to: its name's prefix (``validation-00000-of-00006``) or its folder."""
    prefix = file.stem.split("-")[0].split(".")[0]
    if prefix in SPLIT_NAMES:
        return prefix
    for part in file.relative_to(root).parts[:-1]:
        if part in SPLIT_NAMES:
            return part
    return None


def _pick_parquet(spec: TaskSpec, root: Path, files: list[Path], split: str | None) -> list[Path]:
    """The parquet files of ``spec``'s configuration and ``split`` among ``files`` (all under ``root``)."""
    if spec.config:  # e.g. DocVQA/ and InfographicVQA/ in one download
        own = [f for f in files if spec.config in f.relative_to(root).parts[:-1]]
        if own:
            files = own
    splits = {f: _split_of(f, root) for f in files}
    named = {s for s in splits.values() if s}
    if not named:
        return files
    wanted = split or spec.split
    chosen = [f for f, s in splits.items() if s == wanted]
    if not chosen:
        raise DatasetError(
            f"{root}: no parquet file of the {wanted!r} split (found splits: {', '.join(sorted(named))}); "
            "pass --split to choose one"
        )
    return chosen


def _parquet(spec: TaskSpec, files: list[Path], split: str | None) -> LocalDataset:
    try:
        import pyarrow.parquet as pq
    except ImportError as err:
        raise ImportError(
            f"reading parquet needs pyarrow ({err}); pip install -e '.[eval]' in the arr-coc-vis clone"
        ) from None
    metas = []
    for f in files:
        try:
            pf = pq.ParquetFile(f)
        except Exception as err:  # pyarrow raises ArrowInvalid / OSError for non-parquet files
            raise DatasetError(f"{f} is not a readable parquet file: {err}") from None
        _check_columns(spec, pf.schema_arrow.names, str(f))
        metas.append(pf.metadata.num_rows)

    def rows() -> Iterator[Sample | BadSample]:
        number = 0
        for f in files:
            pf = pq.ParquetFile(f)
            for batch in pf.iter_batches(batch_size=64, columns=list(spec.columns)):
                for row in batch.to_pylist():
                    yield _sample(spec, row, number, f"{f.name} row {number}", f.parent)
                    number += 1

    return LocalDataset(spec, "parquet", files, sum(metas), rows)


def _saved(spec: TaskSpec, path: Path, split: str | None) -> LocalDataset:
    try:
        import datasets
    except ImportError as err:
        raise ImportError(
            f"reading a saved dataset needs `datasets` ({err}); pip install -e '.[eval]' in the arr-coc-vis clone"
        ) from None
    try:
        ds = datasets.load_from_disk(str(path))
    except Exception as err:  # datasets raises FileNotFoundError / ValueError / arrow errors
        raise DatasetError(f"{path} could not be read with datasets.load_from_disk: {err}") from None
    if isinstance(ds, datasets.DatasetDict):
        wanted = split or spec.split
        if wanted not in ds:
            if len(ds) == 1 and split is None:
                wanted = next(iter(ds))
            else:
                raise DatasetError(
                    f"{path} has no {wanted!r} split (it has: {', '.join(ds)}); pass --split to choose one"
                )
        ds = ds[wanted]
    _check_columns(spec, ds.column_names, str(path))
    if isinstance(ds.features.get(spec.image_column), datasets.Image):
        ds = ds.cast_column(spec.image_column, datasets.Image(decode=False))  # decoded by arr_coc.io, lazily
    ds = ds.select_columns(list(spec.columns))

    def rows() -> Iterator[Sample | BadSample]:
        for number in range(len(ds)):
            try:
                row = ds[number]
            except Exception as err:  # a corrupt shard row
                yield BadSample(f"row-{number}", f"{path} row {number} could not be read: {err}")
                continue
            yield _sample(spec, row, number, f"{path.name} row {number}", path)

    return LocalDataset(spec, "saved dataset", [path], len(ds), rows)


def _jsonl(spec: TaskSpec, path: Path) -> LocalDataset:
    lines = path.read_text(encoding="utf-8").splitlines()
    fields = ("id", "image", "question", "answers")
    jspec = replace(
        spec,
        id_column="id",
        question_column="question",
        answers_column="answers",
        image_column="image",
        meta_columns=(),
    )
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]

    def rows() -> Iterator[Sample | BadSample]:
        for n, line in numbered:
            where = f"{path.name} line {n}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as err:
                yield BadSample(f"line-{n}", f"{where} is not JSON: {err}")
                continue
            if not isinstance(item, dict):
                yield BadSample(f"line-{n}", f"{where} is not a JSON object")
                continue
            if item.get("id") in (None, ""):
                item["id"] = f"line-{n}"
            missing = [k for k in ("image", "question", "answers") if k not in item]
            if missing:
                yield BadSample(
                    str(item["id"]),
                    f"{where} has no {', '.join(repr(k) for k in missing)} (each line needs id, image, question, "
                    "answers)",
                )
                continue
            sample = _sample(jspec, item, n, where, path.parent)
            if isinstance(sample, Sample):
                sample.meta = {k: v for k, v in item.items() if k not in fields}
            yield sample

    return LocalDataset(spec, "jsonl", [path], len(numbered), rows)


# ----- docgen ------------------------------------------------------------------------------------------------------
def _docgen_module() -> Any:
    """The document generator, :mod:`arr_coc.evaluation.docgen` (it ships in the package)."""
    from . import docgen

    return docgen


def _docgen(spec: TaskSpec, split: str, limit: int | None) -> LocalDataset:
    """``DOCGEN_PER_KIND`` documents of every kind (or enough for ``limit``), kind-major, drawn when iterated."""
    docgen = _docgen_module()
    if split not in docgen.SPLITS:
        raise DatasetError(f"the docgen task has splits {', '.join(docgen.SPLITS)}, not {split!r}")
    n = DOCGEN_PER_KIND if limit is None else max(1, math.ceil(limit / len(docgen.KINDS)))
    length = n * len(docgen.KINDS)

    def rows() -> Iterator[Sample | BadSample]:
        for kind in docgen.KINDS:
            for i in range(n):
                s = docgen.make_sample(split, kind, i)
                yield Sample(s.id, s.query, [s.answer], s.image, {"kind": s.kind}, f"docgen {s.id}")

    return LocalDataset(spec, "docgen", [Path(docgen.__file__)], length, rows)
