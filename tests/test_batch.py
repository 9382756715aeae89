"""``arr-coc allocate --batch IN.jsonl --out OUT.jsonl``: each line answered or named, the run never stopped by one.

A line with an unreadable image, wrong JSON types or a duplicate id becomes an error line and the later lines go on;
an IMAGE beside ``--batch``, a folder as the batch file and ``--out`` equal to ``--batch`` are refused first; the
help states where the images of a batch file are looked up.
"""

from __future__ import annotations

import json

import pytest

from arr_coc.cli import build_parser, main


@pytest.fixture
def image_path(tmp_path, form_image):
    path = tmp_path / "form.png"
    form_image.save(path)
    return path


def test_an_empty_file_does_not_stop_a_batch(tmp_path, image_path, capsys) -> None:
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "bm.bmp").write_bytes(b"BM")
    lines = [
        {"id": "e", "image": "empty.png", "query": "x"},
        {"id": "b", "image": "bm.bmp", "query": "x"},
        {"id": "ok", "image": image_path.name, "query": "What is the date?"},
    ]
    batch = tmp_path / "in.jsonl"
    batch.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = tmp_path / "out.jsonl"
    assert main(["allocate", "--batch", str(batch), "--out", str(out), "--budget", "8", "--mode", "texture"]) == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["e", "b", "ok"]
    assert "empty or cut short" in records[0]["error"] and "empty or cut short" in records[1]["error"]
    assert records[2]["budget"] == 8


def test_an_image_beside_batch_is_an_error(image_path, tmp_path, capsys) -> None:
    batch = tmp_path / "in.jsonl"
    batch.write_text(json.dumps({"id": "a", "image": image_path.name, "query": "x"}) + "\n")
    argv = ["allocate", str(image_path), "--batch", str(batch), "--out", str(tmp_path / "o.jsonl")]
    assert main(argv) == 2
    assert "not both" in capsys.readouterr().err and not (tmp_path / "o.jsonl").exists()


def test_duplicate_batch_ids_are_error_lines(image_path, tmp_path) -> None:
    batch = tmp_path / "in.jsonl"
    items = [("a", "x"), ("b", "y"), ("a", "z")]
    batch.write_text("\n".join(json.dumps({"id": i, "image": image_path.name, "query": q}) for i, q in items) + "\n")
    out = tmp_path / "o.jsonl"
    assert main(["allocate", "--batch", str(batch), "--out", str(out), "--budget", "4", "--mode", "texture"]) == 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == ["a", "b", "a"] and "budget" in records[0] and "budget" in records[1]
    assert records[2]["error"] == "duplicate id 'a' (first used on line 1); ids must be unique"


def test_batch_path_rule_is_in_the_help() -> None:
    sub = build_parser()._subparsers._group_actions[0].choices["allocate"]  # type: ignore[union-attr]
    text = " ".join(sub.format_help().split())
    assert "relative to this file's folder" in text and "relative to the batch file's folder" in text


def _batch(tmp_path, lines: list[str]):
    batch = tmp_path / "in.jsonl"
    batch.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return batch


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_batch_lines_of_wrong_json_types_are_error_lines_and_the_rest_go_on(image_path, tmp_path) -> None:
    name = image_path.name
    lines = [
        json.dumps({"id": "number", "image": 5, "query": "x"}),
        json.dumps({"id": "null", "image": None, "query": "x"}),
        json.dumps({"id": 1.5, "image": name, "query": "x"}),
        json.dumps({"id": "q-null", "image": name, "query": None}),
        json.dumps({"id": "q-number", "image": name, "query": 7}),
        json.dumps({"id": "b-bool", "image": name, "query": "x", "budget": True}),
        json.dumps([name, "x"]),
        '{"id": "broken", "image": ',
        json.dumps({"id": 5, "image": name, "query": "x"}),
        json.dumps({"id": "5", "image": name, "query": "x"}),
        json.dumps({"id": "last", "image": name, "query": "x"}),
    ]
    out = tmp_path / "out.jsonl"
    assert main(["allocate", "--batch", str(_batch(tmp_path, lines)), "--out", str(out), "--budget", "4",
                 "--mode", "texture"]) == 1  # fmt: skip
    records = _records(out)
    errors = [r.get("error", "") for r in records]
    assert len(records) == len(lines)  # every line answered: the bad ones did not stop the batch
    assert errors[0] == '"image" must be a non-empty path string, got number 5'
    assert errors[1] == '"image" must be a non-empty path string, got null None'
    assert errors[2] == '"id" must be a string or an integer, got number 1.5'
    assert errors[3].startswith('"query" must be a string') and "null" in errors[3]
    assert errors[4].startswith('"query" must be a string') and "number 7" in errors[4]
    assert errors[5].startswith('"budget" must be a number or a string') and "boolean" in errors[5]
    assert "is a JSON array, not an object" in errors[6]
    assert errors[7].startswith("line 8 is not JSON")
    assert records[8]["id"] == 5 and "budget" in records[8]  # an integer id is allowed ...
    assert errors[9] == "duplicate id '5' (first used on line 9); ids must be unique"  # ... and is the id "5"
    assert records[10]["id"] == "last" and records[10]["budget"] == 4


def test_a_folder_as_batch_file_says_so(tmp_path, capsys) -> None:
    assert main(["allocate", "--batch", str(tmp_path), "--out", str(tmp_path / "o.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "does not exist" not in err


def test_out_equal_to_batch_does_not_overwrite_the_input(image_path, tmp_path, capsys) -> None:
    batch = _batch(tmp_path, [json.dumps({"id": "a", "image": image_path.name, "query": "x"})])
    before = batch.read_bytes()
    same = tmp_path / "." / batch.name  # the same file, spelled differently
    assert main(["allocate", "--batch", str(batch), "--out", str(same), "--mode", "texture"]) == 2
    assert "the --batch file itself" in capsys.readouterr().err and batch.read_bytes() == before
