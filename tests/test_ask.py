"""Tests of ``arr-coc ask`` end to end on a tiny random-weight Qwen2.5-VL checkpoint saved to a temporary folder.

The checkpoint is ``arr_coc.testing.tiny_checkpoint``: what ``save_pretrained`` writes for a real one, only tiny
(hidden size 32, 2 layers, 2 vision blocks), with the real Qwen2 tokenizer, special tokens and chat template, and
an image processor capped at 64 visual tokens. Everything runs offline in a few seconds.
"""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from arr_coc.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_checkpoint_folder):
    """A tiny random Qwen2.5-VL checkpoint with the real tokenizer, its image processor capped at 64 visual tokens."""
    return tiny_checkpoint_folder("qwen2.5-vl", max_pixels=28 * 28 * 64)


def test_ask_prunes_compares_and_writes_heatmap(tiny_checkpoint, tmp_path, form_image, capsys):
    image = tmp_path / "form.png"
    form_image.save(image)
    heatmap = tmp_path / "out" / "heat.png"
    argv = ["ask", str(image), "--query", "What is the amount due?", "--model", str(tiny_checkpoint)]
    argv += ["--budget", "0.5", "--max-new-tokens", "3", "--compare", "--heatmap", str(heatmap), "--device", "cpu"]
    assert main([*argv, "--mode", "texture"]) == 0
    out = capsys.readouterr().out
    # 700x500 capped at 64 tokens of 28 px -> a 6x9 grid of 54 tokens; half of them kept
    assert "visual tokens: 54 -> 27 (50.0%), grid 6x9 (rows x cols), mode texture;" in out
    assert "processor: PilQwenVLProcessor" in out or "processor: Qwen2_5_VLProcessor" in out
    assert "prefill (time to first token):" in out
    assert "unpruned" in out and "answer (pruned):" in out
    assert "peak memory:" in out and "getrusage" in out
    # where the time went, both runs: the hooks saw the vision tower, the prefill and 2 decode steps (3 new tokens)
    table = {line[:42].strip(): line[42:].split() for line in out.splitlines() if line.startswith("  ")}
    assert table["where the time went (ms)"] == ["unpruned", "pruned"]
    for label in ("vision tower", "language-model prefill", "= time to first token"):
        assert all(float(v) > 0 for v in table[label]), label
    assert table["scoring (relevance, OCR in text mode)"][0] == "0"  # the unpruned model scores nothing
    assert table["decode (language-model calls)"][1::2] == ["(2)", "(2)"]
    with Image.open(heatmap) as picture:
        assert picture.width > 0 and picture.height > 0


def test_ask_budget_count_without_compare(tiny_checkpoint, tmp_path, form_image, capsys, monkeypatch):
    from arr_coc import text_prior

    monkeypatch.setattr(text_prior, "ocr_available", lambda: False)  # --mode auto falls back to texture, and says so
    image = tmp_path / "form.png"
    form_image.save(image)
    argv = ["ask", str(image), "-q", "Date?", "--model", str(tiny_checkpoint), "--budget", "10"]
    assert main(argv + ["--max-new-tokens", "2", "--max-pixels", str(28 * 28 * 20), "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert "-> 10 (" in out and "mode texture;" in out and "answer (unpruned)" not in out
    assert "time: vision tower" in out and "decode" in out
    monkeypatch.setattr(text_prior, "ocr_available", lambda: False)
    assert main([*argv, "--mode", "text"]) == 2
    assert "pip install -e '.[ocr]' in the arr-coc-vis clone" in capsys.readouterr().err


def test_ask_text_mode_runs_the_ocr_prior(tiny_checkpoint, tmp_path, form_image, capsys):
    from arr_coc import realizing

    if not realizing.ocr_available():
        pytest.skip("needs the [ocr] extra")
    image = tmp_path / "form.png"
    form_image.save(image)
    argv = ["ask", str(image), "-q", "What is the amount due?", "--model", str(tiny_checkpoint), "--mode", "text"]
    assert main([*argv, "--budget", "8", "--max-new-tokens", "1"]) == 0
    out = capsys.readouterr().out
    assert "-> 8 (" in out and "mode text (OCR prior);" in out and "OCR and text models included" in out


def test_ask_empty_query_is_query_blind(tiny_checkpoint, tmp_path, form_image, capsys):
    image = tmp_path / "form.png"
    form_image.save(image)
    argv = ["ask", str(image), "-q", "", "--model", str(tiny_checkpoint), "--mode", "texture", "--budget", "5"]
    assert main([*argv, "--max-new-tokens", "1"]) == 0
    assert "query-blind" in capsys.readouterr().out


def test_ask_uncached_hub_id_offline_says_where_to_look(tmp_path, form_image, monkeypatch, capsys):
    from huggingface_hub import constants

    image = tmp_path / "form.png"
    form_image.save(image)
    cache = tmp_path / "empty-cache"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    code = main(["ask", str(image), "--query", "What?", "--model", "Qwen/Qwen2.5-VL-3B-Instruct"])
    captured = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in captured.err
    assert "Qwen/Qwen2.5-VL-3B-Instruct" in captured.err
    assert str(cache) in captured.err and "HF_HUB_CACHE" in captured.err and "HF_HOME" in captured.err
    assert "--model /path/to/Qwen2.5-VL-3B-Instruct" in captured.err
    assert "offline" in captured.err


def test_ask_missing_local_folder(tmp_path, form_image, capsys):
    image = tmp_path / "form.png"
    form_image.save(image)
    code = main(["ask", str(image), "--query", "What?", "--model", str(tmp_path / "no" / "such-model")])
    err = capsys.readouterr().err
    assert code == 2
    assert "does not exist" in err and "--model" in err


def test_ask_bad_dtype(tiny_checkpoint, tmp_path, form_image, capsys):
    image = tmp_path / "form.png"
    form_image.save(image)
    code = main(["ask", str(image), "--query", "What?", "--model", str(tiny_checkpoint), "--dtype", "int8"])
    assert code == 2
    assert "--dtype" in capsys.readouterr().err


def test_ask_uncached_hub_id_online_fails_fast_when_the_hub_hangs(tmp_path, form_image, monkeypatch, capsys):
    """Online, an uncached hub id and a network that never answers: one connection try, then the clear message."""
    import threading
    from urllib.parse import urlparse

    import transformers as tf
    from huggingface_hub import constants

    from arr_coc import loading as asking  # loading and the hub probe live in arr_coc.loading

    image = tmp_path / "form.png"
    form_image.save(image)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(asking, "HUB_PROBE_TIMEOUT_S", 0.05)
    release, calls = threading.Event(), []

    def hanging_connect(address, timeout=None, *args, **kwargs):
        calls.append(address)
        release.wait()  # a network that never answers (released at the end of the test)
        raise TimeoutError("timed out")

    def no_download(*args, **kwargs):
        raise AssertionError("from_pretrained was called: it would retry the unreachable hub")

    monkeypatch.setattr(asking.socket, "create_connection", hanging_connect)
    monkeypatch.setattr(tf.AutoConfig, "from_pretrained", no_download)
    try:
        code = main(["ask", str(image), "--query", "What?", "--model", "Qwen/Qwen2.5-VL-3B-Instruct"])
    finally:
        release.set()
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert len(calls) == 1 and calls[0][0] == urlparse(constants.ENDPOINT).hostname  # huggingface.co
    assert "not in the Hugging Face cache" in err and "did not answer" in err and "--model /path/to/" in err


def test_ask_cached_or_local_model_does_not_touch_the_network(tiny_checkpoint, monkeypatch):
    from arr_coc import loading as asking  # loading and the hub probe live in arr_coc.loading

    monkeypatch.setattr(asking, "hub_unreachable", lambda *a, **k: pytest.fail("the hub was probed"))
    asking.check_model_available(str(tiny_checkpoint))  # a local folder: no probe


def test_time_table_and_speedup_explanation():
    from arr_coc.asking import RunResult, StageTimes, explain_speedup, time_table

    full = RunResult("a", 3, 100.0, 130.0, 0, 300, StageTimes(40.0, 0.0, 55.0, 30.0, 2))
    slow = RunResult("b", 3, 120.0, 150.0, 0, 100, StageTimes(40.0, 60.0, 15.0, 30.0, 2))
    fast = RunResult("b", 3, 70.0, 100.0, 0, 100, StageTimes(40.0, 10.0, 15.0, 30.0, 2))
    lines = time_table({"unpruned": full, "pruned": slow})
    rows = {line[:42].strip(): line[42:].split() for line in lines}
    assert rows["vision tower"] == ["40", "40"] and rows["scoring (relevance, OCR in text mode)"] == ["0", "60"]
    assert rows["other (positions, re-padding, 1st step)"] == ["5", "5"]  # 100 - 40 - 0 - 55; 120 - 40 - 60 - 15
    assert rows["decode (language-model calls)"] == ["30", "(2)", "30", "(2)"]
    why = explain_speedup(full, slow)
    assert why is not None and "55 -> 15 ms, 40 ms saved" in why and "scoring costs 60 ms" in why
    assert "net 20 ms slower" in why
    assert explain_speedup(full, fast) is None


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


@pytest.mark.parametrize("model", ["examples/invoice.jpg", "IMAGE"])
def test_ask_model_that_is_an_image_says_so(image_path, model, capsys) -> None:
    model = str(image_path) if model == "IMAGE" else model
    assert main(["ask", str(image_path), "-q", "x", "--model", model]) == 2
    err = capsys.readouterr().err
    assert "is an image, not a model" in err and "hf download" not in err
