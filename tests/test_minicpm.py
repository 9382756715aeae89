"""MiniCPM-V 4.7 beyond the family tester's one-crop prompts: a page with a thumbnail AND slices (canvas M-RoPE),
the crops' pixels as relevance sees them (the processor's resize, the NaViT packing undone), allocate's grid against
the processor, and a batch of sliced pages, on the tiny random-weight model of ``family_testing``."""

from __future__ import annotations

import pytest

transformers = pytest.importorskip("transformers")
import numpy as np  # noqa: E402
import torch  # noqa: E402

from arr_coc import family_testing as ft  # noqa: E402
from arr_coc.families import check_transformers, get_family  # noqa: E402
from arr_coc.integrations import compress  # noqa: E402

SLICED = [[10, 11], ("image", (1, 8, 8), (2, 2)), [12, 13, 14]]  # a 4x4-token thumbnail + 2 x 2 slices of 4x4 tokens
WIDE = [[9, 9], ("image", (1, 4, 8), (1, 3)), [5]]  # 2x4 thumbnail + 1 x 3 slices


@pytest.fixture(scope="module")
def model():
    try:
        check_transformers(get_family("minicpm-v-4.7"))
    except RuntimeError as err:
        pytest.skip(str(err).split(". ")[0])
    return ft.tiny("minicpmv4_7")


def test_a_sliced_page_at_full_budget_is_the_model(model) -> None:
    inputs = ft.batch(model, [SLICED])
    assert inputs["target_sizes"].shape == (5, 2)  # the thumbnail and 4 slices
    with torch.no_grad():
        cm = compress(model, budget=1.0, scorer=ft.position_scorer)
        assert torch.equal(cm(**inputs).logits, model(**inputs).logits)
        assert torch.equal(
            cm.generate(**inputs, max_new_tokens=3, do_sample=False),
            model.generate(**inputs, max_new_tokens=3, do_sample=False),
        )


def test_each_crop_is_an_item_and_the_pruned_page_is_the_hand_reference(model) -> None:
    inputs = ft.batch(model, [SLICED])
    with torch.no_grad():
        cm = compress(model, budget=0.25, scorer=ft.position_scorer)
        out = cm(**inputs).logits
        allocs = cm.last_allocation[0]
        assert [a.grid for a in allocs] == [(1, 4, 4)] * 5 and [a.budget for a in allocs] == [4] * 5
        assert out.shape[1] == inputs["input_ids"].shape[1] - 5 * 12
        ref = ft.reference_logits(model, inputs, cm, ft.kept_features(model, inputs, cm))  # checks the positions too
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_foveated_sliced_page(model) -> None:
    inputs = ft.batch(model, [SLICED])
    with torch.no_grad():
        full = compress(model, budget=1.0, scorer=ft.position_scorer, foveate=True)
        torch.testing.assert_close(full(**inputs).logits, model(**inputs).logits, rtol=1e-5, atol=1e-5)
        cm = compress(model, budget=0.25, scorer=ft.position_scorer, foveate=True)
        out = cm(**inputs).logits
        feats = list(cm.last_inputs.mm_encoder_outputs["image"].pooler_output)
        ref = ft.reference_logits(model, inputs, cm, feats)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_a_batch_of_sliced_pages_equals_each_page(model) -> None:
    cm = compress(model, budget=0.25, scorer=ft.position_scorer)
    with torch.no_grad():
        out = cm(**ft.batch(model, [SLICED, WIDE])).logits
        kept = cm.last_inputs.attention_mask.bool()
        for b, parts in enumerate((SLICED, WIDE)):
            single = cm(**ft.batch(model, [parts], seed=b)).logits[0]
            torch.testing.assert_close(out[b, kept[b]], single, rtol=1e-5, atol=1e-5)


def test_generate_with_cache_over_a_pruned_sliced_page_equals_stepwise_forwards(model) -> None:
    inputs = ft.batch(model, [SLICED])
    cm = compress(model, budget=0.25)  # the default relevance
    with torch.no_grad():
        seq = cm.generate(**inputs, max_new_tokens=3, do_sample=False)
        ids, mask, types = inputs["input_ids"], inputs["attention_mask"], inputs["mm_token_type_ids"]
        for _ in range(3):
            nxt = cm(**dict(inputs, input_ids=ids, attention_mask=mask, mm_token_type_ids=types)).logits[:, -1]
            nxt = nxt.argmax(-1, keepdim=True)
            ids, mask = torch.cat([ids, nxt], 1), torch.cat([mask, torch.ones_like(nxt)], 1)
            types = torch.cat([types, torch.zeros_like(nxt, dtype=types.dtype)], 1)
    assert torch.equal(seq, ids)


def test_relevance_sees_each_crop_of_the_page(model) -> None:
    """The processor's own crops: a page with a red top-left quarter; the thumbnail frame shows it in its top-left,
    the top-left slice is red, the bottom-right slice is white, and re-packing the frames gives pixel_values back."""
    from PIL import Image

    from arr_coc.integrations.minicpmv4_7 import ADAPTER
    from arr_coc.integrations.sequence import locate_items

    page = np.full((900, 1200, 3), 255, dtype=np.uint8)
    page[:450, :600] = (255, 0, 0)
    proc = ft._minicpm_image_processor(14, 0, 0)
    out = proc(images=Image.fromarray(page), return_tensors="pt")
    rows, cols = out["grids"][0]
    assert rows * cols == out["target_sizes"].shape[0] - 1 > 1
    grid = torch.nn.functional.pad(out["target_sizes"].long(), (1, 0), value=1)
    n = int((grid.prod(-1) // 16).sum())
    ids = torch.full((1, n), ft.IMAGE)
    items = locate_items(ids, None, "image", ft.IMAGE, grid, 4)
    visual = {"image": (out["pixel_values"], grid)}
    frames = ADAPTER.frames(model, visual, items, ADAPTER.frame_plan(items), iter(()), (0.5,) * 3, (0.5,) * 3)
    red = torch.tensor([1.0, 0.0, 0.0]).view(3, 1, 1)
    thumb = frames[0][0]  # (3, H, W)
    h, w = thumb.shape[1:]
    assert (thumb[:, : h // 2 - 8, : w // 2 - 8] - red).abs().max() < 0.05
    assert (thumb[:, h // 2 + 8 :, w // 2 + 8 :] - 1.0).abs().max() < 0.05
    assert (frames[1][0][:, :16, :16] - red).abs().max() < 0.05  # the top-left slice
    assert (frames[-1][0] - 1.0).abs().max() < 0.05  # the bottom-right slice
    packed = []
    for f in frames:
        x = (f[0] - 0.5) / 0.5  # (3, H, W) normalised again
        patches = torch.nn.functional.unfold(x.unsqueeze(0), 14, stride=14).reshape(3, 14, 14, -1)
        packed.append(patches.permute(0, 1, 3, 2).reshape(3, 14, -1))  # the processor's reshape_by_patch
    torch.testing.assert_close(torch.cat(packed, -1).unsqueeze(0), out["pixel_values"], rtol=0, atol=1e-5)


@pytest.mark.parametrize(("w", "h"), [(300, 200), (448, 448), (2480, 3508), (1700, 500), (400, 3000)])
def test_allocate_grid_is_the_processors_canvas(w, h) -> None:
    from PIL import Image

    from arr_coc import allocate

    img = Image.new("RGB", (w, h), "white")
    proc = ft._minicpm_image_processor(14, 0, 0)
    a = allocate(img, "x", 4, family="minicpm-v-4.7", mode="texture")
    assert a.grid == ft.CanvasLayout.token_grid(proc, img, 4)


# ----- a prompt as MiniCPMV4_7Processor writes it -------------------------------------------------------------------
SPECIAL = {
    ft.IMAGE: "<unk>", ft.VIDEO: "<video>", ft.V_START: "<image>", ft.V_END: "</image>", ft.IM_START: "<|im_start|>",
    ft.IM_END: "<|im_end|>", ft.SLICE_START: "<slice>", ft.SLICE_END: "</slice>", 311: "<image_id>", 312: "</image_id>",
    ft.USER: "user", ft.ASSISTANT: "assistant",
}  # fmt: skip


def char_tokenizer():
    """A character-level tokenizer with MiniCPM-V's markers and the roles at the tiny model's ids ("\\n": NEWLINE)."""
    import string

    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {"<pad>": ft.PAD}
    for c in string.printable:
        if c.isprintable():
            vocab.setdefault(c, len(vocab) + 2)
    vocab["\n"] = ft.NEWLINE
    vocab.update({t: i for i, t in SPECIAL.items()})
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL.values()])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>")


def test_a_prompt_as_the_processor_writes_it(model) -> None:
    """The processor's own placeholder text (``MiniCPMV4_7Processor.replace_image_token``: ``<image_id>0</image_id>``,
    the thumbnail, rows of slices joined by "\\n") and image processor; the question read around each crop is the
    turn's text. (The processor itself is not built: without torchvision its video processor cannot be.)"""
    import types

    from PIL import Image

    from arr_coc.integrations.sequence import questions, read_prompt

    tok = char_tokenizer()
    pix = ft._minicpm_image_processor(14, 0, 0)(images=Image.new("RGB", (1000, 700), "white"), return_tensors="pt")
    names = ("image_start", "image_end", "image", "slice_start", "slice_end")
    texts = ("<image>", "</image>", "<unk>", "<slice>", "</slice>")
    holder = types.SimpleNamespace(slice_mode=True, **{f"{n}_token": t for n, t in zip(names, texts, strict=True)})
    placeholder = transformers.MiniCPMV4_7Processor.replace_image_token(
        holder, pix, image_idx=0, image_token_divisor=16
    )
    text = f"<|im_start|>user\n<image_id>0</image_id>{placeholder}What is the total?<|im_end|>\n<|im_start|>assistant\n"
    ids = tok([text], return_tensors="pt")["input_ids"]
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "mm_token_type_ids": (ids == ft.IMAGE).int(),
              "pixel_values": pix["pixel_values"], "target_sizes": pix["target_sizes"]}  # fmt: skip
    assert pix["grids"][0] == [2, 2] and "\n<slice>" in placeholder
    with torch.no_grad():
        ref = model(**inputs).logits
        assert torch.equal(compress(model, budget=1.0)(**inputs).logits, ref)
        cm = compress(model, budget=0.25, tokenizer=tok)
        out = cm(**inputs).logits
        allocs = cm.last_allocation[0]
        n = int((ids == ft.IMAGE).sum())
        kept = sum(int(a.keep.numel()) for a in allocs)
        assert len(allocs) == 5 and 0.15 <= kept / n <= 0.40 and out.shape[1] == ref.shape[1] - (n - kept)
        ref_cm = ft.reference_logits(model, inputs, cm, ft.kept_features(model, inputs, cm))
        torch.testing.assert_close(out, ref_cm, rtol=1e-5, atol=1e-5)
    adapter = cm.adapter
    special = adapter.special_ids(model, tok)
    visual = adapter.split_inputs(dict(inputs)).visual
    items = adapter.locate(read_prompt(ids, None, None, {"image": visual["image"][1]}), visual, special, model)
    asked = questions(items, ids.numpy(), None, None, special, tok, adapter.question_ids)
    assert len(asked) == 5 and {text for _, text in asked} == {"What is the total?"}


def test_the_4x_mode_keeps_2x2_patches_a_token() -> None:
    """``downsample_mode="4x"`` (no window merger: 2x2 patches a token): exact at full budget, the hand reference
    pruned, and foveated on the kept 2x2 blocks."""
    try:
        check_transformers(get_family("minicpm-v-4.7"))
    except RuntimeError as err:
        pytest.skip(str(err).split(". ")[0])
    cls, config = ft.TINY["minicpmv4_7"].build()
    config.downsample_mode = "4x"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = cls(config).eval()
    assert compress(model, budget=1.0).adapter.geometry(model)[1] == 2
    inputs = ft.batch(model, [SLICED])
    assert inputs["target_sizes"][0].tolist() == [8, 8]  # 4x4 tokens of 2x2 patches
    with torch.no_grad():
        assert torch.equal(compress(model, budget=1.0)(**inputs).logits, model(**inputs).logits)
        cm = compress(model, budget=0.25, scorer=ft.position_scorer)
        out = cm(**inputs).logits
        ref = ft.reference_logits(model, inputs, cm, ft.kept_features(model, inputs, cm))
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
        fov = compress(model, budget=0.25, scorer=ft.position_scorer, foveate=True)
        out = fov(**inputs).logits
        feats = list(fov.last_inputs.mm_encoder_outputs["image"].pooler_output)
        torch.testing.assert_close(out, ft.reference_logits(model, inputs, fov, feats), rtol=1e-5, atol=1e-5)
