"""Scanned pages (issue 40): OCR-noise tolerant phrase matching, word units on tight lines, the scans builder."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from arr_coc.reading.layout import analyse, parse, resolve
from arr_coc.reading.layout.scans import core_boxes, match_span, ocr_token_sim, tight_lines
from arr_coc.reading.matching.propagation import word_units
from arr_coc.reading.ocr.reader import TextBox

ROOT = Path(__file__).resolve().parents[1]


def _page(lines: list[str], pitch: float, height: float, x0: float = 20.0, cw: float = 10.0) -> list[TextBox]:
    """One OCR box per line, ``pitch`` px apart, each ``height`` px tall (PP-OCR's boxes are ~2x the ink)."""
    return [
        TextBox(t, (x0, 20 + i * pitch, x0 + cw * len(t), 20 + i * pitch + height), 0.9) for i, t in enumerate(lines)
    ]


TEXT = [
    "De linzen wassen en in 1 liter kokend water",
    "ter 1 dag laten weken. 2 liter water bij",
    "de linzen voegen, zonder het water waarin",
    "ze geweekt zijn af te gieten. De helft van",
    "de uien bakken met laurier en kruidnagel.",
    "Alle uien, kerrie en zout bij de linzen",
]


def test_ocr_token_sim_confusions_and_slips():
    assert ocr_token_sim("model", "model") == 1.0
    assert ocr_token_sim("model", "rnodel") == 0.9  # rn read for m
    assert ocr_token_sim("2010", "2o1o") == 0.9  # o read for 0
    assert ocr_token_sim("illinois", "1llinois") == 0.9
    assert 0.75 <= ocr_token_sim("kruidnagel", "kruidnagal") < 1.0  # one slip in ten letters
    assert ocr_token_sim("the", "tho") == 0.0  # short words: exact or confusion only
    assert ocr_token_sim("water", "winter") == 0.0 or ocr_token_sim("water", "winter") < 0.8
    assert ocr_token_sim("linzen", "bakken") == 0.0


def test_match_span_glued_split_and_misread():
    toks = "de deuien bakken met laurier".split()
    got = match_span(toks, ["de", "uien"])
    assert got is not None and got[:2] == (1, 1)  # "de uien" read as one token
    toks = "de lin zen voegen zonder".split()
    got = match_span(toks, ["linzen", "voegen"])
    assert got is not None and got[:2] == (1, 3)  # "linzen" read as two
    toks = "the quick brovvn fox jumps".split()
    got = match_span(toks, ["brown", "fox"])
    assert got is not None and got[:2] == (2, 3) and got[2] > 0.9
    assert match_span(toks, []) is None


def test_after_phrase_found_through_ocr_noise():
    noisy = [t.replace("uien bakken", "uienbakken").replace("kruidnagel", "kruidnagal") for t in TEXT]
    layout = analyse(_page(noisy, 40, 24))
    sq = parse("Which word comes right after 'met laurier'?")
    ev = resolve(layout, sq)
    assert ev is not None and ev.rule == "after-phrase"
    sq = parse("What word precedes \u00abbakken met\u00bb?")
    assert sq.before == "bakken met"
    ev = resolve(layout, sq)
    assert ev is not None and ev.rule == "after-phrase"  # "bakken" inside the glued "uienbakken"
    assert parse("Which word comes right after 'voegen zonder'?").after == "voegen zonder"


def test_apostrophe_inside_a_quoted_phrase():
    sq = parse("What word precedes \u00abThat\u2019s precisely\u00bb?")
    assert sq.before is not None and sq.before.endswith("precisely")
    sq = parse("Which word comes right after 'it's time'?")
    assert sq.after is not None and sq.after.endswith("time")


def test_tight_lines_detects_overlapping_line_boxes():
    assert tight_lines(_page(TEXT, 20, 32))  # boxes 32 px tall, lines 20 px apart
    assert not tight_lines(_page(TEXT, 40, 24))  # spaced lines
    assert not tight_lines(_page(TEXT[:2], 20, 32))  # too few boxes
    side = [TextBox("Name:", (20, 20, 80, 44)), TextBox("Jane Doe", (90, 20, 180, 44))] * 3
    assert not tight_lines(side)  # boxes beside each other on one line are not a tight page


def test_core_boxes_keep_centre_and_text():
    (c,) = core_boxes([TextBox("word", (10, 100, 50, 140), 0.5)])
    assert c.text == "word" and c.confidence == 0.5
    assert c.box == (10, 110, 50, 130)


def test_units_on_a_tight_page_do_not_chain_lines():
    from arr_coc.reading.matching.matcher import QueryMatcher

    size = (500, 160)
    # lines 20 px apart in 20 px rows, boxes 32 px tall: each box touches its own row and both neighbours'
    tight = [TextBox(t, (20, 14 + i * 20, 20 + 10 * len(t), 46 + i * 20), 0.9) for i, t in enumerate(TEXT)]
    m = QueryMatcher(semantic=False)
    units = list(m.units(tight, 8, 25, size))
    plain = word_units(tight, 8, 25, size)
    rows = lambda us: {len({int(c) // 25 for c in u}) for u in us}  # noqa: E731
    assert rows(plain) == {3} and rows(units) == {1}  # a word no longer spans its neighbours' lines
    spaced = _page(TEXT, 40, 24)
    size2 = (500, 280)
    got = list(QueryMatcher(semantic=False).units(spaced, 10, 25, size2))
    want = word_units(spaced, 10, 25, size2)
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))


def test_builder_candidates_from_verified_words():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import scans_data

    words = []
    for li, line in enumerate(["the quick brown fox", "jumps over lazy dogs", "Total: 42 dollars"]):
        for k, w in enumerate(line.split()):
            words.append(
                dict(text=w, conf=95.0, line=(1, 1, li), box=[k * 50, li * 30, k * 50 + 40, li * 30 + 20], ok=True)
            )
    cands = scans_data.candidates(words, None)
    kinds = {c["kind"] for c in cands}
    assert {"scan_after", "scan_before", "scan_key"} <= kinds
    after = [c for c in cands if c["kind"] == "scan_after" and c["phrase"] == "the quick"]
    assert after and after[0]["answer"][0]["text"] == "brown"
    truth = "the quick brown fox"
    assert all(c["line"] == 0 for c in scans_data.candidates(words, truth) if c["kind"] != "scan_key")


def test_forms_with_tight_short_boxes_keep_their_units():
    from arr_coc.reading.layout.scans import tight_prose

    form = [
        TextBox(t, (20 + 200 * (i % 2), 14 + (i // 2) * 20, 120 + 200 * (i % 2), 46 + (i // 2) * 20), 0.9)
        for i, t in enumerate(["Name:", "Jane Doe", "Date:", "9/3/92", "Total:", "$18.20", "Ref:", "A-17"] * 2)
    ]
    assert tight_lines(form) and not tight_prose(form)
    from arr_coc.reading.matching.matcher import QueryMatcher

    got = list(QueryMatcher(semantic=False).units(form, 10, 25, (500, 200)))
    want = word_units(form, 10, 25, (500, 200))
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
