"""The role an English question asks about, read from its grammar rather than from its vocabulary.

A writer who has never seen the lexicon (``paraphrase_en``) words a key by what it does in the document, not by the
word the document prints: "Who's it from?" for "FROM:", "Who should get this?" for "TO:", "Who did I buy fuel from?"
for a receipt's issuer. The content words of such questions are nobody's list ("fuel", "get", "it"); their structure
is English grammar, the same for every writer:

- **the stranded preposition of a who-question** names the role: "Who ... to / for?" the goal (the recipient, a
  memo's "TO:"), "Who ... from?" the source (the sender, "FROM:");
- **the other party of the asker's own transaction**: a question in the first person ("I", "we", "me", "us", "my",
  "our") asking who / whom / which / where (not when, how much, how many, which number) names the asker as the
  customer and asks for the business on the other side, the issuer at the head of a receipt; so does a who-question
  whose verb is one of a commercial transaction (buying, selling, paying, charging, serving: the lexical units of
  FrameNet's Commerce_buy, Commerce_sell, Commerce_pay and Commerce_collect frames, plus the retail verbs shop, order,
  serve), and a buying verb followed by "from";
- **a verb of receiving after who and an auxiliary** ("Who should / will / is to get / receive this?") names the
  recipient, as "Who gets / receives it?" already does in the lexicon.
- **the named thing the document is from**: "Which N is / was this (receipt) (from)?" (``asks_identity``), when no
  lexicon concept names another key (the day, the make, the unit) and N is no kind of document, asks for the issuer.

``role_concepts(question)`` returns the lexicon concepts these name (``paraphrase_en.LEXICON``'s "recipient",
"sender"); ``role_types(question)`` the answer types ("org" for the transaction's other party);
``transaction_party(question)`` whether the question asks for that party (then "from" names the seller, not a
memo's sender). Written from English grammar and the dev wordings of styles A, B, C and realdocs-dev's own questions
(the stranded "to" / "for" of "Who is this addressed to?", "Who is the memo for?"; "Who was the purchase made from?";
"Who sold me these?", "Which restaurant served us?", "Where did we eat?"), not from the third writer's (style D).

Example:
    >>> role_concepts("Who's it from?"), role_concepts("Who should get this?")
    (('sender',), ('recipient',))
    >>> role_types("Who did I buy fuel from?"), role_concepts("Who did I buy fuel from?")
    (('org',), ())
"""

from __future__ import annotations

import functools
import re

# the first person as the document's customer: "I" (upper case, a word of its own, not "Part I"), we, me, us, my, our
_FIRST_PERSON = re.compile(r"(?<![\w'])(?:I(?:'[a-z]+)?|we|me|us|my|our|ours)(?![\w])")  # not "Système U"
_PART_I = re.compile(r"\b(?:part|form|schedule|section|appendix|class|type|grade|phase|stage|level) I\b", re.I)
# a question for a party: who / whom / whose, from whom, which ..., where ... (anywhere: "Tell me who I bought ...")
_PARTY_WH = re.compile(r"\b(?:who(?:m|se|'s)?|from whom)\b|^\W*(?:which|where)\b", re.I)
# a question for a value that is not a party: when, how much / many, what share, which number / date / day; a verb
# of correspondence ("Who do I reply to?" asks for a memo's sender: ``form_purposes``)
_NOT_PARTY = re.compile(
    r"^\W*when\b|\bhow (?:much|many|long|often)\b|\b(?:which|what) (?:number|date|day|time|year|month|amount|sum|"
    r"share|percentage|proportion|price|total)\b|\bphone\b|\bcall\b|\bfax\b|\be-?mail\b|"
    r"\b(?:wr[io]te|written|sen[dt]|signed|addressed|prepared|approved|submitted|filed|reported|requested|contact|"
    r"repl(?:y|ies|ied)|respond(?:s|ed)?)\b",
    re.I,
)
# the verbs of a commercial transaction (FrameNet Commerce_buy / _sell / _pay / _collect) and the retail verbs
_COMMERCE = (
    r"(?:buy|buys|bought|buying|purchased?|purchasing|sell|sells|sold|selling|vend(?:s|ed)?|retail(?:s|ed)?|"
    r"pa(?:y|ys|id|ying)|charged?|charging|bill(?:s|ed)?|shop(?:s|ped|ping)?|order(?:s|ed)?|serv(?:e|es|ed|ing)|"
    r"suppl(?:y|ies|ied))"
)
_BUY = r"(?:buy|bought|buying|purchased?|purchasing|order(?:ed)?|got|get|shop(?:ped)?)"
# active voice only: "Who sold / served / did we pay ...?" is the seller; "Who was this billed for?" is the customer
# and the party paid, in the passive: "Who was paid here?" (not "Who was this paid for?": the customer)
_WHO_COMMERCE = re.compile(
    rf"\bwho(?:m)?\b(?: (?!(?:is|was|were|are|be|been|being)\b)\w+){{0,3}} {_COMMERCE}\b|"
    r"\bwho (?:was|were|got|gets|is|will be|should be) paid\b(?! for\b)|"
    rf"\bfrom whom\b.*\b{_COMMERCE}\b",
    re.I,
)
_BUY_FROM = re.compile(rf"\b{_BUY}\b(?: [\w'-]+){{0,3}} from\b", re.I)
# a who-question's stranded preposition at its end: "Who is this addressed to?", "Who's it from?"
_WHO_START = re.compile(r"^\W*(?:who(?:m|se|'s)?|and who)\b", re.I)
_ENDS_GOAL = re.compile(r"\b(?:to|for)\W*$", re.I)
_ENDS_SOURCE = re.compile(r"\bfrom\W*$", re.I)
# who + an auxiliary + a verb of receiving: "Who should get this?", "Who is to receive it?"
_WHO_RECEIVES = re.compile(
    r"\bwho (?:should|will|would|must|shall|can|could|is to|was to|is supposed to|was supposed to|needs? to|"
    r"ought to|is meant to|was meant to|did|does|do)(?: \w+)? (?:get|receive|obtain)\b",
    re.I,
)


# the identity of the document's source: "Which N is this (from)?", "What N was this receipt from?" (N one to three
# words naming no kind of document: "What kind of form is this?" asks for no business)
_IDENTITY = re.compile(
    r"^\W*(?:which|what)((?: [\w'&-]+){1,3}) (?:is|was) (?:this|it|that)(?: (?:receipt|bill|invoice|sale|purchase|"
    r"meal|order|document|one))?(?: (?:from|at|by))?\W*$",
    re.I,
)
_NOT_SOURCE = re.compile(r"\b(?:kind|type|sort|form|document|page|sheet|version|copy|language|person)\b", re.I)


@functools.lru_cache(maxsize=4096)
def asks_identity(question: str) -> bool:
    """Whether ``question`` asks which named thing the document comes from ("Which station is this from?",
    "Which eatery is this?"): what ``paraphrase_en.english_types`` reads as the issuer when no lexicon concept
    names another key (the day, the make, the unit)."""
    m = _IDENTITY.search(question.replace("’", "'"))
    return m is not None and not _NOT_SOURCE.search(m.group(1)) and not _NOT_PARTY.search(question)


def _first_person(question: str) -> bool:
    return _FIRST_PERSON.search(_PART_I.sub(" ", question)) is not None


@functools.lru_cache(maxsize=4096)
def transaction_party(question: str) -> bool:
    """Whether ``question`` asks for the business on the other side of the asker's transaction: a who / which /
    where question in the first person, or one whose verb is commercial, not one for a date, an amount, a count or a
    phone number (``_NOT_PARTY``)."""
    q = question.replace("’", "'")
    if _NOT_PARTY.search(q) or not _PARTY_WH.search(q):
        return False
    return _first_person(q) or _WHO_COMMERCE.search(q) is not None or _BUY_FROM.search(q) is not None


@functools.lru_cache(maxsize=4096)
def role_types(question: str) -> tuple[str, ...]:
    """Answer types ``question``'s grammar names: "org" for the other party of the asker's transaction."""
    return ("org",) if transaction_party(question) else ()


@functools.lru_cache(maxsize=4096)
def role_concepts(question: str) -> tuple[str, ...]:
    """Lexicon concepts ``question``'s grammar names: "recipient" for a who-question ending in "to" / "for" or asking
    who is to receive it, "sender" for one ending in "from" (not when it asks for a transaction's other party:
    ``transaction_party``)."""
    q = question.replace("’", "'").strip()
    if transaction_party(q):
        return ()
    if _WHO_RECEIVES.search(q):
        return ("recipient",)
    if not _WHO_START.search(q):
        return ()
    if _ENDS_GOAL.search(q):
        return ("recipient",)
    if _ENDS_SOURCE.search(q):
        return ("sender",)
    return ()
