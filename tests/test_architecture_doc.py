"""docs/architecture.md against the code: every module and benchmark script listed, no file listed that is gone, and
the figures it quotes from the code (the learned scorer's feature and group counts) equal the code's."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def listed() -> set[str]:
    """Paths of the doc's file tree (the fenced block under "## Files"): indentation (2 spaces) nests a name under the
    folder above it; a line may name several files (``a.py, b.py``)."""
    block = DOC.split("## Files", 1)[1].split("```", 2)[1]
    paths: set[str] = set()
    stack: list[tuple[int, str]] = []  # (indent, folder)
    for line in block.splitlines()[1:]:
        if not line.strip() or line.startswith(" " * 30):  # blank, or a description's continuation
            continue
        indent = len(line) - len(line.lstrip(" "))
        names = re.split(r"\s{2,}", line.strip())[0]
        stack = [(i, f) for i, f in stack if i < indent]
        prefix = "".join(f for _, f in stack)
        for name in (n.strip() for n in names.split(",")):
            if name.endswith("/"):
                stack.append((indent, name))
            paths.add(prefix + name)
    return paths


def test_every_module_and_benchmark_is_listed() -> None:
    paths = listed()
    src = [p for p in (ROOT / "src" / "arr_coc").rglob("*.py") if p.name != "__init__.py" or p.parent.name == "arr_coc"]
    modules = [str(p.relative_to(ROOT / "src")).replace("arr_coc/", "src/arr_coc/", 1) for p in src]
    packages = [f"src/{p.relative_to(ROOT / 'src')}/" for p in (ROOT / "src" / "arr_coc").rglob("*") if p.is_dir()
                and (p / "__init__.py").exists()]  # fmt: skip
    scripts = [f"benchmarks/{p.name}" for p in (ROOT / "benchmarks").iterdir() if p.suffix in (".py", ".sh")]
    scripts.remove("benchmarks/__init__.py")
    missing = sorted(set(modules + packages + scripts) - paths)
    assert not missing, f"not in docs/architecture.md's file tree: {missing}"


def test_every_listed_file_exists() -> None:
    gone = sorted(p for p in listed() if "*" not in p and not (ROOT / p.rstrip("/")).exists())
    assert not gone, f"docs/architecture.md lists files that do not exist: {gone}"


def test_the_learned_scorers_counts_are_the_codes() -> None:
    from arr_coc.reading.matching.learned import FEATURE_GROUPS, FEATURES

    said = re.findall(r"(\d+) (?:features a text box|a box),? (?:in )?(\d+) groups", DOC)
    assert said, "docs/architecture.md no longer states the learned scorer's feature counts"
    assert set(said) == {(str(len(FEATURES)), str(len(FEATURE_GROUPS)))}, said


def test_the_decision_entry_points_are_the_codes() -> None:
    """vLLM and compress decide through ``Realizer.decide``, and the doc says so."""
    assert ".decide(" in (ROOT / "src" / "arr_coc" / "vllm" / "common.py").read_text()
    assert "score_visual_tokens` + `select" not in DOC
    vllm_row = next(line for line in DOC.splitlines() if line.startswith("| `vllm/` |"))
    assert "`Realizer.decide`" in vllm_row
