"""Tiny random-weight Mistral3 (Pixtral vision) and Gemma 3 checkpoints with tokenizers built in code: what the vLLM
plugin's tests serve (``tests/vllm_plugin/test_vllm_mistral3.py`` / ``test_vllm_gemma3.py``).

Neither family's tokenizer installs offline here (Mistral's tekken ships in ``mistral_common``, which vLLM's
``tokenizer_mode="mistral"`` reads, not the HF ``PixtralProcessor``; no Gemma tokenizer is installed), so each
tokenizer is a byte-level BPE without merges (one token a byte) with the family's special tokens at their REAL ids:

* Mistral3 (tekken's first 1000 ids are control tokens): ``<s>`` 1, ``</s>`` 2, ``[INST]`` 3, ``[/INST]`` 4, ``[IMG]``
  10, ``[IMG_BREAK]`` 12, ``[IMG_END]`` 13 (:data:`arr_coc.families.MISTRAL3_TOKEN_IDS`), the 256 bytes from 1000;
* Gemma 3: ``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<start_of_turn>`` 105, ``<end_of_turn>`` 106,
  ``<start_of_image>`` 255999, ``<end_of_image>`` 256000, ``<image_soft_token>`` 262144 (Gemma3Config's ids), the
  256 bytes from 107, every other id an unused token; 262,208 embedding rows as published.

Text is therefore tokenized differently from the real tokenizers, but every id the pipeline reads (placeholders,
structure tokens, turn markers) is the real one, and the chat templates are the families' (:mod:`arr_coc.families`).
The language models are vLLM-CPU-sized (head dim 32: hidden 64, 2 heads, 1 KV head); the towers are 2 blocks wide 32.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any

from .families import GEMMA3_TEMPLATE, MISTRAL3_TEMPLATE

SEED = 0
FAMILIES: tuple[str, ...] = ("mistral3", "gemma-3")

MISTRAL_SPECIALS = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "[INST]", 4: "[/INST]", 10: "[IMG]", 11: "<pad>",
                    12: "[IMG_BREAK]", 13: "[IMG_END]"}  # fmt: skip
MISTRAL_BYTES = 1000  # tekken's control tokens end here
MISTRAL_VOCAB = MISTRAL_BYTES + 256
GEMMA_SPECIALS = {0: "<pad>", 1: "<eos>", 2: "<bos>", 3: "<unk>", 105: "<start_of_turn>", 106: "<end_of_turn>",
                  255999: "<start_of_image>", 256000: "<end_of_image>", 262144: "<image_soft_token>"}  # fmt: skip
GEMMA_BYTES = 107  # after <end_of_turn>
GEMMA_VOCAB = 262208


def _byte_tokenizer(specials: dict[int, str], first_byte: int, vocab_size: int, **kwargs: Any) -> Any:
    """A ``PreTrainedTokenizerFast``: byte-level BPE with no merges (the 256 bytes from ``first_byte``), ``specials``
    at their ids as special added tokens, every other id below ``vocab_size`` an unused token."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    byte_chars = pre_tokenizers.ByteLevel.alphabet()
    byte_chars.sort(key=lambda c: ord(c))
    vocab = {f"<unused{i}>": i for i in range(vocab_size)}
    for i in specials:
        del vocab[f"<unused{i}>"]
    for j, char in enumerate(byte_chars):
        del vocab[f"<unused{first_byte + j}>"]
        vocab[char] = first_byte + j
    vocab.update({text: i for i, text in specials.items()})
    unk = specials.get(0) if specials.get(0) == "<unk>" else specials.get(3)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=unk))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for _, t in sorted(specials.items())])
    for i, text in specials.items():
        if core.token_to_id(text) != i:
            raise RuntimeError(f"{text} got id {core.token_to_id(text)}, expected {i}")
    return PreTrainedTokenizerFast(tokenizer_object=core, unk_token=unk, model_max_length=32768, **kwargs)


def mistral3_tokenizer() -> Any:
    tok = _byte_tokenizer(MISTRAL_SPECIALS, MISTRAL_BYTES, MISTRAL_VOCAB, bos_token="<s>", eos_token="</s>",
                          pad_token="<pad>")  # fmt: skip
    tok.chat_template = MISTRAL3_TEMPLATE
    return tok


def gemma3_tokenizer() -> Any:
    """Gemma's kind of vocabulary (no byte-level pre-tokenizer): printable ASCII and ``\\n`` as literal one-character
    tokens, the runs ``\\n\\n`` .. ``\\n\\n\\n\\n`` as single tokens (vLLM's Gemma 3 processor looks them up by their
    text), byte fallback for the rest; the specials at their real ids."""
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    chars = [chr(c) for c in range(32, 127)] + ["\n", "\n\n", "\n\n\n", "\n\n\n\n"]
    chars += [f"<0x{b:02X}>" for b in range(256)]
    vocab = {f"<unused{i}>": i for i in range(GEMMA_VOCAB)}
    for i in GEMMA_SPECIALS:
        del vocab[f"<unused{i}>"]
    for j, text in enumerate(chars):
        del vocab[f"<unused{GEMMA_BYTES + j}>"]
        vocab[text] = GEMMA_BYTES + j
    vocab.update({text: i for i, text in GEMMA_SPECIALS.items()})
    merges = [("\n", "\n"), ("\n\n", "\n"), ("\n\n", "\n\n")]
    core = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True))
    core.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
    core.add_special_tokens([AddedToken(t, special=True, normalized=False) for _, t in sorted(GEMMA_SPECIALS.items())])
    extra = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<bos>", eos_token="<eos>",
                                  pad_token="<pad>", model_max_length=32768, extra_special_tokens=extra)  # fmt: skip
    tok.chat_template = GEMMA3_TEMPLATE
    return tok


def mistral3_config() -> Any:
    import transformers as tf

    text = dict(
        vocab_size=MISTRAL_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, max_position_embeddings=32768, pad_token_id=11, bos_token_id=1,
        eos_token_id=2, sliding_window=None, model_type="mistral", rope_parameters={"rope_type": "default",
        "rope_theta": 1000000.0},
    )  # fmt: skip
    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, head_dim=8, image_size=448,
        patch_size=14, model_type="pixtral",
    )  # fmt: skip
    return tf.Mistral3Config(
        text_config=text, vision_config=vision, image_token_id=10, spatial_merge_size=2, vision_feature_layer=-1
    )


def gemma3_config() -> Any:
    """Gemma 3 with a 2-layer SigLIP on 224 x 224 images (14-pixel patches, 16 x 16 pooled 4 x 4 to 16 tokens)."""
    import transformers as tf

    text = dict(
        vocab_size=GEMMA_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=32, max_position_embeddings=32768, pad_token_id=0, bos_token_id=2,
        eos_token_id=1, sliding_window=4096, model_type="gemma3_text",
        layer_types=["sliding_attention", "full_attention"],
    )  # fmt: skip
    vision = dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, image_size=224,
        patch_size=14, model_type="siglip_vision_model",
    )  # fmt: skip
    return tf.Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=16, image_token_index=262144,
        boi_token_index=255999, eoi_token_index=256000,
    )  # fmt: skip


def _write(
    folder: pathlib.Path, model_class: Any, config: Any, eos: list[int], pad: int, bos: int, rename: Any = None
) -> None:
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        model = model_class(config)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    model.generation_config.bos_token_id = bos
    model.save_pretrained(folder)
    if rename is not None:  # the published checkpoints' key names, which vLLM's loader expects
        from safetensors.torch import load_file, save_file

        file = folder / "model.safetensors"
        old, new = rename
        tensors = {k.replace(old, new, 1) if old in k and new not in k else k: v for k, v in load_file(file).items()}
        save_file(tensors, file, metadata={"format": "pt"})


def mistral3_checkpoint(path: str | os.PathLike, longest_edge: int = 336) -> pathlib.Path:
    """Write the tiny Mistral3 checkpoint (``PixtralProcessor``, images resized to ``longest_edge`` pixels at most:
    336 = 12 cells of 28 a side)."""
    import transformers as tf

    folder = pathlib.Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = mistral3_tokenizer()
    image_processor = tf.PixtralImageProcessorPil(size={"longest_edge": longest_edge},
                                                  patch_size={"height": 14, "width": 14})  # fmt: skip
    processor = tf.PixtralProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=14,
                                    spatial_merge_size=2, chat_template=MISTRAL3_TEMPLATE)  # fmt: skip
    processor.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(MISTRAL3_TEMPLATE, encoding="utf-8")
    _write(folder, tf.Mistral3ForConditionalGeneration, mistral3_config(), [2], 11, 1)
    return folder


def gemma3_checkpoint(path: str | os.PathLike) -> pathlib.Path:
    """Write the tiny Gemma 3 checkpoint (``Gemma3Processor``: 224 x 224, no pan and scan, 16 tokens an image)."""
    import transformers as tf

    folder = pathlib.Path(path).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = gemma3_tokenizer()
    image_processor = tf.Gemma3ImageProcessorPil(size={"height": 224, "width": 224}, do_pan_and_scan=False)
    processor = tf.Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_length=16,
                                   chat_template=GEMMA3_TEMPLATE)  # fmt: skip
    processor.save_pretrained(folder)
    (folder / "chat_template.jinja").write_text(GEMMA3_TEMPLATE, encoding="utf-8")
    rename = ("vision_tower.", "vision_tower.vision_model.")  # transformers 5 saves SigLIP's keys without it
    _write(folder, tf.Gemma3ForConditionalGeneration, gemma3_config(), [1, 106], 0, 2, rename)
    return folder


def checkpoint(family: str, path: str | os.PathLike) -> pathlib.Path:
    """The tiny checkpoint of ``family`` (``"mistral3"`` or ``"gemma-3"``) written to ``path``."""
    if family == "mistral3":
        return mistral3_checkpoint(path)
    if family == "gemma-3":
        return gemma3_checkpoint(path)
    raise ValueError(f"no tiny vLLM checkpoint for {family!r}; one of {FAMILIES}")


__all__ = ["FAMILIES", "checkpoint", "gemma3_checkpoint", "gemma3_tokenizer", "mistral3_checkpoint",
           "mistral3_tokenizer"]  # fmt: skip
