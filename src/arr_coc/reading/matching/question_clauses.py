"""The clause of an English question that asks, apart from the asker's own situation around it.

A person doing a job with a document says what the job is around the question: "I'm logging this form in the
tracker — which product line does it concern?", "Who drew it up? I need to credit them.", "For tax records, which firm
sold me these items?", "When did this charge happen, for the expense sheet?". The words of that situation are the
asker's, not the page's: its first person ("I'm", "my") does not make a form's question one about the asker's own
purchase (``question_roles.transaction_party``), its nouns ("tax records", "the distribution", "someone to contact
about it") name no key the question asks for, and its words ("tracker", "log", "budget sheet") are printed nowhere on
the page or, worse, somewhere the answer is not. English marks the asking clause by its punctuation and its
interrogative word:

- **sentences**: where the text has a sentence ending in "?", the other sentences that speak of the asker ("I need
  it for the personnel file.", "Writing up the expense report.") state the situation; one that does not describes
  the answer ("Street and city, please.") and is asked;
- **a clause set off by a dash or a semicolon**: of "I'm filing this — which N ...?", the part with the interrogative
  word asks;
- **a leading purpose** before a comma ("For tax records, which firm ...?", "For the audit trail, when ...?") and a
  **trailing purpose** after one (", for the expense sheet?", ", for my log?") frame the question.

A clause that names something the page may print (a number, a capitalised word past its first word: "In the row
Model D-4, what ...?", "For 1985, what figure ...?", "Look at the 1985 row.") is never the situation.

``asked_part(question)`` returns the asking clause (the whole question when nothing is set off: every single-clause
question reads as before); ``situation_part(question)`` the rest. ``paraphrase_en`` reads the concepts, roles and
answer types of the asked part, and, only when it names none, the concepts of the situation ("Which outside firm is
doing this job? I need the vendor for the purchase order." names the supplier in its situation); ``lexical`` keeps the
situation's words in the question's weight but matches them with no box (``lexical.unmatched_tokens``).

Example:
    >>> asked_part("I'm logging this form in the tracker — which product line does it concern?")
    'which product line does it concern?'
    >>> asked_part("Who drew it up? I need to credit them.")
    'Who drew it up?'
    >>> asked_part("For tax records, which firm sold me these items?")
    'which firm sold me these items?'
    >>> asked_part("What is the total?")
    'What is the total?'
"""

from __future__ import annotations

import functools
import re

_WH = re.compile(r"\b(?:who|whom|whose|who's|what|what's|which|when|where|how|why)\b", re.I)
# sentence ends: "?" or "!", or "." after a word of two lower-case letters or more and before a capital ("Dr. Don"
# and "Co. Ltd" are no sentence ends)
_SENTENCES = re.compile(r"(?<=[?!])\s+|(?<=[a-z]{2}\.)\s+(?=[A-Z\"'“])")
# a clause set off by a dash or a semicolon
_DASHES = re.compile(r"\s+(?:—|–|--|-)\s+|\s*[—–]\s*|;\s+")
# a leading purpose before a comma: "For tax records, which ...", "For the audit trail, when ..."
_LEADING = re.compile(r"^(for [^,]{3,60}),\s+(?=(?:who|whom|whose|who's|what|what's|which|when|where|how|why)\b)", re.I)
# a trailing purpose after a comma: ", for the expense sheet?", ", for my log?", ", so I can file it?"
_TRAILING = re.compile(
    r",\s+(?:for|so)\b(?:(?!\b(?:who|whom|whose|what|which|when|where|how|why)\b)[^,?])*(\?*)\s*$", re.I
)
# a clause that names something the page may print is no situation: a number or a capitalised word past its first
# word ("In the row Model D-4, what ...", "For 1985, what figure ...", "Look at the 1985 row. What is ...?"); the
# pronoun "I" aside
_PRINTED = re.compile(r"\d|(?<=\S)\s+(?!I(?:'[a-z]+)?\b)[A-Z]")


# a sentence or a dashed clause states the asker's situation in the first person, as an act in progress or as who
# wants the answer and where it goes ("I'm routing the mail.", "Writing up the expense report.", "The auditor needs
# the vendor.", "It goes in the intake log."); one that does none of these describes the answer ("Street and city,
# please.", "Two-letter abbreviation.")
_ASKER = re.compile(
    r"(?<![\w'])(?:I(?:'[a-z]+)?|[Mm]e|[Mm]y|[Ww]e|[Oo]ur|[Uu]s)(?![\w'])|^\W*[A-Za-z]+ing\b|"
    r"\b(?:[Ww]ants?|[Nn]eeds?|[Nn]eeded|asks?|asking|requires?|goes (?:in|into|on)|has a (?:box|field|line))\b"
)


def _situation(clause: str, asker: bool = False) -> bool:
    """Whether ``clause`` can be the asker's situation: it names nothing the page may print and (``asker``: a
    sentence or a dashed clause) speaks of the asker."""
    return not _PRINTED.search(clause.strip()) and (not asker or _ASKER.search(clause.strip()) is not None)


@functools.lru_cache(maxsize=4096)
def _split(question: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(asking clauses, situation clauses) of ``question`` (cached: ``asked_part`` and ``situation_part`` share it)."""
    q = question.replace("’", "'").strip()
    sentences = [s for s in _SENTENCES.split(q) if s.strip()]
    asking = [s for s in sentences if s.rstrip().endswith("?")] or [s for s in sentences if _WH.search(s)]
    if not asking:
        return (q,), ()
    asking += [s for s in sentences if s not in asking and not _situation(s, True)]  # "Look at the 1985 row."
    situation = [s for s in sentences if s not in asking]
    asked: list[str] = []
    for s in (s for s in sentences if s in asking):
        parts = [p for p in _DASHES.split(s) if p.strip()]
        keep = [p for p in parts if _WH.search(p)] or [p for p in parts if p.rstrip().endswith("?")] or parts
        keep = [p for p in parts if p in keep or not _situation(p, True)]
        situation += [p for p in parts if p not in keep]
        for p in keep:
            m = _LEADING.search(p)
            if m and not _WH.search(m.group(1)) and _situation(m.group(1)):
                situation.append(m.group(1))
                p = p[m.end() :]
            t = _TRAILING.search(p)
            if t and _WH.search(p[: t.start()]) and _situation(p[t.start() : t.end()]):
                situation.append(p[t.start() : t.end()].rstrip("?").lstrip(", "))
                p = p[: t.start()] + t.group(1)
            asked.append(p.strip())
    return tuple(asked), tuple(s.strip() for s in situation if s.strip())


def asked_part(question: str) -> str:
    """The clause(s) of ``question`` that ask, apostrophes straightened (``question`` itself, unchanged, when
    nothing is set off)."""
    asked, situation = _split(question)
    return " ".join(asked) if situation else question


def situation_part(question: str) -> str:
    """The clauses of ``question`` that state the asker's situation ("" when there are none)."""
    return " ".join(_split(question)[1])
