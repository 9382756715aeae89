"""Printed keys for English questions that name none: a concept lexicon of receipts, invoices, letters and forms.

"How much was charged in total?" asks for what a receipt prints as "Amount due", "Grand total" or "Net payable";
"Who is the recipient?" for a memo's "TO:"; "What is this about?" for its "Subject:" or "Re:". The question's own
words (``lexical``) and the MiniLM (``semantic``) miss many of these: "charged" is printed nowhere, and "TO:" is a
stop word. ``english_key_phrases(question)`` returns the printed keys of every concept the question asks about;
``lexical.lexical_scores`` scores each as a query of its own (a key that is all stop words, "TO:", "FROM:", "RE:",
by ``label_hits``: the box's text is that key, or starts with it and a colon), keeps a box's best, times
``PARAPHRASE_WEIGHT``, when the question's own words match no box at least ``PARAPHRASE_BELOW``, and only for the
concepts whose cue word the page does not print (``printed_concepts``): "What is written next to AUTHORIZATION NO?"
names that printed key in part, and the lexicon's signature keys ("APPROVED BY") must not outrank it.

Concepts are tested in order; each lists the concepts it rules out when its cue is in the question ("before tax"
asks for the subtotal, not the tax or the total; "due date" for a date, not an amount). Cues are matched on the
question in lower case. The lexicon was written from the vocabulary of receipts, invoices, memos and forms (the keys
FUNSD's and SROIE's documents print, and their English synonyms), not from one benchmark's question templates.

Example:
    >>> english_key_phrases("How much was charged in total?")[:3]
    ('amount due', 'balance due', 'total due')
    >>> english_key_phrases("Who is this memo addressed to?")[:2]
    ('to', 'attention')
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import numpy as np

from .form_purposes import ROWS_ELSE, ROWS_FIRST, ROWS_MORE
from .paraphrase import cued
from .question_clauses import asked_part, situation_part
from .question_roles import asks_identity, role_concepts, role_types, transaction_party
from .question_shapes import shape_concepts

# "where did I buy / shop / eat": a question for the business the customer visited (``TYPE_CUES``' "org")
# (a meal had there too: "where did we have lunch?")
_MEAL = r"(?:lunch|dinner|breakfast|brunch|supper|a meal|our meal|the meal|coffee|drinks|a drink|tea)"
_VISITED = (
    rf"(?:(?:did|do|have) (?:i|we|you|they) (?:buy|shop|eat|dine|purchase|get|order|go|have {_MEAL})|"
    rf"(?:i|we|you|they) (?:bought|shopped|ate|dined|purchased|ordered|had {_MEAL}))\b"
)
# "the place I paid", "the shop where we ate", "the place where we had dinner": the business of the asker's visit (a
# party, not an amount)
_PAID_PLACE = (
    r"\b(?:place|shop|store|restaurant|outlet|business) (?:where |that |which )?(?:i|we) "
    rf"(?:paid|bought|ate|shopped|purchased|ordered|dined|had {_MEAL})\b"
)
# "where was this meal bought?": the visit in the passive
_VISITED_PASSIVE = r"(?:was|were) (?:[\w'-]+ ){1,3}(?:bought|purchased|paid for|ordered|eaten|had)\b"

# a part of the day standing for the day: "Which evening was this meal?" (not "What morning sickness medicine?")
_DAY_PART = r"\b(?:what|which) (?:evening|night|morning|afternoon|weekday)\b(?= (?:was|were|is|did|do|does|had)\b|\W*$)"

# what the whole bill cost, in everyday idiom: "what's the damage?", "how much did we fork / shell out?", "what did it
# set us back?", "cough up"
_SPENT_IDIOM = (
    r"\bwhat(?:'s| is| was) the damage\b|\b(?:fork|shell|cough|paid|pay)(?:ed|s)? out\b|"
    r"\b(?:forked|shelled|coughed) (?:out|up)\b|\bcough(?:ed)? up\b|\bset (?:me|us|you|them|him|her) back\b"
)

# (concept, cue in the question (lower case), printed keys, concepts it rules out)
LEXICON: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "subtotal",
        r"\bbefore (?:the )?(?:tax|gst|vat|service charge|discount)|\bsub-?total\b|\bexcluding (?:tax|gst|vat)\b|"
        r"\bpre-?tax\b|\bnet of tax\b",
        ("subtotal", "sub total", "sub-total", "total excl gst", "total excluding gst", "amount before tax"),
        ("tax", "total"),
    ),
    (
        "deadline",
        r"\bby when\b|\bdue (?:date|by|on)\b|\bcut-?off\b|\bdeadline\b|\bno later than\b|\blatest date\b|"
        r"\bexpir\w*\b|\bvalid until\b",
        ("deadline", "due date", "target date", "expiry date", "expiration date", "closing date", "due by"),
        ("total", "date"),
    ),
    (
        "received",
        r"\barriv\w*\b|\bcame in\b|\bcome in\b|\bwas received\b|\bwhen was it received\b|\bdelivered on\b",
        ("date received", "received", "date recd", "recd", "received on"),
        ("date",),
    ),
    (
        "change",
        r"\bchange (?:was )?(?:given|returned|back|due)\b|\bgiven back\b|\bhow much change\b|\bchange\b",
        ("change", "change due", "cash change"),
        ("total",),
    ),
    (
        "tendered",
        r"\btendered\b|\bhanded over\b|\bcash (?:given|paid|received)\b|\bpaid in cash\b|\bhow much cash\b",
        ("cash", "tendered", "cash tendered", "amount tendered", "cash received"),
        ("total",),
    ),
    (
        "tax",
        r"\btax(?:es)?\b|\bgst\b|\bvat\b|\bsst\b|\bservice charge\b|\bduty\b|\blevy\b",
        ("gst", "tax", "vat", "sst", "service tax", "service charge", "gst amount", "tax amount", "total gst"),
        ("total",),
    ),
    (  # what must be or was paid: the keys of an amount due, not a bare "Total" (a subtotal line, a count of items)
        "payable",
        r"\bcharged?\b|\bpa(?:y|id|yable|yment)\b|\bowe[ds]?\b|\bowing\b|\bdue\b|\bbill(?:ed)? for\b",
        (
            "amount due",
            "balance due",
            "total due",
            "amount payable",
            "total payable",
            "net payable",
            "to pay",
            "net amount",
            "nett total",
            "net total",
            "grand total",
            "total amount",
            "rounded total",
        ),
        ("total",),
    ),
    (
        "total",
        r"\bhow much\b|\bcost\w*\b|\bspen[dt]\b|\bsum\b|\baltogether\b|\bin total\b|\btotal\w*\b|\boverall\b|"
        r"\bbottom line\b|\bfinal (?:amount|price|figure|bill|sum)\b|\bgrand\b|\bamount\b|"
        r"\bprice of the (?:whole|entire)\b|\bcame? to\b|\bworth\b|\badd(?:s|ed)? up\b|" + _SPENT_IDIOM,
        (
            "total",
            "grand total",
            "amount due",
            "total amount",
            "net total",
            "nett total",
            "total due",
            "balance due",
            "amount payable",
            "total payable",
            "net payable",
            "to pay",
            "total rm",
            "total incl gst",
            "total inclusive gst",
            "rounded total",
            "net amount",
            "total sales",
        ),
        (),
    ),
    (
        "time",
        r"\bwhat time\b|\bat what hour\b|\bwhich hour\b|\bo'?clock\b|\btime of day\b",
        ("time",),
        (),
    ),
    (
        "date",
        r"\bwhen\b|\b(?:what|which) day\b|\bday of\b|\bdated?\b|\bon what day\b|\bthe day\b|\bissued on\b|"
        + _DAY_PART,  # a part of the day stands for the day: "Which evening was this meal?"
        ("date", "dated", "invoice date", "receipt date", "transaction date", "bill date", "doc date", "date of issue"),
        (),
    ),
    (
        "phone",
        r"\b(?:tele)?phone\b|\bcall(?:ed)?\b|\bring\b|\brung\b|\bdial\w*\b|\breach(?:ed)?\b|\bcontact number\b|"
        r"\bmobile\b|\bcell\b|\bhotline\b",
        ("tel", "phone", "telephone", "tel no", "phone no", "phone number", "mobile", "hp", "contact", "hotline"),
        (),
    ),
    (
        "fax",
        r"\bfax\w*\b|\bfacsimile\b",
        ("fax", "fax no", "fax number", "facsimile"),
        ("phone",),
    ),
    (
        "email",
        r"\be-?mail\w*\b|\belectronic(?:ally)? mail\b",
        ("email", "e-mail"),
        (),
    ),
    (
        "recipient",
        r"\baddressed\b|\baddressee\b|\brecipient\b|\bsent to\b|\bintended for\b|\bwho (?:is|was) (?:it|this) "
        r"(?:for|to)\b|\bwho (?:gets|got|receives?d?)\b|\battention of\b|\bdirected to\b|\bwritten to\b|"
        r"\bwho (?:is|was) (?:the|this|that) (?:memo|letter|message|fax|note|document) (?:\w+ )?for\b|"
        r"\b(?:meant|supposed|intended) (?:to receive|for)\b|\bto receive\b|\bfor whom\b",
        ("to", "attention", "attn", "recipient", "addressee"),
        (),
    ),
    (
        "copies",
        r"\bwho else\b|\bother recipients\b|\balso (?:sent|received|got|went)\b|\bcop(?:y|ies|ied)\b|"
        r"\bdistribut\w*\b|\bin the loop\b",
        ("cc", "copies", "copies to", "copy to", "bcc", "distribution"),
        ("recipient",),
    ),
    (
        "sender",
        # "sent" but not "sent to" nor a stranded "... sent (this) to?" (the recipient: "Who was this sent to?")
        r"\bsender\b|\bsen(?:t|ds)\b(?! to\b)(?!(?: \w+){0,2} to\W*$)|\bwho wrote\b|\bwritten by\b|\bfrom whom\b|"
        r"\boriginat\w*\b|\bcame from\b|\bauthor\w*\b|"
        r"\bsigned by\b|\bdrew (?:it |this )?up\b|\bdrawn up\b|\bprepared\b|\bhanded in\b|\bfiled\b",
        ("from", "sender", "author", "prepared by", "submitted by", "reported by", "originator", "by"),
        (),
    ),
    (
        "requester",
        r"\basked for\b|\brequest\w*\b|\bordered by\b",
        ("requested by", "request", "requestor", "requester", "work requested by"),
        (),
    ),
    (
        "subject",
        r"\babout\b|\btopic\b|\bconcern\w*\b|\bregarding\b|\bsubject\b|\bmatter\b|\btheme\b|\bpurpose\b",
        ("subject", "re", "subj", "topic", "regarding"),
        (),
    ),
    (
        "customer",
        r"\bcustomer\b|\bclient\b|\bbuyer\b|\bpurchaser\b|\bbill(?:ed)? to\b|\bsold to\b|\baccount holder\b",
        ("client", "customer", "account name", "bill to", "sold to", "buyer", "customer name"),
        ("recipient",),
    ),
    (
        "signature",
        r"\bsign\w*\b|\bendors\w*\b|\bautograph\b|\bapprov\w*\b|\bauthori[sz]\w*\b",
        ("signature", "signed", "approved by", "authorized by", "authorised by"),
        (),
    ),
    (
        "maker",
        r"\bmak(?:e[rs]?|ing)\b(?! out\b)|\bwho made\b|\bmade (?:by|it|this|them|these)\b|\bproduc(?:ed|er|es)\b|"
        r"\bmanufactur\w*\b",
        ("manufacturer", "mfr", "mfg", "made by", "producer", "brand"),
        (),
    ),
    (
        "supplier",
        r"\bprovid\w*\b|\bsuppl\w*\b|\bdeliver\w*\b|\bvendor\b|\bsource[sd]? from\b",
        ("supplier", "vendor", "provider"),
        (),
    ),
    (
        "brand",
        r"\bbrand\b|\bmake\b|\blabel\b|\bmarque\b",
        ("brand", "brand name", "item brand"),
        (),
    ),
    (
        "product",
        r"\bitem\b|\bgoods\b|\bproduct\b|\bwhat is being sold\b|\bmerchandise\b|\bcommodity\b|\bcigarettes?\b",
        ("product", "item", "description"),
        (),
    ),
    (
        "department",
        r"\bunit\b|\bsection of\b|\bdepartment\b|\bdivision\b|\bgroup\b|\bteam\b|\b(?:which|what) office\b",
        ("department", "dept", "division", "group", "unit"),
        (),
    ),
    (
        "comments",
        r"\bremarks?\b|\bnotes?\b|\bcomment\w*\b|\bobservations?\b|\bfeedback\b",
        ("comments", "remarks", "notes", "comment", "observations"),
        (),
    ),
    (
        "balance",
        r"\bremain\w*\b|\bleft over\b|\bbalance\b|\boutstanding\b",
        ("balance", "new balance", "balance due", "remaining", "outstanding"),
        (),
    ),
    (
        "address",
        rf"\bwhere\b(?! {_VISITED})(?! {_VISITED_PASSIVE})|\blocated\b|\blocation\b|\baddress\b|\bsituated\b|"
        r"\bmailing\b|\bsite\b|\bpremises\b",
        ("address", "location", "site", "add", "mailing address"),
        (),
    ),
    (
        "region",
        r"\bregion\b|\bpart of the world\b|\bcountry\b|\bnation\b|\bterritory\b|\barea\b|\bmarket\b",
        ("country", "state", "region", "area", "market", "territory", "geographical areas"),
        (),
    ),
    (
        "agency",
        r"\bbureau\b|\bagency\b|\bauthority\b|\binstitution\b|\b(?:which|what) body\b|\borgani[sz]ation\b",
        ("agency", "organization", "organisation"),
        (),
    ),
    (
        "number",
        r"\breference\b|\bidentifier\b|\bserial\b|\bref\b|\bcode\b",
        ("no", "number", "ref", "reference", "code", "id"),
        (),
    ),
)
# the lexicon with the purposes of form keys (``form_purposes``): those that rule out a generic word's concept first,
# the others after it; ``_ELSE`` only for a question naming nothing else. A concept's keys: the lexicon's (a purpose
# row of a lexicon concept lists none), or a new purpose's own
_CUES = tuple(
    (name, re.compile(cue), keys, rules_out) for name, cue, keys, rules_out in (*ROWS_FIRST, *LEXICON, *ROWS_MORE)
)
_ELSE = tuple((name, re.compile(cue), keys, rules_out) for name, cue, keys, rules_out in ROWS_ELSE)
_KEYS: dict[str, tuple[str, ...]] = {}
for _name, _, _keys, _ in (*LEXICON, *ROWS_FIRST, *ROWS_MORE, *ROWS_ELSE):
    _KEYS[_name] = _KEYS.get(_name) or _keys


# A question for the day of a payment ("the day I paid", "When was I charged?") asks for a date, not an amount: its
# payment words describe the transaction (``PAYMENT_WORDS``); one that also names an amount ("How much was paid on
# the day?", "When is the total due?") keeps both
ASKS_DATE = re.compile(r"^\W*when\b|\b(?:the|which|what) (?:day|date)\b|\bon what day\b|\bday of\b", re.I)
ASKS_AMOUNT = re.compile(
    r"\bhow much\b|\bamounts?\b|\btotals?\b|\bcosts?\b|\bprices?\b|\bsum\b|\bfees?\b|\bbalance\b", re.I
)
AMOUNT_CONCEPTS = frozenset({"subtotal", "change", "tendered", "tax", "payable", "total"})
# A question for the party paid ("Which merchant did I pay here?", "Which establishment charged me?", "Payee?") asks
# for a business, not an amount: its payment words describe the transaction (with ``question_roles.transaction_party``)
ASKS_PARTY = re.compile(
    r"\bpayees?\b|\bvendors?\b|\bsellers?\b|\bmerchants?\b|\bretailers?\b|\btraders?\b|\bestablishments?\b|"
    r"\b(?:which|what) (?:shop|store|business|company|firm|outlet|restaurant)\b|" + _PAID_PLACE,
    re.I,
)


# "called" naming a thing ("What's the place called?", "what is this shop called") asks for its name, not for a phone
# number: unless the question also says phone, number, ring or dial
NAMED = re.compile(r"\bwhat(?:'s| is| was| are| were)\b[^?.!;]{0,50}?\bcalled\b", re.I)
_PHONE_WORDS = re.compile(r"\b(?:tele)?phone\b|\bnumbers?\b|\bno\b|\bring\b|\bdial\w*\b|\bmobile\b|\bfax\b", re.I)


def names_not_phone(question: str) -> bool:
    """Whether ``question``'s "called" names a thing (``NAMED``) in a question that names no phone word."""
    return bool(NAMED.search(question)) and not _PHONE_WORDS.search(question)


def date_not_amount(question: str) -> bool:
    """Whether ``question`` asks for a date and names no amount (``ASKS_DATE``, ``ASKS_AMOUNT``)."""
    return bool(ASKS_DATE.search(question)) and not ASKS_AMOUNT.search(question)


# the concepts whose keys print a date: what a question for a date alone looks up ("When did the customer shop
# here?" asks for the date, not for "Customer:"; "When was the memo sent?" not for "FROM:")
DATE_CONCEPTS = frozenset({"deadline", "received", "date", "time"})


@functools.lru_cache(maxsize=4096)
def concepts(question: str) -> tuple[str, ...]:
    """The concepts ``question`` asks about, in ``LEXICON``'s order, those ruled out by an earlier one dropped (and,
    in a question for a date that names no amount, ``date_not_amount``, all but the dates: ``DATE_CONCEPTS``); when
    none is named, those of the answer's shape (``question_shapes.shape_concepts``)."""
    asked = asked_part(question)  # not the asker's situation around it (``question_clauses``)
    q = asked.lower().replace("’", "'")
    found = tuple(dict.fromkeys(cued(q, _CUES)))
    found = with_roles(asked, found)
    if not found:  # a purpose named only when nothing else is (``form_purposes.ROWS_ELSE``: "How is it described?")
        found = cued(q, _ELSE)
    party = transaction_party(asked)
    if not found and not party:  # the answer's shape: "day it was written?" (``question_shapes``)
        found = shape_concepts(asked)
    if not found and not party and asked != question:  # "... I need the vendor for the purchase order."
        found = tuple(dict.fromkeys(cued(situation_part(question).lower(), _CUES)))
    if (party or ASKS_PARTY.search(asked)) and not ASKS_AMOUNT.search(asked):  # "Which merchant did I pay?"
        found = tuple(c for c in found if c not in AMOUNT_CONCEPTS)
    if names_not_phone(asked):  # "What's the place called?"
        found = tuple(c for c in found if c != "phone")
    return tuple(c for c in found if c in DATE_CONCEPTS) if date_not_amount(asked) else found


def with_roles(question: str, found: tuple[str, ...]) -> tuple[str, ...]:
    """``found`` and the concepts ``question``'s grammar names (``question_roles.role_concepts``: "Who's it from?"
    the sender), unless an earlier concept rules them out; without the sender in a question for a transaction's
    other party ("From whom did I buy these?": the seller, not a memo's "FROM:")."""
    out = {r for name, _, _, rules in _CUES if name in found for r in rules}
    found += tuple(c for c in role_concepts(question) if c not in found and c not in out)
    return tuple(c for c in found if c != "sender") if transaction_party(question) else found


# the English pronoun "I", which ``lexical.query_terms`` would keep as a single upper-case letter (an identifier:
# "Part I", "Widget A"): a lone "I" first or after a word in lower case, before a word in lower case ("Tell me who I
# bought this from.", "the day I paid", "I need to know", "I'm"); it matched OCR's "1" ("1 SCREW")
_PRONOUN_NEXT = re.compile(r"^(?:'[a-z]+)?$")


def without_pronoun_i(question: str) -> str:
    """``question`` with the pronoun "I" blanked, for finding its upper-case single letters ("Part I" keeps it)."""
    words = question.split()
    out = []
    for k, w in enumerate(words):
        head, tail = w[:1], w[1:]
        prev = words[k - 1] if k else ""
        nxt = words[k + 1] if k + 1 < len(words) else ""
        pronoun = (
            head == "I"
            and _PRONOUN_NEXT.match(tail) is not None
            and (not prev or prev[:1].islower())
            and (tail != "" or nxt[:1].islower())
        )
        out.append(" " if pronoun else w)
    return " ".join(out)


@functools.lru_cache(maxsize=4096)
def english_key_phrases(question: str) -> tuple[str, ...]:
    """The printed keys of every concept ``question`` asks about (``concepts``), most specific concept first."""
    return tuple(dict.fromkeys(p for name in concepts(question) for p in _KEYS[name]))


_WORDS = re.compile(r"[^\W_]+")
KEY_WORDS = 6  # a box of at most this many words can be a key (with its value); a longer one is running text


@functools.lru_cache(maxsize=4096)
def cue_words(question: str, stop: frozenset[str]) -> tuple[tuple[str, tuple[frozenset[str], ...]], ...]:
    """(concept, the words of each match of its cue in ``question`` beyond ``stop``) for every concept the question
    asks about (``concepts``); a match of stop words alone ("how much", "when") has none."""
    q = question.lower().replace("’", "'")
    asked = concepts(question)
    found: dict[str, tuple[frozenset[str], ...]] = {name: () for name in _KEYS if name in asked}  # lexicon's order
    for name, cue, _, _ in (*_CUES, *_ELSE):  # a concept's matches: those of all its rows (lexicon and purposes)
        if name in asked:
            words = (frozenset(w for w in _WORDS.findall(m.group(0)) if w not in stop) for m in cue.finditer(q))
            found[name] += tuple(words)
    return tuple(found.items())


def printed_concepts(question: str, texts: Sequence[str], stop: frozenset[str]) -> frozenset[str]:
    """The concepts ``question`` names in the page's own words: a match of the concept's cue whose words (beyond the
    stop words ``stop``) one key-like box of ``texts`` (at most ``KEY_WORDS`` words) prints, each as a whole word
    (case and punctuation aside); a word in a sentence ("... this facsimile message is ...") names no key. "What is
    written next to AUTHORIZATION NO?" on a page printing "AUTHORIZATION NO." names that key, not a signature;
    "Name / Phone Ext" is that key, not a telephone number; "client" on an invoice printing "Client:" is that key.
    The lexicon stands in for a word the page does not print ("charged" for "Amount due"); where it prints the
    question's word, the question's own words find the key, and the concept's other keys would only outrank it."""
    cues = cue_words(question, stop)
    if not cues:
        return frozenset()
    boxes = {frozenset(w) for w in (_WORDS.findall(t.lower()) for t in texts) if len(w) <= KEY_WORDS}
    return frozenset(name for name, matches in cues if any(m and any(m <= b for b in boxes) for m in matches))


def unprinted_key_phrases(question: str, texts: Sequence[str], stop: frozenset[str]) -> tuple[str, ...]:
    """``english_key_phrases`` of the concepts the page does not print the question's word for
    (``printed_concepts``): what ``lexical.lexical_scores`` looks up on the page of ``texts``."""
    skip = printed_concepts(question, texts, stop)
    return tuple(dict.fromkeys(p for name in concepts(question) if name not in skip for p in _KEYS[name]))


def label_hits(texts: Sequence[str], phrase: str) -> np.ndarray:
    """(N,) 1.0 where a box prints ``phrase`` as a label: its text is the phrase (case, punctuation and spaces
    aside: "TO:", "To", "Re :") or starts with it followed by a colon ("TO: Mr. Smith"); 0 elsewhere. For keys made
    of stop words, which token matching never sees."""
    words = phrase.split()
    body = r"\W*".join(map(re.escape, words))
    pat = re.compile(rf"^\W*{body}\W*$|^\W*{body}\s*[:;.]", re.I)
    return np.array([1.0 if pat.search(t) else 0.0 for t in texts], dtype=np.float32)


# the kinds of business a receipt comes from ("Which pharmacy is this?", "Which petrol station is it from?")
_BUSINESS = (
    r"(?:petrol |gas |service )?stations?|pharmac(?:y|ies)|chemists?|drugstores?|diners?|cafes?|cafés?|bakery|"
    r"bakeries|supermarkets?|hypermarkets?|minimarts?|marts?|establishments?|bookshops?|bookstores?|hotels?|garages?|"
    r"kiosks?|stalls?"
)

# Answer types of paraphrased English wordings that ``lexical._ANSWER_TYPE_PATTERNS`` does not read: "Who sold these
# items?" and "Who did I buy this from?" ask for the issuer (an organisation), "day of purchase?" for a date, "the
# bottom line" and "what it came to" for an amount
TYPE_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(rf"\bday\b|\bdate of\b|{_DAY_PART}", re.I)),
    (
        "money",
        re.compile(
            r"\bbottom line\b|\bfinal (?:figure|sum|bill)\b|\baltogether\b|\bcame to\b|\bcomes? to\b|"
            r"\bpayable\b|\bgrand sum\b|\bowing\b|\bworth\b|" + _SPENT_IDIOM,
            re.I,
        ),
    ),
    (
        "org",
        re.compile(
            r"\bwho sold\b|\bsold (?:by|these|this|it|the|me|us)\b|\b(?:bought|purchased?|ordered|got)\b(?: \w+){0,3} "
            r"from\b|\boutlets?\b|\btraders?\b|\bdealers?\b|\bmerchants?\b|\bretailers?\b|\bbusiness\b|"
            r"\bbrand of the (?:shop|store)\b|\btrading name\b|"
            rf"\bwhere {_VISITED}|\bwhere {_VISITED_PASSIVE}|\bwho (?:issued|printed)\b|\bpayees?\b|\bvendors?\b|"
            rf"\bsellers?\b|{_PAID_PLACE}|"
            rf"\b(?:which|what) (?:\w+ )?(?:{_BUSINESS})\b|\b(?:which|what) (?:place|spot) {_VISITED}|"
            # the everyday names of a business: "the outfit", "the eatery", "whose premises", "which food place"
            r"\boutfits?\b|\beater(?:y|ies)\b|\bpremises\b|\bfood (?:place|outlet|joint|spot|stall|shop)s?\b",
            re.I,
        ),
    ),
)


@functools.lru_cache(maxsize=4096)
def english_types(question: str) -> tuple[str, ...]:
    """Answer types ``question`` asks for through the paraphrased wordings of ``TYPE_CUES`` and its grammar
    (``question_roles``: the other party of the asker's transaction, the named thing the document is from)."""
    asked = asked_part(question)  # not the asker's situation ("I'm tagging it ...": ``question_clauses``)
    found = tuple(name for name, pat in TYPE_CUES if pat.search(asked))
    roles = role_types(asked) + (("org",) if asks_identity(asked) and not concepts(question) else ())
    return found + tuple(t for t in dict.fromkeys(roles) if t not in found)  # "Who did I buy fuel from?"


# A question that asks when, how many, how much or what share asks for a date or a number, not for the business its
# words name: "When did I shop here?" ("shop" a verb), "What share of the index firms had 0 reclassifications?"
NOT_ORG = re.compile(
    r"^\W*when\b|\bhow (?:many|much)\b|\b(?:what|which) (?:share|percentage|proportion|fraction|percent|number)\b",
    re.I,
)


@functools.lru_cache(maxsize=4096)
def english_untyped(question: str) -> tuple[str, ...]:
    """Answer types an English ``question`` does not ask for although its words name them: the business in a question
    for a date or a number (``NOT_ORG``), an amount in a question for the day of a payment (``date_not_amount``)."""
    asked = asked_part(question)
    return (
        (("org",) if NOT_ORG.search(asked) else ())
        + (("money",) if date_not_amount(asked) else ())
        + (("phone",) if names_not_phone(asked) else ())
    )


# Words that describe the document or the transaction, not a key printed on it: in an English question asking for a
# date, an amount or the issuer, they are not matched ("When was this bill written?" asks for the date, not for the
# line reading "BILL"; "Who sold these items?" for the shop, not for "ITEMS"). For a date or the issuer, the payment
# words go too ("When was this paid for?"); a question for an amount keeps them (its own cue, "How much was paid?")
CONTEXT_WORDS = frozenset(
    """receipt receipts bill invoice purchase purchases purchased sale sales sold buy bought items item goods
    transaction checkout printed issued written made customer shopper document memo letter""".split()
)
PAYMENT_WORDS = frozenset("paid pay payment spent".split())
# what the customer did there, in a question for the date alone ("When did I shop here?": not "Thank you for shopping")
ACTIVITY_WORDS = frozenset("shop shopped shopping eat ate eaten dine dined visit visited".split())


def context_words(kinds: Sequence[str]) -> frozenset[str]:
    """The words of ``CONTEXT_WORDS`` (and ``PAYMENT_WORDS`` for a date or the issuer, ``ACTIVITY_WORDS`` for a date
    alone) a question asking for values of ``kinds`` (``lexical.answer_types``) does not match; none for other
    questions."""
    if not {"date", "org"} & set(kinds):
        return CONTEXT_WORDS if "money" in kinds else frozenset()
    return CONTEXT_WORDS | PAYMENT_WORDS | (ACTIVITY_WORDS if "org" not in kinds else frozenset())
