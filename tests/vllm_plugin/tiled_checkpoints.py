"""Tiny InternVL and LLaVA-OneVision checkpoints vLLM 0.32's CPU build serves (imported by test_vllm_internvl.py and
test_vllm_llava_onevision.py): :mod:`arr_coc.tiled_testing`'s tiny models with a text head dim vLLM's CPU attention
takes (32: hidden 64, 2 heads, 1 KV head), a character tokenizer holding the family's markers at the tester's ids, and
the family's real processor. What vLLM needs on top of the HF models: InternVL's ``image_size`` / ``patch_size`` as
pairs (vLLM's ``InternS1ForConditionalGeneration`` reads ``[0]``), the tokenizer's InternVL marker attributes
(``start_image_token`` ...) and a ``<video>`` token (vLLM's processor asks for both modalities' tokens)."""

from __future__ import annotations

import pathlib
import re
import string

import torch

NEWLINE = 198  # "\n" at the family rows' id (Qwen2's "Ċ"), so compress's turn walk ends the role header there
TEXT = dict(
    hidden_size=64,
    intermediate_size=128,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=32,
    max_position_embeddings=4096,
)
INTERNVL_MARKERS = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                    "video_token": "<video>"}  # fmt: skip


def char_tokenizer(special: dict[int, str], markers: dict[str, str] | None = None):
    """A character-level fast tokenizer: printable characters, '\\n' (:data:`NEWLINE`) and ``special`` (id -> text) at
    their ids."""
    import transformers as tf
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    from arr_coc import family_testing as ft

    vocab = {"<pad>": ft.PAD, "<s>": ft.BOS, "</s>": ft.EOS}
    for c in string.printable:
        if c.isprintable():
            vocab.setdefault(c, len(vocab) + 7)
    vocab["\n"] = NEWLINE
    special = {**special, ft.USER: "user", ft.ASSISTANT: "assistant"}  # a role header of one token, as Qwen2's
    vocab.update({t: i for i, t in special.items()})
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special.values()])
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", extra_special_tokens=markers or {}
    )


CHAT = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}{{ IMAGE }}{% elif c['type'] == 'text' %}"
    "{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _save_model(cls, config, folder: pathlib.Path) -> None:
    from arr_coc import family_testing as ft

    config.architectures = [cls.__name__]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = cls(config)
    model.generation_config.eos_token_id = ft.EOS
    model.generation_config.pad_token_id = ft.PAD
    model.save_pretrained(folder)


def _published_siglip_keys(path: pathlib.Path) -> None:
    """transformers 5.19 saves the SigLIP tower as ``vision_tower.embeddings...``; the published checkpoints (and
    vLLM's loader) name it ``vision_tower.vision_model.embeddings...``, which transformers reads too."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path))
    published = r"vision_tower.vision_model."
    renamed = {re.sub(r"^vision_tower\.(?!vision_model\.)", published, k): v for k, v in tensors.items()}
    save_file(renamed, str(path), metadata={"format": "pt"})


def internvl_checkpoint(folder: pathlib.Path) -> pathlib.Path:
    """Tiny InternVL (112-px tiles, 16 tokens a tile, 1 to 4 tiles + a thumbnail) saved with its processor."""
    import transformers as tf

    from arr_coc import family_testing as ft
    from arr_coc import tiled_testing as tt

    cls, config = tt.internvl()
    config.text_config = type(config.text_config)(**dict(config.text_config.to_dict(), **TEXT))
    vc = config.vision_config.to_dict()
    config.vision_config = type(config.vision_config)(**dict(vc, image_size=[112, 112], patch_size=[14, 14]))
    _save_model(cls, config, folder)
    special = {ft.IMAGE: "<IMG_CONTEXT>", ft.VIDEO: "<video>", ft.V_START: "<img>", ft.V_END: "</img>",
               ft.IM_START: "<|im_start|>", ft.IM_END: "<|im_end|>"}  # fmt: skip
    tokenizer = char_tokenizer(special, INTERNVL_MARKERS)
    size = {"height": tt.INTERNVL_TILE, "width": tt.INTERNVL_TILE}
    processor = tf.InternVLProcessor(
        image_processor=tf.GotOcr2ImageProcessor(size=size, crop_to_patches=True, min_patches=1, max_patches=4),
        video_processor=tf.InternVLVideoProcessor(size=size), tokenizer=tokenizer,
        image_seq_length=tt.INTERNVL_TOKENS, chat_template=CHAT.replace("{{ IMAGE }}", "<IMG_CONTEXT>\n"),
    )  # fmt: skip
    processor.save_pretrained(folder)
    return folder


def onevision_checkpoint(folder: pathlib.Path) -> pathlib.Path:
    """Tiny LLaVA-OneVision (56-px tiles of 4 x 4 tokens, pinpoints 1 x 1 to 3 x 3 tiles) saved with its processor."""
    import transformers as tf

    from arr_coc import family_testing as ft
    from arr_coc import tiled_testing as tt

    cls, config = tt.onevision()
    config.text_config = type(config.text_config)(**dict(config.text_config.to_dict(), **TEXT))
    _save_model(cls, config, folder)
    _published_siglip_keys(folder / "model.safetensors")
    special = {ft.IMAGE: "<image>", ft.VIDEO: "<video>", ft.IM_START: "<|im_start|>", ft.IM_END: "<|im_end|>"}
    tokenizer = char_tokenizer(special, {"image_token": "<image>", "video_token": "<video>"})
    size = {"height": tt.OV_TILE, "width": tt.OV_TILE}
    processor = tf.LlavaOnevisionProcessor(
        image_processor=tf.LlavaOnevisionImageProcessor(size=size, image_grid_pinpoints=tt.OV_PINPOINTS,
                                                            crop_size=size, image_mean=[0.5] * 3, image_std=[0.5] * 3),
        video_processor=tf.LlavaOnevisionVideoProcessor(size=size), tokenizer=tokenizer,
        num_image_tokens=tt.OV_SIDE * tt.OV_SIDE, vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9", chat_template=CHAT.replace("{{ IMAGE }}", "<image>\n"),
    )  # fmt: skip
    processor.save_pretrained(folder)
    return folder


def prompt_for(placeholder: str, n_images: int, question: str) -> str:
    """One user turn: ``n_images`` placeholders (one a line), then the question; the generation prompt added."""
    return f"<|im_start|>user\n{(placeholder + chr(10)) * n_images}{question}<|im_end|>\n<|im_start|>assistant\n"


def transformers_renumbered(folder: pathlib.Path, prompt: str, images: list, budget):
    """``compress(model, budget, foveate=True, positions="renumber")`` on the checkpoint (what vLLM serves for a 1-D
    family): kept indices per image, the pruned prompt's ids and each token's log-probability (nan first)."""
    import math

    import transformers as tf

    from arr_coc import compress

    config = tf.AutoConfig.from_pretrained(str(folder))
    model = getattr(tf, config.architectures[0]).from_pretrained(str(folder), dtype=torch.float32).eval()
    processor = tf.AutoProcessor.from_pretrained(str(folder))
    inputs = processor(text=[prompt], images=images, return_tensors="pt")
    cm = compress(model, budget, processor=processor, foveate=True, positions="renumber")
    with torch.no_grad():
        logits = cm(**inputs).logits[0].float()  # (L', V)
    ids = cm.last_inputs.input_ids[0]
    lp = torch.log_softmax(logits, -1)[:-1].gather(1, ids[1:, None]).squeeze(1)
    return [a.keep.clone() for a in cm.last_allocation[0]], ids.tolist(), [math.nan] + lp.tolist()


def generate(llm, reqs: list[dict], max_tokens: int = 4) -> list[dict]:
    """``plugin_checks.generate`` with ``ignore_eos``: a random-weight model may emit ``</s>`` at any step."""
    from plugin_checks import summary
    from vllm import SamplingParams

    sp = SamplingParams(temperature=0.0, max_tokens=max_tokens, logprobs=0, prompt_logprobs=0, ignore_eos=True)
    return [summary(o) for o in llm.generate(reqs, sp, use_tqdm=False)]
