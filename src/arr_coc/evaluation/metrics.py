"""Answer metrics of the standard document / chart / scene-text benchmarks, one function each.

Every function takes the model's ``prediction`` (a string) and the reference ``answers`` (a string or a list of
strings) and returns a score in [0, 1]. They follow the definitions the published numbers are computed with, as
lmms-eval 0.7.3 implements them (read there, written here from the definitions):

* :func:`anls`: DocVQA / InfographicVQA. Average Normalised Levenshtein Similarity: both strings lower-cased with
  runs of white space collapsed and surrounding space removed; similarity ``1 - lev(p, a) / max(|p|, |a|)``; the
  best answer counts; a similarity below ``threshold`` (0.5) scores 0. One deliberate difference: lmms-eval
  divides by the lengths of the *un-normalised* strings (so "  Paris " vs "paris" scores 0.625 there); here the
  lengths are those of the normalised strings, as in the DocVQA definition (the same 1.0). On strings without
  surrounding or repeated white space the two agree.
* :func:`relaxed_accuracy`: ChartQA. If both the prediction and the answer parse as numbers (Python ``float``;
  a trailing "%" divides by 100), the prediction is right within ``tolerance`` (5%) relative error of a non-zero
  answer; otherwise (words, "1,000", "12 kg", an answer of 0) the strings must be equal, ignoring case. As in
  lmms-eval, thousands separators and units are NOT parsed: "1,000" vs "1000" is wrong. Surrounding white space
  of the prediction is ignored (lmms-eval compares it verbatim on the non-numeric path).
* :func:`vqa_accuracy`: TextVQA / VQAv2. The EvalAI answer normalisation (lower case, "," and "?" removed,
  "'s" split off, punctuation removed or turned into a space, periods not followed by a digit removed, number
  words zero..ten to digits, articles a/an/the dropped, apostrophe-less contractions restored) applied to the
  prediction and to every answer, then the mean over the leave-one-annotator-out subsets of
  ``min(1, matches / 3)``. With 10 answers, 0, 1, 2, 3 and 4 or more matching answers score 0, 0.3, 0.6, 0.9
  and 1. NOTE:
  with a single reference answer there is no other annotator and the score is always 0 (as in lmms-eval): use
  ``anls`` for single-answer data.
* :func:`ocrbench_accuracy`: OCRBench. 1 if any answer, lower-cased with full-width ASCII folded, is contained in
  the prediction (for the HME100k formulas: with all spaces removed, case kept), else 0.

Example:
    >>> anls("Paris", ["paris"]), relaxed_accuracy("10.4", "10"), vqa_accuracy("two", ["2"] * 10)
    (1.0, 1.0, 1.0)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Answers = str | Sequence[str]


def _answers(answers: Answers, metric: str) -> list[str]:
    """``answers`` as a non-empty list of strings (numbers are accepted and written as text)."""
    if isinstance(answers, (str, int, float)) and not isinstance(answers, bool):
        answers = [answers]
    try:
        items = list(answers)
    except TypeError:
        raise ValueError(
            f"{metric}: answers must be a string or a list of strings, got {type(answers).__name__}"
        ) from None
    if not items:
        raise ValueError(f"{metric}: answers is empty; every sample needs at least one reference answer")
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (str, int, float)):
            raise ValueError(f"{metric}: each answer must be a string, got {a!r}")
        out.append(str(a))
    return out


def _prediction(prediction: str, metric: str) -> str:
    if not isinstance(prediction, str):
        raise ValueError(f"{metric}: the prediction must be a string, got {type(prediction).__name__}")
    return prediction


# ----- ANLS -------------------------------------------------------------------------------------------------------
def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions of one code point each) between ``a`` and ``b``."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))  # distances from a[:0] to every prefix of b
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _anls_normalise(text: str) -> str:
    return " ".join(text.lower().split())


def anls(prediction: str, answers: Answers, threshold: float = 0.5) -> float:
    """DocVQA / InfographicVQA ANLS of one prediction (see the module docstring).

    Args:
        prediction: the model's answer.
        answers: the reference answer(s); the best-matching one counts.
        threshold: similarities below it score 0 (0.5 in DocVQA).

    Returns:
        The similarity in [0, 1] to the closest answer, or 0 if that is below ``threshold``. Two empty strings
        are identical (1.0).

    Raises:
        ValueError: for an empty ``answers`` or non-string inputs.
    """
    pred = _anls_normalise(_prediction(prediction, "anls"))
    best = 0.0
    for answer in _answers(answers, "anls"):
        gold = _anls_normalise(answer)
        length = max(len(pred), len(gold))
        similarity = 1.0 if length == 0 else 1.0 - levenshtein(pred, gold) / length
        best = max(best, similarity)
    return best if best >= threshold else 0.0


# ----- relaxed accuracy -------------------------------------------------------------------------------------------
def _to_number(text: str) -> float | None:
    """``text`` as a float ("12.5", "-3", "1e3"; "40%" -> 0.4), or ``None`` if it is not a plain number."""
    try:
        return float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        return None


def relaxed_accuracy(prediction: str, answers: Answers, tolerance: float = 0.05) -> float:
    """ChartQA relaxed accuracy of one prediction (see the module docstring).

    Args:
        prediction: the model's answer.
        answers: the reference answer(s) (ChartQA has one); any match counts.
        tolerance: the largest relative error |p - a| / |a| still counted right for numbers (5%).

    Returns:
        1.0 or 0.0.
    """
    pred = _prediction(prediction, "relaxed_accuracy").strip()
    p = _to_number(pred)
    for answer in _answers(answers, "relaxed_accuracy"):
        a = _to_number(answer)
        if p is not None and a:  # a == 0 (or None) falls back to string equality, as in lmms-eval
            if abs(p - a) / abs(a) <= tolerance:
                return 1.0
        elif pred.lower() == answer.lower():
            return 1.0
    return 0.0


# ----- VQA accuracy -----------------------------------------------------------------------------------------------
# The EvalAI / VQA answer normalisation. Contractions written without their apostrophe(s) are restored: the table
# lists each official spelling once, with the unpunctuated forms that map to it (e.g. "couldnt've" and
# "couldn'tve" -> "couldn't've"). It reproduces the official table entry for entry, including its quirk
# "somebody'd" -> "somebodyd".
_CONTRACTION_GROUPS = """
ain't=aint aren't=arent can't=cant could've=couldve couldn't=couldnt couldn't've=couldnt've,couldn'tve
didn't=didnt doesn't=doesnt don't=dont hadn't=hadnt hadn't've=hadnt've,hadn'tve hasn't=hasnt haven't=havent
he'd=hed he'd've=hed've,he'dve he's=hes how'd=howd how'll=howll how's=hows I'd've=Id've,I'dve I'm=Im I've=Ive
isn't=isnt it'd=itd it'd've=itd've,it'dve it'll=itll let's=let's ma'am=maam mightn't=mightnt
mightn't've=mightnt've,mightn'tve might've=mightve mustn't=mustnt must've=mustve needn't=neednt not've=notve
o'clock=oclock oughtn't=oughtnt 'ow's'at=ow's'at,'ows'at,'ow'sat shan't=shant she'd've=shed've,she'dve
she's=she's should've=shouldve shouldn't=shouldnt shouldn't've=shouldnt've,shouldn'tve somebodyd=somebody'd
somebody'd've=somebodyd've,somebody'dve somebody'll=somebodyll somebody's=somebodys someone'd=someoned
someone'd've=someoned've,someone'dve someone'll=someonell someone's=someones something'd=somethingd
something'd've=somethingd've,something'dve something'll=somethingll that's=thats there'd=thered
there'd've=thered've,there'dve there're=therere there's=theres they'd=theyd they'd've=theyd've,they'dve
they'll=theyll they're=theyre they've=theyve 'twas=twas wasn't=wasnt we'd've=wed've,we'dve we've=weve
weren't=werent what'll=whatll what're=whatre what's=whats what've=whatve when's=whens where'd=whered
where's=wheres where've=whereve who'd=whod who'd've=whod've,who'dve who'll=wholl who's=whos who've=whove
why'll=whyll why're=whyre why's=whys won't=wont would've=wouldve wouldn't=wouldnt
wouldn't've=wouldnt've,wouldn'tve y'all=yall y'all'll=yall'll,y'allll y'all'd've=yall'd've,y'alld've,y'all'dve
you'd=youd you'd've=youd've,you'dve you'll=youll you're=youre you've=youve
"""
CONTRACTIONS: dict[str, str] = {
    variant: official
    for group in _CONTRACTION_GROUPS.split()
    for official, variants in [group.split("=")]
    for variant in variants.split(",")
}
NUMBER_WORDS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
NUMBER_WORDS["none"] = "0"
ARTICLES = frozenset({"a", "an", "the"})
PUNCTUATION = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!")
_PERIOD = re.compile(r"\.(?!\d)")  # a period not followed by a digit ("3.5" keeps its period)
_DIGIT_COMMA_DIGIT = re.compile(r"(?<=\d),+(?=\d)")
_PERIODS_REMOVED = 32  # the official code passes re.UNICODE (= 32) as re.sub's count: at most 32 are removed


def normalize_vqa_answer(text: str) -> str:
    """The EvalAI / official VQA normalisation of one answer (see the module docstring).

    >>> normalize_vqa_answer("The Two dogs.")
    '2 dogs'
    """
    text = text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip()
    text = text.replace("\n", " ").replace("\t", " ").strip()
    # A punctuation mark next to a space (or anywhere, when digits are comma-separated) is removed; elsewhere it
    # separates words. The test looks at the text before any replacement, as the official code does.
    remove_all = _DIGIT_COMMA_DIGIT.search(text) is not None
    out = text
    for p in PUNCTUATION:
        out = out.replace(p, "" if remove_all or p + " " in text or " " + p in text else " ")
    out = _PERIOD.sub("", out, count=_PERIODS_REMOVED)
    words = [NUMBER_WORDS.get(w, w) for w in out.lower().split()]
    return " ".join(CONTRACTIONS.get(w, w) for w in words if w not in ARTICLES)


def vqa_accuracy(prediction: str, answers: Answers) -> float:
    """TextVQA / VQAv2 accuracy of one prediction (see the module docstring).

    Args:
        prediction: the model's answer.
        answers: the annotators' answers (10 in VQAv2 and TextVQA), duplicates included.

    Returns:
        mean over i of min(1, #{j != i: answer_j == prediction} / 3), after normalisation. One answer gives 0.
    """
    pred = normalize_vqa_answer(_prediction(prediction, "vqa_accuracy"))
    golds = [normalize_vqa_answer(a) for a in _answers(answers, "vqa_accuracy")]
    matches = sum(g == pred for g in golds)
    # leaving out annotator i removes one match exactly when annotator i matched
    scores = [min(1.0, (matches - (g == pred)) / 3.0) for g in golds]
    return sum(scores) / len(scores)


# ----- OCRBench ---------------------------------------------------------------------------------------------------
def _fold_fullwidth(text: str) -> str:
    """Full-width ASCII (U+FF01..U+FF5E) to ASCII and the ideographic space to a space; nothing else changes."""
    return "".join(chr(ord(c) - 0xFEE0) if 0xFF01 <= ord(c) <= 0xFF5E else " " if c == "\u3000" else c for c in text)


def ocrbench_accuracy(prediction: str, answers: Answers, dataset: str | None = None) -> float:
    """OCRBench accuracy of one prediction: 1.0 if an answer is contained in it (see the module docstring).

    Args:
        prediction: the model's answer.
        answers: the reference answer(s).
        dataset: the sample's source dataset (OCRBench's ``dataset`` column); ``"HME100k"`` compares formulas
            with every space removed and case kept.
    """
    pred = _prediction(prediction, "ocrbench_accuracy").strip()
    for answer in _answers(answers, "ocrbench_accuracy"):
        if dataset == "HME100k":
            hit = answer.strip().replace("\n", " ").replace(" ", "") in pred.replace("\n", " ").replace(" ", "")
        else:
            gold = _fold_fullwidth(answer).lower().strip().replace("\n", " ")
            hit = gold in _fold_fullwidth(pred).lower().strip().replace("\n", " ")
        if hit:
            return 1.0
    return 0.0


METRICS = {
    "anls": anls,
    "relaxed_accuracy": relaxed_accuracy,
    "vqa_accuracy": vqa_accuracy,
    "ocrbench_accuracy": ocrbench_accuracy,
}
