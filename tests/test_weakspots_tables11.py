"""Round 11's "last" group of real tables (benchmarks/weakspots_tables.py ``LAST11``): collections no earlier round
copied, every source of theirs in the "last" group, none of them reserved."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import weakspots_tables as wt  # noqa: E402

EARLIER = ("fonduer:", "doclingeval:", "pypdf:", "deepdoctection:", "pymupdfrag:", *wt.LAST5, *wt.LAST6)


def test_last11_collections_are_new() -> None:
    names = [p.rstrip(":") for p in wt.LAST11]
    assert len(names) >= 8 and all(n in wt.COLLECTIONS for n in names)
    earlier = [wt.COLLECTIONS[n][0] for n in wt.COLLECTIONS if n not in names]
    assert not {wt.COLLECTIONS[n][0] for n in names} & set(earlier)  # no repository any earlier round copied
    assert not set(wt.LAST11) & set(EARLIER)


def test_last11_not_reserved_repositories() -> None:
    # camelot, its forks (atlanhq/camelot, excalibur) and pdfplumber are kept for independent evaluation
    for n in (p.rstrip(":") for p in wt.LAST11):
        repo = wt.COLLECTIONS[n][0].lower()
        assert not any(r in repo for r in ("camelot", "excalibur", "pdfplumber", "texlive", "funsd", "sroie"))


def test_last11_sources_are_last() -> None:
    for prefix in wt.LAST11:
        assert wt.split_of(f"{prefix}some_file") == "last"
    # earlier groups keep their groups: tabula-java's held-out pages, and a collection's prefix needs its colon
    assert wt.split_of("tabula:frx_2012_disclosure") == "heldout"
    assert wt.split_of("gmftx:some_file") == wt.split_of("gmftx:some_file") and not "gmftx:".startswith(wt.LAST11)


def test_spread_over_sources(tmp_path: Path) -> None:
    import json

    from weakspots_tables4 import spread

    qs = [("a:x", 1.0), ("a:x", 0.0), ("a:y", 1.0), ("b:z", 1.0)]
    data = tmp_path / "last.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "source": s}) + "\n" for i, (s, _) in enumerate(qs)))
    run = tmp_path / "routed.json"
    rows = [{"id": f"q{i}", "rules": {"11.1%": v}, "learned": {"11.1%": 1.0}} for i, (_, v) in enumerate(qs)]
    rows.append({"id": "other", "rules": {"11.1%": 0.0}})  # a question not in the data is left out
    run.write_text(json.dumps({"questions": rows}))
    out = spread(data, [run]).splitlines()
    rules = next(r for r in out if r.startswith("| rules |"))
    # per source means: a:x 0.5, a:y 1.0, b:z 1.0 -> min 0.50, median 1.00, sd 0.24; collections a 0.67, b 1.00
    assert rules == "| rules | 4 | 3 | 0.750 | 0.50 / 1.00 / 0.24 | a 0.67, b 1.00 |"
    assert any(r.startswith("| routed | 4 | 3 | 1.000 | 1.00 / 1.00 / 0.00 |") for r in out)


def test_blob_dupes_finds_a_file_anywhere_in_history(tmp_path: Path) -> None:
    import shutil
    import subprocess

    import pytest
    from weakspots_tables4 import blob_dupes

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "old.pdf").write_bytes(b"%PDF-1.4 an earlier collection's file")
    subprocess.run([*git, "add", "old.pdf"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    subprocess.run([*git, "rm", "-q", "old.pdf"], check=True)  # gone from the newest tree, still in history
    subprocess.run([*git, "commit", "-qm", "b"], check=True)
    src = tmp_path / "src" / "new"
    src.mkdir(parents=True)
    (src / "same.pdf").write_bytes(b"%PDF-1.4 an earlier collection's file")
    (src / "other.pdf").write_bytes(b"%PDF-1.4 a new file")
    found = blob_dupes(tmp_path / "src", ["new"], [repo / ".git"])
    assert found == [f"new/same.pdf in {repo / '.git'}"]
