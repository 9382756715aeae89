"""The clause of an English question that asks, apart from the asker's own situation around it.

A person doing a job with a document says what the job is around the question: "I'm logging this form in the
tracker — which product line does it concern?", "Who drew it up? I need to credit them.", "For tax records, which firm
sold me these items?", "When did this charge happen, for the expense sheet?". The words of that situation are the
asker's, not the page's: its first person ("I'm", "my") does not make a form's question one about the asker's own
purchase (``question_roles.transaction_party``), its nouns ("tax records", "the distribution", "someone to contact
about it") name no key the question asks for, and its words ("tracker", "log", "budget sheet") are printed nowhere on
the page or, worse, somewhere the answer is not. English marks the asking clause by its punctuation and its
interrogative word:

- **sentences**: where the text has a sentence ending in "?", the other sentences ("I need it for the personnel
  file.", "Writing up the expense report.") state the situation;
- **a clause set off by a dash or a semicolon**: of "X — which N ...?", the part with the interrogative word asks;
- **a leading adjunct** before a comma ("For tax records, which firm ...?", "For the audit trail, when ...?") and a
  **trailing purpose** after one (", for the expense sheet?", ", for my log?") frame the question.

``asked_part(question)`` returns the asking clause (the whole question when nothing is set off: every single-clause
question reads as before); ``situation_part(question)`` the rest. ``paraphrase_en`` reads the concepts, roles and
answer types of the asked part, and, only when it names none, the concepts of the situation ("Which outside firm is
doing this job? I need the vendor for the purchase order." names the supplier in its situation); ``lexical`` keeps the
situation's words in the question's weight but matches them with no box (``situation_words``).

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
# a leading adjunct before a comma: "For tax records, which ...", "Filing this, how much ..."
_LEADING = re.compile(r"^([^,]{3,60}),\s+(?=(?:who|whom|whose|who's|what|what's|which|when|where|how|why)\b)", re.I)
# a trailing purpose after a comma: ", for the expense sheet?", ", for my log?", ", so I can file it?"
_TRAILING = re.compile(
    r",\s+(?:for|so|as|to)\b(?:(?!\b(?:who|whom|whose|what|which|when|where|how|why)\b)[^,?])*(\?*)\s*$", re.I
)


def _split(question: str) -> tuple[list[str], list[str]]:
    """(asking clauses, situation clauses) of ``question``."""
    q = question.replace("’", "'").strip()
    sentences = [s for s in _SENTENCES.split(q) if s.strip()]
    asking = [s for s in sentences if s.rstrip().endswith("?")] or [s for s in sentences if _WH.search(s)]
    if not asking:
        return [q], []
    situation = [s for s in sentences if s not in asking]
    asked: list[str] = []
    for s in asking:
        parts = [p for p in _DASHES.split(s) if p.strip()]
        keep = [p for p in parts if _WH.search(p)] or [p for p in parts if p.rstrip().endswith("?")] or parts
        situation += [p for p in parts if p not in keep]
        for p in keep:
            m = _LEADING.search(p)
            if m and not _WH.search(m.group(1)):
                situation.append(m.group(1))
                p = p[m.end() :]
            t = _TRAILING.search(p)
            if t and _WH.search(p[: t.start()]):
                situation.append(p[t.start() : t.end()].rstrip("?").lstrip(", "))
                p = p[: t.start()] + t.group(1)
            asked.append(p.strip())
    return asked, [s.strip() for s in situation if s.strip()]


@functools.lru_cache(maxsize=4096)
def asked_part(question: str) -> str:
    """The clause(s) of ``question`` that ask (``question`` itself, apostrophes straightened, when nothing is set
    off)."""
    asked, situation = _split(question)
    return " ".join(asked) if situation else question


@functools.lru_cache(maxsize=4096)
def situation_part(question: str) -> str:
    """The clauses of ``question`` that state the asker's situation ("" when there are none)."""
    return " ".join(_split(question)[1])
