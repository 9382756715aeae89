"""`arr-coc allocate`: the JSON contract, the heatmap, batch mode with bad lines, and clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from arr_coc.cli import main

FIELDS = ["id", "grid", "resized", "original", "budget", "kept", "scores", "mode", "family", "query"]


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


def test_allocate_json_and_heatmap(tmp_path, image_path, capsys) -> None:
    out_json, out_png = tmp_path / "a.json", tmp_path / "h.png"
    rc = main([
        "allocate", str(image_path), "--query", "What is the date?", "--budget", "30", "--mode", "texture",
        "--json", str(out_json), "--heatmap", str(out_png),
    ])  # fmt: skip
    assert rc == 0
    captured = capsys.readouterr()
    line = captured.out.splitlines()[0]
    assert "-> 30 visual tokens" in line and " ms" in line and "mode texture" in line
    assert "loading the OCR" not in line and "OCR" not in line  # texture mode loads and runs no OCR
    assert "query-blind" not in captured.err
    data = json.loads(out_json.read_text())
    assert list(data) == FIELDS
    assert (data["mode"], data["family"], data["query"]) == ("texture", "qwen2.5-vl", "What is the date?")
    rows, cols = data["grid"]
    assert data["original"] == [700, 500] and data["resized"] == [cols * 28, rows * 28]
    assert data["budget"] == len(data["kept"]) == 30
    flat = [r * cols + c for r, c in data["kept"]]
    assert flat == sorted(flat) and len(set(flat)) == 30  # raster order
    scores = np.array(data["scores"])
    assert scores.shape == (rows, cols)
    kept = scores.ravel()[flat]
    assert kept.min() >= np.delete(scores.ravel(), flat).max() - 1e-4  # the kept cells are the top-scoring ones
    png = Image.open(out_png)
    assert png.width == cols * (png.width // cols) and png.height > rows * (png.width // cols)  # picture + legend


def test_allocate_families_and_pixels(image_path, tmp_path) -> None:
    out = tmp_path / "a.json"
    assert main(["allocate", str(image_path), "-q", "Total?", "--family", "qwen3-vl", "--budget", "0.5",
                 "--mode", "texture", "--max-pixels", str(100 * 32 * 32), "--json", str(out)]) == 0  # fmt: skip
    data = json.loads(out.read_text())
    assert data["grid"][0] * data["grid"][1] <= 100 and data["resized"][0] % 32 == 0


def test_batch_reports_bad_lines_and_goes_on(tmp_path, image_path, capsys) -> None:
    (tmp_path / "junk.png").write_bytes(b"not an image")
    lines = [
        {"id": "ok-1", "image": image_path.name, "query": "Amount due?"},
        {"id": "bad-image", "image": "junk.png", "query": "?"},
        {"id": "bad-budget", "image": image_path.name, "query": "?", "budget": -4},
        "this is not json",
        {"id": "ok-2", "image": str(image_path), "query": ""},
    ]
    batch = tmp_path / "in.jsonl"
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines)
    batch.write_text("\n" + text.replace("\n", "\n  \n", 1) + "\n\n")  # blank lines: skipped, not counted
    out = tmp_path / "out.jsonl"
    rc = main(["allocate", "--batch", str(batch), "--out", str(out), "--budget", "0.2", "--mode", "texture"])
    assert rc == 1  # some lines failed
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["ok-1", "bad-image", "bad-budget", "line-6", "ok-2"]  # line numbers: file
    assert list(records[0]) == FIELDS and list(records[4]) == FIELDS
    assert "not an image" in records[1]["error"] and "budget" in records[2]["error"]
    assert "error" in records[3]
    captured = capsys.readouterr()
    assert "2 allocated, 3 failed, mode texture" in captured.out
    assert "1 line(s) had an empty query" in captured.err  # ok-2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["allocate", "missing.png", "--query", "Total?", "--mode", "texture"], "does not exist"),
        (["allocate", "--mode", "texture"], "give an IMAGE"),
        (["allocate", "missing.png", "--mode", "texture"], "give the question with --query"),
    ],
)
def test_errors_are_clear(argv, message, capsys) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("budget", ["0", "-1", "nan", "2.5", "many"])
def test_bad_budget_is_a_usage_error(budget, image_path, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["allocate", str(image_path), "--budget", budget])
    assert exc.value.code == 2 and "budget" in capsys.readouterr().err


def test_empty_query_is_allowed_and_said_to_be_query_blind(image_path, capsys) -> None:
    assert main(["allocate", str(image_path), "--query", "", "--budget", "5", "--mode", "texture"]) == 0
    captured = capsys.readouterr()
    assert "-> 5 visual tokens" in captured.out and "query-blind" in captured.err


def test_version_and_help_show_examples_and_defaults(capsys) -> None:
    import arr_coc

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"arr-coc {arr_coc.__version__}"
    for command in ("allocate", "ask"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())  # unwrap argparse's line breaks
        assert "examples:" in text and "exit codes:" in text and f"arr-coc {command} examples/" in text
        assert "(default: adaptive)" in text if command == "allocate" else "(default: 0.25)" in text
        assert "(default: auto)" in text and "in pixels" in text
    assert "most tokens to generate for the answer (default: 64)" in text  # ask --max-new-tokens
