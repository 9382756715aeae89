"""How ``compress`` chooses its tokens is declared, never guessed from the scorer's identity.

``scorer="auto"`` declares the ``"decide"`` path (``Realizer.decide`` over a modality's items at once); a callable
declares ``"per_item"`` (the scorer on each item's ``ImageContext``, then ``Realizer.choose``). A timer wrapped
around the default scorer used to switch paths silently (``scorer is default_scorer``); now it takes the path its
options declare, and ``path="decide"`` with anything but the default scorer is refused.
"""

from __future__ import annotations

import functools

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_compress import Sample, batch, build  # noqa: E402

from arr_coc.integrations import CompressOptions, compress  # noqa: E402
from arr_coc.integrations.base import default_scorer, resolve_scorer  # noqa: E402


def _timed(scorer):
    calls = []

    @functools.wraps(scorer)  # copies __name__, __doc__ and __dict__: must not make it look like the default
    def wrapped(ctx):
        calls.append(ctx.index)
        return scorer(ctx)

    return wrapped, calls


@pytest.fixture(scope="module")
def model_and_inputs():
    model = build("qwen2_vl")
    two = [Sample(model, [[9, 10], ("image", (1, 8, 8)), [11], ("image", (1, 4, 8)), [12]])]
    return model, batch(two)


def test_the_path_is_declared_by_what_was_written() -> None:
    wrapped, _ = _timed(resolve_scorer("auto"))
    assert CompressOptions.build(0.5).path == "decide"
    assert CompressOptions.build(0.5, scorer="realizing").path == "decide"
    assert CompressOptions.build(0.5, scorer=default_scorer).path == "decide"  # the function itself, unwrapped
    assert CompressOptions.build(0.5, scorer="cosine").path == "per_item"
    assert CompressOptions.build(0.5, scorer=wrapped).path == "per_item"
    assert CompressOptions.build(0.5, scorer=wrapped, path="per_item").path == "per_item"
    with pytest.raises(ValueError, match="path='decide' .* only goes with scorer='auto'"):
        CompressOptions.build(0.5, scorer=wrapped, path="decide")
    with pytest.raises(ValueError, match="path must be one of"):
        CompressOptions.build(0.5, path="guess")


def test_a_wrapped_default_scorer_takes_the_declared_path(model_and_inputs) -> None:
    """The wrapper is called once per item (the per-item path) and keeps the tokens the default path keeps."""
    model, inputs = model_and_inputs
    wrapped, calls = _timed(resolve_scorer("auto"))
    with torch.no_grad():
        auto = compress(model, budget=5, scorer="auto")
        auto(**inputs)
        timed = compress(model, budget=5, scorer=wrapped)
        timed(**inputs)
    assert auto.options.path == "decide" and timed.options.path == "per_item"
    assert calls == [0, 1]  # one call per image: the path the options declared
    for a, b in zip(auto.last_allocation[0], timed.last_allocation[0], strict=True):
        assert a.keep.tolist() == b.keep.tolist() and a.budget == b.budget == 5


def test_each_path_runs_its_own_decision(model_and_inputs) -> None:
    """``"decide"``: one ``Realizer.decide`` for the batch's images; ``"per_item"``: one ``Realizer.choose`` an item
    and no ``decide``."""
    model, inputs = model_and_inputs
    wrapped, _ = _timed(resolve_scorer("auto"))
    for scorer, expected in (("auto", {"decide": 1}), (wrapped, {"choose": 2})):
        cm = compress(model, budget=5, scorer=scorer)
        counts: dict[str, int] = {}
        for name in ("decide", "choose"):
            method = getattr(cm.realizer, name)

            def spy(*args, _name=name, _method=method, _counts=counts, **kwargs):
                _counts[_name] = _counts.get(_name, 0) + 1
                return _method(*args, **kwargs)

            setattr(cm.realizer, name, spy)
        try:
            with torch.no_grad():
                cm(**inputs)
        finally:
            for name in ("decide", "choose"):
                delattr(cm.realizer, name)
        assert counts == expected, (cm.options.path, counts)
