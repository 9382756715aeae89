"""Issue 43, parts 3 and 4 for ``arr-coc allocate --batch``: an output that loses nothing and says what made it.

Whole lines only; a rerun resumes by id (and says so), ``--overwrite`` starts afresh; Ctrl-C ends with the "wrote N of
M" summary and exit 130; a full disk is reported with the count and leaves no half line; a second writer is refused by
a lock naming its holder, a dead holder's lock is taken over; a rerun with other options refuses to mix, naming the
difference. Texture mode, tiny images."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import arr_coc.realizing
from arr_coc.cli import main

IDS = ["a", "b", "c"]


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    for i in IDS:
        Image.fromarray(rng.integers(0, 255, (60, 90, 3), dtype=np.uint8)).save(tmp_path / f"{i}.png")
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": i, "image": f"{i}.png", "query": "the total?"}) + "\n" for i in IDS))
    return path


def _run(batch: Path, out: Path, *extra: str) -> int:
    return main(["allocate", "--batch", str(batch), "--out", str(out), "--mode", "texture", "--budget", "4", *extra])


def _lines(out: Path) -> list[dict]:
    text = out.read_text()
    assert text == "" or text.endswith("\n"), "the output ends in half a line"
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The images ``allocate`` was called on (the CLI imports it from arr_coc.realizing at each run)."""
    seen: list[str] = []
    real = arr_coc.realizing.allocate

    def counted(image, *args, **kwargs):
        seen.append(Path(image).stem)
        return real(image, *args, **kwargs)

    monkeypatch.setattr(arr_coc.realizing, "allocate", counted)
    return seen


# ----- resume -------------------------------------------------------------------------------------------------------
def test_a_rerun_resumes_by_id_and_says_so(
    batch: Path, tmp_path: Path, calls: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a rerun over a partial output silently overwrote it (opened with "w") and redid every line."""
    out = tmp_path / "out.jsonl"
    assert _run(batch, out) == 0
    full = out.read_text()
    out.write_text("".join(full.splitlines(keepends=True)[:2]))  # a run cut short after two lines
    calls.clear()
    capsys.readouterr()
    assert _run(batch, out) == 0
    captured = capsys.readouterr()
    assert calls == ["c"], "only the missing line is allocated again"
    assert "resuming" in captured.err and "2 line(s) already there" in captured.err
    assert "2 already there" in captured.out
    assert [r["id"] for r in _lines(out)] == IDS and out.read_text() == full


def test_a_line_cut_short_by_a_crash_is_removed_and_redone(batch: Path, tmp_path: Path, calls: list[str]) -> None:
    out = tmp_path / "out.jsonl"
    assert _run(batch, out) == 0
    full = out.read_text()
    keep = full.splitlines(keepends=True)
    out.write_text(keep[0] + keep[1][:15])  # SIGKILL mid-write of the second line
    calls.clear()
    assert _run(batch, out) == 0
    assert calls == ["b", "c"] and out.read_text() == full


def test_overwrite_starts_afresh(batch: Path, tmp_path: Path, calls: list[str]) -> None:
    out = tmp_path / "out.jsonl"
    assert _run(batch, out) == 0
    calls.clear()
    assert _run(batch, out, "--overwrite") == 0
    assert calls == IDS and [r["id"] for r in _lines(out)] == IDS


# ----- what made them -----------------------------------------------------------------------------------------------
def test_a_rerun_with_other_options_refuses_to_mix_naming_the_difference(
    batch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert _run(batch, out) == 0
    manifest = json.loads((tmp_path / "out.jsonl.manifest.json").read_text())
    assert manifest["options"]["mode"] == "texture" and manifest["options"]["budget"] == 4
    before = out.read_text()
    capsys.readouterr()
    assert _run(batch, out, "--max-pixels", "200000") == 2
    err = capsys.readouterr().err
    assert "max_pixels" in err and "200000 now" in err and "--overwrite" in err
    assert out.read_text() == before, "nothing was written"
    assert _run(batch, out, "--max-pixels", "200000", "--overwrite") == 0
    assert json.loads((tmp_path / "out.jsonl.manifest.json").read_text())["options"]["max_pixels"] == 200000


def test_an_output_without_a_manifest_is_not_resumed_blindly(
    batch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({"id": "a", "grid": [1, 1]}) + "\n")  # written by an older arr-coc
    assert _run(batch, out) == 2
    assert "manifest" in capsys.readouterr().err
    assert _run(batch, out, "--overwrite") == 0 and len(_lines(out)) == 3


# ----- interruption and a full disk ---------------------------------------------------------------------------------
def test_ctrl_c_ends_with_the_summary_and_exit_130(
    batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a KeyboardInterrupt traceback and no summary."""
    real = arr_coc.realizing.allocate

    def interrupted(image, *args, **kwargs):
        if Path(image).stem == "b":
            raise KeyboardInterrupt
        return real(image, *args, **kwargs)

    monkeypatch.setattr(arr_coc.realizing, "allocate", interrupted)
    out = tmp_path / "out.jsonl"
    assert _run(batch, out) == 130
    assert "interrupted: wrote 1 of 3 lines" in capsys.readouterr().err
    assert [r["id"] for r in _lines(out)] == ["a"]
    monkeypatch.setattr(arr_coc.realizing, "allocate", real)
    assert _run(batch, out) == 0 and [r["id"] for r in _lines(out)] == IDS  # the rerun resumes


def test_a_full_disk_is_reported_with_the_count_and_leaves_no_half_line(
    batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: half a line was left and the message did not say how many lines were written."""
    real_write = os.write
    lines_seen = []

    def full_disk(fd: int, data) -> int:
        if bytes(data[:6]) == b'{"id":':
            lines_seen.append(fd)
            if len(lines_seen) == 2:  # the second line: half of it reaches the disk, then the disk is full
                real_write(fd, bytes(data[: len(data) // 2]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_disk)
    out = tmp_path / "out.jsonl"
    code = _run(batch, out)
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device" in err and "wrote 1 of 3 lines" in err
    assert "cut line was removed" in err
    assert [r["id"] for r in _lines(out)] == ["a"]


# ----- one writer ---------------------------------------------------------------------------------------------------
def test_a_second_writer_is_refused_naming_the_holder(
    batch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: two runs writing one --out interleaved their lines and both reported "wrote"."""
    from arr_coc.output_files import OutputLock

    out = tmp_path / "out.jsonl"
    with OutputLock(out):
        assert _run(batch, out) == 2
    err = capsys.readouterr().err
    assert "being written by another arr-coc process" in err and f"pid {os.getpid()}" in err
    assert not out.exists() or out.read_text() == ""
    assert _run(batch, out) == 0 and not (tmp_path / "out.jsonl.lock").exists()


def test_a_lock_held_by_another_process_then_left_by_its_death(
    batch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A live holder (another process) refuses; once it is killed (SIGKILL: no clean-up) its lock is taken over."""
    out = tmp_path / "out.jsonl"
    code = (
        "import sys, time; from arr_coc.output_files import OutputLock; "
        f"OutputLock({str(out)!r}).acquire(); print('locked', flush=True); time.sleep(120)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(arr_coc.realizing.__file__).parents[1])}
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert _run(batch, out) == 2
        assert f"pid {holder.pid}" in capsys.readouterr().err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (tmp_path / "out.jsonl.lock").exists()  # left behind by the dead process
    assert _run(batch, out) == 0
    err = capsys.readouterr().err
    assert "took over the stale lock" in err and f"pid {holder.pid}" in err
    assert [r["id"] for r in _lines(out)] == IDS


def test_a_missing_relevance_folder_is_its_own_error_not_a_write_error(
    batch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    assert _run(batch, out, "--relevance", str(tmp_path / "nope")) == 2
    err = capsys.readouterr().err
    assert "not a relevance checkpoint folder" in err and "cannot write" not in err
    assert not (tmp_path / "out.jsonl.lock").exists()
