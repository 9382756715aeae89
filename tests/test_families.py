"""The family registry (``arr_coc.families``): every row checked against the library it describes, the spelling rule,
the transformers floor ``compress`` enforces, and a new Qwen-like family made of one adapter and one registry row.

Tests here are parametrised over the registry (``families()``), so a family is checked the moment it is registered.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from arr_coc.families import (
    QWEN_VL,
    TRANSFORMERS_FLOOR,
    Family,
    ModelClass,
    check_transformers,
    families,
    family_names,
    get_family,
    load_object,
    model_class_for_type,
    register,
    spelling_key,
    unregister,
    vllm_architectures,
)
from arr_coc.grid import GridSpec, normalize_family

ROWS = [(f, c) for f in families() for c in f.classes]  # one case per transformers class of each family
ROW_IDS = [c.model_type for _, c in ROWS]
# The Qwen2-VL-tokenizer families (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): the tests below that build test_compress's models
# or read Qwen's config names; the new families' rows are checked in tests/test_new_families.py.
QWEN_ROWS = [(f, c) for f in QWEN_VL for c in f.classes]
QWEN_ROW_IDS = [c.model_type for _, c in QWEN_ROWS]


def spellings_of(name: str) -> set[str]:
    """What a user may type for ``name``: any case, ``-`` / ``_`` / ``.`` swapped or dropped."""
    out = set()
    for sep in ("-", "_", ""):
        for dot in (".", "_", ""):
            text = name.replace(".", "\0").replace("-", sep).replace("\0", dot)
            out |= {text, text.upper(), text.title()}
    return out


# ----- the spelling rule --------------------------------------------------------------------------------------------
def test_the_issue_spellings_of_qwen2_5_vl_all_work() -> None:
    for text in ("qwen2.5-vl", "qwen2_5_vl", "qwen25-vl", "qwen2.5_vl", "Qwen2.5-VL", "QWEN2_5-VL", " qwen2.5 vl "):
        assert normalize_family(text) == "qwen2.5-vl", text
        assert GridSpec.for_family(text).family == "qwen2.5-vl"


@pytest.mark.parametrize("family", families(), ids=family_names())
def test_every_spelling_of_every_family_finds_it(family: Family) -> None:
    for text in spellings_of(family.name) | set(family.model_types) | set(family.spellings):
        assert get_family(text) is family, text


@pytest.mark.parametrize("bad", ["llava", "", "qwen", "qwen4-vl", "vl"])
def test_unknown_family_is_one_clear_error(bad: str) -> None:
    with pytest.raises(ValueError, match="unknown model family .*supported: qwen2-vl, qwen2.5-vl, qwen3-vl"):
        get_family(bad)


def test_no_two_families_share_a_spelling() -> None:
    keys = [k for f in families() for k in f.keys()]
    assert len(keys) == len(set(keys))
    assert spelling_key("Qwen2.5_VL") == "qwen25vl"
    assert len(set(families())) == len(families())  # rows are hashable (sets, cache keys)


# ----- each row against the library it describes ----------------------------------------------------------------
@pytest.mark.parametrize(("family", "entry"), QWEN_ROWS, ids=QWEN_ROW_IDS)
def test_row_matches_transformers(family: Family, entry: ModelClass) -> None:
    """Class, module, model_type, grid, token ids and processor: what transformers itself says."""
    tf = pytest.importorskip("transformers")
    cls = getattr(importlib.import_module(entry.module), entry.hf_class)
    assert getattr(tf, entry.hf_class) is cls
    config = tf.AutoConfig.for_model(entry.model_type)
    assert config.model_type == entry.model_type and type(config) is cls.config_class
    vc = config.vision_config
    assert (vc.patch_size, vc.spatial_merge_size) == (family.patch_size, family.merge_size)
    for key in ("image", "video", "vision_start", "vision_end"):
        assert getattr(config, f"{key}_token_id") == family.token_ids[key], key
    assert hasattr(tf, family.processor)
    assert model_class_for_type(entry.model_type) is entry


@pytest.mark.parametrize(("family", "entry"), ROWS, ids=ROW_IDS)
def test_row_adapter_and_vllm_class_exist(family: Family, entry: ModelClass) -> None:
    from arr_coc.integrations.contract import Adapter

    adapter = load_object(entry.adapter)
    assert isinstance(adapter, Adapter)  # the family contract (the Qwen line: its FamilyAdapter; 1-D: LinearAdapter)
    assert get_family(adapter.name) is family  # the adapter's name is a spelling of its own family
    assert adapter.image_mean == family.image_mean and adapter.image_std == family.image_std
    # vLLM itself is not needed: the plugin module exists and defines the class it is registered under
    if entry.vllm_class is None:  # not served by the plugin (yet): nothing to check
        return
    module, _, name = entry.vllm_class.partition(":")
    spec = importlib.util.find_spec(module)
    assert spec is not None and f"class {name}(" in open(spec.origin, encoding="utf-8").read()
    assert vllm_architectures()[entry.hf_class] == entry.vllm_class


@pytest.mark.parametrize("family", QWEN_VL, ids=[f.name for f in QWEN_VL])
def test_row_chat_template_and_tokenizer(family: Family) -> None:
    """The template renders an image turn as vision_start, image_pad, vision_end; the tiny tokenizer (the real Qwen2
    BPE) puts every special token at the row's id."""
    jinja2 = pytest.importorskip("jinja2")
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}]
    text = jinja2.Template(family.chat_template).render(messages=messages, add_generation_prompt=True)
    assert "<|vision_start|><|image_pad|><|vision_end|>hi<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")
    testing = pytest.importorskip("arr_coc.testing")
    try:
        tok = testing.tiny_tokenizer(family.name)
    except ImportError as err:
        pytest.skip(f"needs the [testing] extra: {err}")
    names = {"endoftext": "<|endoftext|>", "im_start": "<|im_start|>", "im_end": "<|im_end|>", "newline": "Ċ"}
    names |= {"vision_start": "<|vision_start|>", "vision_end": "<|vision_end|>"}
    names |= {"image": "<|image_pad|>", "video": "<|video_pad|>"}
    for key, token in names.items():
        assert tok.convert_tokens_to_ids(token) == family.token_ids[key], key
    assert len(tok) == 151643 + family.added_tokens


# ----- the transformers floor ---------------------------------------------------------------------------------------
def test_floor_is_declared_everywhere_transformers_is() -> None:
    """pyproject's extras and CI's constraints name the same floor as the registry."""
    import pathlib
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    root = pathlib.Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = [Requirement(d) for deps in extras.values() for d in deps if d.startswith("transformers")]
    ci = [
        line for line in (root / ".ci" / "constraints.txt").read_text().splitlines() if line.startswith("transformers")
    ]
    assert len(pins) >= 2 and len(ci) == 1
    below = "5.17.9" if TRANSFORMERS_FLOOR == "5.18.0" else "0"
    for req in [*pins, Requirement(ci[0])]:  # each admits the floor and nothing below it
        assert req.specifier.contains(TRANSFORMERS_FLOOR) and not req.specifier.contains(below), req
        assert not req.specifier.contains("6.0.0"), req
    # a family may need a later release (MiniCPM-V 4.7: 5.19.0); compress refuses it below that at wrap time
    assert all(Version(f.min_transformers) >= Version(TRANSFORMERS_FLOOR) for f in families())


@pytest.mark.parametrize(
    ("installed", "refused"), [("5.17.0", True), ("5.0.0", True), ("5.18.0.dev0", True), ("5.18.0", False)]
)
def test_check_transformers(installed: str, refused: bool) -> None:
    family = get_family("qwen2-vl")
    if refused:
        with pytest.raises(RuntimeError, match=rf"transformers>=5\.18\.0 .*transformers {installed} is installed"):
            check_transformers(family, installed)
    else:
        check_transformers(family, installed)


@pytest.mark.parametrize("model_type", QWEN_ROW_IDS)
def test_compress_refuses_an_older_transformers_at_wrap_time(model_type: str, monkeypatch) -> None:
    """Before any input is seen: the wrapper itself refuses, naming the installed and the required version."""
    tf = pytest.importorskip("transformers")
    from test_compress import build

    from arr_coc.integrations import compress

    model = build(model_type)
    monkeypatch.setattr(tf, "__version__", "5.17.0")
    with pytest.raises(RuntimeError) as err:
        compress(model, budget=1.0)
    assert "transformers>=5.18.0" in str(err.value) and "transformers 5.17.0 is installed" in str(err.value)
    assert "mm_encoder_outputs" in str(err.value)
    monkeypatch.setattr(tf, "__version__", TRANSFORMERS_FLOOR)
    assert compress(model, budget=1.0).adapter.name in (get_family(model_type).name, "qwen3-vl-moe")


# ----- a new Qwen-like family: one adapter + one registry row -------------------------------------------------------
transformers = pytest.importorskip("transformers")
from arr_coc.integrations.base import FamilyAdapter  # noqa: E402


class ToyVLForConditionalGeneration(transformers.Qwen2VLForConditionalGeneration):
    """A "new" Qwen-like model class: Qwen2-VL's architecture under a name no built-in family knows (a fork)."""


TOY_ADAPTER = FamilyAdapter(name="toy-vl")  # the "adapter file": the shared seams serve a Qwen2-VL-like model
TOY = Family(  # the registry row: 32 px cells (patch 16), unlike Qwen2-VL's 28
    name="toy-vl",
    patch_size=16,
    merge_size=2,
    min_pixels=64 * 64,
    eval_pixels=(64 * 64, 256 * 32 * 32),
    image_mean=(0.5, 0.5, 0.5),
    image_std=(0.5, 0.5, 0.5),
    processor="Qwen2VLProcessor",
    classes=(ModelClass("toy_vl", ToyVLForConditionalGeneration.__name__, __name__, f"{__name__}:TOY_ADAPTER"),),
    spellings=("toyvl-chat",),
)


@pytest.fixture
def toy_family():
    register(TOY)
    yield TOY
    unregister(TOY.name)


def toy_model() -> torch.nn.Module:
    from test_compress import PAD, TOKEN_IDS, VOCAB

    text = dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=512, pad_token_id=PAD, initializer_range=0.1,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
    )  # fmt: skip
    vision = dict(depth=2, embed_dim=32, hidden_size=32, num_heads=4, mlp_ratio=2, patch_size=TOY.patch_size)
    config = transformers.Qwen2VLConfig(text_config=text, vision_config=vision, **TOKEN_IDS)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return ToyVLForConditionalGeneration(config).eval()


def test_a_registered_family_is_found_everywhere(toy_family) -> None:
    assert toy_family.name in family_names() and get_family("Toy_VL") is toy_family is get_family("TOYVL-chat")
    assert GridSpec.for_family("toy-vl").factor == 32
    from arr_coc.evaluation.runner import pixel_bounds

    assert pixel_bounds("toy_vl", None, None) == toy_family.eval_pixels
    assert vllm_architectures().keys() == {c.hf_class for f in families() for c in f.classes if c.vllm_class}
    with pytest.raises(ValueError, match="already name toy-vl"):
        register(Family(**{**TOY.__dict__, "name": "toy2-vl"}))  # same spellings (toy_vl, toyvl-chat)
    with pytest.raises(ValueError, match="built in"):
        unregister("qwen2-vl")


def test_compress_works_on_a_registered_family(toy_family) -> None:
    from test_compress import Sample, batch, position_scorer

    from arr_coc.integrations import compress
    from arr_coc.integrations.compress import find_adapter

    model = toy_model()
    assert find_adapter(model) is TOY_ADAPTER  # the subclass's own row wins over its parent's (Qwen2-VL)
    inputs = batch([Sample(model, [[9, 10], ("image", (1, 4, 6)), [11, 12]])])
    with torch.no_grad():
        full = compress(model, budget=1.0, scorer=position_scorer)
        assert torch.equal(full(**inputs).logits, model(**inputs).logits)  # full budget: bit-identical
        for foveate in (False, True):
            cm = compress(model, budget=3, scorer=position_scorer, foveate=foveate)
            out = cm(**inputs)
            (alloc,) = cm.last_allocation[0]
            assert alloc.budget == 3 and alloc.grid == (1, 2, 3)
            assert out.logits.shape[1] == inputs["input_ids"].shape[1] - (6 - 3)
    assert "family='toy-vl'" in repr(cm)


def test_allocate_works_on_a_registered_family(toy_family) -> None:
    from PIL import Image

    from arr_coc import allocate

    img = Image.new("RGB", (320, 192), "white")
    a = allocate(img, "x", 4, family="toy_vl", mode="texture")
    assert a.family == "toy-vl" and a.grid == (6, 10) and a.resized == (320, 192) and a.budget == 4  # 32 px cells
