"""Issue 43, part 2: a fuzz test over relevance configs. Random finite and non-finite values, wrong types, missing and
extra keys: each config.json either loads and gives finite scores on a small image (texture mode), or is refused with
the field named; never a silent NaN allocation."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from arr_coc.config import RelevanceConfig
from arr_coc.realizing import Realizer, allocate

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

DEFAULT = RelevanceConfig().to_dict()
FIELDS = [k for k in DEFAULT if k != "reading"]
PAGE = Image.fromarray(np.random.default_rng(0).integers(0, 255, (90, 120, 3), dtype=np.uint8))

# a value a config might hold, good or bad: finite and non-finite numbers of every size, wrong types
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-2.0, max_value=2.0),  # near the defaults: most load
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from([0, 1, 2, 8, 64, 400, 0.0, 1e-300, 1e300, -0.0, 0.5, 1.0]),
)
wrong_types = st.one_of(
    st.sampled_from(["0.5", "", "NaN", None, True, False, {}, [], {"a": 1}]),
    st.text(max_size=4),
)
scalars = st.one_of(numbers, wrong_types)


def _like(default: Any) -> st.SearchStrategy[Any]:
    """Values shaped like a field's default (lists of the same length, dicts of its keys), with random entries."""
    if isinstance(default, list):
        inner = st.lists(scalars, min_size=0, max_size=4) if not default or not isinstance(default[0], list) else None
        same = st.tuples(*[_like(v) for v in default]).map(list)
        return st.one_of(same, inner) if inner is not None else same
    if isinstance(default, dict):
        keys = st.sampled_from([*default, "entropy", "sal_color", "no_such_channel"])
        return st.one_of(
            st.fixed_dictionaries({k: _like(v) for k, v in default.items()}),
            st.dictionaries(keys, scalars, max_size=4),
        )
    return scalars


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    data = dict(DEFAULT)
    for name in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique=True)):
        action = draw(st.sampled_from(["value", "value", "like", "missing"]))
        if action == "missing":
            data.pop(name)
        elif action == "like":
            data[name] = draw(_like(DEFAULT[name]))
        else:
            data[name] = draw(scalars)
    if draw(st.booleans()) and draw(st.booleans()):
        data[draw(st.sampled_from(["extra", "versoin", "reading_x"]))] = draw(scalars)
    if draw(st.booleans()) and draw(st.booleans()):
        data["reading"] = {"ocr": {"box_thresh": draw(scalars)}}
    if draw(st.booleans()) and draw(st.booleans()):
        data["version"] = draw(scalars)
    return data


def _keys(data: dict[str, Any]) -> set[str]:
    names = set(data)
    for key, value in data.items():
        if isinstance(value, dict):
            names |= {f"{key}.{k}" for k in value}
            names |= {f"{key}.{k}.{kk}" for k, v in value.items() if isinstance(v, dict) for kk in v}
    return names


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(configs())
def test_a_config_loads_and_scores_finite_or_is_refused_naming_the_field(data: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "config.json").write_text(json.dumps(data))  # NaN / Infinity written as Python writes them
        try:
            realizer = Realizer.from_pretrained(folder)
        except ValueError as err:
            message = str(err)
            assert "config.json" in message, message
            changed = {k for k in _keys(data) if k not in DEFAULT or data.get(k) != DEFAULT.get(k)}
            changed |= {k for k in DEFAULT if k not in data}
            assert any(name.split(".")[0].split("[")[0] in message for name in changed | {"version"}), message
            hypothesis.event("refused")
            return
    hypothesis.event("loaded")
    a = allocate(PAGE, "What is the total in the top left?", "adaptive", mode="texture", realizer=realizer)
    assert np.isfinite(a.scores).all() and a.budget >= 1
    assert all(math.isfinite(w) for w in a.weights.values())
