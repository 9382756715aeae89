"""Issue 43, part 4 for ``arr-coc eval``: the output folder records the options that shape its rows
(``manifest.json``); a rerun with other options refuses to mix, naming the difference, or starts afresh with
``--overwrite``. Before: a run cut short and rerun with another ``--max-pixels`` mixed rows made at 2,014 and 494
tokens into one table, whose header stated the new bounds. A tiny random checkpoint, one generated document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from arr_coc.cli import main  # noqa: E402

BASE = ["--task", "docgen", "--limit", "1", "--budgets", "1.0,0.5", "--allocator", "random", "--max-new-tokens", "2",
        "--min-pixels", "3136", "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def model(tiny_checkpoint_folder) -> Path:
    return tiny_checkpoint_folder("qwen2.5-vl")


def _eval(model: Path, out: Path, *extra: str) -> int:
    return main(["eval", "--model", str(model), "--out", str(out), *BASE, *extra])


def _predictions(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines() if line.strip()]


def test_eval_records_its_options_and_refuses_to_mix_other_ones(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    assert _eval(model, out, "--max-pixels", str(28 * 28 * 40)) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["options"]["max_pixels"] == 28 * 28 * 40 and manifest["options"]["seed"] == 0
    assert manifest["options"]["model"] == str(model.resolve()) and manifest["options"]["relevance"]["given"] is None
    assert manifest["options"]["relevance"]["default"] == "routed-cells"  # the default, by name (issue 40 item 4)
    assert set(manifest["recorded"]["variants"]) == {"unpruned", "random@0.5"}
    lines = (out / "predictions.jsonl").read_text()
    cut = lines.splitlines(keepends=True)[:1]  # a run cut short after its first row
    (out / "predictions.jsonl").write_text("".join(cut))
    capsys.readouterr()
    assert _eval(model, out, "--max-pixels", str(28 * 28 * 12)) == 2  # other pixel bounds: refused
    err = capsys.readouterr().err
    assert "max_pixels: 31360 then, 9408 now" in err and "--overwrite" in err
    assert (out / "predictions.jsonl").read_text() == "".join(cut), "nothing mixed in"
    assert _eval(model, out, "--max-pixels", str(28 * 28 * 40), "--seed", "3") == 2  # another seed: refused too
    assert "seed: 0 then, 3 now" in capsys.readouterr().err
    assert _eval(model, out, "--max-pixels", str(28 * 28 * 12), "--overwrite") == 0  # afresh, when asked
    assert json.loads((out / "manifest.json").read_text())["options"]["max_pixels"] == 28 * 28 * 12
    rows = _predictions(out)
    assert len(rows) == 2 and {r["variant"] for r in rows} == {"unpruned", "random@0.5"}
    assert "9,408" in (out / "results.md").read_text()


def test_the_same_options_resume_and_an_old_folder_without_manifest_resumes_with_a_note(
    model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval"
    assert _eval(model, out, "--max-pixels", str(28 * 28 * 12)) == 0
    before = _predictions(out)
    assert _eval(model, out, "--max-pixels", str(28 * 28 * 12), "--budgets", "1.0,0.5,0.25") == 0  # a new budget
    after = _predictions(out)
    assert after[: len(before)] == before and {r["variant"] for r in after[len(before) :]} == {"random@0.25"}
    assert "random@0.25" in json.loads((out / "manifest.json").read_text())["recorded"]["variants"]
    (out / "manifest.json").unlink()  # a folder written before manifests existed
    capsys.readouterr()
    assert _eval(model, out, "--max-pixels", str(28 * 28 * 12)) == 0
    assert "no manifest.json" in capsys.readouterr().err and (out / "manifest.json").is_file()
