"""The vLLM plugin's document budget without an engine: the processor cache seen all-or-none, the document key."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

from arr_coc.vllm.document import AllOrNone, document_key  # noqa: E402
from arr_coc.vllm.options import ArrCocOptionError, parse_options  # noqa: E402


class _Cache:
    def __init__(self, held):
        self.held = set(held)
        self.touched = []

    def is_cached(self, hashes):
        return [h in self.held for h in hashes]

    def touch_sender_cache_item(self, h):
        self.touched.append(h)


def test_all_or_none():
    cache = AllOrNone(_Cache({"a", "b"}))
    assert cache.is_cached(["a", "b"]) == [True, True]
    assert cache.is_cached(["a", "c"]) == [False, False]  # a partial hit: every page processed again
    assert cache.is_cached(["c", "d"]) == [False, False]
    cache.touch_sender_cache_item("a")  # everything else goes to the cache itself
    assert cache._cache.touched == ["a"]


def test_document_key_and_options():
    assert document_key(["a", "b"]) != document_key(["b", "a"]) and len(document_key(["a"])) == 32
    assert parse_options({"budget": 0.1, "budget_scope": "prompt"}).budget_scope == "prompt"
    assert parse_options({"budget": 0.1}).budget_scope == "item"
    assert parse_options({"budget": 0.1, "_document": "x"}) is not None  # the internal key is not an unknown option
    with pytest.raises(ArrCocOptionError, match="budget_scope"):
        parse_options({"budget_scope": "pages"})
