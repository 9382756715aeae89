"""Text-line recognition: PP-OCR's CTC recogniser (the ONNX model bundled with rapidocr) on onnxruntime.

rapidocr's own recognition stage is most of the OCR time on a dense page. This module runs the same network with
three changes that cut its work, each a field of ``OcrConfig`` and each measured (``benchmarks/stages.py``,
``benchmarks/evidence_recall.py``):

* ``charset``: which of the model's 18,710 classes (Simplified and Traditional Chinese, Japanese kana and kanji,
  Latin-script letters, digits, punctuation) a line may be read as. ``"auto"`` (the default) computes every class and
  reads each line in its own script: a line whose full reading holds at least ``script_share`` of its characters
  outside the Latin classes is read with every class, any other line with the Latin classes alone (the argmax over
  the Latin classes of the same probabilities), so a Latin line reads as with ``"latin"`` and a Chinese or Japanese
  line, or a mixed one ("合计：¥492.50"), as with ``"all"``. On onnxruntime ``"auto"`` first computes only the
  script gate's classes (``gate_mask``: the Latin ones, the letters of other scripts that are not ideographs, and the
  5,000 ideographs in common use, a third of the head) and computes every class only for the lines where one of the
  gate's non-Latin letters is the most likely class of a frame: an English page costs about what the sliced head
  costs, and each line reads as with every class computed (on 45 Chinese and Japanese pages and 11 English ones,
  every one of the 1,563 lines read in their script went through the gate, and 1 of the other 1,045).
  ``"latin"`` slices the head to the classes a Latin-script document needs (ASCII, Latin-1 and Latin Extended-A/B
  letters, general punctuation, currency symbols, the CTC blank and space: 605 of 18,710) once when the model loads;
  ``"all"`` keeps every class for every line. Korean (Hangul) is not among the shipped model's classes: it needs
  PP-OCR's separate Korean model (``rec_model_path``).
* ``squeeze``: lines are resized to the model's 48 px height and ``squeeze`` times their proportional width (the
  convolutions' cost is proportional to width; text stays legible to the model down to about 0.75).
* batching: lines are sorted by width and padded only to the widest line of their batch (rapidocr pads every batch
  to at least 320 px).

Decoding is greedy CTC, as in rapidocr: per frame the most likely class, repeats collapsed, blanks dropped; a line's
confidence is the mean probability of its kept frames. Each kept character also records where it sits across the
line (``LineText.char_x``), which ``TextReader`` uses to split "Total: $99.00" into a key box and a value box.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import INSTALL_HINT, MissingExtraError

REC_HEIGHT = 48  # input height of the PP-OCR recogniser (fixed in the ONNX graph)
CHARSETS = ("auto", "latin", "all")
# Latin-script documents: everything below U+0250 (ASCII, Latin-1, Latin Extended-A/B), general punctuation, super/
# subscripts and currency symbols (U+2000-U+20CF), and the trade mark sign.
_LATIN_RANGES = ((0x0000, 0x0250), (0x2000, 0x20D0), (0x2122, 0x2123))


@dataclass(frozen=True)
class LineText:
    """One recognised line.

    Attributes:
        text: The decoded string.
        score: Mean probability of the kept CTC frames, in [0, 1] (0 for an empty line).
        char_x: For each character of ``text``, the centre of its CTC frame as a fraction of the line's width
            (0 = left edge of the crop, 1 = right edge).
    """

    text: str
    score: float
    char_x: tuple[float, ...]


def _usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def latin_classes(characters: Sequence[str]) -> np.ndarray:
    """Indices of the classes kept by ``charset="latin"``: the blank (index 0), every single character in
    ``_LATIN_RANGES``, and the final space class."""
    keep = [0]
    for i, ch in enumerate(characters[1:-1], start=1):
        if len(ch) == 1 and any(lo <= ord(ch) < hi for lo, hi in _LATIN_RANGES):
            keep.append(i)
    keep.append(len(characters) - 1)
    return np.asarray(keep, dtype=np.int64)


def latin_mask(characters: Sequence[str]) -> np.ndarray:
    """(K,) bool: which of ``characters`` are ``charset="latin"``'s classes (blank and space included)."""
    mask = np.zeros(len(characters), dtype=bool)
    mask[latin_classes(characters)] = True
    return mask


# ideographs: CJK Unified Ideographs, Extension A, Compatibility Ideographs, and the supplementary planes
_IDEOGRAPH_RANGES = ((0x3400, 0x4DC0), (0x4E00, 0xA000), (0xF900, 0xFB00), (0x20000, 0x40000))
# ideographs in common use: GB2312 level 1 (the 3,755 most used Simplified characters) and JIS X 0208 level 1 (the
# 2,965 most used kanji), as (codec, first byte from, first byte to) of their two-byte codes
_COMMON_IDEOGRAPHS = (("gb2312", 0xB0, 0xD7), ("euc_jp", 0xB0, 0xCF))


def _common_ideograph(ch: str) -> bool:
    for codec, lo, hi in _COMMON_IDEOGRAPHS:
        try:
            code = ch.encode(codec)
        except UnicodeEncodeError:
            continue
        if len(code) == 2 and lo <= code[0] <= hi:
            return True
    return False


def gate_mask(characters: Sequence[str]) -> np.ndarray:
    """(K,) bool: the script gate's classes for ``charset="auto"``: the Latin classes (``latin_mask``), every letter
    of another script that is not an ideograph (kana, Greek, Cyrillic, full-width Latin), and the ideographs in
    common use (GB2312 and JIS X 0208 level 1; 6,074 of the shipped model's 18,710 classes in all).

    A line is read with every class only where, on one of its frames, the most likely of these classes is not a Latin
    one: a Chinese or Japanese line has a frame where a common character or a kana beats every Latin class even when
    its own character is a rare one (``best_path``).
    """
    mask = latin_mask(characters)
    for i, ch in enumerate(characters[1:-1], start=1):
        if mask[i] or len(ch) != 1 or not ch.isalpha():
            continue
        ideograph = any(lo <= ord(ch) < hi for lo, hi in _IDEOGRAPH_RANGES)
        mask[i] = not ideograph or _common_ideograph(ch)
    return mask


def _renormalise(probs: np.ndarray) -> np.ndarray:
    """(B, T, K) probabilities of a subset of classes, scaled to sum to 1 over the subset."""
    return probs / np.maximum(probs.sum(-1, keepdims=True), np.finfo(np.float32).tiny)


def bundled_rec_model() -> Path:
    """Path of the recognition model rapidocr ships and uses by default (its ``Rec`` settings in ``config.yaml``)."""
    try:
        import rapidocr
        import yaml
    except ImportError as e:
        raise MissingExtraError(f"text recognition needs rapidocr ({e}); {INSTALL_HINT}") from e
    root = Path(rapidocr.__file__).parent
    rec = yaml.safe_load((root / "config.yaml").read_text())["Rec"]
    path = root / "models" / f"{rec['ocr_version']}_rec_{rec['model_type']}.onnx"
    if not path.is_file():
        raise MissingExtraError(f"rapidocr's recognition model is not at {path}; {INSTALL_HINT}")
    return path


def load_rec_model(path: Path, charset: str) -> tuple[bytes, list[str], np.ndarray | None]:
    """The serialised recognition model (its head sliced to ``charset``), its class list (blank first), and the
    indices of the kept classes among the full model's (None for ``"all"``)."""
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as e:
        raise MissingExtraError(f"text recognition needs the onnx package ({e}); {INSTALL_HINT}") from e
    model = onnx.load(str(path))
    meta = {p.key: p for p in model.metadata_props}
    if "character" not in meta:
        raise ValueError(f"{path} has no 'character' metadata: not a PP-OCR recognition model")
    characters = ["blank", *meta["character"].value.splitlines(), " "]  # as rapidocr's CTCLabelDecode builds it
    if charset in ("all", "auto"):
        return model.SerializeToString(), characters, None
    keep = latin_classes(characters)
    matmul, _, bias_name = _head_nodes(model)  # the classifier head: hidden -> classes, and its bias
    inits = {t.name: t for t in model.graph.initializer}
    weight = numpy_helper.to_array(inits[matmul.input[1]])  # (hidden, classes)
    if weight.shape[-1] != len(characters):
        raise ValueError(f"{path}: head has {weight.shape[-1]} classes but the metadata lists {len(characters)}")
    bias = numpy_helper.to_array(inits[bias_name])  # (classes,)
    inits[matmul.input[1]].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(weight[:, keep]), matmul.input[1]))
    inits[bias_name].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(bias[keep]), bias_name))
    for out in model.graph.output:  # the declared class dimension no longer holds
        dims = out.type.tensor_type.shape.dim
        if len(dims) and dims[-1].dim_value == len(characters):
            dims[-1].ClearField("dim_value")
            dims[-1].dim_param = "classes"
    return model.SerializeToString(), [characters[i] for i in keep], keep


def _head_nodes(model: Any) -> tuple[Any, Any, str]:
    """The classifier head of a PP-OCR recognition graph: its MatMul (hidden -> classes), the Add of its bias, and
    the name of the bias initializer."""
    nodes = list(model.graph.node)
    inits = {t.name for t in model.graph.initializer}
    matmul = next(n for n in reversed(nodes) if n.op_type == "MatMul" and n.input[1] in inits)
    add = next(n for n in nodes if n.op_type == "Add" and matmul.output[0] in n.input)
    return matmul, add, next(i for i in add.input if i in inits)


def split_rec_model(blob: bytes, gate: np.ndarray, latin: np.ndarray) -> tuple[bytes, bytes]:
    """``charset="auto"`` on onnxruntime: the recognition model cut at its classifier head into two graphs.

    * the body: ``x`` -> ``latin_probs`` (B, T, L), the softmax over the Latin classes (the sliced head's output);
      ``gate_arg`` (B, T) int64, the most likely of the gate's classes (``gate_mask``: the Latin classes first, in
      order, then the others; an index >= L is a letter of another script); ``features`` (B, T, hidden), the head's
      input.
    * the head: ``features`` (N, T, hidden) -> (N, T, K) every class's probability (the full model's output).

    Args:
        blob: the full model (``load_rec_model(path, "all")``).
        gate: (K,) bool, the gate's classes (``gate_mask``); they include every class of ``latin``.
        latin: (K,) bool, the Latin classes (``latin_mask``).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load_from_string(blob)
    matmul, add, bias_name = _head_nodes(model)
    inits = {t.name: t for t in model.graph.initializer}
    weight = numpy_helper.to_array(inits[matmul.input[1]])  # (hidden, classes)
    bias = numpy_helper.to_array(inits[bias_name])  # (classes,)
    features = matmul.input[0]
    order = np.concatenate([np.flatnonzero(latin), np.flatnonzero(gate & ~latin)])  # Latin classes first
    n_latin = int(latin.sum())
    opset = model.opset_import

    # the head alone: features -> every class
    head = helper.make_graph(
        [
            helper.make_node("MatMul", ["features", "w"], ["mm"]),
            helper.make_node("Add", ["mm", "b"], ["logits"]),
            helper.make_node("Softmax", ["logits"], ["probs"], axis=2),
        ],
        "head",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", "T", weight.shape[0]])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", "T", weight.shape[1]])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    head_model = helper.make_model(head, opset_imports=opset)

    # the body: everything before the head, then the gate's classes
    before, produced = [], set()
    for n in model.graph.node:
        if n is matmul:
            break
        before.append(n)
        produced.update(n.output)
    if features not in produced:
        raise ValueError("the recognition model's head input is not produced before its head")
    graph = model.graph
    del graph.node[:]
    graph.node.extend(before)
    graph.node.extend(
        [
            helper.make_node("MatMul", [features, "gate_w"], ["gate_mm"]),
            helper.make_node("Add", ["gate_mm", "gate_b"], ["gate_logits"]),
            helper.make_node("Slice", ["gate_logits", "latin_from", "latin_to", "last_axis"], ["latin_logits"]),
            helper.make_node("Softmax", ["latin_logits"], ["latin_probs"], axis=2),
            helper.make_node("ArgMax", ["gate_logits"], ["gate_arg"], axis=2, keepdims=0),
        ]
    )
    kept = [t for t in graph.initializer if t.name not in (matmul.input[1], bias_name)]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.ascontiguousarray(weight[:, order]), "gate_w"),
            numpy_helper.from_array(np.ascontiguousarray(bias[order]), "gate_b"),
            numpy_helper.from_array(np.array([0], dtype=np.int64), "latin_from"),
            numpy_helper.from_array(np.array([n_latin], dtype=np.int64), "latin_to"),
            numpy_helper.from_array(np.array([2], dtype=np.int64), "last_axis"),
        ]
    )
    del graph.output[:]
    graph.output.extend(
        [
            helper.make_tensor_value_info("latin_probs", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("gate_arg", TensorProto.INT64, None),
            helper.make_tensor_value_info(features, TensorProto.FLOAT, None),
        ]
    )
    del graph.value_info[:]
    return model.SerializeToString(), head_model.SerializeToString()


class LineRecognizer:
    """CTC text-line recogniser on onnxruntime (CPU); the model loads on first use. Thread-safe.

    Args:
        model_path: PP-OCR recognition ONNX model (None: the one bundled with rapidocr).
        charset: ``"auto"`` (each line in its script), ``"latin"`` (sliced head) or ``"all"`` (module docstring).
        squeeze: Horizontal scale applied to each line after resizing it to 48 px height, in (0, 1].
        batch_size: Lines per onnxruntime call (lines are sorted by width first).
        workers: Batches recognised at once, each on one thread (the session runs single-threaded per call; on
            small convolutions this scales better than onnxruntime's intra-op threads). None: the usable cores.
        run: Optional replacement for the network, ``run(x) -> probs`` with ``x`` (B, 3, 48, W) float32 in [-1, 1]
            and ``probs`` (B, T, classes) (e.g. the same graph in another runtime); the class list still comes from
            ``model_path``.
        script_share: ``charset="auto"``: a line with at least this share of its non-blank frames read outside the
            Latin classes is read with every class.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        charset: str = "auto",
        squeeze: float = 1.0,
        batch_size: int = 8,
        workers: int | None = None,
        run: Callable[[np.ndarray], np.ndarray] | None = None,
        script_share: float = 0.1,
    ) -> None:
        if charset not in CHARSETS:
            raise ValueError(f"charset must be one of {CHARSETS}, got {charset!r}")
        if not 0.0 < squeeze <= 1.0:
            raise ValueError(f"squeeze must be in (0, 1], got {squeeze}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model_path = Path(model_path) if model_path is not None else None
        self.charset = charset
        self.squeeze = float(squeeze)
        self.batch_size = int(batch_size)
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be None or >= 1, got {workers}")
        self.workers = int(workers) if workers is not None else _usable_cores()
        self._run = run
        self._session: Any = None
        self.characters: list[str] = []
        self.script_share = float(script_share)
        self.latin: np.ndarray | None = None  # (K,) bool for charset="auto" (``latin_mask``), None otherwise
        self.letters: np.ndarray | None = None  # (K,) bool for charset="auto" (``letter_mask``)
        self.gate: np.ndarray | None = None  # (K,) bool for charset="auto" (``gate_mask``)
        self._split: tuple[Callable[[np.ndarray], list[np.ndarray]], Callable[[np.ndarray], np.ndarray]] | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded."""
        return bool(self.characters)

    def load(self) -> None:
        """Load the model (and slice its head) now; a no-op when loaded."""
        if self.characters:
            return
        with self._lock:
            if self.characters:
                return
            try:
                import onnxruntime as ort
            except ImportError as e:
                raise MissingExtraError(f"text recognition needs onnxruntime ({e}); {INSTALL_HINT}") from e
            blob, characters, keep = load_rec_model(self.model_path or bundled_rec_model(), self.charset)
            if self._run is not None and keep is not None:
                # a replacement network computes every class: a softmax restricted to the kept classes is the full
                # softmax's kept probabilities renormalised, so the result equals the sliced head's
                full = self._run
                self._run = lambda x: _renormalise(np.asarray(full(x))[..., keep])
            if self.charset == "auto":
                self.latin, self.letters = latin_mask(characters), letter_mask(characters)
                self.gate = gate_mask(characters)
            if self._run is None:
                opts = ort.SessionOptions()
                opts.log_severity_level = 3
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                opts.intra_op_num_threads = 1  # parallel across batches instead (``workers``)
                opts.inter_op_num_threads = 1
                if self.charset == "auto":  # the gate's classes first, every class for the lines it lets through
                    assert self.gate is not None and self.latin is not None
                    body_blob, head_blob = split_rec_model(blob, self.gate, self.latin)
                    body = ort.InferenceSession(body_blob, opts, providers=["CPUExecutionProvider"])
                    head = ort.InferenceSession(head_blob, opts, providers=["CPUExecutionProvider"])
                    name = body.get_inputs()[0].name
                    self._split = (
                        lambda x: body.run(None, {name: x}),
                        lambda f: head.run(None, {"features": f})[0],
                    )
                    self._run = lambda x: self._split[1](self._split[0](x)[2])  # type: ignore[index]
                    self._session = body
                else:
                    session = ort.InferenceSession(blob, opts, providers=["CPUExecutionProvider"])
                    name = session.get_inputs()[0].name
                    self._run = lambda x: session.run(None, {name: x})[0]
                    self._session = session
            self.characters = characters

    def _prepare(self, crop: np.ndarray, width: int) -> tuple[np.ndarray, int]:
        """(3, 48, width) float32 in [-1, 1], the line left-aligned and zero-padded; and its own width."""
        import cv2

        h, w = crop.shape[:2]
        own = max(1, min(width, math.ceil(REC_HEIGHT * w / max(h, 1) * self.squeeze)))
        interp = cv2.INTER_AREA if self.squeeze < 1.0 else cv2.INTER_LINEAR
        resized = cv2.resize(crop, (own, REC_HEIGHT), interpolation=interp).astype(np.float32)  # (48, own, 3)
        out = np.zeros((3, REC_HEIGHT, width), dtype=np.float32)
        out[:, :, :own] = resized.transpose(2, 0, 1) / 127.5 - 1.0
        return out, own

    def batches(self, crops: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray, list[int]]]:
        """The network's inputs for ``crops``: lines sorted by width, ``batch_size`` a batch, each batch padded to its
        widest line, the widest batches first (they go to the workers first).

        Returns:
            Per batch: the indices of its lines in ``crops``, its input (B, 3, 48, width) float32 in [-1, 1], and
            each line's own width within it.
        """
        n = len(crops)
        widths = np.array([REC_HEIGHT * c.shape[1] / max(c.shape[0], 1) * self.squeeze for c in crops])  # (N,)
        order = np.argsort(widths, kind="stable")
        groups = [order[i : i + self.batch_size] for i in range(0, n, self.batch_size)]
        groups.sort(key=lambda idx: -float(widths[idx].max()) * len(idx))  # longest first: better balance
        out = []
        for idx in groups:
            width = max(8, math.ceil(float(widths[idx].max())))
            prepared = [self._prepare(crops[i], width) for i in idx]
            out.append((idx, np.stack([x for x, _ in prepared]), [own for _, own in prepared]))
        return out

    def run(self, x: np.ndarray) -> np.ndarray:
        """The network alone: (B, 3, 48, W) float32 -> (B, T, classes) probabilities (the model loads first)."""
        self.load()
        return np.asarray(self._run(x))

    def infer(self, x: np.ndarray) -> np.ndarray:
        """What ``__call__`` computes for one batch: (B, 3, 48, W) float32 -> (B, T, 2) ``best_path`` (each frame's
        class and its probability, each line read in its script). On onnxruntime with ``charset="auto"`` every class
        is computed only for the lines the script gate lets through (module docstring); otherwise the network's
        probabilities go through ``best_path``."""
        self.load()
        if self._split is None:
            return best_path(np.asarray(self._run(x)), self.latin, self.script_share, self.letters, self.gate)
        assert self.latin is not None
        latin_probs, gate_arg, features = self._split[0](x)  # (B, T, L), (B, T), (B, T, hidden)
        keep = np.flatnonzero(self.latin)  # (L,)
        lat = latin_probs.argmax(-1)  # (B, T)
        conf = np.take_along_axis(latin_probs, lat[..., None], -1)[..., 0]  # (B, T)
        best = np.stack([keep[lat].astype(np.float32), conf.astype(np.float32)], -1)  # (B, T, 2)
        through = np.flatnonzero((gate_arg >= len(keep)).any(-1))  # lines with a frame read in another script
        if through.size:
            probs = np.asarray(self._split[1](np.ascontiguousarray(features[through])))  # (n, T, K)
            best[through] = best_path(probs, self.latin, self.script_share, self.letters)
        return best

    def __call__(self, crops: Sequence[np.ndarray]) -> list[LineText]:
        """Recognise text lines.

        Args:
            crops: N line images, each (h, w, 3) uint8 in BGR channel order (as rapidocr and OpenCV use).

        Returns:
            N ``LineText`` in the order of ``crops``.
        """
        self.load()
        out: list[LineText | None] = [None] * len(crops)

        def work(batch: tuple[np.ndarray, np.ndarray, list[int]]) -> None:
            idx, x, owns = batch
            best = self.infer(x)  # (B, T, 2)
            for i, line in zip(idx, decode_lines(best, self.characters, x.shape[3], owns), strict=True):
                out[i] = line

        batches = self.batches(crops)
        if self.workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(min(self.workers, len(batches))) as pool:
                list(pool.map(work, batches))
        else:
            for batch in batches:
                work(batch)
        return out  # type: ignore[return-value]


def best_path(
    probs: np.ndarray,
    latin: np.ndarray | None = None,
    script_share: float = 0.1,
    letters: np.ndarray | None = None,
    gate: np.ndarray | None = None,
) -> np.ndarray:
    """Greedy CTC's per-frame choice: (N, T, 2) float32, the most likely class of each frame (the first maximum;
    exact as float32 for fewer than 2**24 classes) and its probability. ``lines.ctc_best_path`` is the same on a
    torch device.

    Args:
        probs: (N, T, K) class probabilities (class 0 is the CTC blank).
        latin: (K,) bool, the Latin classes (``latin_mask``) for ``charset="auto"``: a line is read over every class
            when at least ``script_share`` of the characters of its full reading are letters outside them (Han,
            kana), and at least two of them or no Latin letter beside them ("963円", "28日"); any other line is read
            over the Latin
            classes alone (their argmax, each frame's confidence renormalised over them, as the sliced head's softmax
            gives it), so a stray "□" or "居" in an English line does not switch it. None: every line over every
            class.
        script_share: see ``latin``.
        letters: (K,) bool, which classes are letters (``letter_mask``); None: every class outside ``latin``.
        gate: (K,) bool, the script gate's classes (``gate_mask``): a line is read over every class only when, on one
            of its frames, the most likely of these classes is outside ``latin`` (onnxruntime computes every class
            only for those lines). None: no gate.
    """
    probs = np.asarray(probs, dtype=np.float32)
    best = probs.argmax(-1)  # (N, T)
    conf = np.take_along_axis(probs, best[..., None], -1)[..., 0]  # (N, T)
    if latin is not None:
        keep = np.flatnonzero(latin)  # (L,)
        sub = probs[..., keep]  # (N, T, L)
        lat = sub.argmax(-1)  # (N, T)
        # the sum in float64, so numpy's and torch's summation orders round to the same float32 (``ctc_best_path``)
        total = np.maximum(sub.sum(-1, dtype=np.float64), _TINY)  # (N, T)
        lat_conf = (np.take_along_axis(sub, lat[..., None], -1)[..., 0] / total).astype(np.float32)  # (N, T)
        kept = best != 0  # (N, T) the frames that are characters: not blank, not a repeat
        kept[:, 1:] &= best[:, 1:] != best[:, :-1]
        n_kept = kept.sum(-1)  # (N,)
        is_letter = letters[best] if letters is not None else np.ones_like(kept)  # (N, T)
        n_foreign = (kept & ~latin[best] & is_letter).sum(-1)  # (N,) letters outside the Latin classes
        n_latin = (kept & latin[best] & is_letter).sum(-1)  # (N,) Latin letters
        foreign = (n_foreign >= script_share * n_kept) & ((n_foreign >= 2) | (n_latin == 0)) & (n_foreign > 0)
        if gate is not None:
            through = np.flatnonzero(gate)  # (G,)
            foreign &= ~latin[through[probs[..., through].argmax(-1)]].all(-1)
        best = np.where(foreign[:, None], best, keep[lat])
        conf = np.where(foreign[:, None], conf, lat_conf).astype(np.float32)
    return np.stack([best.astype(np.float32), conf], -1)


_TINY = np.finfo(np.float32).tiny


def letter_mask(characters: Sequence[str]) -> np.ndarray:
    """(K,) bool: which classes are letters (``str.isalpha``: Han, kana and Latin letters; not digits, punctuation
    or symbols such as "□" and "："), blank and space excluded."""
    return np.array([i not in (0, len(characters) - 1) and ch.isalpha() for i, ch in enumerate(characters)])


def decode_lines(best: np.ndarray, characters: Sequence[str], width: int, own: Sequence[int]) -> list[LineText]:
    """Greedy CTC decoding of a batch from its ``best_path``: repeats collapsed, blanks dropped.

    Args:
        best: (N, T, 2) float32 from ``best_path`` (or ``lines.ctc_best_path``).
        characters: the class list (blank first).
        width: the padded input width of the batch.
        own: (N,) each line's own width within it.

    Returns:
        N ``LineText``: the text, the mean probability of its kept frames (0 for an empty line), and each
        character's frame centre as a fraction of the line's width.
    """
    cls = best[..., 0].astype(np.int64)  # (N, T)
    conf = np.ascontiguousarray(best[..., 1], dtype=np.float32)  # (N, T)
    frames = cls.shape[1]
    kept = cls != 0  # (N, T)
    kept[:, 1:] &= cls[:, 1:] != cls[:, :-1]
    chars = np.asarray(characters, dtype=object)
    out = []
    for b in range(cls.shape[0]):  # a string per line: the host's part
        pos = np.flatnonzero(kept[b])
        text = "".join(chars[cls[b, pos]])
        score = float(conf[b, pos].mean()) if pos.size else 0.0
        frac = (pos + 0.5) * (width / frames) / int(own[b])  # frame centre / line width
        out.append(LineText(text, score, tuple(np.clip(frac, 0.0, 1.0).tolist())))
    return out
