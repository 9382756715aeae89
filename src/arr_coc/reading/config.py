"""``ReadingConfig``: every weight and threshold of the text path, in one commented, serialisable place.

The text path has its stages and one section each: ``ocr`` (what the OCR engine sees and how results are cached),
``lexical`` (fuzzy token matching), ``semantic`` (MiniLM similarity), ``keys`` (which boxes the question names and
the final per-box scores), ``layout`` (where an answer sits relative to its key), ``structure`` (structural questions)
and ``page`` (the page-layout analysis' thresholds, ``arr_coc.reading.layout.structure.PageLayoutConfig``: lines,
columns, blocks, roles, tables). The defaults are the values the
project's evidence-recall benchmark was measured with (``benchmarks/evidence_recall.py``).

The config is plain data: ``to_dict()`` gives JSON-ready nested dicts, ``from_dict`` rebuilds it (unknown keys are an
error naming the allowed ones), and every section checks its values on construction.

Example:
    >>> cfg = ReadingConfig().replace(layout={"enabled": False}, ocr={"det_max_side": 960})
    >>> ReadingConfig.from_dict(cfg.to_dict()) == cfg
    True
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass, field
from typing import Any

from .layout.structure import PageLayoutConfig  # the page-layout analysis' thresholds (section ``page``)


def _check_unit(section: str, **values: float) -> None:
    for name, v in values.items():
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"{section}.{name} must be in [0, 1], got {v}")


def _check_positive(section: str, **values: float) -> None:
    for name, v in values.items():
        if not float(v) > 0.0:
            raise ValueError(f"{section}.{name} must be positive, got {v}")


@dataclass(frozen=True)
class OcrConfig:
    """What the OCR sees (rapidocr's PP-OCR detector, then ``recognition.LineRecognizer``), and its result cache."""

    det_max_side: int = 736  # longer image side (px) the text detector sees; larger finds smaller text, costs time
    box_thresh: float = 0.5  # detector box threshold (rapidocr's Det.box_thresh)
    text_score: float = 0.5  # drop recognised lines below this confidence
    split_key_value: bool = True  # split a recognised line after each word ending in ':' or '=' (key | value)
    # recogniser classes (``ocr.recognition``): "auto" (each line read in its script: Chinese, Japanese and
    # Latin-script lines; every class computed only for the lines a script gate lets through; Korean needs another
    # model), "latin" (605 Latin-script classes of 18,710) or
    # "all" (every class for every line)
    charset: str = "auto"
    script_share: float = 0.1  # "auto": a line with this share of its frames read outside Latin is read with all
    squeeze: float = 1.0  # recognise lines at 48 px height and this share of their width (0.75 breaks fine print)
    rec_batch_size: int = 8  # onnxruntime: lines per recognition call (sorted by width, padded to the batch's
    # widest); backend='torch' recognises the lines of a page in one call per width group (at most two)
    rec_model_path: str | None = None  # PP-OCR recognition ONNX model (None: the one bundled with rapidocr)
    num_threads: int | None = None  # detector intra-op threads and recognition workers (None: all cores)
    cache_items: int = 64  # OCR results kept per reader (LRU by count, one entry per distinct page); 0 disables
    det_params: dict[str, Any] = field(default_factory=dict)  # extra rapidocr detector parameters, applied last
    backend: str = "onnxruntime"  # what runs the networks: "onnxruntime" (CPU default) or "torch" (any device)
    device: str | None = None  # torch device for backend="torch" (None: "cpu")
    # torch dtype name for backend="torch": "float32" (None, the default), "float16" or "bfloat16". bfloat16 misreads:
    # on a lent H100 its detector found 54 of the invoice's 67 lines and 26 read as onnxruntime reads them (float32:
    # 67 and 66; float16: 67 and 65), so it is accepted with a warning
    dtype: str | None = None
    # backend="torch" on CUDA: page sizes the detector holds a CUDA graph for (captured on the second page of a size,
    # least recently used out; 0: off; the same maps bit for bit). Each holds the detector's intermediates for that
    # size: 88 MiB for the invoice (736 x 608 at the detector) in float32 on an H100. realdocs-dev's 274 pages make
    # 15 sizes
    det_graphs: int = 4

    def __post_init__(self) -> None:
        if self.det_max_side < 32:
            raise ValueError(f"ocr.det_max_side must be at least 32 px, got {self.det_max_side}")
        _check_unit("ocr", text_score=self.text_score, box_thresh=self.box_thresh)
        if self.charset not in ("auto", "latin", "all"):
            raise ValueError(f"ocr.charset must be 'auto', 'latin' or 'all', got {self.charset!r}")
        _check_unit("ocr", script_share=self.script_share)
        if not 0.0 < self.squeeze <= 1.0:
            raise ValueError(f"ocr.squeeze must be in (0, 1], got {self.squeeze}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"ocr.num_threads must be None or >= 1, got {self.num_threads}")
        if self.rec_batch_size < 1:
            raise ValueError(f"ocr.rec_batch_size must be >= 1, got {self.rec_batch_size}")
        if self.cache_items < 0:
            raise ValueError(f"ocr.cache_items must be >= 0, got {self.cache_items}")
        if self.det_graphs < 0:
            raise ValueError(f"ocr.det_graphs must be >= 0, got {self.det_graphs}")
        if self.backend not in ("onnxruntime", "torch"):
            raise ValueError(f"backend must be one of ('onnxruntime', 'torch'), got {self.backend!r}")
        if self.backend == "onnxruntime" and (self.device is not None or self.dtype is not None):
            raise ValueError("device and dtype apply to backend='torch' only (onnxruntime runs on the CPU)")
        if self.dtype is not None and self.dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError(
                f"dtype must be a floating-point torch dtype (float32, bfloat16, float16), got {self.dtype!r}"
            )
        if self.dtype == "bfloat16":
            warnings.warn(
                "ocr dtype 'bfloat16' misreads pages (measured on an H100: 54 of the example invoice's 67 lines found, "
                "26 read as in float32); use 'float32' (the default) or 'float16'",
                UserWarning,
                stacklevel=3,
            )


@dataclass(frozen=True)
class LexicalConfig:
    """Fuzzy lexical matching of the query's content tokens to each box's tokens (``lexical.py``)."""

    enabled: bool = True  # use lexical matching at all
    max_query_chars: int = 512  # longer queries are truncated to this many characters before matching
    max_query_tokens: int = 48  # at most this many content tokens of the query are matched
    meta_weight: float = 0.15  # weight of words that describe the question, not its content ("value", "column")
    lookalike_sim: float = 0.9  # similarity of numbers equal up to OCR look-alikes (O/0, l/1, S/5, B/8, Z/2)
    prefix_sim: float = 0.85  # similarity when one word starts with the other ("invoice" / "invoiced")
    substring_sim: float = 0.6  # similarity when one word contains the other ("total" in "subtotal")
    min_fuzzy_len: int = 4  # shorter words (and numbers) only match exactly
    max_edits: int = 2  # edit distance allowed between words of similar length
    min_edit_sim: float = 0.7  # 1 - edits / length below this counts as no match
    present_sim: float = 0.7  # a query term "occurs" in a box at this similarity (for its page frequency)
    df_power: float = 1.0  # a term found in df boxes of the page weighs 1 / df ** df_power (a term on every row
    # does not locate a row)
    recall_mix: float = 0.5  # score = max(recall_mix * R + (1 - recall_mix) * P, recall_only * R)
    recall_only: float = 0.75  # (R: share of the query the box covers, P: share of the box the query covers)

    def __post_init__(self) -> None:
        _check_unit(
            "lexical",
            meta_weight=self.meta_weight,
            lookalike_sim=self.lookalike_sim,
            prefix_sim=self.prefix_sim,
            substring_sim=self.substring_sim,
            min_edit_sim=self.min_edit_sim,
            present_sim=self.present_sim,
            recall_mix=self.recall_mix,
            recall_only=self.recall_only,
        )
        if self.max_query_chars < 1 or self.max_query_tokens < 1:
            raise ValueError("lexical.max_query_chars and lexical.max_query_tokens must be >= 1")
        if self.df_power < 0:
            raise ValueError(f"lexical.df_power must be >= 0, got {self.df_power}")
        if self.min_fuzzy_len < 1 or self.max_edits < 0:
            raise ValueError("lexical.min_fuzzy_len must be >= 1 and lexical.max_edits >= 0")


@dataclass(frozen=True)
class SemanticConfig:
    """MiniLM (all-MiniLM-L6-v2) cosine similarity of the question to each box's text (``semantic.py``).

    Similarities of a question to short labels fall in a narrow band, so the score is relative to the page's best:
    boxes within ``band`` of the best get a linear share, scaled by ``(best - floor) / (ceiling - floor)``.
    """

    enabled: bool = True  # use semantic matching (loads the MiniLM model lazily on first use)
    model_path: str | None = None  # directory of a sentence-transformers MiniLM checkpoint (None: the bundled one)
    max_tokens: int = 128  # word pieces per text the embedder sees (the model was trained with 128/256)
    cache_items: int = 8192  # embeddings kept per embedder (LRU by count, one per distinct text)
    weight: float = 0.9  # weight of the semantic score against the lexical one (lexical hits win ties)
    floor: float = 0.25  # best-match cosine similarity at which semantic keys start to count
    ceiling: float = 0.5  # best-match cosine similarity at which semantic keys count fully
    band: float = 0.12  # boxes within this cosine distance of the page's best match are semantic keys
    digit_share: float = 0.5  # boxes with more than this share of digits are values, not keys ...
    digit_penalty: float = 0.15  # ... and have their cosine similarity lowered by this much
    lexical_strong: float = 0.6  # a lexical match at least this strong means the question's own words name the key
    lexical_strong_factor: float = 0.5  # ... and then semantic keys weigh this much less (factor)
    foreign_strong_factor: float = 0.0  # ... this, for a question worded in another language (``foreign_words``:
    # the English MiniLM's similarities to "¿Quién es el cliente?" pick lines of running text, not the key it names)
    cjk: bool = False  # embed questions holding Chinese or Japanese characters too (the English MiniLM misreads them:
    # off, they are matched lexically alone)
    # semantic keys (``semantic_keys``): a printed label read as a question ("What is the address?") matched to an
    # English question whose words name no key strongly. Off by default: on realdocs-dev's dev paraphrases it lowers
    # recall at every threshold tried (receipts' issuer and date questions lose to labels such as "Cashier")
    key_weight: float = 0.0  # key weight of the best label (0: off)
    key_min_sim: float = 0.5  # ... when its similarity to the question reaches this
    key_margin: float = 0.1  # ... and leads every other label's by this
    key_words: int = 6  # a key-like box has at most this many words (and mostly letters)

    def __post_init__(self) -> None:
        if self.ceiling <= self.floor:
            raise ValueError(f"semantic.ceiling ({self.ceiling}) must exceed semantic.floor ({self.floor})")
        _check_positive("semantic", band=self.band, max_tokens=self.max_tokens, key_words=self.key_words)
        _check_unit(
            "semantic",
            weight=self.weight,
            key_weight=self.key_weight,
            digit_share=self.digit_share,
            lexical_strong=self.lexical_strong,
            lexical_strong_factor=self.lexical_strong_factor,
            foreign_strong_factor=self.foreign_strong_factor,
        )
        if self.cache_items < 0:
            raise ValueError(f"semantic.cache_items must be >= 0, got {self.cache_items}")


@dataclass(frozen=True)
class KeyConfig:
    """Which boxes the question names (keys), the answer-type prior, and the final per-box scores."""

    min_match: float = 0.3  # best lexical match below this counts as "nothing named"
    relative: float = 0.5  # lexical keys: boxes scoring at least this share of the page's best match
    sharpness: float = 3.0  # key weight = (score / best) ** sharpness
    full_at: float = 0.5  # lexical keys count fully when the best match reaches this (scaled down below it)
    semantic_min: float = 0.5  # semantic keys need at least semantic_min * min_match
    key_score: float = 0.85  # final score of a key box, times its key weight
    other_text: float = 0.15  # score of text that is neither key nor answer candidate once a key is found
    no_match_text: float = 0.5  # score of all text when the query names nothing (or is empty)
    type_prior_score: float = 0.4  # score of boxes holding a value of the asked-for type (dates for "when")
    no_match_type_lift: float = 0.5  # with no key: typed values get no_match_text + lift * (1 - no_match_text)
    off_type_damp: float = 0.6  # with a typed question: layout candidates of another type are scaled by this
    link: float = 0.9  # evidence chain: a key scores at least link * (its share of) the best candidate it points to
    header_top: float = 0.9  # table cells scoring within this share of the best candidate keep their row/column
    # headers (at link * the cell's score)

    def __post_init__(self) -> None:
        _check_unit(
            "keys",
            min_match=self.min_match,
            relative=self.relative,
            semantic_min=self.semantic_min,
            key_score=self.key_score,
            other_text=self.other_text,
            no_match_text=self.no_match_text,
            type_prior_score=self.type_prior_score,
            no_match_type_lift=self.no_match_type_lift,
            off_type_damp=self.off_type_damp,
            link=self.link,
            header_top=self.header_top,
        )
        _check_positive("keys", sharpness=self.sharpness, full_at=self.full_at)


@dataclass(frozen=True)
class LayoutConfig:
    """The layout rule: where each key's weight goes (``layout.propagate``).

    For each direction, the j-th nearest box in that direction (0-based, nearest first) receives
    ``key weight * gain * decay ** j``, for at most ``max`` boxes (None: all); contributions of all keys add up.
    """

    enabled: bool = True  # propagate key scores to answer candidates; off, only the matched text itself is high
    same_line: float = 0.5  # same line: vertical overlap at least this share of the smaller box height
    column_pad: float = 0.5  # same column: horizontal overlap with the key widened by this many key heights
    sentence_tokens: int = 6  # a key with more tokens is a sentence ...
    sentence_damp: float = 0.3  # ... whose right/left neighbours (another column's text) get this factor
    sibling_horizontal: float = 0.3  # factor for same-line siblings (same shape as the key: "Q3" -> "Q4", "A:")
    sibling_vertical: float = 0.5  # factor for same-column siblings (the next header, the next "Label:")
    right_gain: float = 1.0  # same line, right of the key (a value after its label, a table row)
    right_decay: float = 0.95
    right_max: int | None = None
    left_gain: float = 0.5  # same line, left of the key
    left_decay: float = 0.9
    left_max: int | None = 4
    below_gain: float = 0.85  # same column, below the key (a value under its label, a table column)
    below_decay: float = 0.9
    below_max: int | None = 15
    above_gain: float = 0.7  # same column, above the key (a chart bar's value label above its axis label)
    above_decay: float = 0.8
    above_max: int | None = 4
    whole_words: bool = True  # selection keeps every cell a chosen word touches (``word_units``); off: single cells
    word_pad: float = 0.25  # a word's interpolated box is widened by this many characters on each side
    cross_width: float = 3.0  # a key with same-line neighbours (a table header, a "Label: value" row) reaches
    # nothing below/above that is wider than this many times its padded width (a paragraph under a table is not
    # the column's next cell); 0 turns the stop off

    def __post_init__(self) -> None:
        _check_unit(
            "layout",
            same_line=self.same_line,
            sentence_damp=self.sentence_damp,
            sibling_horizontal=self.sibling_horizontal,
            sibling_vertical=self.sibling_vertical,
            right_decay=self.right_decay,
            left_decay=self.left_decay,
            below_decay=self.below_decay,
            above_decay=self.above_decay,
        )
        for d in ("right", "left", "below", "above"):
            if getattr(self, f"{d}_gain") < 0:
                raise ValueError(f"layout.{d}_gain must be >= 0, got {getattr(self, f'{d}_gain')}")
            m = getattr(self, f"{d}_max")
            if m is not None and m < 0:
                raise ValueError(f"layout.{d}_max must be None or >= 0, got {m}")
        if self.column_pad < 0 or self.sentence_tokens < 0 or self.cross_width < 0 or self.word_pad < 0:
            raise ValueError("layout.column_pad, sentence_tokens, cross_width and word_pad must be >= 0")


@dataclass(frozen=True)
class StructureConfig:
    """Questions about the page's structure (``arr_coc.reading.layout.structure``,
    ``arr_coc.reading.layout.structural_query``).

    A question about the title, the word after a phrase, the n-th section of a column or a chart's extremes is parsed,
    resolved on the page's layout, and its evidence is kept first (the budget rule): the evidence paints 1 and every
    other box's score is multiplied by ``evidence_damp``.
    """

    enabled: bool = True  # layout analysis (columns, sections, title, reading order); off: boxes in OCR order
    query_parsing: bool = True  # parse structural references in the question; off: matched by its words only
    evidence_damp: float = 0.8  # factor on every other box's score once structural evidence was found
    layout_cache_items: int = 8  # pages whose layout a matcher keeps (a second question skips the analysis; 0: none)
    table_cells: bool = True  # "the <header> for <label>": the cell on the label's line under the header is evidence

    def __post_init__(self) -> None:
        _check_unit("structure", evidence_damp=self.evidence_damp)
        if self.layout_cache_items < 0:
            raise ValueError(f"structure.layout_cache_items must be >= 0, got {self.layout_cache_items}")


_SECTIONS: dict[str, type] = {
    "ocr": OcrConfig,
    "lexical": LexicalConfig,
    "semantic": SemanticConfig,
    "keys": KeyConfig,
    "layout": LayoutConfig,
    "structure": StructureConfig,
    "page": PageLayoutConfig,
}

# ablation switches: name -> (section, field)
SWITCHES: dict[str, tuple[str, str]] = {
    "lexical": ("lexical", "enabled"),
    "semantic": ("semantic", "enabled"),
    "layout": ("layout", "enabled"),
    "structure": ("structure", "enabled"),
    "query_parsing": ("structure", "query_parsing"),
    "whole_words": ("layout", "whole_words"),
}


def _section_from_dict(name: str, cls: type, values: Any) -> Any:
    if isinstance(values, cls):
        return values
    if not isinstance(values, dict):
        raise TypeError(f"reading config section {name!r} must be a dict or {cls.__name__}, got {type(values)}")
    allowed = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - allowed)
    if unknown:
        raise ValueError(f"unknown {name} setting(s) {unknown}; allowed: {', '.join(sorted(allowed))}")
    return cls(**values)


@dataclass(frozen=True)
class ReadingConfig:
    """All settings of the text path; see each section's class for its fields."""

    ocr: OcrConfig = field(default_factory=OcrConfig)  # OCR engine input and result cache
    lexical: LexicalConfig = field(default_factory=LexicalConfig)  # fuzzy token matching
    semantic: SemanticConfig = field(default_factory=SemanticConfig)  # MiniLM similarity
    keys: KeyConfig = field(default_factory=KeyConfig)  # key selection and final box scores
    layout: LayoutConfig = field(default_factory=LayoutConfig)  # where answers sit relative to keys
    structure: StructureConfig = field(default_factory=StructureConfig)  # structural questions, the budget rule
    page: PageLayoutConfig = field(default_factory=PageLayoutConfig)  # layout analysis: lines, columns, tables

    def __post_init__(self) -> None:
        for name, cls in _SECTIONS.items():
            if not isinstance(getattr(self, name), cls):
                raise TypeError(f"ReadingConfig.{name} must be a {cls.__name__}, got {type(getattr(self, name))}")

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Nested plain dicts (JSON-ready: numbers, bools, strings, None, dicts)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReadingConfig:
        """Inverse of ``to_dict``; missing sections and fields take their defaults.

        Raises:
            ValueError: on an unknown section or setting (the message lists the allowed ones), or a bad value.
        """
        if not isinstance(data, dict):
            raise TypeError(f"ReadingConfig.from_dict needs a dict, got {type(data)}")
        unknown = sorted(set(data) - set(_SECTIONS))
        if unknown:
            raise ValueError(f"unknown reading config section(s) {unknown}; allowed: {', '.join(_SECTIONS)}")
        return cls(**{name: _section_from_dict(name, c, data[name]) for name, c in _SECTIONS.items() if name in data})

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps(self.to_dict())``."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> ReadingConfig:
        """Inverse of ``to_json``."""
        return cls.from_dict(json.loads(text))

    def replace(self, **sections: dict[str, Any]) -> ReadingConfig:
        """A copy with some fields of some sections changed: ``cfg.replace(layout={"enabled": False})``."""
        unknown = sorted(set(sections) - set(_SECTIONS))
        if unknown:
            raise ValueError(f"unknown reading config section(s) {unknown}; allowed: {', '.join(_SECTIONS)}")
        new = {}
        for name, changes in sections.items():
            merged = dataclasses.asdict(getattr(self, name)) | dict(changes)
            new[name] = _section_from_dict(name, _SECTIONS[name], merged)
        return dataclasses.replace(self, **new)

    def with_switches(self, **switches: bool | None) -> ReadingConfig:
        """A copy with the ablation switches set (``None`` keeps a switch as it is).

        Switches: ``lexical``, ``semantic``, ``layout``, ``structure`` (layout analysis), ``query_parsing`` and
        ``whole_words`` (the selection keeps each word's cells together).
        """
        unknown = sorted(set(switches) - set(SWITCHES))
        if unknown:
            raise ValueError(f"unknown text switch(es) {unknown}; allowed: {', '.join(SWITCHES)}")
        changes: dict[str, dict[str, bool]] = {}
        for name, on in switches.items():
            if on is not None:
                section, fld = SWITCHES[name]
                changes.setdefault(section, {})[fld] = bool(on)
        return self.replace(**changes) if changes else self
