"""Pages: one budget over a document's pages, spent where the question's answer is.

    pages ──► first look (the PDF's text layer: which pages share the question's words; ~0 ms) ──► likely pages
          ──► the text path on the likely pages (``arr_coc.allocate``, mode "text"; a PDF page's boxes from its text
              layer, ``arr_coc.page_text``, else OCR; in parallel, every page cached)
          ──► page relevance p_i = the page's best text-prior match (0-1: lexical, MiniLM, key -> value rules)
          ──► share: one joint top-K over all pages' cells, each page's scores (min-max over the page) times
              w_i = exp((p_i - max p) / temperature); words kept whole across the document
          ──► each page's share spent from its key spans first (where the question's words stand together, then the
              text after them: ``arr_coc.reading.matching.spans``; ``PagesConfig.focus``)
          ──► every page in order, a page that gets nothing with an empty ``kept``

Why so: a page's relevance comes from the same text path that chooses its cells, so a page whose words match the
question gets the budget and a page that merely looks busy does not. Pages whose match is equally strong (an
ambiguous question: "What is the date?" on eight forms) share alike. Some questions need no particular page: one
with no content word ("What is this document about?", "Summarize it") is decided on the pages' texture (no OCR), and
one whose best page match stands out nowhere (:func:`stands_out`) reads every page; in both the budget is split evenly
and every page keeps its own most relevant cells (``floor="auto"``). ``floor=N`` keeps N tokens on every page always.

Cost: the first look reads the text layer that a born-digital PDF carries (pypdfium2, no OCR): pages that share none
of the question's rarer words are not read unless the look finds nothing, no text layer, or the question is vague. A
page read in full takes its boxes from the same text layer (``text_layer=True``): no OCR for a born-digital PDF.
Pages of a list of images (scans) have no text layer: every page is read, in parallel threads, each cached by the
OCR reader (a second question costs the matching alone). ``first_look=False`` reads every page.

Single-page results are untouched: this module calls ``arr_coc.allocate`` per page and re-selects over the scores it
returns; nothing in the single-page pipeline changed.

Example:
    >>> from PIL import Image
    >>> doc = allocate_pages([Image.new("RGB", (560, 280), "white")] * 2, "", budget=4, mode="texture")
    >>> [p.budget for p in doc.pages], doc.budget
    ([2, 2], 4)
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .attending import Budget, TokenBudget, WordUnits, select
from .documents import Page, close_document, load_document
from .grid import GridSpec
from .page_reads import _AHEAD, prepare_pages, read_ahead, sized
from .page_text import LayerReader
from .query import normalize_text
from .reading.text import clean
from .realizing import Allocation, Realizer, allocate, default_realizer, query_notes, resolve_mode


@dataclass(frozen=True)
class PagesConfig:
    """How one budget is shared over pages (every threshold of the page decision in one place).

    Attributes:
        temperature: page weights ``exp((p_i - max p) / temperature)``; 0.05: a page 0.1 below the best page's match
            weighs 0.14, 0.3 below weighs 0.002.
        specific_min: the best page's match at or above which a question is about particular pages; below it the
            budget is split evenly (``floor="auto"``). Text-prior matches: 1.0 the question's words, ~0.5 no match.
        margin: ... or the best page's match at least this far above the median page's (a weak match that only a
            few pages share: "What is written next to TO?" among forms).
        lexical: the weight of the page's share of the question's rarer words in its OCR text, added to its best
            text-prior cell (breaks ties between pages that print the same key; 0.3 chosen on the FUNSD "10d"
            sources of realdocs-dev, page ranked first 0.60 -> 0.80 on 60 documents; benchmarks/pages.py).
        look_keep: the first look keeps pages whose word score is at least this share of the best page's.
        look_max: at most this many pages are read in full after the first look.
        workers: threads reading pages (0: the CPU count, at most 8).
        focus: a read page spends its share from its key spans first: the words where the question's words stand
            together and the text after them (``arr_coc.reading.matching.spans``), blended with its own scores at
            this weight; 0: its own scores alone.
    """

    temperature: float = 0.05
    specific_min: float = 0.8
    margin: float = 0.15
    lexical: float = 0.3
    look_keep: float = 0.5
    look_max: int = 4
    workers: int = 0
    focus: float = 0.5


@dataclass
class PageResult:
    """One page of a :class:`DocumentAllocation`.

    Attributes:
        page: the :class:`~arr_coc.documents.Page` (image, original size, label, name).
        grid: (rows, cols) of visual tokens; resized: (W, H) the processor resizes it to.
        keep (torch.LongTensor of shape (k,)): kept token indices r * cols + c, ascending (empty: nothing kept).
        relevance: the page's match to the question (its best text-prior cell + ``lexical`` x its share of the
            question's words), or None if not read.
        read: ``"text"`` (OCR + matching), ``"texture"`` (pixels only) or ``"skipped"`` (no scores were needed).
        allocation: the page's own ``Allocation`` (its scores, maps, OCR boxes), or None when skipped.
    """

    page: Page
    grid: tuple[int, int]
    resized: tuple[int, int]
    keep: torch.Tensor
    relevance: float | None = None
    read: str = "skipped"
    allocation: Allocation | None = None

    @property
    def budget(self) -> int:
        return int(self.keep.numel())

    @property
    def n_tokens(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def kept_cells(self) -> list[list[int]]:
        cols = self.grid[1]
        return [[int(i) // cols, int(i) % cols] for i in self.keep.tolist()]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            self.page.label: self.page.name,
            "grid": list(self.grid),
            "resized": list(self.resized),
            "original": list(self.page.original),
            "kept": self.kept_cells,
            "budget": self.budget,
            "relevance": None if self.relevance is None else round(self.relevance, 4),
            "read": self.read,
        }
        return out


@dataclass
class DocumentAllocation:
    """What :func:`allocate_pages` decided for one document and one question.

    Attributes:
        query: the question as typed; family: whose grid; mode: the text path that ran ("text" or "texture").
        pages: one :class:`PageResult` per page, in the document's order.
        specific: whether some page stood out (else the budget was split evenly).
        requested: the document's budget resolved to a count.
        timings_ms: ``load`` (render), ``look`` (first look), ``read`` (the pages' text path), ``select``, ``total``.
        notes: what the user should know.
    """

    query: str
    family: str
    mode: str
    pages: list[PageResult]
    specific: bool
    requested: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    floor: int | str = "auto"
    temperature: float = 0.05
    focus: float = 0.0
    realizer: Realizer | None = field(default=None, repr=False)
    ahead: threading.Thread | None = field(default=None, repr=False)

    @property
    def budget(self) -> int:
        return sum(p.budget for p in self.pages)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the read-ahead of the pages this question did not read (:func:`read_ahead`); True when it is
        done (or there was none)."""
        if self.ahead is not None:
            self.ahead.join(timeout)
            return not self.ahead.is_alive()
        return True

    def select(self, budget: Budget) -> list[torch.Tensor]:
        """Each page's kept indices at another document ``budget``, from the same reading (no page read again;
        pages that were not read keep nothing): (k_i,) ascending per page."""
        allocations = [p.allocation for p in self.pages]
        relevance = {i: p.relevance for i, p in enumerate(self.pages) if p.relevance is not None}
        best = max(relevance, key=relevance.get) if relevance else None  # type: ignore[arg-type]
        k = document_budget(
            budget, self.n_tokens, None if best is None else allocations[best], self.realizer or default_realizer()
        )
        return decide_pages(
            allocations, relevance, self.specific, k, self.floor, self.temperature, self.query, self.focus
        )

    @property
    def n_tokens(self) -> int:
        return sum(p.n_tokens for p in self.pages)

    def to_json(self, id: Any = None) -> dict[str, Any]:
        """``{"id", "query", "budget", "pages": [{"page" or "image", "grid", "resized", "original", "kept",
        "budget", "relevance", "read"}, ...], "family", "mode", "specific"}``; ``notes`` when there are any."""
        out: dict[str, Any] = {
            "id": id,
            "query": self.query,
            "budget": self.budget,
            "pages": [p.to_json() for p in self.pages],
            "family": self.family,
            "mode": self.mode,
            "specific": self.specific,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the of in on at to for from by with and or is are was were be what which who whom whose when where why how "
    "this that these those it its does do did say says written next page document form receipt table row column "
    "value there their than as about me tell give show summary summarize summarise overview main topic topics "
    "describe content contents whole all any".split()
)


# a compound name: letters/digits joined by '.', '_', '::' or '-' with no space ("column.count.back",
# "asn1_der_decoding", "std::vector"), with at least one letter (a number such as "3.14" stays its parts)
_COMPOUND = re.compile(r"(?<![a-z0-9])[a-z0-9]+(?:(?:::|[._-])[a-z0-9]+)+")


def _compounds(lowered: str) -> set[str]:
    """The compound names in lower-cased text: each also counts as one word of its own (its parts count as before)."""
    return {c for c in _COMPOUND.findall(lowered) if re.search(r"[a-z]", c)}


def _words(text: str) -> set[str]:
    """The question's content words, lower-cased: function words dropped, unless written in capitals (a printed key
    such as "TO" or "FROM" in "What is written next to TO?"); plus each compound name whole (``_compounds``)."""
    text = normalize_text(text)
    keys = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", text) if len(w) > 1 and w.isupper()}
    words = {w for w in _WORD.findall(text.lower()) if len(w) > 1 and (w not in _STOP or w in keys)}
    return words | _compounds(text.lower())


@functools.lru_cache(maxsize=256)
def _bag(text: str) -> frozenset[str]:
    """A page's words and compound names, from its whole text (not cut to a question's length); cached, since every
    question on a document asks the same pages (5 ms for 20 dense pages, once instead of per question)."""
    lowered = clean(text).lower()
    return frozenset(set(_WORD.findall(lowered)) | _compounds(lowered))


def word_scores(texts: Sequence[str | None], query: str) -> list[float]:
    """Each page's IDF-weighted share of the question's content words found in its text, in [0, 1] (IDF over these
    pages: a word on every page counts little). 0 for every page when the question has no content word. A page's
    whole text counts (a dense reference page prints 7,000-17,000 characters).

    Example:
        >>> [round(v, 2) for v in word_scores(["total due 42", "weather total", "weather"], "What is the total due?")]
        [1.0, 0.32, 0.0]
    """
    q = _words(query)
    if not q:
        return [0.0] * len(texts)
    bags = [_bag(t) if t else frozenset() for t in texts]
    q = {w for w in q if w.isalnum() or any(w in b for b in bags)}  # a compound no page prints tells nothing
    if not q:
        return [0.0] * len(texts)
    idf = {w: math.log((len(texts) + 1) / (0.5 + sum(w in b for b in bags))) for w in q}
    total = sum(idf.values()) or 1.0
    return [sum(idf[w] for w in q if w in b) / total for b in bags]


def first_look(texts: Sequence[str | None], query: str, config: PagesConfig = PagesConfig()) -> list[int]:
    """The pages worth reading in full, from their text layers alone (no OCR): 0-based, ascending.

    A page's word score is the IDF-weighted share of the question's content words on it (IDF over the document's
    pages, so a word on every page counts little). Kept: pages at or above ``look_keep`` times the best score, the
    ``look_max`` best; plus every page with no text layer (a scan: the look cannot see it). Every page when no page
    shares a word with the question (a vague or paraphrased question: the text path decides).
    """
    n = len(texts)
    q = _words(query)
    blind = [i for i, t in enumerate(texts) if t is None or not t.strip()]
    if not q or len(blind) == n:
        return list(range(n))
    scores = word_scores(texts, query)
    best = max(scores)
    if best <= 0:
        return list(range(n))
    ranked = sorted((i for i in range(n) if scores[i] >= config.look_keep * best), key=lambda i: -scores[i])
    return sorted(set(ranked[: config.look_max]) | set(blind))


def stands_out(relevance: dict[int, float], config: PagesConfig = PagesConfig()) -> bool:
    """Whether some page matches the question well enough to get the budget (else it is split evenly): its match is
    at least ``specific_min``, or at least ``margin`` above the median page's."""
    if not relevance:
        return False
    values = sorted(relevance.values())
    best = values[-1]
    return best >= config.specific_min or best - float(np.median(values)) >= config.margin


def page_relevances(
    allocations: dict[int, Allocation], query: str, config: PagesConfig = PagesConfig()
) -> dict[int, float]:
    """Each read page's match to the question: its best text-prior cell (:func:`page_relevance`) plus ``lexical``
    times its share of the question's rarer words in its OCR text (:func:`word_scores` over the read pages), which
    breaks the ties of the text prior (a key word that several pages print)."""
    at = sorted(allocations)
    texts = [" ".join(str(getattr(b, "text", "")) for b in allocations[i].text_boxes) for i in at]
    priors = [allocations[i].components.get("text_prior") for i in at]
    return dict(zip(at, match_pages(priors, texts, query, config), strict=True))


def match_pages(
    priors: Sequence[Any], texts: Sequence[str], query: str, config: PagesConfig = PagesConfig()
) -> list[float]:
    """Each page's match to the question from what its text path read (:func:`page_relevances`, given the pieces):
    its best text-prior cell (``priors[i]``: array or tensor, or None: 0) plus ``lexical`` times its share of the
    question's rarer words in its OCR text ``texts[i]``. ``compress(budget_scope="prompt")`` calls it on the
    realizer's scorings of a prompt's images."""
    words = word_scores(texts, query) if config.lexical else [0.0] * len(texts)
    best = [_best_prior(p) for p in priors]
    return [b + config.lexical * w for b, w in zip(best, words, strict=True)]


def _best_prior(prior: Any) -> float:
    """The best cell of a text prior (array or tensor; None or empty: 0)."""
    if prior is None:
        return 0.0
    values = prior.detach().float().cpu().numpy() if isinstance(prior, torch.Tensor) else np.asarray(prior)
    return float(np.max(values)) if values.size else 0.0


def page_relevance(allocation: Allocation) -> float:
    """A page's match to the question: its best text-prior cell in [0, 1] (0 in texture mode: no text read)."""
    prior = allocation.components.get("text_prior")
    return float(np.max(prior)) if prior is not None and prior.size else 0.0


def share(
    scores: Sequence[torch.Tensor],
    relevance: Sequence[float],
    k: int,
    floors: Sequence[int],
    units: Sequence[Sequence[np.ndarray]] = (),
    temperature: float = 0.05,
) -> list[torch.Tensor]:
    """One selection of ``k`` cells over all pages: the pure step of the page decision.

    Each page's scores are rescaled to [0, 1] (min-max over the page) and weighted by ``exp((p_i - max p) /
    temperature)``; each page's ``floors[i]`` best cells are kept first; the rest of ``k`` goes to the best weighted
    cells of the whole document, words kept whole (``arr_coc.attending.select`` over the joined raster).

    Args:
        scores: per page, (N_i,) relevance of its cells (a page not scored: an empty tensor; it gets nothing).
        relevance: per page, its match p_i in [0, 1].
        k: tokens for the whole document (clamped to the scored cells).
        floors: per page, tokens it keeps whatever its weight.
        units: per page, its word cells (indices into its own raster), or empty.
        temperature: of the page weights.

    Returns:
        Per page, (k_i,) kept indices ascending; sum k_i = min(k, scored cells).
    """
    n = len(scores)
    sizes = [int(s.numel()) for s in scores]
    offsets = np.cumsum([0, *sizes[:-1]]).tolist()
    total = sum(sizes)
    if total == 0:
        return [torch.zeros(0, dtype=torch.long) for _ in range(n)]
    best = max(relevance[i] for i in range(n) if sizes[i]) if any(sizes) else 0.0
    k = max(1, min(int(k), total))
    parts, floored, rest_units = [], [], []
    for i in range(n):
        s = scores[i].detach().float().flatten()  # (N_i,)
        page_units = units[i] if len(units) > i else ()
        if not sizes[i]:
            parts.append(s)
            floored.append(torch.zeros(0, dtype=torch.long))
            rest_units.append(WordUnits(()))
            continue
        lo, hi = s.min(), s.max()
        norm = (s - lo) / (hi - lo).clamp_min(1e-12) * math.exp((relevance[i] - best) / temperature)  # (N_i,)
        f = min(int(floors[i]), sizes[i])
        first = select(s, f, units=page_units) if f > 0 else torch.zeros(0, dtype=torch.long)  # (f,) its own best
        norm[first] = -math.inf  # taken: the joint selection below spends only the rest
        taken = set(first.tolist())
        parts.append(norm)
        floored.append(first)
        left = ([c for c in np.asarray(u).tolist() if c not in taken] for u in page_units)
        rest_units.append(WordUnits([u for u in left if u]))
    rest = k - sum(len(f) for f in floored)
    joint = torch.zeros(0, dtype=torch.long)
    if rest > 0:
        combined = torch.cat(parts)  # (sum N_i,)
        joined = WordUnits.join(rest_units, offsets) if any(len(u) for u in rest_units) else ()
        joint = select(combined, rest, units=joined)
    out = []
    for i in range(n):
        mine = joint[(joint >= offsets[i]) & (joint < offsets[i] + sizes[i])] - offsets[i]
        out.append(torch.cat([floored[i], mine]).unique(sorted=True))
    return out


def decide_pages(
    allocations: Sequence[Allocation | None],
    relevance: dict[int, float],
    specific: bool,
    k: int,
    floor: int | str = "auto",
    temperature: float = 0.05,
    query: str = "",
    focus: float = 0.0,
) -> list[torch.Tensor]:
    """Each page's kept indices for ``k`` tokens over the document (the step after reading; see :func:`share`).

    ``floor="auto"``: no floor when some page stands out (``specific``), else an even split of ``k`` (each page its
    own best cells; the remainder one more token to the first pages). Pages without an allocation keep nothing.
    ``focus`` > 0: each read page's share is then spent from its key spans for ``query`` first
    (``arr_coc.reading.matching.spans.refocus``; :attr:`PagesConfig.focus`)."""
    scores = [
        torch.from_numpy(np.ascontiguousarray(a.scores, dtype=np.float32)).flatten()
        if a is not None
        else torch.zeros(0)
        for a in allocations
    ]
    units = [list(a.units) if a is not None else [] for a in allocations]
    keeps = split_pages(scores, units, relevance, specific, k, floor, temperature)
    from .reading.matching.spans import refocus_pages

    return refocus_pages(allocations, keeps, query, focus)  # one rule with compress / vLLM (document_budget.py)


def split_pages(
    scores: Sequence[torch.Tensor],
    units: Sequence[Sequence[np.ndarray]],
    relevance: dict[int, float],
    specific: bool,
    k: int,
    floor: int | str = "auto",
    temperature: float = 0.05,
) -> list[torch.Tensor]:
    """:func:`decide_pages` on the pages' scores (N_i,) and word units directly (an empty tensor: a page not
    scored): the floors (``floor="auto"``: none when ``specific``, else an even split of ``k``, the remainder one
    more token to the first pages), the page weights, then :func:`share`. ``compress(budget_scope="prompt")``
    calls it on a prompt's images."""
    n = len(scores)
    per_page = (0 if specific else k // n) if floor == "auto" else min(int(floor), k // n)
    floors = [per_page] * n
    if not specific and floor == "auto":
        for i in range(k - per_page * n):
            floors[i % n] += 1
    weights = [relevance.get(i, 0.0) if specific else 1.0 for i in range(n)]
    return share(scores, weights, k, floors, units, temperature)


def document_budget(
    budget: Budget | TokenBudget, n_tokens: int, best_page: Allocation | Any, realizer: Realizer
) -> int:
    """The document's token count: a count (clamped), a fraction of all its pages' tokens, or ``"adaptive"`` (the
    most relevant page's adaptive count, as ``allocate`` would give that page alone). ``best_page``: that page's
    ``Allocation``, or its scores (array or tensor), or None."""
    parsed = TokenBudget.parse(budget)
    if parsed.adaptive:
        if best_page is None:
            return min(n_tokens, 64)
        raw = getattr(best_page, "scores", best_page)
        raw = raw.detach().float().cpu().numpy() if isinstance(raw, torch.Tensor) else raw
        scores = torch.from_numpy(np.ascontiguousarray(raw, dtype=np.float32)).flatten()
        return parsed.resolve(scores.numel(), scores, realizer.config)
    return parsed.resolve(n_tokens)


def allocate_pages(
    document: Any,
    query: str | None,
    budget: Budget = 0.01,
    family: str = "qwen2.5-vl",
    min_pixels: int | None = None,
    max_pixels: int | None = None,
    mode: str = "auto",
    *,
    pages: str | None = None,
    floor: int | str = "auto",
    first_look_pages: bool = True,
    text_layer: bool = True,
    read_ahead_pages: bool = True,
    config: PagesConfig = PagesConfig(),
    text_options: dict[str, Any] | None = None,
    realizer: Realizer | None = None,
    reader: Any = None,
) -> DocumentAllocation:
    """Decide which visual tokens of a document's pages matter for ``query``, one ``budget`` for all the pages.

    Args:
        document: a PDF (path or bytes), a list of page images (paths, PIL images, arrays), or loaded
            :class:`~arr_coc.documents.Page` objects (load a PDF once with ``arr_coc.documents.load_document`` to ask
            it several questions without rendering it again).
        query: the question ("" or None: query-blind; the budget is split evenly).
        budget: tokens for the whole document: a count, a fraction of all its pages' tokens, or ``"adaptive"``.
        family, min_pixels, max_pixels: the model's grid (as ``allocate``).
        mode: "text", "texture" or "auto" (as ``allocate``).
        pages: a 1-based page range (``"3-10"``) of the document.
        floor: tokens every page keeps: an int, or ``"auto"`` (0 when some page stands out; an even split else).
        first_look_pages: read in full only the pages the text layer points to (PDFs; see the module doc).
        text_layer: a PDF page's text path reads its text layer (``arr_coc.page_text``: exact words, no OCR) when it
            has one; False: OCR reads the rendered page.
        read_ahead_pages: when ``document`` is loaded pages (``load_document``: the caller means to ask again) and
            the text path skipped some, a background thread prepares those (:func:`read_ahead`) after this answer,
            so a next question that needs them finds them rendered, embedded and textured
            (``DocumentAllocation.wait``).
        config: the thresholds of the page decision (:class:`PagesConfig`).
        text_options, realizer, reader: as ``allocate``.

    Returns:
        A :class:`DocumentAllocation` with every page in order.
    """
    t0 = time.perf_counter()
    parsed = TokenBudget.parse(budget)  # fail fast, before rendering
    if not (floor == "auto" or (isinstance(floor, int) and not isinstance(floor, bool) and floor >= 0)):
        raise ValueError(f"floor must be 'auto' or a token count >= 0, got {floor!r}")
    mode = resolve_mode(mode)
    realizer = realizer or default_realizer()
    spec = GridSpec.for_family(family, min_pixels, max_pixels)
    doc = load_document(document, pages, target_pixels=2 * spec.max_pixels)
    t1 = time.perf_counter()
    text = normalize_text(query or "")
    notes = query_notes(text)
    n = len(doc)
    grids = [spec.grid_for(p.original[1], p.original[0]) for p in doc]
    sizes = [g.rows * g.cols for g in grids]
    # a question with no content word ("What is this document about?") points to no page: the pages' texture decides
    vague_query = not _words(text)
    if vague_query and mode == "text":
        mode = "texture"
        notes.append("the question names nothing on the pages: every page keeps its own most telling cells (texture)")
    if mode == "text" and first_look_pages:
        likely = first_look([p.text for p in doc], text, config)
    else:
        likely = list(range(n))
    t2 = time.perf_counter()

    def run(i: int, page_mode: str) -> Allocation:
        image, page_reader = doc[i].image, reader
        if text_layer and doc[i].lines:
            page_reader = LayerReader(doc[i].lines, reader)
            image = sized(doc[i], grids[i].resized)
        return allocate(
            image, query, 1.0, family=spec.family, min_pixels=min_pixels, max_pixels=max_pixels,
            mode=page_mode, text_options=text_options, realizer=realizer, reader=page_reader,
        )  # fmt: skip

    allocs: dict[int, Allocation] = {}
    reads: dict[int, str] = {}
    workers = config.workers or min(8, os.cpu_count() or 1)

    def read_all(indices: Sequence[int], page_mode: str) -> None:
        todo = [i for i in indices if i not in allocs]
        if not todo:
            return
        if workers > 1 and len(todo) > 1:
            with ThreadPoolExecutor(min(workers, len(todo))) as pool:
                done = list(pool.map(lambda i: run(i, page_mode), todo))
        else:
            done = [run(i, page_mode) for i in todo]
        for i, a in zip(todo, done, strict=True):
            allocs[i], reads[i] = a, a.mode

    if mode == "text" and text_layer and workers > 1 and len(likely) > 1:  # one pass over the pages' boxes
        prepare_pages(doc, likely, [g.resized for g in grids], text_options, realizer, workers)
    read_all(likely, mode)
    relevance = page_relevances(allocs, text, config)
    best = max(relevance.values(), default=0.0)
    specific = mode == "text" and not vague_query and stands_out(relevance, config)
    if not specific and len(likely) < n and mode == "text":  # the look chose pages but none matched: read them all
        read_all(range(n), mode)
        relevance = page_relevances(allocs, text, config)
        best = max(relevance.values(), default=0.0)
        specific = stands_out(relevance, config)
    t3 = time.perf_counter()
    best_page = allocs[max(relevance, key=relevance.get)] if relevance else None  # type: ignore[arg-type]
    k = document_budget(parsed, sum(sizes), best_page, realizer)
    if not specific or (floor != "auto" and floor > 0):
        read_all(range(n), "texture")  # every page keeps cells: the pages not read get their texture scores
    keeps = decide_pages(
        [allocs.get(i) for i in range(n)], relevance, specific, k, floor, config.temperature, text, config.focus
    )
    t4 = time.perf_counter()
    loaded = all(isinstance(p, Page) for p in (document if isinstance(document, (list, tuple)) else [None]))
    if not loaded:
        close_document(doc)  # a PDF this call opened: closed now (the pages it rendered keep their pixels)
    ahead = None
    # the pages this question skipped that no question has rendered yet (a rendered page was read or read ahead)
    # (``text``, not ``lines``: a page's boxes are read when first asked for, here by the read-ahead's thread)
    skipped = [i for i in range(n) if reads.get(i) is None and (doc[i].text or "").strip() and not doc[i].rendered]
    if loaded and read_ahead_pages and mode == "text" and text_layer and skipped:
        ahead = threading.Thread(
            target=read_ahead, args=(doc, skipped, run, text_options, realizer), name="arr_coc-read-ahead", daemon=True
        )
        _AHEAD[:] = [t for t in _AHEAD if t.is_alive()] + [ahead]
        ahead.start()
    results = [
        PageResult(
            doc[i],
            (grids[i].rows, grids[i].cols),
            grids[i].resized,
            keeps[i],
            relevance.get(i),
            reads.get(i, "skipped"),
            allocs.get(i),
        )  # fmt: skip
        for i in range(n)
    ]
    if not specific and not vague_query:
        notes.append(
            f"no page matched the question well (best match {best:.2f} < {config.specific_min}, no page "
            f"{config.margin} above the median page): the budget was "
            "split evenly over the pages"
        )
    return DocumentAllocation(
        query=("" if query is None else str(query)),
        family=spec.family,
        mode=mode,
        pages=results,
        specific=specific,
        requested=k,
        floor=floor,
        temperature=config.temperature,
        focus=config.focus,
        realizer=realizer,
        ahead=ahead,
        timings_ms={
            "load": (t1 - t0) * 1e3,
            "look": (t2 - t1) * 1e3,
            "read": (t3 - t2) * 1e3,
            "select": (t4 - t3) * 1e3,
            "total": (t4 - t0) * 1e3,
        },
        notes=notes,
    )


__all__ = [
    "DocumentAllocation",
    "PageResult",
    "PagesConfig",
    "allocate_pages",
    "decide_pages",
    "document_budget",
    "first_look",
    "match_pages",
    "page_relevance",
    "prepare_pages",
    "read_ahead",
    "share",
    "split_pages",
]
