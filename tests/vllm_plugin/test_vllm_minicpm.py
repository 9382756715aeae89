"""MiniCPM-V 4.7 in vLLM 0.32's CPU build: the tiny checkpoint runs, UNWRAPPED (the plugin does not serve this family
yet: ``docs/families.md`` says why). One engine start. What the checkpoint needs for vLLM, found here: the image
placeholder text ``<|image_pad|>`` (vLLM's MiniCPMV4_6ProcessingInfo.image_pattern, what the published chat template
emits), a text head dim vLLM's CPU attention takes (32) and Gated-DeltaNet head dims of 128, max_model_len within the
config's max_position_embeddings."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

import torch  # noqa: E402

MARKERS = {
    "image_token": "<|image_pad|>", "video_token": "<|video_pad|>", "image_start_token": "<image>",
    "image_end_token": "</image>", "slice_start_token": "<slice>", "slice_end_token": "</slice>",
    "image_id_start_token": "<image_id>", "image_id_end_token": "</image_id>",
}  # fmt: skip


def minicpm_checkpoint(folder):
    """The family tester's tiny MiniCPM-V 4.7 with a vLLM-sized language model, a character tokenizer (the markers at
    the config's ids) and the real processor, saved to ``folder``."""
    import string

    import transformers as tf
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    from arr_coc import family_testing as ft

    cls, config = ft.TINY["minicpmv4_7"].build()
    text = dict(config.text_config.to_dict(), hidden_size=64, intermediate_size=128, num_attention_heads=2,
                num_key_value_heads=1, head_dim=32, linear_key_head_dim=128, linear_value_head_dim=128,
                linear_num_key_heads=1, linear_num_value_heads=1)  # fmt: skip
    text["rope_parameters"] = dict(text["rope_parameters"], mrope_section=[8, 4, 4])
    config.text_config = type(config.text_config)(**text)
    config.architectures = [cls.__name__]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        cls(config).save_pretrained(folder)
    special = {ft.IMAGE: MARKERS["image_token"], ft.VIDEO: MARKERS["video_token"], ft.V_START: "<image>",
               ft.V_END: "</image>", ft.IM_START: "<|im_start|>", ft.IM_END: "<|im_end|>", ft.SLICE_START: "<slice>",
               ft.SLICE_END: "</slice>", 311: "<image_id>", 312: "</image_id>", ft.USER: "user",
               ft.ASSISTANT: "assistant"}  # fmt: skip
    vocab = {"<pad>": ft.PAD}
    for c in string.printable:
        if c.isprintable():
            vocab.setdefault(c, len(vocab) + 2)
    vocab["\n"] = ft.NEWLINE
    vocab.update({t: i for i, t in special.items()})
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("[\\s\\S]"), behavior="isolated")
    tk.decoder = decoders.Fuse()
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special.values()])
    tokenizer = tf.PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", extra_special_tokens=MARKERS)
    processor = tf.MiniCPMV4_7Processor(
        image_processor=tf.MiniCPMV4_6ImageProcessorPil(patch_size=14),
        video_processor=tf.MiniCPMV4_6VideoProcessor(patch_size=14), tokenizer=tokenizer,
    )  # fmt: skip
    processor.save_pretrained(folder)
    return folder


def test_vllm_runs_the_tiny_minicpm_checkpoint_unwrapped(tmp_path):
    import transformers as tf
    from PIL import Image
    from vllm import LLM, SamplingParams

    from arr_coc import family_testing as ft
    from arr_coc.families import vllm_architectures

    assert "MiniCPMV4_7ForConditionalGeneration" not in vllm_architectures()  # not served by the plugin (yet)
    folder = minicpm_checkpoint(tmp_path / "minicpm")
    llm = LLM(model=str(folder), dtype="bfloat16", max_model_len=512, max_num_seqs=2, enforce_eager=True, seed=0,
              limit_mm_per_prompt={"image": 1, "video": 0}, kv_cache_memory_bytes=256 << 20)  # fmt: skip
    try:
        prompt = "<|im_start|>user\n<|image_pad|>What is the total?<|im_end|>\n<|im_start|>assistant\n"
        image = Image.new("RGB", (600, 500), "white")  # 2 slices: a thumbnail and a 1 x 2 row
        (out,) = llm.generate([{"prompt": prompt, "multi_modal_data": {"image": image}}],
                              SamplingParams(max_tokens=3, temperature=0))  # fmt: skip
        assert len(out.outputs[0].token_ids) == 3
        sizes = tf.MiniCPMV4_6ImageProcessorPil(patch_size=14)(images=image, return_tensors="pt")["target_sizes"]
        assert out.prompt_token_ids.count(ft.IMAGE) == int((sizes.prod(-1) // 16).sum())  # every crop's placeholders
    finally:
        from plugin_checks import close_engine

        close_engine(llm)
