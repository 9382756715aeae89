"""The benchmark metrics against cases worked out by hand from their definitions, and against lmms-eval.

Why: a benchmark number is only comparable with published ones if the metric is the same to the last quirk
(ANLS's threshold, ChartQA's 5% and "%" rule, VQA's normalisation and leave-one-out average). Each expected value
below is computed by hand in the comment beside it. Where lmms-eval is installed, the same functions are also
compared with lmms-eval's own code on random strings (only its metric functions are loaded, not its package).
"""

from __future__ import annotations

import ast
import importlib.util
import random
from pathlib import Path

import pytest

from arr_coc.evaluation import anls, normalize_vqa_answer, ocrbench_accuracy, relaxed_accuracy, vqa_accuracy


# ----- ANLS --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("prediction", "answers", "expected"),
    [
        ("Paris", ["paris"], 1.0),  # case is ignored
        ("  New   York ", "new york", 1.0),  # surrounding and repeated spaces are ignored
        ("1O/12/2019", ["10/12/2019"], 0.9),  # one substitution in 10 characters
        ("ab", ["abcd"], 0.5),  # 2 edits / 4: exactly the threshold, kept
        ("abc", ["abcdefg"], 0.0),  # 4 / 7 -> similarity 0.43 < 0.5 -> 0
        ("10.00", ["ten dollars", "$10.00"], 5 / 6),  # best answer counts: one insertion in 6
        ("", ["abc"], 0.0),  # empty prediction: 3 edits / 3
        ("", [""], 1.0),  # two empty strings are identical
        ("Straße", ["STRASSE"], 5 / 7),  # "straße" -> "strasse": ß->s and one insertion, 2 / 7
        ("Café", ["cafe"], 0.75),  # é != e: one substitution in 4
        ("1234", ["1,234"], 0.8),  # the comma is one insertion in 5
        ("東京", ["東京都"], 2 / 3),  # code points, not bytes: one insertion in 3
    ],
)
def test_anls_hand_checked(prediction, answers, expected):
    assert anls(prediction, answers) == pytest.approx(expected, abs=1e-12)


def test_anls_threshold_is_a_parameter():
    assert anls("abc", ["abcdefg"], threshold=0.4) == pytest.approx(3 / 7)  # 1 - 4/7 >= 0.4: kept
    assert anls("abc", ["abcdefg"], threshold=0.0) == pytest.approx(3 / 7)


@pytest.mark.parametrize("fn", [anls, relaxed_accuracy, vqa_accuracy, ocrbench_accuracy])
def test_bad_inputs_get_clear_errors(fn):
    with pytest.raises(ValueError, match="answers is empty"):
        fn("x", [])
    with pytest.raises(ValueError, match="prediction must be a string"):
        fn(None, ["x"])
    with pytest.raises(ValueError, match="each answer must be a string"):
        fn("x", [None])


# ----- ChartQA relaxed accuracy -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("prediction", "answers", "expected"),
    [
        ("10.4", "10", 1.0),  # 4% off
        ("10.6", "10", 0.0),  # 6% off
        ("105", "100", 1.0),  # exactly 5%: 5.0 / 100.0 == 0.05 in binary floating point, counted right
        ("94.9", "100", 0.0),  # 5.1% off
        ("-5.1", "-5", 1.0),  # relative to |answer|: 2%
        ("45%", "0.45", 1.0),  # "%" divides by 100
        ("45", "45%", 0.0),  # 45 vs 0.45: as in lmms-eval, a "%" on one side only is a different number
        ("1,000", "1000", 0.0),  # thousands separators are not parsed (lmms-eval): strings differ
        ("1,000", "1,000", 1.0),  # ... but equal strings match
        ("12 kg", "12", 0.0),  # units are not parsed
        ("0.0", "0", 0.0),  # an answer of 0 falls back to string equality
        ("0", "0", 1.0),
        ("Yes", "yes", 1.0),  # words: equality ignoring case
        ("CAFÉ", "café", 1.0),  # unicode case folding by str.lower
        (" Yes\n", "yes", 1.0),  # surrounding white space of the prediction is ignored
        ("", "5", 0.0),  # empty prediction
        ("7", ["six", "7.2"], 1.0),  # several answers: any within 5% (|7 - 7.2| / 7.2 = 2.8%)
    ],
)
def test_relaxed_accuracy_hand_checked(prediction, answers, expected):
    assert relaxed_accuracy(prediction, answers) == expected


def test_relaxed_accuracy_tolerance_is_a_parameter():
    assert relaxed_accuracy("10.6", "10", tolerance=0.1) == 1.0
    assert relaxed_accuracy("10.4", "10", tolerance=0.0) == 0.0


# ----- VQA accuracy ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Two dogs.", "2 dogs"),  # article dropped, number word to digit, final period removed
        ("1,000", "1000"),  # commas are removed
        ("3.5", "3.5"),  # a period before a digit stays
        ("x-ray", "x ray"),  # punctuation inside a word separates
        ("red - blue", "red blue"),  # punctuation next to a space is removed
        ("dont", "don't"),  # contractions get their apostrophe back
        ("Man's hat?", "man 's hat"),  # "'s" is split off, "?" removed
        ("  Yes\n", "yes"),
        ("", ""),
    ],
)
def test_vqa_normalisation_hand_checked(text, normalised):
    assert normalize_vqa_answer(text) == normalised


@pytest.mark.parametrize(
    ("matching", "expected"),
    # leave-one-out over 10 annotators; m of them match. A matching annotator left out leaves m-1 matches,
    # another leaves m:  (m * min(1, (m-1)/3) + (10-m) * min(1, m/3)) / 10
    [(0, 0.0), (1, 0.3), (2, 0.6), (3, 0.9), (4, 1.0), (10, 1.0)],
)
def test_vqa_accuracy_leave_one_out(matching, expected):
    answers = ["stop"] * matching + ["go"] * (10 - matching)
    assert vqa_accuracy("Stop.", answers) == pytest.approx(expected, abs=1e-12)


def test_vqa_accuracy_normalises_both_sides():
    assert vqa_accuracy("two", ["2"] * 10) == 1.0
    assert vqa_accuracy("1000", ["1,000"] * 3 + ["one thousand"] * 7) == pytest.approx(0.9)
    assert vqa_accuracy("Café", ["café"] * 10) == 1.0
    assert vqa_accuracy("", ["yes"] * 10) == 0.0
    assert vqa_accuracy("yes", ["yes"]) == 0.0  # one annotator: no one else to agree with (documented)


# ----- OCRBench ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("prediction", "answers", "dataset", "expected"),
    [
        ("The title is PENDRAGON.", ["PENDRAGON"], None, 1.0),  # contained
        ("pendragon", ["PENDRAGON"], None, 1.0),  # case ignored
        ("ＡＢＣ１２３", ["abc123"], None, 1.0),  # full-width ASCII folded
        ("pen dragon", ["PENDRAGON"], None, 0.0),
        ("", ["a"], None, 0.0),
        ("x=\\frac{17}{5}", ["x = \\frac { 1 7 } { 5 }\n"], "HME100k", 1.0),  # formulas: spaces removed
        ("X=1", ["x = 1"], "HME100k", 0.0),  # ... and case kept
        ("no", ["yes", "no"], None, 1.0),  # any answer
    ],
)
def test_ocrbench_accuracy_hand_checked(prediction, answers, dataset, expected):
    assert ocrbench_accuracy(prediction, answers, dataset) == expected


# ----- the same as lmms-eval's own code ----------------------------------------------------------------------------
def _lmms_eval_root() -> Path:
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("lmms-eval is not installed (the CI installs it: .ci/run)")
    return Path(next(iter(spec.submodule_search_locations)))


def _functions(file: Path, *names: str) -> dict:
    """Only the named top-level functions / classes of ``file`` (decorators dropped), without its imports."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    nodes = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in names]
    for n in nodes:
        n.decorator_list = []
    namespace: dict = {}
    module = ast.fix_missing_locations(ast.Module(body=[*ast.parse("import re").body, *nodes], type_ignores=[]))
    exec(compile(module, str(file), "exec"), namespace)
    assert set(names) <= set(namespace), f"{file} no longer defines {set(names) - set(namespace)}"
    return namespace


def _random_text(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))


def test_metrics_agree_with_lmms_eval_on_random_strings():
    root = _lmms_eval_root()
    ref_anls = _functions(root / "api" / "metrics.py", "levenshtein_distance", "anls")
    ref_chart = _functions(root / "tasks" / "chartqa" / "utils.py", "relaxed_correctness")
    ref_vqa = _functions(root / "tasks" / "_task_utils" / "vqa_eval_metric.py", "EvalAIAnswerProcessor")
    ref_ocr = _functions(root / "tasks" / "ocrbench" / "utils.py", "_fold_fullwidth_ascii", "ocrbench_process_results")
    processor = ref_vqa["EvalAIAnswerProcessor"]()
    rng = random.Random(0)
    alphabet = "abAB 1.5,%-'s?!/the an two dont Éß東\n"
    for _ in range(3000):
        pred = _random_text(rng, alphabet, 10)
        answers = [_random_text(rng, alphabet, 10) for _ in range(rng.randint(1, 4))]
        # ANLS: lmms-eval divides by the raw lengths; on normalised strings whose upper() keeps the length they agree
        if all(s == " ".join(s.lower().split()) and len(s.upper()) == len(s) for s in [pred, *answers]):
            assert anls(pred, answers) == pytest.approx(ref_anls["anls"](answers, [pred])["anls"], abs=1e-12)
        if pred == pred.strip():
            assert relaxed_accuracy(pred, answers[0]) == float(ref_chart["relaxed_correctness"](pred, answers[0]))
        assert normalize_vqa_answer(pred) == processor(pred)
        dataset = rng.choice(["ChartQA", "HME100k"])
        doc = {"answer": answers, "dataset": dataset, "question_type": "x"}
        ref = ref_ocr["ocrbench_process_results"](doc, [pred])["ocrbench_accuracy"]["score"]
        assert ocrbench_accuracy(pred, answers, dataset) == ref
    ten = [rng.choice(["two", "2", "dont", "don't", "x-ray", "x ray"]) for _ in range(10)]
    for pred in ["2", "two", "dont", "x ray", "no"]:
        golds = [processor(a) for a in ten]
        p = processor(pred)
        expected = sum(min(1, sum(g == p for j, g in enumerate(golds) if j != i) / 3) for i in range(10)) / 10
        assert vqa_accuracy(pred, ten) == pytest.approx(expected)
