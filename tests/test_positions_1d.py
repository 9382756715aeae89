"""Positions of kept tokens in 1-D families (``compress(positions=...)``) and the family tester on a 1-D family.

``"original"`` (the default) keeps every kept token's id of the full sequence, gaps included; ``"renumber"`` numbers
the pruned sequence 0, 1, ... . Both are checked against references built by hand, on the toy LLaVA-style family of
``tests/test_contract_1d.py`` run through the family tester's checks (:mod:`arr_coc.family_testing` with a
:class:`~arr_coc.family_layouts.LinearPrompt`); the M-RoPE families refuse ``"renumber"`` in one line.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from arr_coc import family_testing as ft  # noqa: E402
from arr_coc.family_layouts import LinearPrompt  # noqa: E402
from arr_coc.integrations.contract import POSITION_CHOICES, pruned_positions  # noqa: E402

SIDE = 56  # the toy's CLIP tower takes 56 x 56 images: 16 tokens an image, whatever the tester's grid


class ToyPrompt(LinearPrompt):
    """The toy's processor: every image is 56 x 56 pixels, 4 x 4 patch tokens (like a fixed-count family)."""

    def tokens(self, grid):
        return [ft.IMAGE] * 16

    def image(self, model, grid, gen):
        return self.tokens(grid), ((1, 8, 8), torch.rand(1, 3, SIDE, SIDE, generator=gen) * 2 - 1)


def _toy():
    from test_contract_1d import Toy1DForConditionalGeneration

    vision = transformers.CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=SIDE,
        patch_size=14,
    )  # fmt: skip
    text = transformers.LlamaConfig(
        vocab_size=ft.VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, pad_token_id=ft.PAD,
    )  # fmt: skip
    config = transformers.LlavaConfig(vision_config=vision, text_config=text, image_token_id=ft.IMAGE)
    config.model_type = "toy_1d"
    return Toy1DForConditionalGeneration, config


@pytest.fixture(scope="module")
def toy():
    from test_contract_1d import TOY1D

    from arr_coc.families import register, unregister

    register(TOY1D)
    ft.TINY["toy_1d"] = ft.TinyFamily("toy_1d", _toy, layout=ToyPrompt())
    model = ft.tiny("toy_1d")
    model.config.model_type = "toy_1d"
    yield model
    del ft.TINY["toy_1d"]
    unregister(TOY1D.name)


@pytest.mark.parametrize("check", list(ft.CHECKS))
def test_the_family_tester_runs_on_a_1d_family(toy, check) -> None:
    with torch.no_grad():
        ft.CHECKS[check](toy)


@pytest.mark.parametrize("positions", POSITION_CHOICES)
def test_pruned_forward_and_stepwise_generate_for_both_choices(toy, positions) -> None:
    with torch.no_grad():
        ft.check_pruned_forward(toy, positions=positions)
        ft.check_generate_stepwise(toy, positions=positions)


def test_the_two_choices_differ_as_documented(toy) -> None:
    """Original: the kept ids have a gap of the dropped count, decoding continues after the FULL prompt; renumbered:
    consecutive, decoding continues after the pruned prompt (``rope_deltas`` 0)."""
    from arr_coc.integrations import compress

    inputs = ft.batch(toy, [ft.ONE])
    length = inputs["input_ids"].shape[1]
    with torch.no_grad():
        for positions in POSITION_CHOICES:
            cm = compress(toy, budget=4, scorer=ft.position_scorer, positions=positions)
            cm(**inputs)
            ids = cm.last_inputs.position_ids[0, 0].tolist()
            assert len(ids) == length - 12
            if positions == "original":
                assert ids[-1] == length - 1 and int(cm.rope_deltas) == 12
                assert max(b - a for a, b in zip(ids, ids[1:], strict=False)) > 1
            else:
                assert ids == list(range(length - 12)) and int(cm.rope_deltas) == 0


def test_pruned_positions_by_hand() -> None:
    pos = torch.tensor([[[0, 0, 3, 4, 9]]])  # (1, 1, 5): one padding column, then kept ids with gaps
    mask = torch.tensor([[0, 1, 1, 1, 1]])
    deltas = torch.tensor([[5]])
    same = pruned_positions("original", pos, deltas, mask)
    assert same[0] is pos and same[1] is deltas
    ids, d = pruned_positions("renumber", pos, deltas, mask)
    assert ids.tolist() == [[[0, 0, 1, 2, 3]]] and d.tolist() == [[0]]
    with pytest.raises(ValueError, match="positions must be one of 'original', 'renumber', got 'gaps'"):
        pruned_positions("gaps", pos, deltas, mask)


def test_bad_choice_and_m_rope_are_refused_in_one_line() -> None:
    from arr_coc.integrations import compress

    model = ft.tiny("qwen2_vl")
    with pytest.raises(ValueError, match="positions must be one of 'original', 'renumber', got 'shifted'"):
        compress(model, budget=0.25, positions="shifted")
    with pytest.raises(ValueError) as err:
        compress(model, budget=0.25, positions="renumber")
    assert "\n" not in str(err.value) and "qwen2-vl's M-RoPE ids carry each image's (t, h, w) layout" in str(err.value)
