"""Issue 43, part 1: relevance checkpoints validated at load, with the file and the field named.

Every case of the issue's list: NaN / Infinity in config.json (term weights, information weights, the balancer's
temperature), negative weights and tiers, a number given as a string or a boolean, tensor data overwritten with 0xFF
bytes, a truncated model.safetensors or config.json, a newer ``version``; a relevance that yields a non-finite
score at run time is an error for that item; the CLI's JSON is strict. Old checkpoints (the shipped one, files without
``version``) load as before, bit for bit. Texture mode and small images only (no OCR model is loaded)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from arr_coc.cli import main
from arr_coc.config import RelevanceConfig
from arr_coc.realizing import _CHECKPOINTS, Realizer, allocate

pytest.importorskip("safetensors", reason="checkpoints are safetensors files")

FOLDER = _CHECKPOINTS / "learned-2026-11"
QUERY = "What is the total?"


def _page() -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8))


def _copy(tmp_path: Path, name: str = "ck") -> Path:
    folder = tmp_path / name
    shutil.copytree(FOLDER, folder)
    return folder


def _edit_config(folder: Path, text_edit) -> None:
    path = folder / "config.json"
    path.write_text(text_edit(path.read_text()))


def _set(field: str, value_json: str):
    """An edit of config.json's text: ``"field": <value_json>`` at the top level (NaN / Infinity as Python writes)."""

    def edit(text: str) -> str:
        data = json.loads(text)
        data[field] = "__X__"
        return json.dumps(data, indent=1).replace('"__X__"', value_json)

    return edit


# ----- bad numbers in config.json ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("term_weights", "[NaN, 1.0, 0.5]", "term_weights[0]"),  # the issue's trigger
        ("information", '{"entropy": NaN, "edge_density": 0.3, "sobel_mag": 0.2}', "information.entropy"),
        ("balancer_temperature", "NaN", "balancer_temperature"),
        ("information", '{"entropy": Infinity, "edge_density": 0.3}', "information.entropy"),
        ("term_weights", "[3.0, -1.0, 0.5]", "term_weights[1]"),  # negative weight
        ("perspectival", '{"sal_spectral": -0.4, "sal_contrast": 0.3}', "perspectival.sal_spectral"),
        ("adaptive_tiers", "[-64, 100, 160]", "adaptive_tiers"),  # negative tier
        ("adaptive_tiers", "[100, 64]", "adaptive_tiers"),  # not ascending
        ("term_weights", '["0.5", 1.0, 0.5]', "term_weights[0]"),  # a string for a number
        ("edge_quantile", '"0.5"', "edge_quantile"),
        ("balancer_temperature", "true", "balancer_temperature"),  # a boolean is not a number
        ("entropy_bins", "16.5", "entropy_bins"),  # not an integer
        ("adaptive_mass", "NaN", "adaptive_mass"),  # refused before too: still refused, now with the file
        ("balancer_temperature", "0.0", "balancer_temperature"),
        ("where_scale", "1e-300", "where_scale"),  # divides: exp(-d / scale) would underflow to 0 / 0
    ],
)
def test_a_bad_number_in_config_json_is_refused_naming_file_and_field(
    tmp_path: Path, field: str, value: str, named: str
) -> None:
    folder = _copy(tmp_path)
    _edit_config(folder, _set(field, value))
    with pytest.raises(ValueError) as err:
        Realizer.from_pretrained(folder)
    message = str(err.value)
    assert "config.json" in message and named in message, message


def test_the_nan_checkpoint_of_the_issue_fails_in_the_cli_with_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "1225 -> 400 visual tokens", exit 0, every score NaN, bare NaN in out.json."""
    folder = _copy(tmp_path)
    _edit_config(folder, _set("term_weights", "[NaN, 1.0, 0.5]"))
    page = tmp_path / "page.png"
    _page().save(page)
    out = tmp_path / "out.json"
    code = main(["allocate", str(page), "-q", QUERY, "--mode", "texture", "--relevance", str(folder),
                 "--json", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "config.json" in err and "term_weights[0]" in err and "Traceback" not in err


def test_a_reading_section_value_of_the_wrong_type_is_refused_at_load(tmp_path: Path) -> None:
    """The text path's settings are checked when the checkpoint loads, not on the first text-mode page."""
    folder = _copy(tmp_path)

    def edit(text: str) -> str:
        data = json.loads(text)
        data["reading"]["ocr"]["box_thresh"] = "0.5"
        return json.dumps(data)

    _edit_config(folder, edit)
    with pytest.raises(ValueError, match=r"config\.json.*reading\.ocr\.box_thresh"):
        Realizer.from_pretrained(folder)


def test_unknown_and_missing_fields(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _edit_config(folder, _set("edge_quantiel", "0.5"))
    with pytest.raises(ValueError, match=r"config\.json.*edge_quantiel"):
        Realizer.from_pretrained(folder)
    folder = _copy(tmp_path, "missing")
    _edit_config(folder, lambda t: json.dumps({k: v for k, v in json.loads(t).items() if k != "term_weights"}))
    assert Realizer.from_pretrained(folder).config.term_weights == RelevanceConfig().term_weights  # the default


# ----- damaged files -----------------------------------------------------------------------------------------------
def test_a_truncated_config_json_is_named(tmp_path: Path) -> None:
    """Before: "Unterminated string starting at: line 97 column 4", without the file."""
    folder = _copy(tmp_path)
    text = (folder / "config.json").read_text()
    (folder / "config.json").write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"config\.json: not valid JSON.*truncated or corrupt"):
        Realizer.from_pretrained(folder)


def test_a_truncated_model_safetensors_is_named_and_one_line_in_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a full traceback and exit 1 (which in batch mode means "some lines failed")."""
    folder = _copy(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"model\.safetensors: .*truncated or corrupt"):
        Realizer.from_pretrained(folder)
    page = tmp_path / "page.png"
    _page().save(page)
    code = main(["allocate", str(page), "-q", QUERY, "--mode", "texture", "--relevance", str(folder)])
    err = capsys.readouterr().err
    assert code == 2 and "model.safetensors" in err and "Traceback" not in err


def test_tensor_data_overwritten_with_ff_bytes_is_refused(tmp_path: Path) -> None:
    """Before: 250 NaN weights loaded and the kept tokens changed."""
    folder = _copy(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:-1000] + b"\xff" * 1000)
    with pytest.raises(ValueError, match=r"model\.safetensors: tensor \S+ holds \d+ NaN"):
        Realizer.from_pretrained(folder)


def test_a_tensor_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    folder = _copy(tmp_path)
    state = load_file(str(folder / "model.safetensors"))
    state["mean"] = torch.zeros(3)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(ValueError, match=r"model\.safetensors: tensor mean has shape \(3,\)"):
        Realizer.from_pretrained(folder)


@pytest.mark.parametrize(
    ("field", "value"), [("hidden", '"16"'), ("bound", "NaN"), ("residual", "1"), ("members", "5.0")]
)
def test_a_bad_value_in_scorer_json_is_refused(tmp_path: Path, field: str, value: str) -> None:
    folder = _copy(tmp_path)
    data = json.loads((folder / "scorer.json").read_text())
    data[field] = "__X__"
    (folder / "scorer.json").write_text(json.dumps(data).replace('"__X__"', value))
    with pytest.raises(ValueError, match=rf"scorer\.json: .*{field}"):
        Realizer.from_pretrained(folder)


# ----- versions ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["config.json", "scorer.json"])
def test_a_newer_version_says_upgrade(tmp_path: Path, name: str) -> None:
    """Before: "unknown RelevanceConfig fields ['version']", no hint of a newer release."""
    folder = _copy(tmp_path)
    data = json.loads((folder / name).read_text())
    (folder / name).write_text(json.dumps({"version": 99, **data}))
    with pytest.raises(ValueError, match=rf"{name}: made by a newer release of arr-coc-vis.*upgrade"):
        Realizer.from_pretrained(folder)


def test_written_checkpoints_carry_the_version_and_load_back(tmp_path: Path) -> None:
    r = Realizer.from_pretrained("learned")
    r.save_pretrained(tmp_path / "saved")
    for name in ("config.json", "scorer.json"):
        assert json.loads((tmp_path / "saved" / name).read_text())["version"] == 1
    back = Realizer.from_pretrained(tmp_path / "saved")
    assert back.config == r.config
    feats = np.random.default_rng(1).random((40, len(r.box_scorer.features))).astype(np.float32)
    assert np.array_equal(back.box_scorer.box_scores(feats), r.box_scorer.box_scores(feats))


def test_the_shipped_checkpoint_has_no_version_field_and_loads_as_before() -> None:
    """Old files (no version) are the first format; the shipped one gives the same allocation as its config built
    directly (bit for bit)."""
    assert "version" not in json.loads((FOLDER / "config.json").read_text())
    r = Realizer.builtin("learned")
    direct = Realizer(RelevanceConfig.from_dict(json.loads((FOLDER / "config.json").read_text())))
    a = allocate(_page(), QUERY, "adaptive", mode="texture", realizer=r)
    b = allocate(_page(), QUERY, "adaptive", mode="texture", realizer=direct)
    assert torch.equal(a.keep, b.keep) and np.array_equal(a.scores, b.scores)


# ----- run time ----------------------------------------------------------------------------------------------------
def test_a_non_finite_score_at_run_time_is_an_error_for_that_item() -> None:
    """A realizer whose numbers went bad after loading (here: a NaN weight set in place) never orders by NaN."""
    r = Realizer()
    with torch.no_grad():
        r.information.weight[0] = float("nan")
    with pytest.raises(ValueError, match="non-finite score"):
        allocate(_page(), QUERY, 64, mode="texture", realizer=r)


def test_a_batch_line_with_non_finite_scores_is_an_error_line_and_the_others_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arr_coc.cli as cli

    bad = Realizer()
    with torch.no_grad():
        bad.information.weight[0] = float("inf")
    real = cli.load_relevance
    monkeypatch.setattr(cli, "load_relevance", lambda folder: bad if folder is not None else real(folder))
    _page().save(tmp_path / "a.png")
    batch = tmp_path / "in.jsonl"
    batch.write_text(json.dumps({"id": "a", "image": "a.png", "query": QUERY}) + "\n")
    out = tmp_path / "out.jsonl"
    code = main(["allocate", "--batch", str(batch), "--out", str(out), "--mode", "texture", "--relevance", "x"])
    line = json.loads(out.read_text())
    assert code == 1 and "non-finite" in line["error"]


def test_config_json_is_strict_json() -> None:
    """No NaN or Infinity is ever written: a config that holds one cannot be built."""
    with pytest.raises(ValueError, match="term_weights"):
        RelevanceConfig(term_weights=(math.nan, 1.0, 0.5))
    text = RelevanceConfig().checkpoint_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in a checkpoint"))
