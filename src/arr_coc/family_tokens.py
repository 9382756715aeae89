"""The token ids and chat templates of the registered families (:mod:`arr_coc.families`' rows read them; moved out
of it unchanged): the ids every published checkpoint's tokenizer gives its special tokens, the templates written
compactly as the published ones render (the tiny checkpoints ship them), and the image processors' default mean / std.
"""

from __future__ import annotations

# Qwen2 BPE ids shared by every Qwen-VL checkpoint (tokenizer_config.json's added tokens; "\n" is BPE rank 198).
QWEN2_TOKEN_IDS: dict[str, int] = {
    "endoftext": 151643,  # <|endoftext|>
    "im_start": 151644,  # <|im_start|>
    "im_end": 151645,  # <|im_end|>
    "vision_start": 151652,  # <|vision_start|>
    "vision_end": 151653,  # <|vision_end|>
    "image": 151655,  # <|image_pad|>
    "video": 151656,  # <|video_pad|>
    "newline": 198,  # "\n" (the byte-level BPE's "Ċ")
}
# Qwen3.5's tokenizer: a new 248,044-rank BPE, the same added tokens in the same order from 248044 (its
# tokenizer_config.json); the vision ids are Qwen3_5Config's defaults.
QWEN3_5_TOKEN_IDS: dict[str, int] = {
    "endoftext": 248044,  # <|endoftext|>
    "im_start": 248045,  # <|im_start|>
    "im_end": 248046,  # <|im_end|>
    "vision_start": 248053,  # <|vision_start|>
    "vision_end": 248054,  # <|vision_end|>
    "image": 248056,  # <|image_pad|>
    "video": 248057,  # <|video_pad|>
    "newline": 198,  # "\n"
}
# GLM-4.1V / GLM-4.6V (a GLM-4 tokenizer): Glm4vConfig's image ids and the chat turn markers of the published
# tokenizer_config.json ("<|user|>" opens the turn the question is read from, "<|assistant|>" closes it).
GLM4V_TOKEN_IDS: dict[str, int] = {
    "endoftext": 151329,  # <|endoftext|>
    "im_start": 151336,  # <|user|>
    "im_end": 151337,  # <|assistant|>
    "vision_start": 151339,  # <|begin_of_image|>
    "vision_end": 151340,  # <|end_of_image|>
    "image": 151343,  # <|image|>
    "video": 151344,  # <|video|>
    "newline": 198,  # "\n"
}
GLM4V_TEMPLATE = (
    "[gMASK]<sop>{%- for message in messages %}<|{{ message.role }}|>\n"
    "{%- if message.content is string %}{{- message.content }}"
    "{%- else %}{%- for item in message.content %}"
    "{%- if item.type == 'image' or 'image' in item %}<|begin_of_image|><|image|><|end_of_image|>"
    "{%- elif item.type == 'video' or 'video' in item %}<|begin_of_video|><|video|><|end_of_video|>"
    "{%- elif 'text' in item %}{{- item.text }}{%- endif %}{%- endfor %}{%- endif %}"
    "{%- endfor %}{%- if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
# Mistral3 (Pixtral vision): the tekken tokenizer's special ids (mistral_common's tekken_240911.json: <s> 1, [INST] 3,
# [/INST] 4, [IMG] 10, [IMG_BREAK] 12, [IMG_END] 13; Mistral3Config's image_token_id 10). A Mistral turn has no role
# header ("newline" -1).
MISTRAL3_TOKEN_IDS: dict[str, int] = {
    "endoftext": 2,  # </s>
    "im_start": 3,  # [INST]
    "im_end": 4,  # [/INST]
    "image": 10,  # [IMG]
    "img_break": 12,  # [IMG_BREAK]
    "img_end": 13,  # [IMG_END]
    "newline": -1,
}
MISTRAL3_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}"
    "{%- if message.role == 'user' %}[INST]"
    "{%- if message.content is string %}{{- message.content }}"
    "{%- else %}{%- for item in message.content %}"
    "{%- if item.type == 'image' or 'image' in item %}[IMG]{%- elif 'text' in item %}{{- item.text }}{%- endif %}"
    "{%- endfor %}{%- endif %}[/INST]"
    "{%- elif message.role == 'assistant' %}{{- message.content }}{{- eos_token }}{%- endif %}"
    "{%- endfor %}"
)
# Mistral3: forward(mm_encoder_outputs=...) as the Qwen line's (tests/test_mistral3_gemma3.py passes on 5.24; older
# releases not tried here).
# Gemma 3: Gemma3Config's image ids (<start_of_image> 255999, <end_of_image> 256000, <image_soft_token> 262144); the
# turn markers (<start_of_turn>, <end_of_turn>, "\n") are read from the tokenizer (-1: not known without one; no Gemma
# tokenizer is installed here to read their ids from).
GEMMA3_TOKEN_IDS: dict[str, int] = {
    "endoftext": -1,
    "im_start": -1,
    "im_end": -1,
    "boi": 255999,
    "eoi": 256000,
    "image": 262144,
    "newline": -1,
}
GEMMA3_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}"
    "<start_of_turn>{{ ('model' if message.role == 'assistant' else message.role) + '\\n' }}"
    "{%- if message.content is string %}{{- message.content }}"
    "{%- else %}{%- for item in message.content %}"
    "{%- if item.type == 'image' or 'image' in item %}<start_of_image>"
    "{%- elif 'text' in item %}{{- item.text }}{%- endif %}"
    "{%- endfor %}{%- endif %}<end_of_turn>{{ '\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)  # Qwen2-VL / Qwen2.5-VL image processor defaults
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

# Chat templates: the published ones' output for system / user / assistant turns (string or list content with
# {"type": "text" | "image" | "video"} items, ``add_vision_id``), written compactly (the tiny checkpoints ship them).
_CONTENT = (
    "{%- if content is string %}{{- content }}"
    "{%- else %}{%- for item in content %}"
    "{%- if item.type == 'image' or 'image' in item or 'image_url' in item %}"
    "{%- set image_count.value = image_count.value + 1 %}"
    "{%- if add_vision_id %}Picture {{ image_count.value }}: {% endif -%}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif item.type == 'video' or 'video' in item %}"
    "{%- set video_count.value = video_count.value + 1 %}"
    "{%- if add_vision_id %}Video {{ video_count.value }}: {% endif -%}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{%- elif 'text' in item %}{{- item.text }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
)
QWEN2_VL_TEMPLATE = (
    "{%- set image_count = namespace(value=0) %}{%- set video_count = namespace(value=0) %}"
    "{%- for message in messages %}"
    "{%- if loop.first and message.role != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "{{- '<|im_start|>' + message.role + '\n' }}{%- set content = message.content %}" + _CONTENT + "<|im_end|>\n"
    "{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN3_VL_TEMPLATE = (
    "{%- set image_count = namespace(value=0) %}{%- set video_count = namespace(value=0) %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'system' and loop.first %}{{- '<|im_start|>system\n' }}"
    "{%- if message.content is string %}{{- message.content }}"
    "{%- else %}{%- for item in message.content %}{%- if 'text' in item %}{{- item.text }}{%- endif %}{%- endfor %}"
    "{%- endif %}<|im_end|>\n"
    "{% elif message.role in ('user', 'assistant') %}"
    "{{- '<|im_start|>' + message.role + '\n' }}{%- set content = message.content %}" + _CONTENT + "<|im_end|>\n"
    "{% endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
