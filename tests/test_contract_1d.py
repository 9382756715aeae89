"""A family with 1-D positions on the family contract (``arr_coc.integrations.contract``), in three pieces only.

The proof that the contract admits families unlike Qwen (issue "every model users run", part 2): a LLaVA-style model
(a CLIP tower whose patches are the visual tokens, a projector, a Llama language model with 1-D positions; nothing
of Qwen's M-RoPE, grids, ChatML or patch order) is driven by ``compress`` through

1. an adapter (:class:`Toy1DAdapter`, what a family file would hold),
2. a registry row (:data:`TOY1D`), and
3. a tiny config (:func:`toy_model`),

with no change to ``compress``, ``sequence`` or the decision. At full budget it is bit-identical to the unwrapped
model (forward and generate); a pruned forward keeps every kept token at its original 1-D position and equals a
forward built by hand from the model's own embeddings and features.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from arr_coc.families import Family, ModelClass, register, unregister  # noqa: E402
from arr_coc.integrations.base import EncodedVisual, take_rows  # noqa: E402
from arr_coc.integrations.contract import Adapter, LinearLayout, VisualInputs  # noqa: E402

VOCAB, PAD, IMAGE = 64, 0, 63
PATCH, SIDE = 14, 56  # 4 x 4 patches: 16 visual tokens an image


# ----- 1. the adapter ------------------------------------------------------------------------------------------------
@dataclass
class Toy1DAdapter(Adapter):
    """LLaVA's layout: ``pixel_values`` (num_images, 3, H, W), one visual token a patch in raster order, 1-D positions,
    ``mm_encoder_outputs`` for pre-encoded (pruned) features."""

    name: str = "toy-1d"
    layout: Any = LinearLayout()

    def __post_init__(self) -> None:
        self.input_names = {"image": ("pixel_values", "")}  # no grid input: the grid follows from the pixels

    def split_inputs(self, kwargs: dict[str, Any]) -> VisualInputs:
        px = kwargs.pop("pixel_values", None)
        if px is None:
            return VisualInputs({"image": (None, None)})
        n, _, h, w = px.shape
        grid = torch.tensor([[1, h // PATCH, w // PATCH]] * n, device=px.device)  # (n, 3) in tokens (merge 1)
        return VisualInputs({"image": (px, grid)})

    def token_ids(self, model: Any) -> dict[str, int]:
        return {"image": int(model.config.image_token_id)}

    def geometry(self, model: Any) -> tuple[int, int, int]:
        return int(model.config.vision_config.patch_size), 1, 1  # a token = a patch

    def item_pixels(self, visual: Any, item: Any) -> torch.Tensor:
        return visual["image"][0][item.index : item.index + 1]  # (1, 3, H, W)

    def frames(self, model, visual, items, plan, sent, mean, std) -> list[torch.Tensor]:
        px = visual["image"][0]
        m, s = px.new_tensor(mean).view(1, 3, 1, 1), px.new_tensor(std).view(1, 3, 1, 1)
        return [(self.item_pixels(visual, it).float() * s + m).clamp(0, 1) for it in items]  # each (1, 3, H, W)

    def encode(self, model: Any, kind: str, pixel_values: torch.Tensor, grid: torch.Tensor) -> EncodedVisual:
        raw = model.model.get_image_features(pixel_values, return_dict=True)
        return EncodedVisual(raw=raw, features=list(raw.pooler_output))  # each (N, D)

    def pruned_output(self, encoded, keeps, levels, flat=None) -> Any:
        return type(encoded.raw)(pooler_output=take_rows(encoded.features, keeps, flat))

    def model_inputs(self, kwargs: dict[str, Any], packed: Any, mm_outputs: Any, generation: bool) -> dict[str, Any]:
        out = dict(kwargs, input_ids=packed.input_ids, mm_encoder_outputs=mm_outputs)
        if packed.attention_mask is not None:
            out["attention_mask"] = packed.attention_mask
        out["position_ids"] = self.layout.for_model(packed.position_ids, packed.attention_mask, generation)  # (B, L)
        return out


ADAPTER = Toy1DAdapter()


class Toy1DForConditionalGeneration(transformers.LlavaForConditionalGeneration):
    """A "new" 1-D model class (LLaVA's architecture under a name no family knows)."""


# ----- 2. the registry row -------------------------------------------------------------------------------------------
TOY1D = Family(
    name="toy-1d",
    patch_size=PATCH,
    merge_size=1,
    min_pixels=SIDE * SIDE,
    eval_pixels=(SIDE * SIDE, SIDE * SIDE),
    image_mean=(0.5, 0.5, 0.5),
    image_std=(0.5, 0.5, 0.5),
    processor="LlavaProcessor",
    classes=(ModelClass("toy_1d", Toy1DForConditionalGeneration.__name__, __name__, f"{__name__}:ADAPTER"),),
    token_ids={"image": IMAGE, "im_start": 1, "im_end": 2, "newline": 3},
)


# ----- 3. the tiny config --------------------------------------------------------------------------------------------
def toy_model() -> torch.nn.Module:
    vision = transformers.CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=SIDE,
        patch_size=PATCH,
    )  # fmt: skip
    text = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, pad_token_id=PAD,
    )  # fmt: skip
    config = transformers.LlavaConfig(vision_config=vision, text_config=text, image_token_id=IMAGE)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return Toy1DForConditionalGeneration(config).eval()


@pytest.fixture
def toy():
    register(TOY1D)
    yield toy_model()
    unregister(TOY1D.name)


def _inputs(n_images: int = 1) -> dict[str, torch.Tensor]:
    torch.manual_seed(1)
    ids = [5, 6]
    for _ in range(n_images):
        ids += [IMAGE] * 16 + [7]
    ids += [8, 9]
    return {
        "input_ids": torch.tensor([ids]),
        "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
        "pixel_values": torch.rand(n_images, 3, SIDE, SIDE) * 2 - 1,
    }


def corner_scorer(ctx) -> torch.Tensor:
    return -torch.arange(ctx.n_tokens, dtype=torch.float32)  # (N,): the first tokens most relevant


def test_full_budget_is_bit_identical(toy) -> None:
    from arr_coc.integrations import compress
    from arr_coc.integrations.compress import find_adapter

    assert find_adapter(toy) is ADAPTER
    inputs = _inputs(2)
    with torch.no_grad():
        for scorer in (corner_scorer, "auto"):
            cm = compress(toy, budget=1.0, scorer=scorer)
            assert torch.equal(cm(**inputs).logits, toy(**inputs).logits)
            assert [a.budget for a in cm.last_allocation[0]] == [16, 16]
            assert cm.last_inputs.position_ids.shape == (1, 1, inputs["input_ids"].shape[1])  # one row: 1-D
        out = compress(toy, budget=1.0, scorer=corner_scorer).generate(**inputs, max_new_tokens=3, do_sample=False)
        ref = toy.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert torch.equal(out, ref) and out.shape[1] == inputs["input_ids"].shape[1] + 3


def test_pruned_forward_keeps_original_positions(toy) -> None:
    """Kept tokens keep their 1-D ids (gaps where tokens were dropped), and the logits are those of a forward built
    by hand from the model's own input embeddings, its kept features and those ids."""
    from arr_coc.integrations import compress

    inputs = _inputs(1)
    with torch.no_grad():
        cm = compress(toy, budget=5, scorer=corner_scorer)
        out = cm(**inputs)
        (alloc,) = cm.last_allocation[0]
        assert alloc.keep.tolist() == [0, 1, 2, 3, 4] and alloc.grid == (1, 4, 4)
        length = inputs["input_ids"].shape[1]
        assert out.logits.shape[1] == length - (16 - 5)
        kept_cols = [0, 1, *range(2, 7), *range(18, length)]  # text, the 5 kept placeholders, text
        assert cm.last_inputs.position_ids[0, 0].tolist() == kept_cols  # original ids, with the gap
        feats = toy.model.get_image_features(inputs["pixel_values"]).pooler_output[0]  # (16, D)
        ids = inputs["input_ids"][:, kept_cols]
        embeds = toy.get_input_embeddings()(ids)
        embeds[0, 2:7] = feats[:5].to(embeds.dtype)
        ref = toy(inputs_embeds=embeds, position_ids=torch.tensor([kept_cols])).logits
    assert torch.allclose(out.logits, ref, atol=1e-5)


def test_what_the_family_lacks_is_refused_at_wrap_time(toy) -> None:
    """Foveation and level of detail need a tower that runs on kept patches and a coarse view; a family without
    them is refused when wrapped, naming the family, never at the first call or on a guess."""
    from arr_coc.integrations import compress

    with pytest.raises(ValueError, match=r"compress\(foveate=True\) is not supported for toy-1d"):
        compress(toy, budget=5, scorer=corner_scorer, foveate=True)
    with pytest.raises(ValueError, match=r"compress\(detail=\.\.\.\) is not supported for toy-1d"):
        compress(toy, budget=5, detail="thumbnail")
