"""Lexical matching: normalisation (case, unicode, thousands separators, number canonicalisation, abbreviations,
light stemming), tokens, fuzzy token similarity, the query's content terms, the per-box lexical score and the answer
type a question asks for. Every weight comes from ``LexicalConfig``; the word lists below are definitions.

The ``functools.lru_cache`` s (``tokens``, ``content_tokens``, ``has_type``, ``token_sim``'s ``_token_sim``) memoise
pure functions of their arguments (the fuzzy settings are part of ``_token_sim``'s key), bounded in size; they hold
no state that changes a result."""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Collection, Sequence

import numpy as np

from ..config import LexicalConfig
from ..text import clean, fold
from .paraphrase import PARAPHRASE_BELOW, PARAPHRASE_WEIGHT, key_phrases
from .paraphrase_en import (
    context_words,
    english_key_phrases,
    english_types,
    english_untyped,
    label_hits,
    unprinted_key_phrases,
    without_pronoun_i,
)
from .question_clauses import asked_part, situation_part
from .question_shapes import document_deixis
from .quotes import QUOTED, quote_scores

MAX_QUERY_CHARS = LexicalConfig.max_query_chars  # default truncation of long queries (``LexicalConfig``)
MAX_QUERY_TOKENS = LexicalConfig.max_query_tokens  # default number of query content tokens matched

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
    paragraph line sign name person people form receipt""".split()
)
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
# Tokens: numbers, runs of letters and digits of any alphabet ("größe", "número", "счёт"), and runs of CJK
# characters (Han, kana; split off first: they are written without spaces, so a run is a phrase, not a word)
_CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"\d+(?:\.\d+)?|[{_CJK}]+|[^\W_{_CJK}]+|#")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_HIRAGANA = re.compile(r"[\u3040-\u309f]+")
# Chinese and Japanese function and question words: separators inside a CJK run, never tokens ("发票号码是多少" ->
# "发票号码"; "請求書の合計はいくらですか" -> "請求書", "合計"). Every hiragana run separates too (particles and
# endings), so a Japanese run keeps its kanji and katakana words
CJK_STOP = (
    "什么时候", "哪一天", "多少钱", "是多少", "是什么", "什么", "多少", "哪个", "哪些", "哪里", "哪天", "几号",
    "何时", "请问", "是否", "为何", "多少", "何日", "何時", "何個", "何の", "何", "誰", "谁", "几", "哪", "吗", "呢",
    "的", "是", "了", "在", "和", "与", "及", "这", "该", "那", "其", "为", "給", "给", "上", "中的",
)  # fmt: skip
_CJK_STOP_RE = re.compile("|".join(sorted(map(re.escape, CJK_STOP), key=len, reverse=True)))
# European amounts, dot thousands and a decimal comma ("1.234,56" -> "1234.56"); a lone decimal comma ("12,50 €",
# "0,99") reads as a point too, when the comma is followed by exactly two digits and no more
_EURO_AMOUNT = re.compile(r"(?<![\d.,])(\d{1,3}(?:\.\d{3})+|\d+),(\d{2})(?![\d,]|\.\d)")


def _normalise(text: str) -> str:
    s = fold(text)  # the text path's one normaliser (``arr_coc.reading.text``)
    if "," in s:
        s = _EURO_AMOUNT.sub(lambda m: f"{m.group(1).replace('.', '')}.{m.group(2)}", s)
    return s


@functools.lru_cache(maxsize=65536)
def _fold_accents(tok: str) -> str:
    """``tok`` without its combining marks ("número" -> "numero", "größe" -> "große"): OCR and typists drop accents,
    so both sides of a match are folded the same way. Pure ASCII tokens are returned as they are."""
    if tok.isascii():
        return tok
    return "".join(ch for ch in unicodedata.normalize("NFKD", tok) if not unicodedata.combining(ch))


def cjk_tokens(run: str) -> list[str]:
    """Tokens of a CJK run: its function words and hiragana dropped (``CJK_STOP``), each remaining piece as its
    character bigrams ("发票号码" -> "发票", "票号", "号码"), a one-character piece as itself."""
    out: list[str] = []
    for piece in _HIRAGANA.split(_CJK_STOP_RE.sub(" ", run)):
        for word in piece.split():
            out.extend([word] if len(word) == 1 else [word[i : i + 2] for i in range(len(word) - 1)])
    return out


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


# Function words of German, French, Spanish, Italian and Portuguese questions (articles, prepositions, pronouns,
# copulas, question words): dropped from a question worded in another language (``foreign_words``), as
# ``STOP_WORDS`` are from every question, so "¿Quién es el cliente?" asks for "cliente", not for every line holding
# "el" or "es". Kept as its tokens come out (accents folded, stemmed). "de" and "die" stay terms: they are part of
# printed keys ("N° de facture") and English words
FOREIGN_STOP_WORDS = frozenset(
    _stem(_fold_accents(w))
    for w in """der das des dem den ein eine einer eines einem einen ist sind wird werden wurde wurden hat haben
    hatte wie wer wen wem wessen wann welche welcher welches welchen welchem und oder vom zum zur im am auf aus bei
    mit nach für über bis muss soll kann lautet gibt sie er es le la les un une du des au aux et ou est sont ont
    été était quel quelle quels quelles qui que quoi quand où comment combien ce cet cette ces il elle on en dans
    pour avec faut el los las lo una unos unas del al y es son fue ha han hay qué cuál cuáles quién quiénes cuándo
    dónde cómo cuánto cuántos cuánta cuántas con por para su sus este esta esto il lo gli di della dei delle da dal
    è sono quale quali chi che cosa quando dove quanto os um uma do da dos das em na é são qual quais quem onde
    quanto""".split()
)


@functools.lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """Normalised tokens of ``text``: lower-case, accents folded, numbers canonical (1,234.00 and 1.234,00 -> 1234),
    abbreviations expanded; a CJK run as its character bigrams (``cjk_tokens``)."""
    out: list[str] = []
    for tok in _TOKEN_RE.findall(_normalise(text)):
        if tok[0].isdigit() and all(ch.isdigit() or ch == "." for ch in tok):
            out.append(_canon_number(tok) if tok.isascii() else tok)
            continue
        if _CJK_RUN.fullmatch(tok):
            out.extend(cjk_tokens(tok))
            continue
        if not tok.isascii():
            tok = _fold_accents(tok)
        # stop words stay as written ("does" is not the stem "doe"), so the stop list catches them on both sides
        out.extend(t if t in STOP_WORDS else _stem(t) for t in ABBREVIATIONS.get(tok, tok).split())
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def content_tokens(text: str) -> tuple[str, ...]:
    # on the box side single letters/digits are identifiers ("Widget A", "Q3"), so only longer stop words go
    return tuple(t for t in tokens(text) if len(t) == 1 or t not in STOP_WORDS)


def query_terms(query: str, cfg: LexicalConfig, context: bool = False) -> list[tuple[str, float]]:
    """(token, weight) of the query's content words; single letters survive only if written in upper case.

    The query is truncated to ``cfg.max_query_chars`` characters and at most ``cfg.max_query_tokens`` terms are kept;
    words describing the question rather than its content (``META_WORDS``) weigh ``cfg.meta_weight``, others 1. A
    question worded in another language (``foreign_words``) also drops the European function words
    (``FOREIGN_STOP_WORDS``). An English question for a date, an amount or the issuer drops the words describing
    the document (``paraphrase_en.context_words``) unless ``context`` (``lexical_scores`` keeps them, unmatched).
    """
    query = query[: cfg.max_query_chars]
    foreign_q = foreign_words(query)
    stop = STOP_WORDS | FOREIGN_STOP_WORDS if foreign_q else STOP_WORDS
    # single upper-case letters, the English pronoun "I" aside (``paraphrase_en.without_pronoun_i``)
    upper_single = {
        m.lower() for m in re.findall(r"\b[A-Z]\b", clean(query if foreign_q else without_pronoun_i(query)))
    }
    terms: dict[str, float] = {}
    quoted = _quoted_terms(query) if foreign_q else []
    for tok in quoted:  # the printed text itself comes first, each of its tokens a full term
        terms.setdefault(tok, 1.0)
    context = () if foreign_q or context else _context_tokens(query)  # "When was this bill written?": not "BILL"
    for tok in tokens(query):
        if (tok in stop and not (len(tok) == 1 and tok in upper_single)) or tok in context:
            continue
        if len(tok) == 1 and tok.isalpha() and tok not in upper_single:
            continue
        # around a quote, the question's own words ("后面写的是什么", "Was steht nach") only frame it
        w = cfg.meta_weight if tok in META_WORDS or (quoted and tok not in terms) else 1.0
        terms[tok] = max(terms.get(tok, 0.0), w)
        if len(terms) >= cfg.max_query_tokens:
            break
    return list(terms.items())


_QUOTED = QUOTED  # a quotation in a question worded in another language (``quotes.QUOTED``)


@functools.lru_cache(maxsize=4096)
def _context_tokens(query: str) -> frozenset[str]:
    """Tokens of the words an English question for a date, an amount or the issuer does not match
    (``paraphrase_en.context_words``)."""
    return frozenset(t for w in context_words(answer_types(query)) for t in tokens(w))


@functools.lru_cache(maxsize=4096)
def unmatched_tokens(query: str) -> frozenset[str]:
    """Tokens an English question keeps in its weight but matches with no box: ``_context_tokens`` and the nouns
    naming the document in hand in any English question ("this document": ``question_shapes.document_deixis``)."""
    own = frozenset(tokens(asked_part(query)))  # the asker's situation's words (``question_clauses``), not its own
    situation = frozenset(t for t in tokens(situation_part(query)) if t not in own)
    return _context_tokens(query) | frozenset(t for w in document_deixis(query) for t in tokens(w)) | situation


def _quoted_terms(query: str) -> list[str]:
    """Tokens of the text a foreign question quotes (``foreign_words``), as a box holding it tokenises
    (``tokens``), a CJK character left alone by its function characters included ("上正在运行的" -> "正", "运行":
    the question's own words would drop the single "正")."""
    out: list[str] = []
    for m in _QUOTED.finditer(query):
        span = next(g for g in m.groups() if g)
        out.extend(t for t in tokens(span) if len(t) > 1 or t.isdigit() or _CJK_RUN.fullmatch(t))
    return list(dict.fromkeys(out))


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
    (
        "phone",
        re.compile(
            r"\b(?:tele)?phone\b|\bcall(?:ed)?\b|\bring\b|\brung\b|\bdial(?:led)?\b|\bmobile\b|"
            r"\bfax\b",
            re.I,
        ),
    ),
    ("email", re.compile(r"\be-?mail(?:ed)?\b|\bonline\b|\belectronically\b", re.I)),
    (
        "person",
        re.compile(
            r"\bwho(?:m|se)?\b|\b(?:which|what) (?:person|customer|client|patient|member|applicant)\b|"
            r"\bname\b",
            re.I,
        ),
    ),
    (  # the business behind a document: its issuer ("Which shop issued this receipt?", "Who is the seller?")
        "org",
        re.compile(
            r"\bcompan(?:y|ies)\b|\bshops?\b|\bstores?\b|\bsellers?\b|\bvendors?\b|\bmerchants?\b|"
            r"\bretailers?\b|\bsuppliers?\b|\bissuer\b|\bbusiness(?:es)?\b|\bfirms?\b|\brestaurants?\b|"
            r"\borgani[sz]ations?\b|\bsold by\b|\bbilled by\b",
            re.I,
        ),
    ),
)
# The same answer types asked in Chinese, Japanese, German, French, Spanish, Italian and Portuguese (no word boundaries
# around CJK: it has no spaces)
_FOREIGN_TYPE_PATTERNS: dict[str, re.Pattern[str]] = {
    "date": re.compile(
        r"哪一?天|什么时候|何时|几号|几月|日期|哪年|いつ|何日|何年|日付|年月日|期日|期限|"
        r"\b(?:wann|datum|bis wann|quand|cu[aá]ndo|fecha|quando|data|giorno|jour|tag|termin|f[aä]llig)\b",
        re.I,
    ),
    "count": re.compile(
        r"多少个|几个|几件|数量|いくつ|何個|何点|何枚|"
        r"\b(?:wie viele|wieviele|anzahl|menge|combien de|nombre de|quantit[eé]|cu[aá]nt[oa]s|cantidad|quanti|"
        r"quantidade|st[uü]ck)\b",
        re.I,
    ),
    "money": re.compile(
        r"多少钱|金额|价格|价钱|费用|合计|总计|总额|总价|应付|实付|付款|いくら|金額|料金|価格|合計|総額|代金|税|"
        r"\b(?:wie viel|wieviel|betrag|preis|kostet|kosten|summe|gesamt\w*|zahlen|bezahlt|combien|montant|prix|"
        r"co[uû]te?|payer|pay[eé]|cu[aá]nto|importe|precio|cuesta|pagar|pagado|quanto|valor|prezzo|importo|costo|"
        r"pre[cç]o|totale?)\b",
        re.I,
    ),
    "phone": re.compile(
        r"电话|電話|手机|拨打|致电|かけ|\b(?:telefon\w*|t[eé]l[eé]phone|tel[eé]fono|telefono|handy|anrufen|ruft|"
        r"llamar|llamo|appeler|appelle|chiamare|ligar)\b",
        re.I,
    ),
    "email": re.compile(r"邮箱|电子邮件|メール|\b(?:e-mail|courriel|correo)\b", re.I),
    "person": re.compile(
        r"谁|誰|姓名|氏名|名前|担当者|\b(?:wer|wem|wessen|qui|qui[eé]n(?:es)?|chi|nome|nom|nombre)\b", re.I
    ),
    "org": re.compile(
        r"公司|商店|商家|销售方|会社|店舗|販売|\b(?:firma|unternehmen|gesch[aä]ft|laden|soci[eé]t[eé]|entreprise|"
        r"magasin|empresa|tienda|azienda|negozio|loja)\b",
        re.I,
    ),
}
_MONTHS = r"jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
# a date printed without separators, 8 digits that read as a calendar date: DDMMYYYY, MMDDYYYY or YYYYMMDD with a
# 19xx / 20xx year ("27032018" on a receipt); any other 8-digit run (a phone number, an ID) is not a date
_DD, _MM, _YYYY = r"(?:0[1-9]|[12]\d|3[01])", r"(?:0[1-9]|1[0-2])", r"(?:19|20)\d{2}"
_COMPACT_DATE = rf"\b(?:{_DD}{_MM}{_YYYY}|{_MM}{_DD}{_YYYY}|{_YYYY}{_MM}{_DD})\b"
# what an organisation's name holds: a legal form ("Sdn Bhd", "Ltd", "GmbH") or a kind of business ("Trading",
# "Restaurant", "Hardware"); the issuer of a document is also its first line (``QueryMatcher.type_prior``)
_ORG_WORDS = (
    r"sdn\.?\s*bhd|bhd|s/b|ltd|limited|inc|incorporated|llc|llp|plc|plt|gmbh|pte|pty|corp|corporation|company|"
    r"enterprises?|trading|traders?|holdings?|industries|restaurants?|restoran|cafe|café|bistro|bakery|bakeries|"
    r"hardware|pharmacy|farmasi|supermarket|hypermarket|minimarket|mart|market|stores?|shop|kedai|stationery|"
    r"bookstore|bookcentre|hotel"
)
VALUE_PATTERNS: dict[str, re.Pattern[str]] = {
    "date": re.compile(
        rf"\b\d{{1,4}}[-/.~]\d{{1,2}}[-/.~]\d{{1,4}}\b|\b\d{{1,2}}\s*(?:{_MONTHS})[a-z]*\.?\s*\d{{2,4}}\b|"
        rf"\b(?:{_MONTHS})[a-z]*\.?\s*\d{{1,2}},?\s*\d{{2,4}}\b|{_COMPACT_DATE}|"
        r"\d{2,4}\s*年\s*\d{1,2}\s*月|\d{1,2}\s*月\s*\d{1,2}\s*日|"  # 2026年11月, 11月28日 (Chinese, Japanese)
        r"(?:令和|平成|昭和)\s*\d{1,2}\s*年|"  # Japanese era years
        r"\b\d{1,2}\.?\s*(?:de\s+)?(?:januar|februar|m[aä]rz|mai|juni|juli|oktober|dezember|janvier|f[eé]vrier|mars|avril|"
        r"juin|juillet|ao[uû]t|septembre|octobre|novembre|d[eé]cembre|enero|febrero|marzo|abril|mayo|junio|julio|"
        r"agosto|septiembre|octubre|noviembre|diciembre)[a-z]*\.?\s*(?:de\s+)?\d{2,4}\b",
        re.I,
    ),
    "money": re.compile(
        r"[$€£¥￥]\s?\d|\d\s?(?:[$€£¥￥元円]|圓|块)|\b\d[\d,]*[.,]\d{2}\b|\b(?:usd|eur|gbp|chf|cny|rmb|jpy)\b|"
        r"(?:人民币|日元|税込|税抜)\s?\d",
        re.I,
    ),
    "count": re.compile(r"^\s*\d{1,6}\s*(?:[a-z]{1,5}\.?)?\s*$", re.I),
    "phone": re.compile(r"\+?\(?\d[\d ()./-]{5,}\d"),  # then at least 7 digits (``has_type``)
    "email": re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+"),
    "person": re.compile(r"^\s*[A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){1,2}\s*$"),  # "Elena Albers" (case matters)
    "org": re.compile(rf"(?<![a-z])(?:{_ORG_WORDS})(?![a-z])", re.I),  # "GL HANDICRAFT & TAILORING SDN BHD"
}


def answer_types(query: str) -> tuple[str, ...]:
    """Value types the question asks for ("date", "count", "money", "phone", "email", "person", "org"), possibly
    several, possibly none; in English, and in Chinese, Japanese and the European languages (``哪一天``, ``いくら``,
    ``Wie viel``, ``Quel montant``) when the question is not plain English."""
    found = [name for name, pat in _ANSWER_TYPE_PATTERNS if pat.search(query)]
    found += [name for name in english_types(query) if name not in found]  # paraphrased wordings ("who sold")
    found.sort(key=_TYPE_ORDER.index)
    if not foreign(query):  # "When did I shop here?" asks for no business (``paraphrase_en.english_untyped``)
        found = [name for name in found if name not in english_untyped(query)]
    if foreign(query):  # another language's words ("Wie viel", "いくら")
        found += [name for name, pat in _FOREIGN_TYPE_PATTERNS.items() if name not in found and pat.search(query)]
        found.sort(key=_TYPE_ORDER.index)
    return tuple(found)


_TYPE_ORDER = [name for name, _ in _ANSWER_TYPE_PATTERNS]
# a question in ASCII that may still be German, French, Spanish, Italian or Portuguese: one of its question words
FOREIGN_HINT = re.compile(
    r"\b(?:wie|wann|wer|welche[rsnm]?|wo|quel(?:le)?s?|quand|combien|qui|quoi|o[uù]|cu[aá]l(?:es)?|cu[aá]ndo|"
    r"cu[aá]nt[oa]s?|qu[eé]|qui[eé]n(?:es)?|d[oó]nde|quale|quando|quant[oaie]s?|chi|dove|qual|quem|onde)\b",
    re.I,
)


def foreign(query: str) -> bool:
    """Whether ``query`` may not be plain English: it holds a character outside ASCII or a German, French, Spanish,
    Italian or Portuguese question word (``FOREIGN_HINT``); then the other languages' answer types and function words
    apply too."""
    return not query.isascii() or FOREIGN_HINT.search(query) is not None


_FOREIGN_MARKS = re.compile("[„«»¿¡]")  # German, French and Spanish quotation and question marks


@functools.lru_cache(maxsize=65536)
def foreign_words(query: str) -> bool:
    """Whether ``query`` is worded in another language than English: a Chinese or Japanese character, a German,
    French, Spanish, Italian or Portuguese question word (``FOREIGN_HINT``), a „, «, », ¿ or ¡, or at least two of
    those languages' function words (``FOREIGN_STOP_WORDS``) and more of them than English ones. Stricter than
    ``foreign``: an English question naming "Café de Paris" (or an OCR'd "Bill No. han Au No") stays English."""
    if _CJK_RUN.search(query) or FOREIGN_HINT.search(query) or _FOREIGN_MARKS.search(query):
        return True
    toks = tokens(query)
    other = sum(t in FOREIGN_STOP_WORDS for t in toks)
    return other >= 2 and other > sum(t in STOP_WORDS for t in toks)


@functools.lru_cache(maxsize=262144)
def has_type(text: str, kind: str) -> bool:
    """Whether ``text`` holds a value of type ``kind`` (a phone number: at least 7 digits, and not a date). Memoised
    (a pure function: a page's boxes are tested once per kind, not once per question)."""
    m = VALUE_PATTERNS[kind].search(text)
    if m is None or kind != "phone":
        return m is not None
    return sum(ch.isdigit() for ch in m.group()) >= 7 and not VALUE_PATTERNS["date"].search(m.group())


def token_sim(a: str, b: str, cfg: LexicalConfig) -> float:
    """Fuzzy similarity of two normalised tokens in [0, 1]; numbers must match exactly (after canonicalisation)."""
    return _token_sim(a, b, _fuzzy(cfg))


def _fuzzy(cfg: LexicalConfig) -> tuple[float, float, float, int, int, float]:
    """The settings ``token_sim`` reads, as a small tuple (the memo's key: cheaper to hash than the config)."""
    return (cfg.lookalike_sim, cfg.prefix_sim, cfg.substring_sim, cfg.min_fuzzy_len, cfg.max_edits, cfg.min_edit_sim)


@functools.lru_cache(maxsize=262144)
def _token_sim(a: str, b: str, fuzzy: tuple[float, float, float, int, int, float]) -> float:
    lookalike_sim, prefix_sim, substring_sim, min_fuzzy_len, max_edits, min_edit_sim = fuzzy
    if a == b:
        return 1.0
    if any(ch.isdigit() for ch in a) or any(ch.isdigit() for ch in b):
        # OCR reads O for 0 and l for 1 now and then; nothing else is fuzzy for numbers ("Q3" is not "Q1")
        ta, tb = a.translate(_DIGIT_LOOKALIKES), b.translate(_DIGIT_LOOKALIKES)
        return lookalike_sim if ta == tb else 0.0
    la, lb = len(a), len(b)
    short, long_ = (a, b) if la <= lb else (b, a)
    if len(short) >= min_fuzzy_len and long_.startswith(short):
        return prefix_sim  # "invoice" / "invoiced"; "pay" is too short to count
    if len(short) >= min_fuzzy_len and short in long_:
        return substring_sim  # "total" inside "subtotal"
    if min(la, lb) < min_fuzzy_len or abs(la - lb) > max_edits:
        return 0.0
    d = _levenshtein(a, b, max_edits)
    if d > max_edits:
        return 0.0
    sim = 1.0 - d / max(la, lb)
    return sim if sim >= min_edit_sim else 0.0


class LexicalPage:
    """What ``lexical_scores`` needs of a page whatever the question, computed once per page: its tokens (each text's
    ``content_tokens``), the distinct ones, and each distinct token's similarity to a query term, kept per term (at
    most ``MAX_TERMS`` terms; the oldest goes first), so a second question pays only for its new terms.

    A ``QueryMatcher`` keeps one per page (``page_cached``); ``lexical_scores`` builds a throwaway one when given none.
    The result is the same either way, bit for bit. Safe to share between threads (a term's column computed twice
    at once is the same value; the second assignment wins; eviction and insertion hold a lock).

    Args:
        texts: The N box texts.
    """

    MAX_TERMS = 512

    def __init__(self, texts: Sequence[str]) -> None:
        self.n = len(texts)
        ids: dict[str, int] = {}
        boxes, index, ends = [], [], []  # boxes with tokens; each token's distinct id, box after box; box ends
        for i, text in enumerate(texts):
            toks = content_tokens(text)
            if not toks:
                continue
            index.extend(ids.setdefault(t, len(ids)) for t in toks)
            boxes.append(i)
            ends.append(len(index))
        self.tokens: tuple[str, ...] = tuple(ids)  # (U,) distinct tokens, in first-seen order
        self.boxes = np.asarray(boxes, dtype=np.int64)  # (B,) the boxes with tokens
        self.index = np.asarray(index, dtype=np.int64)  # (T,) every token of those boxes, as an id into ``tokens``
        self.ends = np.asarray(ends, dtype=np.int64)  # (B,)
        self.starts = np.concatenate([[0], self.ends[:-1]]).astype(np.int64) if ends else self.ends  # (B,)
        self.counts = (self.ends - self.starts).astype(np.float32)  # (B,) tokens per box, at least 1
        self.long_boxes = np.flatnonzero(self.counts >= 8).tolist()  # boxes whose token sums NumPy adds pairwise
        # (B, W) each box's token positions, padded with T (an appended 0): W = its longest box, at most 7 columns
        width = int(min(7, self.counts.max())) if ends else 1
        cols = self.starts[:, None] + np.arange(width)[None, :]  # (B, W)
        self.padded = np.where(cols < self.ends[:, None], cols, len(index))
        self._columns: dict[tuple[str, tuple[float, float, float, int, int, float]], np.ndarray] = {}
        self._lock = threading.Lock()  # around the columns' eviction and insertion

    def column(self, term: str, fuzzy: tuple[float, float, float, int, int, float]) -> np.ndarray:
        """(U,) float32 similarity of ``term`` to each distinct token (``_token_sim``), remembered per term."""
        key = (term, fuzzy)
        col = self._columns.get(key)
        if col is None:
            col = np.array([_token_sim(term, t, fuzzy) for t in self.tokens], dtype=np.float32)
            col.setflags(write=False)
            with self._lock:
                while len(self._columns) >= self.MAX_TERMS:
                    self._columns.pop(next(iter(self._columns)))
                self._columns[key] = col
        return col


def lexical_scores(texts: Sequence[str], query: str, cfg: LexicalConfig, page: LexicalPage | None = None) -> np.ndarray:
    """(N,) lexical match of each text to ``query`` in [0, 1].

    With R = how much of the query a text covers (term weights divided by the term's page frequency to the power
    ``df_power``, so a term on every row does not locate a row) and P = how much of the text the query covers, the
    score is ``max(recall_mix * R + (1 - recall_mix) * P, recall_only * R)``: a label fully named by the query scores
    high, and so does a sentence that contains the query's words.

    Args:
        texts: The N box texts.
        query: The question.
        cfg: Lexical settings.
        page: ``LexicalPage(texts)`` when the caller keeps one for the page (a second question then skips the
            tokenising and the similarities of terms seen before); None: built here.

    A question worded in another language (``foreign_words``) whose own words match no box at least
    ``paraphrase.PARAPHRASE_BELOW`` also scores the printed keys of what it asks about (``paraphrase.key_phrases``:
    "Combien faut-il payer en tout ?" -> "Montant total", "Gesamtbetrag"...), each as a query of its own, a box
    keeping its best, times ``PARAPHRASE_WEIGHT``.
    """
    n = len(texts)
    terms = query_terms(query, cfg, context=True)
    english = not foreign_words(query)
    phrases = english_key_phrases(query) if english else key_phrases(query)
    quoted = None if english else quote_scores(texts, query)  # a foreign quotation, found whole (``quotes``)
    if n == 0 or not (terms or phrases or quoted is not None):
        return np.zeros(n, dtype=np.float32)
    page = page if page is not None else LexicalPage(texts)
    if page.n != n:
        raise ValueError(f"the lexical page has {page.n} texts, got {n}")
    # the question's words describing the document match no box but still weigh in it (``_context_tokens``)
    out = _term_scores(page, terms, cfg, unmatched=() if not english else unmatched_tokens(query))
    out = out if quoted is None else np.maximum(out, quoted)
    if phrases and float(out.max()) < PARAPHRASE_BELOW:
        if english:  # not a concept the question names in the page's own words (``paraphrase_en.printed_concepts``)
            phrases = unprinted_key_phrases(query, texts, STOP_WORDS)
        for phrase in phrases:
            terms = query_terms(phrase, cfg)  # a key of stop words alone ("TO:") is found as a printed label
            # an English key counts where it is printed whole ("Total:" is not "Amount due", nor "Total due")
            hits = _term_scores(page, terms, cfg, full=english) if terms else label_hits(texts, phrase)
            out = np.maximum(out, np.float32(PARAPHRASE_WEIGHT) * hits)
    return out


def _term_scores(
    page: LexicalPage,
    terms: list[tuple[str, float]],
    cfg: LexicalConfig,
    full: bool = False,
    unmatched: Collection[str] = (),
) -> np.ndarray:
    """(N,) ``lexical_scores`` of the page's texts for the query terms ``terms`` (``full``: only the boxes holding
    every term, at least ``present_sim``; the others 0; ``unmatched``: terms that match no box but keep their weight
    in the query's, as a term the page does not print does)."""
    out = np.zeros(page.n, dtype=np.float32)
    if not terms or not page.boxes.size:
        return out
    term_w = np.array([w for _, w in terms], dtype=np.float32)  # (Q,)
    fuzzy = _fuzzy(cfg)
    # (Q, T) every token of every box with tokens, against each term
    sims = np.stack([page.column(q, fuzzy) for q, _ in terms])[:, page.index]
    # (B, Q) each box's best match to each term (max is exact), C-contiguous: each row is summed as the row alone
    best = np.ascontiguousarray(np.maximum.reduceat(sims, page.starts, axis=1).T)
    df = (best >= cfg.present_sim).sum(axis=0).astype(np.float32)  # (Q,) page frequency of each query term
    off = np.array([q in unmatched for q, _ in terms])  # (Q,)
    if off.any():
        sims, best = np.where(off[:, None], np.float32(0.0), sims), np.where(off, np.float32(0.0), best)
    weights = term_w / np.maximum(df, 1.0) ** cfg.df_power  # (Q,)
    wsum = float(weights.sum())
    recall = (weights * best).sum(axis=1) / wsum  # (B,) a row's sum has the bits of that row summed alone
    hits = (sims * term_w[:, None]).max(axis=0)  # (T,) a meta-word hit counts at its weight
    # (B,) each box's mean hit, as NumPy's mean of the box's slice, bit for bit: its sum adds up to 7 elements in
    # order (so do these column adds; the padding adds 0) and from 8 on pairwise (those boxes are summed alone)
    padded = np.append(hits, np.float32(0.0))[page.padded]  # (B, W)
    sums = padded[:, 0].copy()  # (B,)
    for j in range(1, padded.shape[1]):
        sums += padded[:, j]
    for b in page.long_boxes:
        sums[b] = hits[page.starts[b] : page.ends[b]].sum()
    precision = (sums / page.counts).astype(np.float64)
    r = recall.astype(np.float64)
    score = np.maximum(cfg.recall_mix * r + (1.0 - cfg.recall_mix) * precision, cfg.recall_only * r)  # (B,)
    matched = best.max(axis=1) > 0  # (B,) boxes matching no term keep 0
    if full:
        matched &= (best >= cfg.present_sim).all(axis=1)
    out[page.boxes[matched]] = score[matched]
    return np.clip(out, 0.0, 1.0)


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
