"""The keys an English question asks about when it names none: read from the shape of the answer it asks for.

A writer who has never seen the lexicon (``paraphrase_en``) often names neither the printed key nor any word of a
concept's cue: "day it was written?" for "DATE", "Who handed this in?" for "REPORTED BY", "What's being given away?"
for "ITEM / BRAND". What such a question does say is the shape of its answer, in English grammar, not in one writer's
vocabulary:

- **a day**: a question for a day or the date of something ("day it was written?", "the date of the visit") asks for
  a date, and a form prints dates beside a "Date" key (the lexicon's "date" concept), when it names no amount or
  value and the day is not a label ("the value of the first day", "per day");
- **the agent of an act on the document**: a who-question whose subject is "who" and whose verb is an act ("Who
  handed this in?", "Who put this together?", "Who compiled it?", not "Who is ...?") asks for the person a form
  records in its agent labels ("Prepared by", "Submitted by", "Reported by", "Author", "From": the lexicon's
  "sender" concept);
- **the thing acted on**: a what-question in the passive with nothing after its participle but a particle ("What's
  being given away?", "What was tested?", "What is offered?"; not a verb of writing: "What is written?") asks for
  what the form is about, which forms print as "Product", "Item", "Description" or "Brand".

A question also points at the page itself: "What is this document about?", "When was this form dated?". A noun
after "this" or "that" naming a kind of document (``document_deixis``) is the page in the asker's hand, not a key
printed on it (OCR's "DOCUZENT" in a microfilm notice matched "document"); ``lexical`` keeps such words in the
question's weight but matches no box with them, as it does for the words describing a receipt
(``paraphrase_en.context_words``).

``shape_concepts(question)`` returns those lexicon concepts; ``paraphrase_en.concepts`` asks it only when the
question names no lexicon concept and its grammar no role (``question_roles``), so every question the lexicon already
reads keeps its concepts. Written from English grammar and the development wordings (styles A, B, C and D's dev
split, realdocs-dev's own questions), not from any held-out wording.

Example:
    >>> shape_concepts("day it was written?"), shape_concepts("Who handed this in?")
    (('date',), ('sender',))
    >>> shape_concepts("What's being given away?"), shape_concepts("What is written next to Agency?")
    (('brand', 'product'), ())
    >>> sorted(document_deixis("What is this document about?"))
    ['document']
"""

from __future__ import annotations

import functools
import re

# a day or a date asked for, and no amount ("How much was paid that day?" asks for money)
_DAY = re.compile(r"\bday\b|\bdate of\b", re.I)
_AMOUNT = re.compile(
    r"\bhow (?:much|many)\b|\bamounts?\b|\btotals?\b|\bcosts?\b|\bprices?\b|\bsum\b|\bvalues?\b|\bfigures?\b|"
    r"\bnumbers?\b|\brates?\b",
    re.I,
)
# a day that is a label, not the date asked for: "the value of the first day", "per day", "each day"
_LABEL_DAY = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|last|final|next|previous|same|each|every|per|a|one|\d+(?:st|nd|rd|th)?)"
    r" day\b",
    re.I,
)
# "who" as the subject of an act: "Who handed this in?", "Who put this together?", "Who has compiled it?"; not a
# copula ("Who is the contact?"), a possessive or an object ("Whose ...", "Whom ..."), nor "Who else"
_WHO_ACTS = re.compile(
    r"^\W*who (?:(?:has|had|have) )?(?!(?:is|was|are|were|be|been|'s|else|should|will|would|must|shall|can|could|"
    r"did|does|do|to|of|in|on|at|for|and|or|not|i|we|you|they|he|she|it)\b)[a-z]+\b",
    re.I,
)
# a passive what-question ending at its participle (and a particle): "What's being given away?", "What was tested?"
_WHAT_PASSIVE = re.compile(
    r"^\W*what(?:'s| is| was| are| were)(?: being)? ([a-z]+(?:ed|en|wn|ld|ght|ut))"
    r"(?: (?:away|out|off|up|over|here|there|for sale|on offer))?\W*$",
    re.I,
)
# verbs of writing, saying or filling in: "What is written?" asks for the page's text, not its object
_SAYING = frozenset(
    """written printed typed entered stated said shown listed filled noted recorded mentioned indicated specified
    marked checked ticked circled signed dated called named titled headed labelled labeled""".split()
)


@functools.lru_cache(maxsize=4096)
def shape_concepts(question: str) -> tuple[str, ...]:
    """The lexicon concepts (``paraphrase_en.LEXICON``'s names) of the answer ``question``'s shape asks for: "date"
    for a day, "sender" for the agent of an act on the document, "brand" and "product" for the thing acted on; ()
    when its shape names none. Meant for a question that names no lexicon concept (``paraphrase_en.concepts``)."""
    q = question.replace("’", "'").strip()
    if _DAY.search(q) and not _AMOUNT.search(q) and not _LABEL_DAY.search(q):
        return ("date",)
    if _WHO_ACTS.search(q):
        return ("sender",)
    m = _WHAT_PASSIVE.search(q)
    if m and m.group(1).lower() not in _SAYING:
        return ("brand", "product")
    return ()


# "this / that" + a kind of document: the page itself ("What is this document about?", "Who filled in this form?"),
# not the question's first words
_DEIXIS = re.compile(
    r"\b(?:this|that)\s+(document|form|memo|memorandum|letter|page|sheet|report|fax|note|message|paper|receipt|bill|"
    r"invoice|one)\b",
    re.I,
)


@functools.lru_cache(maxsize=4096)
def document_deixis(question: str) -> frozenset[str]:
    """The nouns ``question`` names the document in hand with ("this document", "that form"): words of no key."""
    q = question.strip()
    return frozenset(
        m.group(1).lower() for m in _DEIXIS.finditer(q) if q[: m.start()].strip(" \"'“(")
    )  # not at its start: "This form was placed before Bates ID?" quotes a printed key
