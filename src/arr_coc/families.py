"""One table of model families: every fact about a family that the rest of ARR-COC-VIS needs, in one row.

Built in: Qwen2-VL, Qwen2.5-VL, Qwen3-VL (+MoE), Qwen3.5 (+MoE), GLM-4.1V (+GLM-4.6V), GLM-OCR and MiniCPM-V 4.7
(``arr_coc.integrations.qwen3_5`` / ``glm4v`` / ``minicpmv4_7``; :data:`QWEN_VL` are the first three, whose tiny
checkpoints use Qwen2's vocabulary).

A :class:`Family` row holds the family's grid (patch and merge size), its processor's pixel bounds and
normalisation, its special token ids and chat template, the ``transformers`` release it needs, and one
:class:`ModelClass` per ``transformers`` class it covers (Qwen3-VL: the dense and the MoE model), each with its
``config.model_type``, the module that defines it, the :mod:`arr_coc.integrations` adapter that ``compress`` drives it
through and the vLLM plugin class that serves it. Everything else reads these rows: :mod:`arr_coc.grid` (cells),
``compress`` (adapters, the version floor, default token ids), :mod:`arr_coc.loading` (the class to load),
:mod:`arr_coc.evaluation` (lmms-eval's pixel bounds), :mod:`arr_coc.vllm` (architectures) and
:mod:`arr_coc.testing` (chat templates, added tokens). Tests are parametrised over :func:`families`, so a family is
tested the moment it is registered.

Spellings: a family is found by its name, any of its ``config.model_type`` values or an extra spelling, compared
after lower-casing and removing ``-``, ``_``, ``.`` and spaces: ``Qwen2.5-VL``, ``qwen2_5_vl``, ``qwen25-vl`` and
``qwen2.5_vl`` are all Qwen2.5-VL (:func:`get_family`).

A new Qwen-like family is one adapter (a :class:`~arr_coc.integrations.base.FamilyAdapter`, usually the default one)
plus one :func:`register` call::

    >>> from arr_coc.families import Family, ModelClass, QWEN2_TOKEN_IDS, register
    >>> register(Family(name="my-vl", patch_size=14, merge_size=2, ...))  # doctest: +SKIP

Nothing here imports ``torch`` or ``transformers``: classes and adapters are named by import path and imported when
asked for.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any

# The first transformers release whose Qwen2-VL / Qwen2.5-VL / Qwen3-VL take ``forward(mm_encoder_outputs=...)``
# together with explicit ``position_ids``, which ``compress`` feeds the pruned tokens through. 5.17.0 and older
# swallow the unknown keyword: the language model then reads the image placeholders' embeddings instead of the visual
# features, silently (tests/test_compress.py::test_full_budget_matches_model fails on 5.17.0, passes on 5.18.0).
TRANSFORMERS_FLOOR = "5.18.0"
# Qwen3.5 (dense and MoE): its modeling file with forward(mm_encoder_outputs=...) and positions as Qwen3-VL's.
QWEN3_5_FLOOR = "5.18.0"
# GLM-4.1V: the same (tests/test_family_tester.py passes with 5.18.0 shadowing).
GLM4V_FLOOR = "5.18.0"
# MiniCPM-V 4.7: 5.19.0 has its module with forward(mm_encoder_outputs=...) and the same canvas get_rope_index as 5.24
# (read in both installed sources); older releases are not known to.
MINICPMV4_7_FLOOR = "5.19.0"

MISTRAL3_FLOOR = "5.18.0"
GEMMA3_FLOOR = "5.18.0"  # as Mistral3: tested on 5.24 only
from .family_tokens import (  # noqa: E402, F401  (re-exported: the ids and templates moved there)
    _CONTENT,
    GEMMA3_TEMPLATE,
    GEMMA3_TOKEN_IDS,
    GLM4V_TEMPLATE,
    GLM4V_TOKEN_IDS,
    MISTRAL3_TEMPLATE,
    MISTRAL3_TOKEN_IDS,
    OPENAI_CLIP_MEAN,
    OPENAI_CLIP_STD,
    QWEN2_TOKEN_IDS,
    QWEN2_VL_TEMPLATE,
    QWEN3_5_TOKEN_IDS,
    QWEN3_VL_TEMPLATE,
)


@dataclass(frozen=True)
class ModelClass:
    """One ``transformers`` model class of a family, and what drives it.

    Attributes:
        model_type: the checkpoint's ``config.model_type`` (``"qwen3_vl_moe"``).
        hf_class: the ``transformers`` class ``compress`` wraps (``"Qwen3VLMoeForConditionalGeneration"``); also the
            architecture name vLLM registers.
        module: the module that defines ``hf_class`` (imported on demand).
        adapter: ``"module:attribute"`` of the :class:`~arr_coc.integrations.base.FamilyAdapter` ``compress`` uses.
        vllm_class: ``"module:Class"`` of the vLLM plugin's class for ``hf_class``, or ``None`` (not served).
    """

    model_type: str
    hf_class: str
    module: str
    adapter: str
    vllm_class: str | None = None


@dataclass(frozen=True)
class Family:
    """A model family: one row of the registry.

    Attributes:
        name: canonical name, what messages, JSON and the demo say (``"qwen2.5-vl"``).
        patch_size: vision patch side in pixels (14 or 16).
        merge_size: patches merged per visual token side (2); a token covers ``patch_size * merge_size`` pixels.
        min_pixels: the processor's default smallest resized area (``56 * 56``; ``256 * 256`` for Qwen3-VL).
        eval_pixels: (min_pixels, max_pixels) lmms-eval's model class uses by default.
        image_mean / image_std: the image processor's default per-channel normalisation.
        processor: the ``transformers`` processor class of the published checkpoints.
        classes: the model classes of the family (the first is the main one).
        token_ids: special token ids (:data:`QWEN2_TOKEN_IDS` for every Qwen-VL); ``compress`` falls back on
            ``im_start`` / ``im_end`` / ``newline`` when it has no tokenizer.
        added_tokens: how many added tokens the published tokenizer has from id 151643 (14, 22 or 26).
        chat_template: the Jinja template of the published checkpoints (text, images, videos).
        spellings: extra names a user may type besides ``name`` and the model types.
        min_transformers: the oldest ``transformers`` release ``compress`` gives exact answers with for this family.
        grid_rule: ``"module:function"`` of ``f(height, width, GridSpec) -> Grid`` for a family whose grid is not one
            resized raster (MiniCPM-V's thumbnail and slices); None: one raster of the size :attr:`resize` gives.
        resize: ``"module:function"`` ``(height, width, factor, min_pixels, max_pixels) -> (h, w)``, the size the
            family's processor resizes an image to (both sides multiples of :attr:`cell`); None: Qwen's
            ``smart_resize`` (:mod:`arr_coc.grid`).
        tiles: a tiled family's scheme (:mod:`arr_coc.tiling`: ``"internvl"``, ``"llava-onevision"``): its pages are
            cut into tiles, not resized to one raster; ``allocate`` then ignores ``resize`` and the pixel bounds.
        pixel_kwargs: ``"module:function"`` ``(processor, min_pixels, max_pixels) -> kwargs`` of the processor call for
            ``--min-pixels`` / ``--max-pixels`` (:mod:`arr_coc.family_processors`); None: Qwen's area bounds.
        tiny: the module that writes the family's tiny checkpoint (``tokenizer(name)``, ``config(name, vllm)``,
            ``checkpoint(name, path, *, max_pixels, vllm)``, optional ``image_processor(name, max_pixels)``) and
            optionally its processor without torchvision (``load_processor(model_id, row, reason)``);
            :mod:`arr_coc.testing` and :func:`arr_coc.processing.load_processor` dispatch through it. None: Qwen's.
    """

    name: str
    patch_size: int
    merge_size: int
    min_pixels: int
    eval_pixels: tuple[int, int]
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    processor: str
    classes: tuple[ModelClass, ...]
    token_ids: dict[str, int] = field(default_factory=lambda: dict(QWEN2_TOKEN_IDS), hash=False)  # rows stay hashable
    added_tokens: int = 14
    chat_template: str = QWEN2_VL_TEMPLATE
    spellings: tuple[str, ...] = ()
    min_transformers: str = TRANSFORMERS_FLOOR
    grid_rule: str | None = None
    resize: str | None = None
    tiles: str | None = None
    pixel_kwargs: str | None = None
    tiny: str | None = None

    @property
    def cell(self) -> int:
        """Pixels per visual token side in the resized image (``patch_size * merge_size``)."""
        return self.patch_size * self.merge_size

    @property
    def model_types(self) -> tuple[str, ...]:
        return tuple(c.model_type for c in self.classes)

    def keys(self) -> set[str]:
        """Every spelling that finds this family, squashed (:func:`spelling_key`)."""
        return {spelling_key(s) for s in (self.name, *self.model_types, *self.spellings)}


def spelling_key(name: str) -> str:
    """``name`` lower-cased without ``-``, ``_``, ``.`` and whitespace: the form spellings are compared in.

    >>> spelling_key("Qwen2.5_VL") == spelling_key("qwen2_5_vl") == spelling_key("qwen25-vl")
    True
    """
    return re.sub(r"[\s._-]+", "", str(name).lower())


_MOD = "arr_coc.integrations"
_VLLM = "arr_coc.vllm"
BUILTIN: tuple[Family, ...] = (
    Family(
        name="qwen2-vl",
        patch_size=14,
        merge_size=2,
        min_pixels=56 * 56,
        eval_pixels=(3136, 602112),
        image_mean=OPENAI_CLIP_MEAN,
        image_std=OPENAI_CLIP_STD,
        processor="Qwen2VLProcessor",
        classes=(
            ModelClass(
                "qwen2_vl",
                "Qwen2VLForConditionalGeneration",
                "transformers.models.qwen2_vl.modeling_qwen2_vl",
                f"{_MOD}.qwen2_vl:ADAPTER",
                f"{_VLLM}.qwen2_vl:ArrCocQwen2VLForConditionalGeneration",
            ),
        ),
        added_tokens=14,
    ),
    Family(
        name="qwen2.5-vl",
        patch_size=14,
        merge_size=2,
        min_pixels=56 * 56,
        eval_pixels=(256 * 28 * 28, 1605632),
        image_mean=OPENAI_CLIP_MEAN,
        image_std=OPENAI_CLIP_STD,
        processor="Qwen2_5_VLProcessor",
        classes=(
            ModelClass(
                "qwen2_5_vl",
                "Qwen2_5_VLForConditionalGeneration",
                "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl",
                f"{_MOD}.qwen2_5_vl:ADAPTER",
                f"{_VLLM}.qwen2_5_vl:ArrCocQwen2_5_VLForConditionalGeneration",
            ),
        ),
        added_tokens=22,
    ),
    Family(
        name="qwen3-vl",
        patch_size=16,
        merge_size=2,
        min_pixels=256 * 256,
        eval_pixels=(256 * 28 * 28, 1605632),
        image_mean=(0.5, 0.5, 0.5),
        image_std=(0.5, 0.5, 0.5),
        processor="Qwen3VLProcessor",
        classes=(
            ModelClass(
                "qwen3_vl",
                "Qwen3VLForConditionalGeneration",
                "transformers.models.qwen3_vl.modeling_qwen3_vl",
                f"{_MOD}.qwen3_vl:ADAPTER",
                f"{_VLLM}.qwen3_vl:ArrCocQwen3VLForConditionalGeneration",
            ),
            ModelClass(
                "qwen3_vl_moe",
                "Qwen3VLMoeForConditionalGeneration",
                "transformers.models.qwen3_vl_moe.modeling_qwen3_vl_moe",
                f"{_MOD}.qwen3_vl:MOE_ADAPTER",
                f"{_VLLM}.qwen3_vl:ArrCocQwen3VLMoeForConditionalGeneration",
            ),
        ),
        added_tokens=26,
        chat_template=QWEN3_VL_TEMPLATE,
    ),
    Family(
        name="qwen3.5",
        patch_size=16,
        merge_size=2,
        min_pixels=256 * 256,
        eval_pixels=(256 * 28 * 28, 1605632),
        image_mean=(0.5, 0.5, 0.5),
        image_std=(0.5, 0.5, 0.5),
        processor="Qwen3VLProcessor",
        classes=(
            ModelClass(
                "qwen3_5",
                "Qwen3_5ForConditionalGeneration",
                "transformers.models.qwen3_5.modeling_qwen3_5",
                f"{_MOD}.qwen3_5:ADAPTER",
                f"{_VLLM}.qwen3_5:ArrCocQwen3_5ForConditionalGeneration",
            ),
            ModelClass(
                "qwen3_5_moe",
                "Qwen3_5MoeForConditionalGeneration",
                "transformers.models.qwen3_5_moe.modeling_qwen3_5_moe",
                f"{_MOD}.qwen3_5:MOE_ADAPTER",
                f"{_VLLM}.qwen3_5:ArrCocQwen3_5MoeForConditionalGeneration",
            ),
        ),
        token_ids=dict(QWEN3_5_TOKEN_IDS),
        added_tokens=26,
        chat_template=QWEN3_VL_TEMPLATE,
        spellings=("qwen3.5-vl", "qwen3.5-moe"),
        min_transformers=QWEN3_5_FLOOR,
    ),
    Family(
        name="glm-4.1v",
        patch_size=14,
        merge_size=2,
        # Glm4vImageProcessor's bounds count an image as two temporal copies: its 112*112 / 28*28*15000 are twice the
        # area bounds of the one frame that is resized (what allocate's grid takes)
        min_pixels=112 * 112 // 2,
        eval_pixels=(112 * 112 // 2, 28 * 28 * 15000 // 2),
        image_mean=OPENAI_CLIP_MEAN,
        image_std=OPENAI_CLIP_STD,
        processor="Glm4vProcessor",
        classes=(
            ModelClass(
                "glm4v",
                "Glm4vForConditionalGeneration",
                "transformers.models.glm4v.modeling_glm4v",
                f"{_MOD}.glm4v:ADAPTER",
                f"{_VLLM}.glm4v:ArrCocGlm4vForConditionalGeneration",
            ),
            ModelClass(
                "glm46v",
                "Glm46VForConditionalGeneration",
                "transformers.models.glm46v.modeling_glm46v",
                f"{_MOD}.glm4v:GLM46V_ADAPTER",
            ),
        ),
        token_ids=dict(GLM4V_TOKEN_IDS),
        added_tokens=0,
        chat_template=GLM4V_TEMPLATE,
        spellings=("glm4.1v", "glm-4.1v-thinking", "glm-4.6v"),
        min_transformers=GLM4V_FLOOR,
        tiny="arr_coc.tiny_glm",
    ),
    Family(
        name="glm-ocr",
        patch_size=14,
        merge_size=2,
        min_pixels=112 * 112 // 2,  # GLM-4.6V's image processor (the published GLM-OCR processor's), as GLM-4.1V's
        eval_pixels=(112 * 112 // 2, 28 * 28 * 15000 // 2),
        image_mean=OPENAI_CLIP_MEAN,
        image_std=OPENAI_CLIP_STD,
        processor="Glm46VProcessor",
        classes=(
            ModelClass(
                "glm_ocr",
                "GlmOcrForConditionalGeneration",
                "transformers.models.glm_ocr.modeling_glm_ocr",
                f"{_MOD}.glm4v:OCR_ADAPTER",
            ),
        ),
        # GlmOcrConfig's image ids; its own 59,392-id tokenizer's turn markers are read from the tokenizer (-1: none
        # known without one, so the question is the prompt's text)
        token_ids={
            **GLM4V_TOKEN_IDS,
            "endoftext": -1,
            "im_start": -1,
            "im_end": -1,
            "vision_start": 59256,
            "vision_end": 59257,
            "image": 59280,
            "video": 59281,
        },  # fmt: skip
        added_tokens=0,
        chat_template=GLM4V_TEMPLATE,
        min_transformers=GLM4V_FLOOR,
    ),
    Family(
        name="minicpm-v-4.7",
        patch_size=14,  # the published processor's and checkpoints' (MiniCPMV4_7VisionConfig defaults to 16)
        merge_size=4,  # "16x": the window merger's 2x2, then the merger's 2x2
        # the thumbnail: resized to about 448 x 448 (scale_resolution), sides multiples of 56; larger pages add slices
        min_pixels=56 * 56,
        eval_pixels=(56 * 56, 448 * 448),
        image_mean=(0.5, 0.5, 0.5),
        image_std=(0.5, 0.5, 0.5),
        processor="MiniCPMV4_7Processor",
        classes=(
            ModelClass(
                "minicpmv4_7",
                "MiniCPMV4_7ForConditionalGeneration",
                "transformers.models.minicpmv4_7.modeling_minicpmv4_7",
                f"{_MOD}.minicpmv4_7:ADAPTER",
                f"{_VLLM}.minicpmv4_7:ArrCocMiniCPMV4_7ForConditionalGeneration",
            ),
        ),
        # ChatML on Qwen3.5's tokenizer; the placeholder and crop marker ids are the checkpoint's config's (-1: none
        # in MiniCPMV4_7Config's defaults)
        token_ids={**QWEN3_5_TOKEN_IDS, "image": -1, "video": -1, "vision_start": -1, "vision_end": -1},
        added_tokens=26,
        chat_template=QWEN3_VL_TEMPLATE,
        spellings=("minicpm-v4.7", "minicpmv-4.7", "minicpm-v"),
        min_transformers=MINICPMV4_7_FLOOR,
        grid_rule=f"{_MOD}.minicpmv4_7:canvas_grid",
        tiny="arr_coc.tiny_minicpm",
    ),
    Family(
        name="mistral3",
        patch_size=14,
        merge_size=2,
        min_pixels=28 * 28,  # no lower bound in the processor: one cell
        eval_pixels=(28 * 28, 1540 * 1540),  # max_pixels = longest_edge ** 2 (Mistral-Small-3.1's 1540)
        image_mean=OPENAI_CLIP_MEAN,
        image_std=OPENAI_CLIP_STD,
        processor="PixtralProcessor",
        classes=(
            ModelClass(
                "mistral3",
                "Mistral3ForConditionalGeneration",
                "transformers.models.mistral3.modeling_mistral3",
                f"{_MOD}.mistral3:ADAPTER",
                f"{_VLLM}.mistral3:ArrCocMistral3ForConditionalGeneration",
            ),
        ),
        token_ids=dict(MISTRAL3_TOKEN_IDS),
        added_tokens=0,
        chat_template=MISTRAL3_TEMPLATE,
        spellings=("pixtral", "mistral-small-3.1", "mistral-small-3.2"),
        min_transformers=MISTRAL3_FLOOR,
        resize="arr_coc.grid:longest_edge_resize",
        pixel_kwargs="arr_coc.family_processors:pixtral_pixels",
        tiny="arr_coc.tiny_tiled",
    ),
    Family(
        name="gemma-3",
        patch_size=14,
        merge_size=4,  # 64 x 64 patches average-pooled 4 x 4 to 16 x 16 = 256 tokens (mm_tokens_per_image)
        min_pixels=896 * 896,  # every image is resized to the tower's 896 x 896 square
        eval_pixels=(896 * 896, 896 * 896),
        image_mean=(0.5, 0.5, 0.5),
        image_std=(0.5, 0.5, 0.5),
        processor="Gemma3Processor",
        classes=(
            ModelClass(
                "gemma3",
                "Gemma3ForConditionalGeneration",
                "transformers.models.gemma3.modeling_gemma3",
                f"{_MOD}.gemma3:ADAPTER",
                f"{_VLLM}.gemma3:ArrCocGemma3ForConditionalGeneration",
            ),
        ),
        token_ids=dict(GEMMA3_TOKEN_IDS),
        added_tokens=0,
        chat_template=GEMMA3_TEMPLATE,
        spellings=("gemma3", "gemma-3-it"),
        min_transformers=GEMMA3_FLOOR,
        resize="arr_coc.grid:fixed_resize",
        pixel_kwargs="arr_coc.family_processors:fixed_pixels",
        tiny="arr_coc.tiny_tiled",
    ),
)
# InternVL3 "-hf" tokenizer (Qwen2.5's ranks): ChatML markers; <img> 151665, </img> 151666 around the <IMG_CONTEXT>
# (InternVLConfig.image_token_id) run. LLaVA-OneVision-qwen2: the same markers, <image> 151646, <video> 151647.
INTERNVL_TOKEN_IDS: dict[str, int] = {"endoftext": 151643, "im_start": 151644, "im_end": 151645, "vision_start": 151665,
                                      "vision_end": 151666, "image": 151667, "newline": 198}  # fmt: skip
TILED: tuple[Family, ...] = (  # transformers floor as the Qwen line's (forward(mm_encoder_outputs=...)); 5.24 tested
    Family(
        name="internvl",
        patch_size=14,
        merge_size=2,  # the pixel shuffle (downsample_ratio 0.5): 2 x 2 patches a token, 256 tokens a 448-px tile
        min_pixels=448 * 448,  # one tile
        eval_pixels=(448 * 448, 12 * 448 * 448),  # 1 to 12 tiles (max_patches 12), plus the thumbnail
        image_mean=(0.485, 0.456, 0.406),  # ImageNet's, InternVL's image processor
        image_std=(0.229, 0.224, 0.225),
        processor="InternVLProcessor",
        classes=(
            ModelClass(
                "internvl",
                "InternVLForConditionalGeneration",  # fmt: skip
                "transformers.models.internvl.modeling_internvl",
                f"{_MOD}.internvl:ADAPTER",
                f"{_VLLM}.internvl:ArrCocInternVLForConditionalGeneration",
            ),
        ),
        token_ids=dict(INTERNVL_TOKEN_IDS),
        added_tokens=0,
        spellings=("internvl3", "internvl2.5", "internvl-3"),
        tiles="internvl",
        pixel_kwargs="arr_coc.family_processors:internvl_pixels",
        tiny="arr_coc.tiny_tiled",
    ),
    Family(
        name="llava-onevision",
        patch_size=14,
        merge_size=1,  # a token is one SigLIP patch of a 384-px tile (27 x 27 a tile)
        min_pixels=384 * 384,  # the base view
        eval_pixels=(384 * 384, 2304 * 2304),  # image_grid_pinpoints' smallest and largest
        image_mean=(0.5, 0.5, 0.5),
        image_std=(0.5, 0.5, 0.5),
        processor="LlavaOnevisionProcessor",
        classes=(
            ModelClass(
                "llava_onevision",
                "LlavaOnevisionForConditionalGeneration",
                "transformers.models.llava_onevision.modeling_llava_onevision",
                f"{_MOD}.llava_onevision:ADAPTER",
                f"{_VLLM}.llava_onevision:ArrCocLlavaOnevisionForConditionalGeneration",
            ),
        ),  # fmt: skip
        token_ids={
            **{k: INTERNVL_TOKEN_IDS[k] for k in ("endoftext", "im_start", "im_end", "newline")},
            "image": 151646,
            "video": 151647,
        },  # fmt: skip
        added_tokens=0,
        spellings=("llava-ov", "llava-onevision-qwen2", "llavaonevision"),
        tiles="llava-onevision",
        pixel_kwargs="arr_coc.family_processors:fixed_pixels",
        tiny="arr_coc.tiny_tiled",
    ),
)
BUILTIN = BUILTIN + TILED
QWEN_VL: tuple[Family, ...] = BUILTIN[:3]  # the Qwen2-VL-tokenizer families (Qwen2-VL, Qwen2.5-VL, Qwen3-VL)

_REGISTRY: dict[str, Family] = {f.name: f for f in BUILTIN}


def families() -> tuple[Family, ...]:
    """The registered families, built-in ones first, in registration order."""
    return tuple(_REGISTRY.values())


def family_names() -> tuple[str, ...]:
    """Canonical names of the registered families (``("qwen2-vl", "qwen2.5-vl", "qwen3-vl")`` by default)."""
    return tuple(_REGISTRY)


def register(family: Family) -> Family:
    """Add ``family`` to the registry (a process-wide table, as ``transformers``' Auto classes are).

    Raises:
        ValueError: if its name or a spelling is already taken by another family, or a field is invalid.
    """
    if not isinstance(family, Family):
        raise TypeError(f"register() takes a Family, got {type(family).__name__}")
    if family.patch_size < 1 or family.merge_size < 1 or not family.classes:
        raise ValueError(f"{family.name}: patch_size and merge_size must be positive and classes not empty")
    for other in _REGISTRY.values():
        clash = family.keys() & other.keys()
        if other.name != family.name and clash:
            raise ValueError(f"{family.name}: spelling(s) {sorted(clash)} already name {other.name}")
        if other.name == family.name and other != family:
            raise ValueError(f"a different family named {family.name!r} is already registered")
    _REGISTRY[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove a family added with :func:`register` (built-in families cannot be removed)."""
    family = get_family(name)
    if family in BUILTIN:
        raise ValueError(f"{family.name} is built in and cannot be unregistered")
    del _REGISTRY[family.name]


def get_family(name: str) -> Family:
    """The family spelled ``name``: any case, ``-`` / ``_`` / ``.`` optional, or a ``config.model_type``.

    Raises:
        ValueError: for an unknown name; the message lists the supported ones.
    """
    key = spelling_key(name)
    for family in _REGISTRY.values():
        if key and key in family.keys():
            return family
    raise ValueError(f"unknown model family {name!r}; supported: {', '.join(_REGISTRY)}")


def model_class_for_type(model_type: str) -> ModelClass | None:
    """The :class:`ModelClass` whose ``config.model_type`` is ``model_type`` (exactly), else ``None``."""
    for family in _REGISTRY.values():
        for cls in family.classes:
            if cls.model_type == model_type:
                return cls
    return None


def family_of_type(model_type: str) -> Family | None:
    """The family a ``config.model_type`` belongs to, else ``None``."""
    for family in _REGISTRY.values():
        if model_type in family.model_types:
            return family
    return None


def supported_classes() -> tuple[str, ...]:
    """Names of every ``transformers`` class ``compress`` accepts."""
    return tuple(c.hf_class for f in _REGISTRY.values() for c in f.classes)


def vllm_architectures() -> dict[str, str]:
    """vLLM architecture name (the ``transformers`` class name) -> ``"module:Class"`` of the plugin's class."""
    return {c.hf_class: c.vllm_class for f in _REGISTRY.values() for c in f.classes if c.vllm_class}


def load_object(path: str) -> Any:
    """The object a ``"module:attribute"`` path names (imported on demand)."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def match_model(model: Any) -> tuple[Family, ModelClass] | None:
    """The family and class of a ``transformers`` model: the registered class nearest in ``type(model)``'s MRO (a
    subclass registered as its own family wins over its parent's family), else ``None``.

    Modules of ``transformers`` that fail to import (a class this release lacks) are skipped.
    """
    found: dict[type, tuple[Family, ModelClass]] = {}
    for family in _REGISTRY.values():
        for cls in family.classes:
            try:
                found[getattr(importlib.import_module(cls.module), cls.hf_class)] = (family, cls)
            except (ImportError, AttributeError):
                continue
    for klass in type(model).__mro__:
        if klass in found:
            return found[klass]
    return None


def check_transformers(family: Family, installed: str | None = None) -> None:
    """Refuse a ``transformers`` older than ``family.min_transformers``.

    A pre-release of the floor (``5.18.0.dev0``) is older than the floor, as pip orders versions.

    Args:
        family: the family of the model being wrapped.
        installed: the version to check; default ``transformers.__version__``.

    Raises:
        RuntimeError: naming the installed and the required version, and why.
    """
    from packaging.version import InvalidVersion, Version  # a requirement of transformers itself

    if installed is None:
        import transformers

        installed = transformers.__version__
    try:
        too_old = Version(str(installed)) < Version(family.min_transformers)
    except InvalidVersion:
        too_old = True  # an unreadable version is not one we know to work
    if too_old:
        raise RuntimeError(
            f"compress() needs transformers>={family.min_transformers} for {family.name}; transformers {installed} "
            "is installed. Older releases ignore forward(mm_encoder_outputs=...), so the model would read the image "
            "placeholders instead of the kept visual tokens and answer wrongly without an error. Upgrade: "
            f"pip install 'transformers>={family.min_transformers},<6'"
        )


__all__ = [
    "BUILTIN",
    "QWEN2_TOKEN_IDS",
    "TRANSFORMERS_FLOOR",
    "Family",
    "ModelClass",
    "check_transformers",
    "families",
    "family_names",
    "family_of_type",
    "get_family",
    "load_object",
    "match_model",
    "model_class_for_type",
    "register",
    "spelling_key",
    "supported_classes",
    "unregister",
    "vllm_architectures",
]
