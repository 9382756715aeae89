"""``arr_coc.evaluation.langgen``: pages in five languages with exact answer boxes, written in the realdocs schema."""

from __future__ import annotations

import json

import pytest

from arr_coc.evaluation import langgen
from arr_coc.training.data import load_jsonl


@pytest.mark.parametrize("language", langgen.LANGUAGES)
def test_every_kind_has_questions_with_boxes_inside_the_page(language: str) -> None:
    try:
        pages = langgen.generate([language], n=1)
    except FileNotFoundError as e:  # no Noto CJK on this machine
        pytest.skip(f"no Noto CJK font (apt-get install fonts-noto-cjk): {e}")
    assert [p.kind for p in pages] == list(langgen.KINDS)
    for page in pages:
        w, h = page.image.size
        assert len(page.questions) == 3
        for q in page.questions:
            x0, y0, x1, y1 = q["boxes"][0]
            assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
            assert q["query"] and q["answer"]


def test_pages_are_deterministic_and_written_in_the_realdocs_schema(tmp_path) -> None:
    a, b = langgen.make_page("de", "invoice", 3), langgen.make_page("de", "invoice", 3)
    assert a.questions == b.questions and a.image.tobytes() == b.image.tobytes()
    assert a.questions != langgen.make_page("de", "invoice", 4).questions
    folder = langgen.write_folder([a], tmp_path / "pages")
    lines = [json.loads(s) for s in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {ln["language"] for ln in lines} == {"de"} and {ln["source"] for ln in lines} == {"docgen-de"}
    questions = load_jsonl(folder)
    assert len(questions) == 3 and questions[0].load_image().size == a.image.size
    with pytest.raises(ValueError, match="language"):
        langgen.make_page("ko", "invoice", 0)
