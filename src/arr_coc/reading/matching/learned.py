"""The learned box scorer: one small torch model over each recognised text box, trained on evidence boxes.

The rules of ``QueryMatcher`` (keys, the layout rule, the answer-type prior, the evidence chain, table headers,
structural evidence) each compute a number per box. ``box_features`` collects those numbers together with what the
layout analysis and the page say about the box (role, position, size, line length, how often its text recurs on the
page) and the question's intent (answer types, wh-word) into one row per box; ``BoxScorer`` maps each row to a logit
and the box's relevance is ``exp(logit - max logit)`` over the page. The map is painted exactly as the rules' scores
are (``paint_boxes``), and the structural budget rule (``structure.evidence_damp``) still applies on top.

Feature groups (``FEATURE_GROUPS``; the ablation of ``arr-coc train`` trains without each):
    lexical    the box's lexical match to the query, relative to the page's best, and the best itself
    semantic   MiniLM similarity (raw and relative to the page's best)
    links      the layout rule's key weight, candidate score, evidence chain, table headers; the best key weight on
               the box's line to its left (a "Key: value" link) and the key weight directly above it
    type       answer-type agreement: the rule's prior, which value types the box holds (date, money, count, phone,
               e-mail, person, organisation, a bare 6-8 digit run that is not a date such as "00123456")
    structure  structural evidence: the box lies in a region the structural question needs (and its weight)
    role       the layout analysis' role of the box's block (title, heading, paragraph, footnote, code), table cell,
               table header, row label, chart value / label
    position   centre x / y, width, height on the page (absolute layout: what can memorise a template)
    geometry   height relative to the page's body text, vertical rank
    text       characters and words (log), digit / upper-case share, ends with ':', page frequency of its text
    intent     the question's answer types and wh-word, whether it names a key, whether it is structural
    rules      the rule's final score (so a learned model starts from the rules and learns what they miss)

Intent features are the same for every box of a question: they act through the hidden layer (``hidden > 0``).

Two forms (``BoxScorer(residual=...)``):
    free       the logit is the network's output; relevance ``exp(logit - max logit)`` (issue 17's scorer)
    residual   a correction of the rules: relevance ``r * exp(c)`` with ``r`` the rules' own score of the box and
               ``c = bound * tanh(net / bound)`` (a bounded correction; unbounded when ``bound`` is None). Weight
               decay pulls ``c`` toward 0, i.e. toward the rules, and a box whose features lie outside the range
               seen in training (``ood_margin``) gets ``c = 0``: it is scored exactly as the rules score it, and a
               page on which too many boxes do (``ood_page``) is scored by the rules alone.

Example:
    >>> scorer = BoxScorer(hidden=16)
    >>> feats = torch.zeros(5, len(FEATURES))
    >>> scorer(feats).shape
    torch.Size([5])
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from torch import nn

from ..ocr.reader import TextBox
from .host_forward import host_box_scores
from .host_forward import plan as host_plan
from .lexical import FOREIGN_HINT, VALUE_PATTERNS, answer_types, has_type, tokens
from .script_neutral import cased_share, cjk_org, spaced, word_count
from .semantic import semantic_scores

if TYPE_CHECKING:
    from ..config import ReadingConfig
    from ..layout.structural_query import Evidence
    from ..layout.structure import Layout

TYPES = ("date", "money", "count", "phone", "email", "person", "org")
ROLES = ("title", "heading", "paragraph", "footnote", "code")
WH = ("what", "which", "who", "when", "where", "how", "is", "other")

FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "lexical": ("lex", "lex_rel", "lex_best"),
    "semantic": ("sem_sim", "sem_rel", "sem_best"),
    "links": ("key", "value", "chain", "header", "left_key", "above_key"),
    "type": ("prior", *(f"is_{t}" for t in TYPES), "digit_run"),
    "structure": ("ev_hit", "ev_weight", "ev_any"),
    "role": (*(f"role_{r}" for r in ROLES), "table_cell", "table_header", "row_label", "chart_value", "chart_label"),
    "position": ("xc", "yc", "w", "h"),
    "geometry": ("h_rel", "y_rank"),
    "text": ("n_chars", "n_words", "digit_share", "upper_share", "colon_end", "page_freq"),
    "intent": (*(f"q_{t}" for t in TYPES), *(f"wh_{w}" for w in WH), "q_named", "q_structural", "q_len"),
    "rules": ("rule",),
}
FEATURES: tuple[str, ...] = tuple(f for group in FEATURE_GROUPS.values() for f in group)
_INDEX = {f: i for i, f in enumerate(FEATURES)}


def check_columns(features: Sequence[str]) -> None:
    """Check that a scorer's feature columns can be read from today's ``box_features`` rows (``FEATURES``): every
    one still computed, none twice. A checkpoint trained before a feature was added passes (``own_columns`` drops
    the added columns); one that needs a feature since removed or renamed does not.

    Raises:
        ValueError: naming the columns ``box_features`` no longer computes (or repeated ones).
    """
    missing = [f for f in features if f not in _INDEX]
    if missing:
        raise ValueError(
            f"this checkpoint's box scorer needs features that box_features no longer computes: {missing} "
            f"(trained with another arr_coc version; retrain it with arr-coc train)"
        )
    repeated = sorted({f for f in features if list(features).count(f) > 1})
    if repeated:
        raise ValueError(f"this checkpoint's box scorer lists features more than once: {repeated}")


_DIGIT_RUN = re.compile(r"\b\d{6,8}\b")


class RuleQuantities(Protocol):
    """What ``box_features`` reads from the rule matcher (``arr_coc.reading.matching.matcher.QueryMatcher`` is one).

    A protocol, not an import: the matcher uses this module's ``BoxScorer`` and ``box_features``, so this module must
    not import the matcher (no cycle, at run time or in type checking).
    """

    config: ReadingConfig

    @property
    def lexical(self) -> bool: ...  # noqa: D102

    @property
    def semantic(self) -> bool: ...  # noqa: D102

    def clip(self, query: str | None) -> str: ...  # noqa: D102

    def layout_of(self, boxes: Sequence[TextBox]) -> Layout: ...  # noqa: D102

    def box_parts(  # noqa: D102
        self, boxes: Sequence[TextBox], query: str, extra_keys: Sequence[str] = (), layout: Layout | None = None
    ) -> dict[str, np.ndarray]: ...

    def lexical_scores(self, boxes: Sequence[TextBox], query: str) -> np.ndarray: ...  # noqa: D102

    def semantic_similarities(self, boxes: Sequence[TextBox], query: str) -> np.ndarray: ...  # noqa: D102

    def page_cached(self, name: str, boxes: Sequence[TextBox], compute: Any) -> Any: ...  # noqa: D102


# the question words of other languages, by the English one they stand for (consulted when the question has no
# English question word among its first three: an English question's feature is as before)
_WH_FOREIGN: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("when", re.compile(r"哪一?天|什么时候|何时|几号|いつ|何日|\b(?:wann|quand|cu[aá]ndo|quando)\b", re.I)),
    ("where", re.compile(r"哪里|哪儿|どこ|\b(?:wo|wohin|o[uù]|d[oó]nde|dove|onde)\b", re.I)),
    ("who", re.compile(r"谁|誰|\b(?:wer|wem|qui|qui[eé]n|chi|quem)\b", re.I)),
    ("how", re.compile(r"多少|几|いくら|いくつ|どう|\b(?:wie|combien|comment|cu[aá]nto|c[oó]mo|quanto)\b", re.I)),
    ("which", re.compile(r"哪个|哪些|どの|どれ|\b(?:welche[rsnm]?|quel(?:le)?s?|cu[aá]l(?:es)?|quale|qual)\b", re.I)),
    ("what", re.compile(r"什么|何|\b(?:was|que|qu'est|qu[eé]|cosa|o que)\b", re.I)),  # reached only with a hint
)


def _wh(query: str) -> str:
    """The question word among the first three words (English), else another language's (``_WH_FOREIGN``)."""
    words = re.findall(r"[a-z]+", query.lower())
    for w in words[:3]:
        if w in WH:
            return w
    if not query.isascii() or FOREIGN_HINT.search(query):  # not plain English (``lexical.answer_types``' test)
        for wh, pattern in _WH_FOREIGN:
            if pattern.search(query):
                return wh
    return "other"


def box_features(
    matcher: RuleQuantities,
    boxes: Sequence[TextBox],
    query: str,
    layout: Layout | None = None,
    evidence: Evidence | None = None,
    original_size: tuple[int, int] | None = None,
) -> np.ndarray:
    """(N, len(FEATURES)) float32 features of each box for ``query`` (see the module docstring).

    Args:
        matcher: the rule matcher whose quantities are read (its switches apply: a switched-off stage gives 0s).
        boxes: recognised text, in original pixels.
        query: the question (clipped as the matcher clips it).
        layout: the page's ``matcher.layout_of(boxes)`` (computed when None).
        evidence: the structural evidence (``matcher.evidence``), None when no rule fired.
        original_size: ``(width, height)`` of the page (default: the boxes' extent).
    """
    n = len(boxes)
    out = np.zeros((n, len(FEATURES)), dtype=np.float32)
    if n == 0:
        return out
    query = matcher.clip(query or "")
    layout = layout if layout is not None else matcher.layout_of(boxes)
    parts = matcher.box_parts(boxes, query, extra_keys=evidence.keys if evidence is not None else (), layout=layout)
    col = {f: out[:, i] for f, i in _INDEX.items()}  # column views (writes go to ``out``)

    has_query = bool(query.strip())
    if has_query and matcher.lexical:
        lex = parts["lex"] if "lex" in parts else matcher.lexical_scores(boxes, query)
        best = float(lex.max())
        col["lex"][:] = lex
        col["lex_rel"][:] = lex / best if best > 0 else 0.0
        col["lex_best"][:] = best
    if has_query and matcher.semantic:
        sim = parts["sim"] if "sim" in parts else matcher.semantic_similarities(boxes, query)
        col["sem_sim"][:] = sim
        col["sem_rel"][:] = semantic_scores(sim, matcher.config.semantic)
        col["sem_best"][:] = float(sim.max())
    keys = parts["keys"]
    col["key"][:] = keys
    col["value"][:] = parts["values"]
    col["chain"][:] = parts["chain"]
    col["header"][:] = parts["headers"]
    col["prior"][:] = parts["prior"]
    col["rule"][:] = parts["scores"]

    page = matcher.page_cached(
        f"learned page features {original_size}", boxes, lambda: page_features(boxes, layout, original_size)
    )  # (N, F), 0 in query columns
    out += page
    xs0, ys0, xs1, ys1 = (np.array([b.box[k] for b in boxes], dtype=np.float64) for k in range(4))
    hs = np.maximum(ys1 - ys0, 1.0)
    # links on the box's own line (to its left) and directly above it: the layout rule's neighbourhood, read back
    yc = (ys0 + ys1) / 2
    if keys.any():  # (N targets, N sources) masks; only key sources matter
        src = np.flatnonzero(keys > 0)  # (K,)
        h = hs[:, None]  # (N, 1)
        same = (np.abs(yc[src][None, :] - yc[:, None]) < 0.5 * h) & (xs1[src][None, :] <= xs0[:, None] + 0.25 * h)
        above = (
            (ys1[src][None, :] <= ys0[:, None] + 0.25 * h)
            & (ys1[src][None, :] >= ys0[:, None] - 3.0 * h)
            & (xs0[src][None, :] < xs1[:, None])
            & (xs1[src][None, :] > xs0[:, None])
        )
        not_self = src[None, :] != np.arange(n)[:, None]  # (N, K)
        kw = keys[src][None, :]  # (1, K)
        col["left_key"][:] = np.where(same & not_self, kw, 0.0).max(1)
        col["above_key"][:] = np.where(above & not_self, kw, 0.0).max(1)

    if evidence is not None and evidence.regions:
        col["ev_any"][:] = 1.0
        weights = evidence.weights or [1.0] * len(evidence.regions)
        cx, cy = (xs0 + xs1) / 2, (ys0 + ys1) / 2
        for (rx0, ry0, rx1, ry1), w in zip(evidence.regions, weights, strict=False):
            inside = (cx >= rx0) & (cx <= rx1) & (cy >= ry0) & (cy <= ry1)
            col["ev_hit"][inside] = 1.0
            col["ev_weight"][inside] = np.maximum(col["ev_weight"][inside], float(w))

    kinds = answer_types(query) if has_query else ()
    for kind in TYPES:
        col[f"q_{kind}"][:] = float(kind in kinds)
    col[f"wh_{_wh(query)}"][:] = 1.0
    col["q_named"][:] = float(keys.max() > 0)
    col["q_structural"][:] = float(evidence is not None)
    col["q_len"][:] = math.log1p(word_count(query))
    return out


def page_features(boxes: Sequence[TextBox], layout: Layout, original_size: tuple[int, int] | None) -> np.ndarray:
    """(N, len(FEATURES)) float32 with only the columns that do not depend on the question filled (geometry, text,
    value types, layout roles); ``box_features`` adds them, once per page (``QueryMatcher.page_cached``)."""
    n = len(boxes)
    out = np.zeros((n, len(FEATURES)), dtype=np.float32)
    if n == 0:
        return out
    col = {f: out[:, i] for f, i in _INDEX.items()}
    xs0 = np.array([b.box[0] for b in boxes], dtype=np.float64)
    ys0 = np.array([b.box[1] for b in boxes], dtype=np.float64)
    xs1 = np.array([b.box[2] for b in boxes], dtype=np.float64)
    ys1 = np.array([b.box[3] for b in boxes], dtype=np.float64)
    width, height = original_size if original_size is not None else (float(xs1.max()), float(ys1.max()))
    width, height = max(float(width), 1.0), max(float(height), 1.0)
    hs = np.maximum(ys1 - ys0, 1.0)
    body = max(float(layout.body_height), 1.0)
    col["xc"][:] = (xs0 + xs1) / 2 / width
    col["yc"][:] = (ys0 + ys1) / 2 / height
    col["w"][:] = (xs1 - xs0) / width
    col["h"][:] = hs / height
    col["h_rel"][:] = np.log(hs / body)
    col["y_rank"][:] = np.argsort(np.argsort(ys0, kind="stable"), kind="stable") / max(n - 1, 1)

    texts = [b.text for b in boxes]
    norm = [" ".join(tokens(t)) for t in texts]
    freq = Counter(norm)
    for j, t in enumerate(texts):  # script-neutral: the values of text without CJK are as before
        col["n_chars"][j] = math.log1p(len(t))
        col["n_words"][j] = math.log1p(word_count(t))
        col["digit_share"][j] = sum(c.isdigit() for c in t) / max(len(t), 1)
        col["upper_share"][j] = cased_share(t)
        col["colon_end"][j] = float(t.rstrip().endswith((":", "=", "：")))
        col["page_freq"][j] = math.log(freq[norm[j]]) if norm[j] else 0.0
        ts = spaced(t)  # "号码12345678": a boundary between the Han and the digits
        for kind in TYPES:
            col[f"is_{kind}"][j] = float(has_type(ts, kind))
        col["is_org"][j] = max(col["is_org"][j], float(cjk_org(t)))
        col["digit_run"][j] = float(bool(_DIGIT_RUN.search(ts)) and not VALUE_PATTERNS["date"].search(ts))

    for b in layout.blocks:
        if b.role in ROLES:
            for li in b.lines:
                for i in layout.lines[li].boxes:
                    if 0 <= i < n:
                        col[f"role_{b.role}"][i] = 1.0
    for table in layout.tables:
        for r, row in enumerate(table.cells):
            for c in range(len(row)):
                for i in table.cell_boxes(r, c):
                    if 0 <= i < n:
                        col["table_cell"][i] = 1.0
                        col["table_header"][i] = float(r == table.header_row)
                        col["row_label"][i] = float(c == table.header_col)
    for i in layout.values:
        if 0 <= i < n:
            col["chart_value"][i] = 1.0
    for i in layout.labels:
        if 0 <= i < n:
            col["chart_label"][i] = 1.0

    return out


class _Members(nn.Module):
    """Several networks of one shape trained with different seeds; the output is their mean (a seed ensemble:
    the correction a single seed learns varies from seed to seed on sources it never saw; the mean varies less)."""

    def __init__(self, nets: Sequence[nn.Module]) -> None:
        super().__init__()
        self.members = nn.ModuleList(nets)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(..., 1) the mean of the members' (..., 1) outputs for (..., F) standardised rows."""
        return torch.stack([m(x) for m in self.members]).mean(0)


class BoxScorer(nn.Module):
    """Per-box relevance from ``box_features`` rows: standardise, then a linear map or a one-hidden-layer MLP, used
    either freely (the logit) or as a bounded correction of the rules' score (``residual``).

    Every number is a tensor of this module (weights, the standardisation's mean and scale, the feature mask, the
    training range of each feature), so a checkpoint (``model.safetensors``) plus ``config`` restores it exactly.

    Args:
        hidden: hidden units (0: linear, logit = w . x + b).
        features: the feature names the rows hold, in order (default ``FEATURES``).
        drop_groups: feature groups masked to their mean (the ablation: the model never sees them).
        residual: score ``r * exp(c)``, a correction ``c`` of the rules' score ``r`` (False: the free logit).
        bound: ``|c| < bound`` (residual only; None: unbounded).
        ood_margin: residual only; a box with a (standardised, unmasked) feature outside the training range widened
            by ``ood_margin`` times that range gets ``c = 0`` (the rules' score). None: no check.
        floor: a rules score of 0 is lifted to ``floor * (exp(c) - 1)`` when ``c > 0`` (residual only).
        members: networks of this shape whose outputs are averaged (a seed ensemble; ``BoxScorer.ensemble``).
        ood_page: residual only; a page (the boxes of one ``box_scores`` call) on which more than this share of the
            boxes lie outside the training range (no margin) is scored by the rules alone: a page unlike every
            training page (a kind never trained on) gets the rules, not a correction learned elsewhere. None: no
            check.
    """

    def __init__(
        self,
        hidden: int = 32,
        features: Sequence[str] = FEATURES,
        drop_groups: Sequence[str] = (),
        residual: bool = False,
        bound: float | None = None,
        ood_margin: float | None = None,
        floor: float = 0.01,
        members: int = 1,
        ood_page: float | None = None,
    ) -> None:
        super().__init__()
        if members < 1:
            raise ValueError(f"members must be >= 1, got {members}")
        unknown = sorted(set(drop_groups) - set(FEATURE_GROUPS))
        if unknown:
            raise ValueError(f"unknown feature group(s) {unknown}; allowed: {', '.join(FEATURE_GROUPS)}")
        if hidden < 0:
            raise ValueError(f"hidden must be >= 0, got {hidden}")
        if bound is not None and not bound > 0:
            raise ValueError(f"bound must be > 0 or None (unbounded), got {bound}")
        if ood_margin is not None and not ood_margin >= 0:
            raise ValueError(f"ood_margin must be >= 0 or None (no check), got {ood_margin}")
        if ood_page is not None and not 0.0 <= ood_page < 1.0:
            raise ValueError(f"ood_page must be in [0, 1) or None (no check), got {ood_page}")
        if not residual and (bound is not None or ood_margin is not None or ood_page is not None):
            raise ValueError("bound, ood_margin and ood_page need residual=True (they bound a correction of the rules)")
        if "rule" not in features and residual:
            raise ValueError("a residual scorer needs the 'rule' feature (the rules' score it corrects)")
        self.hidden = int(hidden)
        self.features = tuple(features)
        self.drop_groups = tuple(drop_groups)
        self.residual = bool(residual)
        self.bound = None if bound is None else float(bound)
        self.ood_margin = None if ood_margin is None else float(ood_margin)
        self.floor = float(floor)
        self.members = int(members)
        self.ood_page = None if ood_page is None else float(ood_page)
        f = len(self.features)
        dropped = {name for g in self.drop_groups for name in FEATURE_GROUPS[g]}
        self.register_buffer("mean", torch.zeros(f))
        self.register_buffer("scale", torch.ones(f))
        self.register_buffer("mask", torch.tensor([0.0 if name in dropped else 1.0 for name in self.features]))
        # training range of each standardised feature (the out-of-distribution check); +-inf: nothing is out
        self.register_buffer("lo", torch.full((f,), -math.inf))
        self.register_buffer("hi", torch.full((f,), math.inf))
        nets = [self._new_net(f) for _ in range(self.members)]
        self.net: nn.Module = nets[0] if self.members == 1 else _Members(nets)

    def _new_net(self, f: int) -> nn.Module:
        if self.hidden:
            return nn.Sequential(nn.Linear(f, self.hidden), nn.ReLU(), nn.Linear(self.hidden, 1))
        return nn.Linear(f, 1)

    @classmethod
    def ensemble(cls, scorers: Sequence[BoxScorer]) -> BoxScorer:
        """One scorer whose network output is the mean of ``scorers``' (same shape, same standardisation: trained on
        the same rows with different seeds). The bound, the out-of-range check and the floor act on the mean.

        Raises:
            ValueError: if ``scorers`` is empty or their shapes or standardisations differ.
        """
        if not scorers:
            raise ValueError("an ensemble needs at least one scorer")
        first = scorers[0]
        for s in scorers[1:]:
            if s.config != first.config or not all(
                torch.equal(getattr(s, b), getattr(first, b)) for b in ("mean", "scale", "mask", "lo", "hi")
            ):
                raise ValueError("ensemble members must share their shape and standardisation (one training set)")
        if len(scorers) == 1:
            return first
        cfg = {**first.config, "members": sum(s.members for s in scorers)}
        out = cls(**cfg)
        nets = [m for s in scorers for m in (s.net.members if isinstance(s.net, _Members) else [s.net])]
        out.net = _Members([copy.deepcopy(n) for n in nets])
        for b in ("mean", "scale", "mask", "lo", "hi"):
            getattr(out, b).copy_(getattr(first, b))
        return out.eval()

    @property
    def config(self) -> dict[str, Any]:
        """What rebuilds this module's shape: ``BoxScorer(**config)``."""
        return {
            "hidden": self.hidden,
            "features": list(self.features),
            "drop_groups": list(self.drop_groups),
            "residual": self.residual,
            "bound": self.bound,
            "ood_margin": self.ood_margin,
            "floor": self.floor,
            "members": self.members,
            "ood_page": self.ood_page,
        }

    def fit_standardisation(self, feats: torch.Tensor) -> None:
        """Set mean / scale from training rows (N, F) (constant features get scale 1) and the training range."""
        with torch.no_grad():
            self.mean.copy_(feats.mean(0))
            std = feats.std(0, unbiased=False)
            self.scale.copy_(torch.where(std > 1e-6, std, torch.ones_like(std)))
            z = (feats.to(self.mean) - self.mean) / self.scale * self.mask  # (N, F)
            self.lo.copy_(z.min(0).values)
            self.hi.copy_(z.max(0).values)

    def out_of_range(self, feats: torch.Tensor) -> torch.Tensor:
        """(...,) bool: the box has a feature outside the training range widened by ``ood_margin`` times that range
        (always False without ``ood_margin``).

        Args:
            feats (torch.Tensor of shape (..., F)): ``box_features`` rows.
        """
        if self.ood_margin is None:
            return torch.zeros(feats.shape[:-1], dtype=torch.bool, device=feats.device)
        return self._outside(feats, self.ood_margin)

    def _outside(self, feats: torch.Tensor, margin: float) -> torch.Tensor:
        """(...,) bool: a (standardised, unmasked) feature outside the training range widened by ``margin`` times it."""
        z = (feats.to(self.mean) - self.mean) / self.scale * self.mask  # (..., F)
        pad = margin * (self.hi - self.lo)  # (F,)
        return ((z < self.lo - pad - 1e-6) | (z > self.hi + pad + 1e-6)).any(-1)

    def page_out_of_range(self, feats: torch.Tensor) -> bool:
        """Whether more than ``ood_page`` of a page's boxes lie outside the training range (False without
        ``ood_page`` or without boxes).

        Args:
            feats (torch.Tensor of shape (N, F)): the ``box_features`` rows of one page and question.
        """
        if self.ood_page is None or feats.shape[0] == 0:
            return False
        return bool(self._outside(feats, 0.0).float().mean() > self.ood_page)

    def correction(self, feats: torch.Tensor) -> torch.Tensor:
        """(...,) the residual form's correction ``c`` of the rules' log-score (0 for out-of-range boxes)."""
        x = (feats.to(self.mean) - self.mean) / self.scale * self.mask
        c = self.net(x).squeeze(-1)
        if self.bound is not None:
            c = self.bound * torch.tanh(c / self.bound)
        return torch.where(self.out_of_range(feats), torch.zeros_like(c), c)

    def residual_scores(self, feats: torch.Tensor) -> torch.Tensor:
        """(...,) ``r * exp(c) + floor * max(exp(c) - 1, 0)``, ``r`` the rules' score (the ``rule`` column): exactly
        ``r`` where ``c = 0``."""
        rule = feats[..., self.features.index("rule")].to(self.mean).clamp_min(0.0)
        e = torch.exp(self.correction(feats))
        return rule * e + self.floor * (e - 1.0).clamp_min(0.0)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        """Logits (the listwise loss' softmax is over a question's boxes).

        Args:
            feats (torch.Tensor of shape (..., F)): ``box_features`` rows.

        Returns:
            torch.Tensor of shape (...,): one logit per box (higher: keep first); residual form: the log of
            ``residual_scores``.
        """
        if feats.shape[-1] != len(self.features):
            raise ValueError(f"expected {len(self.features)} features per box, got {feats.shape[-1]}")
        if self.residual:
            return torch.log(self.residual_scores(feats) + 1e-6)
        x = (feats.to(self.mean) - self.mean) / self.scale * self.mask
        return self.net(x).squeeze(-1)

    def own_columns(self, feats: np.ndarray) -> np.ndarray:
        """``box_features`` rows (N, len(FEATURES)) cut to this scorer's ``features``, in its order (N, F): a
        checkpoint trained before a feature was added reads today's rows, without the added columns.

        Raises:
            ValueError: if the scorer needs a feature ``box_features`` no longer computes.
        """
        if self.features == FEATURES:
            return feats
        check_columns(self.features)
        return feats[:, [_INDEX[f] for f in self.features]]

    def box_scores(self, feats: np.ndarray) -> np.ndarray:
        """(N,) relevance in (0, 1] of each box, float32, for ``box_features`` rows (N, F).

        Free form: ``exp(logit - max)``, the model's listwise probability of each box relative to the page's best
        (the best box scores 1); the gaps stay as wide as the model means them, so the text prior keeps its ranking
        when ``Realizer`` adds the other scorers (a sigmoid squeezed them: measured on realdocs receipts, end to end).
        Residual form: ``residual_scores`` divided by ``max(1, its max)``: the rules' own scores wherever the
        correction is 0, and on every box of a page that ``page_out_of_range`` (``ood_page``).

        Computed in numpy on the calling thread (``host_forward``: no wait on torch's thread pool when the host is
        busy) when the scorer's tensors are float32 on the CPU; else by ``torch_box_scores``."""
        if len(feats) == 0:
            return np.zeros(0, dtype=np.float32)
        steps = host_plan(self)
        if steps is not None:
            return host_box_scores(self, feats, steps)
        return self.torch_box_scores(feats)

    def torch_box_scores(self, feats: np.ndarray) -> np.ndarray:
        """``box_scores`` through this module's torch forward (any device; the reference of ``host_forward``)."""
        if len(feats) == 0:
            return np.zeros(0, dtype=np.float32)
        with torch.no_grad():
            x = torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32))
            if feats.shape[-1] != len(self.features):
                raise ValueError(f"expected {len(self.features)} features per box, got {feats.shape[-1]}")
            if self.residual:
                if self.page_out_of_range(x):  # a page unlike the training pages: the rules alone
                    s = x[:, self.features.index("rule")].to(self.mean).clamp_min(0.0)  # (N,)
                else:
                    s = self.residual_scores(x).float()  # (N,)
                return (s / s.max().clamp_min(1.0)).numpy().astype(np.float32)
            logits = self(x).float()  # (N,)
        return torch.exp(logits - logits.max()).numpy().astype(np.float32)

    # -- checkpoints ---------------------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> None:
        """Write ``scorer.json`` (shape) and ``model.safetensors`` (every tensor) into ``folder``."""
        from safetensors.torch import save_file

        from ...checkpoint_check import CHECKPOINT_VERSION

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"version": CHECKPOINT_VERSION, **self.config}, indent=1, allow_nan=False)
        (folder / "scorer.json").write_text(text + "\n")
        save_file(
            {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}, str(folder / "model.safetensors")
        )

    @classmethod
    def load(cls, folder: str | Path) -> BoxScorer:
        """Inverse of ``save``.

        Raises:
            FileNotFoundError: if ``folder`` lacks ``scorer.json`` or ``model.safetensors``.
            CheckpointError: (a ``ValueError``) if ``scorer.json`` or ``model.safetensors`` is truncated or corrupt,
                holds a value of the wrong type, a tensor of the wrong shape or not finite, a newer format, or feature
                columns today's ``box_features`` does not compute (``check_columns``); the message names the file.
        """
        from ...checkpoint_check import CheckpointError, check_value, check_version, load_tensors, read_json

        folder = Path(folder)
        for name in ("scorer.json", "model.safetensors"):
            if not (folder / name).is_file():
                raise FileNotFoundError(f"{folder} is not a relevance checkpoint: {name} is missing")
        path = folder / "scorer.json"
        cfg = read_json(path)
        check_version(cfg, path)
        hints = {"hidden": int, "features": list[str], "drop_groups": list[str], "residual": bool, "floor": float,
                 "bound": float | None, "ood_margin": float | None, "members": int,
                 "ood_page": float | None}  # fmt: skip
        unknown = sorted(set(cfg) - set(hints))
        if unknown:
            raise CheckpointError(f"unknown field(s) {unknown}; known: {', '.join(hints)}", path, unknown[0])
        try:
            for name, value in cfg.items():  # exact types, finite numbers
                check_value(name, value, hints[name])
        except CheckpointError as e:
            raise e.in_file(path) from None
        if not 0.0 <= cfg.get("floor", 0.0) <= 1e6:
            raise CheckpointError(f"floor must be in [0, 1e6], got {cfg['floor']!r}", path, "floor")
        try:
            check_columns(cfg["features"])
        except KeyError:
            raise CheckpointError("lacks the field 'features'", path, "features") from None
        except ValueError as e:
            raise CheckpointError(str(e), folder, "features") from None
        try:
            scorer = cls(**cfg)
        except KeyError as e:
            raise CheckpointError(f"lacks the field {e.args[0]!r}", path, str(e.args[0])) from None
        except (ValueError, TypeError) as e:  # a value of the wrong type or range, an unknown field
            raise CheckpointError(str(e), path) from None
        expected = {k: tuple(v.shape) for k, v in scorer.state_dict().items()}
        # checkpoints of issue 17 lack the training range: nothing is out of range; the range may be +-inf
        old = {name: getattr(scorer, name) for name in ("lo", "hi")}
        state = load_tensors(folder / "model.safetensors", expected, optional=old, allow_inf=("lo", "hi"))
        if bool((state["scale"] <= 0).any()) or bool((state["lo"] > state["hi"]).any()):  # they divide / bound
            raise CheckpointError(
                "tensor scale must be > 0 and lo <= hi everywhere; the file is corrupt", folder / "model.safetensors",
                "scale",
            )  # fmt: skip
        scorer.load_state_dict(state)
        scorer.eval()
        return scorer
