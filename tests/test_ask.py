"""Tests of ``arr-coc ask`` end to end on a tiny random-weight Qwen2.5-VL checkpoint saved to a temporary folder.

The checkpoint is what ``save_pretrained`` writes for a real one, only tiny: the model (hidden size 32, 2 layers,
2 vision blocks), a byte-level Qwen2 tokenizer (256 byte tokens, no merges) with the Qwen-VL special tokens and a
chat template, and a PIL image processor capped at 64 visual tokens. Everything runs offline in a few seconds.
"""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from arr_coc.cli import main  # noqa: E402

SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def save_tiny_checkpoint(folder) -> None:
    """Write a tiny random Qwen2.5-VL checkpoint (model, tokenizer, image processor) to ``folder``."""
    import torch
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_chars = bytes_to_unicode()
    vocab = {byte_chars[b]: i for i, b in enumerate(range(256))}
    tok = transformers.Qwen2Tokenizer(vocab=vocab, merges=[])
    tok.add_special_tokens({"additional_special_tokens": SPECIALS})
    tok.chat_template = CHAT_TEMPLATE
    ids = dict(zip(SPECIALS, tok.convert_tokens_to_ids(SPECIALS), strict=True))
    tok.save_pretrained(folder)
    transformers.Qwen2VLImageProcessorPil(min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 64).save_pretrained(folder)
    text = dict(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
        max_position_embeddings=1024,
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
    )
    vision = dict(
        depth=2, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32, patch_size=14,
        window_size=56, fullatt_block_indexes=[1], tokens_per_second=2,
    )  # fmt: skip
    config = transformers.Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    torch.manual_seed(0)
    model = transformers.Qwen2_5_VLForConditionalGeneration(config)
    model.generation_config.eos_token_id = None  # random weights: always generate --max-new-tokens tokens
    model.save_pretrained(folder)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-qwen2.5-vl")
    save_tiny_checkpoint(folder)
    return folder


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
