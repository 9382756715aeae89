"""``arr_coc.vllm``: the vLLM plugin. Query-aware visual-token pruning and foveation, per request.

vLLM loads it in every process through the ``vllm.general_plugins`` entry point (``arr_coc = arr_coc.vllm:register``
in pyproject.toml); :func:`register` replaces vLLM's Qwen2-VL, Qwen2.5-VL, Qwen3-VL and Qwen3-VL-MoE classes with
subclasses that add the plugin's seams (``common.py``: options, question, decision, positions; one file a family:
how its vision tower encodes only the kept patches). Nothing changes for a request without options.

Per request::

    llm.chat(messages, params, mm_processor_kwargs={"arr_coc": {"budget": 0.22, "mode": "texture"}})

Server-wide defaults (merged under each request's own): ``LLM(..., mm_processor_kwargs={"arr_coc": {...}})`` or
``--mm-processor-kwargs '{"arr_coc": {...}}'``. Options: see :data:`arr_coc.vllm.common.OPTIONS`.
Switch the plugin off: ``VLLM_PLUGINS=`` (an empty list of plugins to load) or a list without ``arr_coc``.
"""

from __future__ import annotations

from arr_coc.families import vllm_architectures

# vLLM architecture -> "module:Class" of the plugin's class: each family's ModelClass.vllm_class (arr_coc.families)
ARCHITECTURES: dict[str, str] = vllm_architectures()


def register() -> None:
    """Register the plugin's model classes with vLLM (called by vLLM in each process; idempotent). Families
    registered after import (:func:`arr_coc.families.register`) are included."""
    from vllm import ModelRegistry

    for architecture, target in vllm_architectures().items():
        ModelRegistry.register_model(architecture, target)


__all__ = ["ARCHITECTURES", "register"]
