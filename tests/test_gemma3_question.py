"""The question ``compress`` reads for Gemma 3 is exactly the user's text: the processor writes ``"\\n\\n"`` before
``<start_of_image>``, which Gemma's tokenizer (and the tiny one, :mod:`arr_coc.tiny_tiled`) merges with the role
header's ``"\\n"`` into one ``"\\n\\n\\n"`` token; the turn walk ends the header there and skips the image's
newlines."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from PIL import Image  # noqa: E402

QUESTION = "What is the total?"


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    from arr_coc.loading import load_model
    from arr_coc.testing import tiny_checkpoint

    folder = tiny_checkpoint("gemma-3", tmp_path_factory.mktemp("gemma3-question"))
    processor, model = load_model(str(folder), "auto", "cpu")
    return processor, model


@pytest.mark.parametrize("images", [1, 2])
def test_the_question_compress_reads_is_the_users_text(gemma, images):
    from arr_coc.integrations import compress

    processor, model = gemma
    tok = processor.tokenizer
    content = [{"type": "image"}] * images + [{"type": "text", "text": QUESTION}]
    prompt = tok.apply_chat_template([{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[prompt], images=[Image.new("RGB", (300, 200), "white")] * images, return_tensors="pt")
    assert tok.convert_tokens_to_ids("\n\n\n") in inputs["input_ids"][0].tolist()  # the header's "\n" merged
    seen = []

    def scorer(ctx):
        seen.append(ctx.query_text)
        return torch.zeros(math.prod(ctx.merged_grid))

    with torch.no_grad():
        compress(model, 0.25, processor=processor, scorer=scorer)(**inputs)
    assert seen == [QUESTION] * images
