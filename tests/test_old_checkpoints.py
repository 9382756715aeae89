"""Checkpoints saved before the run-time settings left the model's config still load, and decide as they did.

``fixtures/checkpoint_0a8d715/`` was written by the code of 0a8d715 (``make.py`` beside it, run on that version): a
``config.json`` that holds the engine's settings (``cpu_band_elements``, ``texture_cache_items``,
``frames_cache_items``, ``texture_graphs``) next to the model's, and the allocations that version made with it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from arr_coc.allocating import allocate
from arr_coc.config import RUNTIME_FIELDS, RelevanceConfig
from arr_coc.engine import EngineConfig
from arr_coc.model import BUILTIN_RELEVANCE, RelevanceModel
from arr_coc.realizing import Realizer

OLD = Path(__file__).parent / "fixtures" / "checkpoint_0a8d715"


def page() -> Image.Image:
    """The page ``make.py`` allocated on (NumPy's seeded generator: the same pixels on any machine)."""
    pixels = np.full((336, 448, 3), 255, np.uint8)
    pixels[20:60, 20:200] = 0
    pixels[150:170, 230:400] = np.random.default_rng(0).integers(0, 256, (20, 170, 1), dtype=np.uint8)
    pixels[250:320, 300:400] = (200, 30, 30)
    return Image.fromarray(pixels)


def test_an_old_config_with_run_time_fields_loads_and_they_are_ignored() -> None:
    saved = json.loads((OLD / "config.json").read_text())
    assert set(RUNTIME_FIELDS) <= set(saved)  # the old version saved them
    r = Realizer.from_pretrained(OLD)
    assert r.config.edge_quantile == 0.8 and r.config.adaptive_tiers == (16, 32, 64)
    assert r.engine.config == EngineConfig()  # the saved cache sizes are not the model's: the engine's defaults hold
    assert not set(RUNTIME_FIELDS) & set(r.config.to_dict())


def test_an_old_checkpoint_allocates_bit_for_bit_as_the_version_that_saved_it() -> None:
    r = Realizer.from_pretrained(OLD)
    for row in json.loads((OLD / "expected.json").read_text()):
        a = allocate(page(), row["query"], budget=row["budget"], mode="texture", realizer=r)
        assert a.keep.tolist() == row["keep"], row["query"]
        scores = np.ascontiguousarray(a.scores, dtype=np.float32).tobytes()
        assert hashlib.sha256(scores).hexdigest() == row["scores_sha256"], row["query"]


def test_a_new_save_holds_only_the_model(tmp_path: Path) -> None:
    r = Realizer.from_pretrained(OLD)
    r.save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert not set(RUNTIME_FIELDS) & set(saved)
    assert RelevanceConfig.from_dict(saved) == r.config
    assert RelevanceModel.from_pretrained(tmp_path).config == r.config  # the model alone loads it too


@pytest.mark.parametrize("name", sorted(set(BUILTIN_RELEVANCE.values())))
def test_the_shipped_checkpoints_load(name: str) -> None:
    r = Realizer.builtin(name)
    assert r.box_scorer is not None and not set(RUNTIME_FIELDS) & set(r.config.to_dict())


def test_an_unknown_field_is_still_an_error() -> None:
    with pytest.raises(ValueError, match="unknown RelevanceConfig fields"):
        RelevanceConfig.from_dict({"edge_quantil": 0.8})
