"""results/ is one page a figure: a bounded number of pages, none named by a date or a commit, each opening with the
command that made it and linked from the README or docs/figures.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
MAX_FILES = 30
COMMAND = re.compile(r"python3? benchmarks/|arr-coc (train|eval|allocate)|bash benchmarks/")


def pages() -> list[Path]:
    return sorted(p for p in RESULTS.rglob("*") if p.is_file())


def test_results_is_bounded_and_named_by_figure() -> None:
    files = [p for p in pages() if p.suffix != ".json" or not _ignored(p)]
    assert len(files) <= MAX_FILES, f"{len(files)} files in results/ (at most {MAX_FILES}): merge pages of one figure"
    dated = [p.name for p in files if re.search(r"\d{4}-\d{2}-\d{2}|_[0-9a-f]{7}\b|_final\b|^i\d+_", p.stem)]
    assert not dated, f"pages named by a date, a commit or an issue (git history keeps old runs): {dated}"


def test_every_page_opens_with_its_command_and_is_linked() -> None:
    linked = (ROOT / "README.md").read_text(encoding="utf-8") + (ROOT / "docs" / "figures.md").read_text("utf-8")
    for page in (p for p in pages() if p.suffix == ".md"):
        head = "\n".join(page.read_text(encoding="utf-8").splitlines()[:12])
        assert COMMAND.search(head), f"{page.relative_to(ROOT)}: no command in its first lines"
        rel = page.relative_to(ROOT).as_posix()
        assert f"]({rel})" in linked or f"](../{rel})" in linked, f"{rel} is linked from neither README nor figures"


def _ignored(path: Path) -> bool:
    """JSON written beside a page by a benchmark run is ignored by git (.gitignore: results/**/*.json)."""
    return "results/**/*.json" in (ROOT / ".gitignore").read_text()
