"""Key spans: where on a page the question's words stand together, and the text that follows them in reading order.

    a page's boxes ──► its words in reading order (lines top to bottom, words left to right; a letter-spaced word
                       such as "r e t u r n s", a code listing's text layer, read as one)
                   ──► occurrences: each word that holds a content word of the question, scored by how much of the
                       whole question stands in its sentence within ``window`` words (page-IDF weights, ``near`` per
                       word of distance); a definition after it ("X:", "X -- ") counts as the question's link words
                   ──► spans: an occurrence's phrase (the question's words it gathered), then the words after it, up to
                       its sentence's end, each ``after`` times the one before
                   ──► (rows * cols,) priority of each cell: its best word's, 1 at the page's best phrase

Why: at a small share of a page (a document's 1% over eight pages is ~8% of the answer's page) the matcher's map
spreads the budget over every line the question's name appears on, and the lines that score highest are often not
the one that answers ("XpowN" in a code line, "subalgo" in a prototype, the paragraph below a definition that the
layout rule lifts). A question names its subject and often its verb ("What does XpowN return?", "What is the word
size?"); the sentence that answers it says them together ("XpowN returns ...", "The word size is used for ...") and
goes on with the answer. So the page's occurrences of the question's words are ranked by how much of the question
each gathers in its sentence, and the budget is spent from the best one along its line, before the weaker ones:
what question-answering systems long did with surface patterns ("<subject> <verb> <answer>"), as a ranking over
the page's words with no pattern list and no learned weight.

Used inside a document's decision only (the in-page selection of a page that got a small share of a document's
budget: ``arr_coc.pages.decide_pages``, and ``compress(budget_scope="prompt")`` / the vLLM plugin's multi-image requests
through the same :func:`refocus_pages`); single-page ``allocate`` and per-item ``compress`` never call it.

Example:
    >>> from arr_coc.reading.ocr.reader import TextBox
    >>> boxes = [TextBox("see XpowN below", (0, 0, 150, 10)), TextBox("XpowN returns x**N mod P.", (0, 20, 250, 30))]
    >>> [(s.line, round(s.score, 2)) for s in key_spans(boxes, "What does XpowN return?")]
    [(1, 1.0), (0, 0.64)]
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..config import LayoutConfig, LexicalConfig
from .lexical import STOP_WORDS, answer_types, token_sim, tokens
from .propagation import span_cells

# question words and auxiliaries: they frame the question and are never printed with its answer
FRAME_WORDS = frozenset("what which who whom whose where when why how do does did a an the".split())
_SENTENCE_END = re.compile(r"[.;!?][)\]\"'”’]*$")
_ABBREVIATIONS = frozenset("e.g. i.e. etc. cf. vs. fig. eq. no. sec. ch. ref. resp. approx.".split())
_DEFINES = re.compile(r"^(?::(?!:)|--|—|–|=(?!=))")  # opens a definition of the words before it (not "::", "==")


@dataclass(frozen=True)
class SpanConfig:
    """How occurrences are ranked and spans spent (every number of :func:`key_spans` and :func:`span_priorities`).

    Attributes:
        window: words either side of an occurrence (within its sentence) where the question's other words count.
        near: a question word ``d`` words from the occurrence counts ``near ** d``.
        after: each word after the phrase has ``after`` times the priority of the one before it.
        horizon: at most this many words after the phrase (the sentence ends sooner, usually).
        defines: an occurrence followed by a definition mark (":", "--", "=") gathers the question's link words
            (its words that are not content words: "is", "for") as if they stood right after it ("X: ..." reads as
            "X is ..."), times this.
        guard_evidence: leave a page whose text path found structural evidence (a table cell named by its row and
            column, a structural question: ``Allocation.evidence``) to its own selection: that rule is more specific.
        guard_typed: leave a question that asks for a kind of value (a date, an amount, a count:
            ``lexical.answer_types``) to the page's own selection: the matcher's type prior finds that value beside
            or below its key, where reading order after the key may not reach.
    """

    window: int = 4
    near: float = 0.8
    after: float = 0.9
    horizon: int = 16
    defines: float = 1.0
    guard_evidence: bool = True
    guard_typed: bool = True


@dataclass(frozen=True)
class Word:
    """One word of the page in reading order: its text, its normalised tokens, its line and its box (pixels)."""

    text: str
    tokens: tuple[str, ...]
    line: int
    box: tuple[float, float, float, float]
    ends: bool  # the last word of a sentence


@dataclass(frozen=True)
class Span:
    """One occurrence of the question's words: ``score`` (1 the page's best), its phrase's first and last word
    (indices into :func:`reading_words`), and its line."""

    score: float
    first: int
    last: int
    line: int


def _lines(boxes: Sequence) -> list[list[int]]:
    """Box indices grouped into lines, top to bottom, each left to right: by vertical centre, a box joins the line
    when its centre lies within the line's first box or that box's centre within it (a quote mark or a superscript
    joins the line it sits on)."""
    order = sorted(range(len(boxes)), key=lambda i: ((boxes[i].box[1] + boxes[i].box[3]) / 2, boxes[i].box[0]))
    lines: list[list[int]] = []
    top = bottom = 0.0
    for i in order:
        y0, y1 = boxes[i].box[1], boxes[i].box[3]
        c = (y0 + y1) / 2
        if lines and (top <= c <= bottom or y0 <= (top + bottom) / 2 <= y1):
            lines[-1].append(i)
            continue
        lines.append([i])
        top, bottom = y0, y1
    return [sorted(line, key=lambda i: boxes[i].box[0]) for line in lines]


def _letter_spaced(parts: list[tuple[str, tuple[float, float, float, float]]]) -> list[tuple[str, tuple]]:
    """Runs of 3 or more single letters ("r e t u r n s") joined into one word (a text layer that spaces a
    monospaced listing's letters)."""
    out: list[tuple[str, tuple]] = []
    run: list[tuple[str, tuple]] = []

    def flush() -> None:
        if len(run) >= 3:
            out.append(("".join(t for t, _ in run), (run[0][1][0], run[0][1][1], run[-1][1][2], run[-1][1][3])))
        else:
            out.extend(run)
        run.clear()

    for text, box in parts:
        if len(text) == 1 and text.isalpha():
            run.append((text, box))
            continue
        flush()
        out.append((text, box))
    flush()
    return out


_WORDS: OrderedDict[tuple, list[Word]] = OrderedDict()  # the last pages' words (a next question reads them again)
_WORDS_LOCK = threading.Lock()
PAGES_KEPT = 32


def reading_words(boxes: Sequence, pad: float = 0.25) -> list[Word]:
    """The page's words in reading order (:func:`_lines`), each box split at its spaces with a word's box its share of
    the box's width by characters, widened by ``pad`` characters each side (``propagation.word_units``' rule).
    The last ``PAGES_KEPT`` pages' words are kept (keyed on the boxes' texts and positions): do not modify them."""
    key = (pad, *((b.text, *b.box) for b in boxes))
    with _WORDS_LOCK:
        if key in _WORDS:
            _WORDS.move_to_end(key)
            return _WORDS[key]
    words = _reading_words(boxes, pad)
    with _WORDS_LOCK:
        _WORDS[key] = words
        while len(_WORDS) > PAGES_KEPT:
            _WORDS.popitem(last=False)
    return words


def _reading_words(boxes: Sequence, pad: float) -> list[Word]:
    out: list[Word] = []
    for n, line in enumerate(_lines(boxes)):
        parts = []
        for i in line:
            text = boxes[i].text
            x0, y0, x1, y1 = boxes[i].box
            step = (x1 - x0) / max(1, len(text))
            for m in re.finditer(r"\S+", text):
                parts.append((m.group(), (x0 + step * (m.start() - pad), y0, x0 + step * (m.end() + pad), y1)))
        for text, box in _letter_spaced(parts):
            ends = bool(_SENTENCE_END.search(text)) and text.lower() not in _ABBREVIATIONS
            out.append(Word(text, tokens(text), n, box, ends))
    return out


def question_terms(query: str) -> tuple[list[str], list[str]]:
    """The question's content terms (what it names) and its link terms (its other words but the question words:
    "is", "given", "for"), as normalised tokens."""
    content, link = [], []
    for t in tokens(query):
        if t in FRAME_WORDS or t in content or t in link:
            continue
        (link if t in STOP_WORDS else content).append(t)
    return content, link


def key_spans(boxes: Sequence, query: str, config: SpanConfig = SpanConfig(), words: Sequence[Word] = ()) -> list[Span]:
    """The occurrences of the question's content words on the page, best first (score 1 the best; [] when the
    question names nothing found on the page). ``words``: the page's :func:`reading_words` when known."""
    content, link = question_terms(query)
    words = list(words) or reading_words(boxes)
    if not content or not words:
        return []
    lex = LexicalConfig()
    terms = content + link
    # (W, Q) each word's match to each term: its best token (content terms fuzzy, link words exactly)
    distinct: dict[str, int] = {}
    pairs = [(w, distinct.setdefault(t, len(distinct))) for w, word in enumerate(words) for t in word.tokens]
    match = np.zeros((len(words), len(terms)), dtype=np.float32)
    if pairs:
        at, ids = np.array(pairs, dtype=np.int64).T  # (P,) each token's word and distinct id
        for q, term in enumerate(terms):  # each distinct token compared once
            sim = [token_sim(term, t, lex) if q < len(content) else float(t == term) for t in distinct]
            np.maximum.at(match[:, q], at, np.asarray(sim, dtype=np.float32)[ids])
    match[match < lex.present_sim] = 0.0
    # page IDF of each term over the lines: a word on most lines ("is") counts little
    n_lines = words[-1].line + 1
    line_of = np.array([w.line for w in words])
    df = np.array([len(set(line_of[match[:, q] > 0].tolist())) for q in range(len(terms))], dtype=np.float64)
    idf = np.log((n_lines + 1) / (df + 0.5)).clip(min=0.0)
    idf[df == 0] = 0.0
    total = float(idf.sum())
    if total <= 0:
        return []
    sentence = np.cumsum([0] + [int(w.ends) for w in words[:-1]])  # (W,) each word's sentence number
    # a definition mark is one more occurrence of the link words (a page may print "X:" and never "X is")
    link_weight = float(np.log((n_lines + 1) / (df[len(content) :] + 1.5)).clip(min=0.0).sum())
    spans = []
    for t in np.flatnonzero(match[:, : len(content)].max(1) > 0):
        lo, hi = max(0, t - config.window), min(len(words), t + config.window + 1)
        near = np.arange(lo, hi)
        near = near[sentence[near] == sentence[t]]  # (n,) the occurrence's sentence, within the window
        gain = match[near] * (config.near ** np.abs(near - t))[:, None]  # (n, Q)
        best = gain.max(0)  # (Q,)
        score = float((idf * best).sum())
        first = last = int(t)
        for q in np.flatnonzero(best > 0):
            at = near[gain[:, q] == best[q]]
            first, last = min(first, int(at.min())), max(last, int(at.max()))
        nxt = words[last + 1].text if last + 1 < len(words) else ""
        if config.defines and link_weight and (_DEFINES.search(nxt) or words[last].text.endswith(":")):
            gathered = float((idf[len(content) :] * best[len(content) :]).sum())
            score += config.defines * max(0.0, config.near * link_weight - gathered)
        spans.append((score, first, last))
    top = max((s for s, _, _ in spans), default=0.0)
    if top <= 0:
        return []
    best_of: dict[tuple[int, int], float] = {}  # one span a phrase (found from its subject and from its verb)
    for score, f, la in spans:
        best_of[(f, la)] = max(best_of.get((f, la), 0.0), score)
    ranked = sorted(best_of.items(), key=lambda s: (-s[1], s[0]))
    return [Span(s / top, f, la, words[f].line) for (f, la), s in ranked]


def span_priorities(
    boxes: Sequence,
    query: str,
    rows: int,
    cols: int,
    size: tuple[int, int],
    config: SpanConfig = SpanConfig(),
) -> np.ndarray:
    """(rows * cols,) float32 priority of each cell in [0, 1]: each span's phrase at its score, the words after it
    ``after`` times less each, to its sentence's end or ``horizon`` words; a cell its best word's; 0 where no span
    reaches. ``boxes`` in the pixels of a picture of ``size`` (W, H)."""
    out = np.zeros(rows * cols, dtype=np.float32)
    words = reading_words(boxes, LayoutConfig().word_pad)
    spans = key_spans(boxes, query, config, words)
    if not spans:
        return out
    prio = np.zeros(len(words), dtype=np.float64)
    for s in spans:
        prio[s.first : s.last + 1] = np.maximum(prio[s.first : s.last + 1], s.score)
        w, p = s.last, s.score
        while not words[w].ends and w + 1 < len(words) and w - s.last < config.horizon:
            w, p = w + 1, p * config.after
            prio[w] = max(prio[w], p)
    at = np.flatnonzero(prio > 0)
    if not len(at):
        return out
    inside, cells = span_cells(np.array([words[i].box for i in at], dtype=np.float64), rows, cols, size)
    for j, c in zip(inside.tolist(), cells, strict=True):
        out[c] = np.maximum(out[c], prio[at[j]])
    return out


def focused(scores: np.ndarray, priorities: np.ndarray, weight: float) -> np.ndarray:
    """(N,) a page's scores min-max normalised, blended with its span priorities: ``weight * priority + (1 - weight)
    * score`` (a page with no span: its normalised scores, the same order)."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    lo, hi = float(s.min()), float(s.max())
    norm = (s - lo) / max(hi - lo, 1e-12)
    return (weight * priorities.reshape(-1) + (1.0 - weight) * norm).astype(np.float32)


def refocus(allocation, query: str, k: int, weight: float, config: SpanConfig = SpanConfig()):
    """The ``k`` cells a page keeps when its selection is spent from its key spans first (:func:`focused` of its
    ``scores`` and :func:`span_priorities`; its words kept whole): (k,) ascending indices, or None when the page has
    no text boxes or the question names nothing on it (keep the caller's selection)."""
    import torch

    from ...attending import select

    boxes = list(getattr(allocation, "text_boxes", None) or [])
    if k <= 0 or weight <= 0 or not boxes or not query:
        return None
    if config.guard_evidence and getattr(allocation, "evidence", None) is not None:
        return None
    if config.guard_typed and answer_types(query):
        return None
    rows, cols = allocation.grid
    prio = span_priorities(boxes, query, rows, cols, tuple(allocation.original), config)
    if not prio.any():
        return None
    scores = torch.from_numpy(focused(allocation.scores, prio, weight))
    return select(scores, k, units=allocation.units)  # the page's WordUnits: their selection tables are cached


def refocus_pages(pages: Sequence, keeps: Sequence, query: str, weight: float) -> list:
    """Each page's share ``keeps[i]`` ((k_i,) indices; its count unchanged) spent from its key spans first
    (:func:`refocus`; ``weight`` 0: ``keeps`` as given): the in-page step of a document's decision, ONE function for
    ``arr_coc.pages.decide_pages`` and for ``compress(budget_scope="prompt")`` / the vLLM plugin
    (``arr_coc.integrations.document_budget.split_prompt``). ``pages[i]``: an ``Allocation``, or anything with its
    ``scores``, ``units``, ``text_boxes``, ``evidence``, ``grid`` and ``original`` (the boxes' picture size, (W, H)),
    or None (its share kept as given)."""
    out = list(keeps)
    for i, page in enumerate(pages):  # the page's share, spent from where the question's words stand together
        better = refocus(page, query, int(out[i].numel()), weight) if page is not None and weight else None
        out[i] = out[i] if better is None else better
    return out


__all__ = ["FRAME_WORDS", "Span", "SpanConfig", "Word", "focused", "key_spans", "question_terms", "reading_words",
           "refocus", "refocus_pages", "span_priorities"]  # fmt: skip
