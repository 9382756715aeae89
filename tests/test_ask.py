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
    assert main(argv) == 0
    out = capsys.readouterr().out
    # 700x500 capped at 64 tokens of 28 px -> a 6x9 grid of 54 tokens; half of them kept
    assert "visual tokens: 54 -> 27 (50.0%), grid 6x9" in out
    assert "prefill (time to first token):" in out
    assert "unpruned" in out and "answer (pruned):" in out
    assert "peak memory:" in out and "getrusage" in out
    with Image.open(heatmap) as picture:
        assert picture.width > 0 and picture.height > 0


def test_ask_budget_count_without_compare(tiny_checkpoint, tmp_path, form_image, capsys):
    image = tmp_path / "form.png"
    form_image.save(image)
    argv = ["ask", str(image), "-q", "Date?", "--model", str(tiny_checkpoint), "--budget", "10"]
    assert main(argv + ["--max-new-tokens", "2", "--max-pixels", str(28 * 28 * 20), "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert "-> 10 (" in out and "answer (unpruned)" not in out


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
