"""The vLLM plugin's ``positions`` option: parsed like every option, and each family class serves one choice and
refuses the other in one line (the M-RoPE families "original", the 1-D tiled families "renumber": vLLM numbers a
1-D model's tokens by index, ``arr_coc/vllm/tiled.py``). No vLLM needed: the processor's ``info`` is stubbed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from arr_coc.vllm.common import ArrCocOptionError, ProcessorMixin, parse_options
from arr_coc.vllm.tiled import TiledProcessorMixin


def processor(cls: type) -> object:
    proc = cls.__new__(cls)
    proc.info = SimpleNamespace(ctx=SimpleNamespace(get_merged_mm_kwargs=lambda kwargs: kwargs))
    return proc


class MRoPE(ProcessorMixin):
    pass


class Tiled(TiledProcessorMixin, ProcessorMixin):
    pass


def test_positions_are_parsed_with_one_clear_error():
    assert parse_options({"budget": 0.25}).positions is None
    assert parse_options({"positions": "renumber"}).positions == "renumber"
    with pytest.raises(ArrCocOptionError, match="positions must be 'original' or 'renumber', got 'sideways'"):
        parse_options({"positions": "sideways"})


@pytest.mark.parametrize(
    ("cls", "served", "refused", "why"),
    [(MRoPE, "original", "renumber", "M-RoPE"), (Tiled, "renumber", "original", "numbers a 1-D model's tokens")],
)
def test_each_family_serves_one_choice_and_refuses_the_other(cls, served, refused, why):
    proc = processor(cls)
    assert proc.arr_coc_options({"arr_coc": {"budget": 0.25, "positions": served}}).positions == served
    assert proc.arr_coc_options({"arr_coc": {"budget": 0.25}}).positions is None  # the family's own choice
    with pytest.raises(ArrCocOptionError, match=f"positions='{refused}' cannot be served .*{why}") as err:
        proc.arr_coc_options({"arr_coc": {"positions": refused}})
    assert "\n" not in str(err.value)
