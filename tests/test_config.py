"""RelevanceConfig: one serialisable config that every scorer, the balancer and the budget actually read."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from arr_coc.config import RelevanceConfig
from arr_coc.query import parse_query
from arr_coc.realizing import Realizer


def test_json_round_trip_of_every_field() -> None:
    cfg = RelevanceConfig(
        grey_weights=(0.3, 0.6, 0.1),
        information={"entropy": 1.0},
        balancer_rules=((0.0,) * 6, (1.0,) * 6, (2.0,) * 6),
        adaptive_tiers=(32, 64),
        reading={"layout_gain": 2.0},
    )
    text = cfg.to_json()
    assert json.loads(text) == cfg.to_dict()
    back = RelevanceConfig.from_json(text)
    assert back == cfg and isinstance(back.balancer_rules[0], tuple)
    assert set(cfg.to_dict()) == {f.name for f in dataclasses.fields(RelevanceConfig)}
    assert RelevanceConfig.from_dict({}) == RelevanceConfig()


@pytest.mark.parametrize(
    "bad",
    [
        {"edge_quantile": 1.5},
        {"information": {"no_such_channel": 1.0}},
        {"balancer_rules": ((1.0,) * 6,)},
        {"adaptive_tiers": (100, 64)},
        {"term_weights": (1.0, 2.0)},
    ],
)
def test_bad_values_are_refused_with_the_field_name(bad: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        RelevanceConfig(**bad)
    with pytest.raises(ValueError, match="unknown RelevanceConfig fields"):
        RelevanceConfig.from_dict({"edge_quantiel": 0.5})


def test_the_config_reaches_every_part() -> None:
    """Each part reads its numbers from the config: changing one changes that part's parameters / output."""
    cfg = RelevanceConfig(
        information={"entropy": 2.0, "sobel_mag": 1.0},
        perspectival={"sal_color": 1.0},
        term_weights=(1.0, 2.0, 3.0),
        where_scale=0.5,
        colour_scale=0.25,
        balancer_rules=tuple(tuple(float(i + j) for j in range(6)) for i in range(3)),
        balancer_temperature=2.0,
    )
    r = Realizer(cfg)
    assert r.information.channels == ("entropy", "sobel_mag") and r.information.weight.tolist() == [2.0, 1.0]
    assert r.perspectival.channels == ("sal_color",)
    assert r.participatory.term_weight.tolist() == [1.0, 2.0, 3.0]
    assert r.participatory.where_scale.item() == 0.5 and r.participatory.colour_scale.item() == 0.25
    assert r.balancer.linear.weight[2].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0] and r.balancer.temperature == 2.0
    q = "What is the total?"
    assert parse_query(q, RelevanceConfig(specificity_per_word=0.0)).specificity < parse_query(q).specificity
    scores = torch.rand(500, generator=torch.Generator().manual_seed(0)) ** 8  # peaked: adaptive picks a low tier
    assert Realizer(RelevanceConfig(adaptive_tiers=(10, 20))).select(scores, "adaptive").numel() in (10, 20)


def test_reading_section_reaches_the_text_path(form_image):
    """``RelevanceConfig.reading`` is the text path's ``ReadingConfig``: the realizer owns a ``Reading`` built from
    it (the default config shares the process-wide one), and a changed reading weight changes what allocate keeps."""
    pytest.importorskip("rapidocr")
    from arr_coc import allocate
    from arr_coc.reading import ReadingConfig, default_reading
    from arr_coc.realizing import Realizer

    assert Realizer().reading is default_reading()
    off = ReadingConfig().replace(layout={"enabled": False}, semantic={"enabled": False})
    r = Realizer(RelevanceConfig(reading=off.to_dict()))
    assert r.reading.config == off and r.reading is r.reading  # built once, owned by the realizer
    q = "How much must be paid?"
    plain = Realizer(RelevanceConfig(reading=ReadingConfig().replace(semantic={"enabled": False}).to_dict()))
    a = allocate(form_image, q, budget=12, mode="text", realizer=plain)
    b = allocate(form_image, q, budget=12, mode="text", realizer=r)
    assert not np.array_equal(a.scores, b.scores)  # the layout rule moved relevance from the key to its value
