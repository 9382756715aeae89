"""Lexical matching: normalisation (case, unicode, thousands separators, number canonicalisation, abbreviations,
light stemming), tokens, fuzzy token similarity, the query's content terms and the answer type a question asks for."""

from __future__ import annotations

import functools
import re
import unicodedata

MAX_QUERY_CHARS = 512  # longer queries are truncated to their first 512 characters (documented, see QueryMatcher)
MAX_QUERY_TOKENS = 48  # at most this many content tokens of the query are used for lexical matching

STOP_WORDS = frozenset(
    """a an the of in on at to for from by with about as and or but if then than so is are was were be been being am
    do does did done have has had having can could should would will shall may might must what which who whom whose
    where when why how much many any some this that these those it its it's there their they them he she his her
    i me my we our you your us please tell give find according here also just only into out up down over under
    per via vs each every all both other another such same very too again there's what's whats""".split()
)
# Words that describe the question or the document rather than name its content: kept, but weak.
META_WORDS = frozenset(
    """value values chart graph plot figure bar bars table row rows column columns cell document page image picture
    photo text say says said written write shown show shows listed list mentioned mention state states stated read
    label labelled labeled first second third fourth last left right top bottom middle entry field section part
    paragraph line sign name""".split()
)
META_WEIGHT = 0.15
ABBREVIATIONS = {
    "no": "number",
    "nr": "number",
    "num": "number",
    "nbr": "number",
    "#": "number",
    "qty": "quantity",
    "amt": "amount",
    "inv": "invoice",
    "tel": "phone",
    "ph": "phone",
    "telephone": "phone",
    "dept": "department",
    "addr": "address",
    "acct": "account",
    "acc": "account",
    "ref": "reference",
    "tot": "total",
    "pcs": "pieces",
    "dob": "date of birth",
    "incl": "including",
    "excl": "excluding",
    "po": "purchase order",
    "vat": "value added tax",
    "id": "identifier",
    "yr": "year",
    "hr": "hour",
}
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[a-z0-9]+|#")


def _normalise(text: str) -> str:
    s = unicodedata.normalize("NFKC", text).lower()
    s = re.sub(r"(?<=\d)[,\u2009\u202f'](?=\d{3}\b)", "", s)  # thousands separators: 1,234.00 -> 1234.00
    return s


def _canon_number(tok: str) -> str:
    if "." in tok:
        whole, frac = tok.split(".", 1)
        frac = frac.rstrip("0")
        tok = whole if not frac else f"{whole}.{frac}"
    return tok.lstrip("0") or "0"


def _stem(tok: str) -> str:
    if not tok.isalpha() or len(tok) <= 3:
        return tok
    for suf in ("ings", "ing", "ed", "es", "s"):
        if tok.endswith(suf) and len(tok) - len(suf) >= 3 and not tok.endswith("ss"):
            return tok[: -len(suf)]
    return tok


@functools.lru_cache(maxsize=65536)
def _tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text``: lower-case, numbers canonical (1,234.00 -> 1234), abbreviations expanded."""
    out = []
    for tok in _TOKEN_RE.findall(_normalise(text)):
        if tok[0].isdigit() and all(ch.isdigit() or ch == "." for ch in tok):
            out.append(_canon_number(tok))
            continue
        out.extend(_stem(t) for t in ABBREVIATIONS.get(tok, tok).split())
    return tuple(out)


def _content_tokens_of_box(text: str) -> tuple[str, ...]:
    # on the box side single letters/digits are identifiers ("Widget A", "Q3"), so only longer stop words go
    return tuple(t for t in _tokens(text) if len(t) == 1 or t not in STOP_WORDS)


def _query_terms(query: str) -> list[tuple[str, float]]:
    """(token, weight) of the query's content words; single letters survive only if written in upper case."""
    upper_single = {m.lower() for m in re.findall(r"\b[A-Z]\b", unicodedata.normalize("NFKC", query))}
    terms: dict[str, float] = {}
    for tok in _tokens(query):
        if tok in STOP_WORDS and not (len(tok) == 1 and tok in upper_single):
            continue
        if len(tok) == 1 and tok.isalpha() and tok not in upper_single:
            continue
        w = META_WEIGHT if tok in META_WORDS else 1.0
        terms[tok] = max(terms.get(tok, 0.0), w)
        if len(terms) >= MAX_QUERY_TOKENS:
            break
    return list(terms.items())


# Expected answer type from the question's wording, and what a value of that type looks like. Used as a weak prior
# ("when ...?" -> every date on the page is a candidate), so a question whose key is not found still keeps the values
# of the right kind, and a wrong key (the question's other nouns) does not take the whole budget.
_ANSWER_TYPE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(r"\bwhen\b|\b(?:what|which) (?:day|date|year|month)\b|\bdated?\b|\bdeadline\b|\bborn\b", re.I)),
    ("count", re.compile(r"\bhow many\b|\bnumber of\b|\bquantity\b|\bcount\b", re.I)),
    (
        "money",
        re.compile(
            r"\bhow much\b|\bcosts?\b|\bprices?\b|\bpa(?:y|id)\b|\bamount\b|\btotal\b|\bspen[dt]\b|\bfees?\b|"
            r"\bcharged?\b|\bsum\b|\bbalance\b|\bowe[ds]?\b|\bchange\b|\btax\b",
            re.I,
        ),
    ),
)
_MONTHS = r"jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
_VALUE_PATTERNS: dict[str, re.Pattern[str]] = {
    "date": re.compile(
        rf"\b\d{{1,4}}[-/.]\d{{1,2}}[-/.]\d{{1,4}}\b|\b\d{{1,2}}\s*(?:{_MONTHS})[a-z]*\.?\s*\d{{2,4}}\b|"
        rf"\b(?:{_MONTHS})[a-z]*\.?\s*\d{{1,2}},?\s*\d{{2,4}}\b",
        re.I,
    ),
    "money": re.compile(r"[$€£¥]\s?\d|\d\s?[$€£¥]|\b\d[\d,]*[.,]\d{2}\b|\b(?:usd|eur|gbp|chf)\b", re.I),
    "count": re.compile(r"^\s*\d{1,6}\s*(?:[a-z]{1,5}\.?)?\s*$", re.I),
}


def _answer_types(query: str) -> tuple[str, ...]:
    """Value types the question asks for ("date", "count", "money"), possibly several, possibly none."""
    return tuple(name for name, pat in _ANSWER_TYPE_PATTERNS if pat.search(query))


def _has_type(text: str, kind: str) -> bool:
    return bool(_VALUE_PATTERNS[kind].search(text))


@functools.lru_cache(maxsize=262144)
def _token_sim(a: str, b: str) -> float:
    """Fuzzy similarity of two normalised tokens in [0, 1]; numbers must match exactly (after canonicalisation)."""
    if a == b:
        return 1.0
    if any(ch.isdigit() for ch in a) or any(ch.isdigit() for ch in b):
        # OCR reads O for 0 and l for 1 now and then; nothing else is fuzzy for numbers ("Q3" is not "Q1")
        ta, tb = a.translate(_DIGIT_LOOKALIKES), b.translate(_DIGIT_LOOKALIKES)
        return 0.9 if ta == tb else 0.0
    la, lb = len(a), len(b)
    short, long_ = (a, b) if la <= lb else (b, a)
    if len(short) >= 4 and long_.startswith(short):
        return 0.85  # "invoice" / "invoiced", "pay" is too short to count
    if len(short) >= 4 and short in long_:
        return 0.6  # "total" inside "subtotal"
    if min(la, lb) < 4 or abs(la - lb) > 2:
        return 0.0
    d = _levenshtein(a, b, 2)
    if d > 2:
        return 0.0
    sim = 1.0 - d / max(la, lb)
    return sim if sim >= 0.7 else 0.0


_DIGIT_LOOKALIKES = str.maketrans({"o": "0", "l": "1", "i": "1", "s": "5", "b": "8", "z": "2"})


def _levenshtein(a: str, b: str, limit: int) -> int:
    """Edit distance, returning ``limit + 1`` as soon as it must exceed ``limit``."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        best = cur[0]
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            best = min(best, cur[j])
        if best > limit:
            return limit + 1
        prev = cur
    return prev[-1]
