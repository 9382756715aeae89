"""The README's table of family x feature names every registered family (:func:`arr_coc.families.families`), and its
vLLM column says "yes" exactly for the families whose registry row names a vLLM plugin class."""

from __future__ import annotations

import re
from pathlib import Path

from arr_coc.families import families, get_family

README = Path(__file__).resolve().parent.parent / "README.md"
COLUMNS = ["family", "allocate", "compress", "foveate", "level of detail", "vLLM 0.32", "eval"]


def table() -> list[list[str]]:
    """The rows of the table under ``## Models`` (cells stripped), header first."""
    section = README.read_text(encoding="utf-8").split("## Models", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|") and not line.startswith("|---")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def names(cell: str) -> list[str]:
    """The family names of a first cell: ``"Qwen3.5 (+MoE; ...)"`` -> ``["Qwen3.5"]``, comma-separated."""
    return [n.strip() for n in re.sub(r"\([^)]*\)", "", cell).split(",") if n.strip()]


def registered_rows() -> dict[str, list[str]]:
    """Registered family name -> its row (a row may name several families)."""
    found: dict[str, list[str]] = {}
    for row in table()[1:]:
        for name in names(row[0]):
            try:
                found[get_family(name).name] = row
            except ValueError:
                continue  # a family not registered (yet): its row says why
    return found


def test_the_table_has_the_feature_columns():
    assert table()[0] == COLUMNS


def test_every_registered_family_has_a_row():
    missing = sorted({f.name for f in families()} - set(registered_rows()))
    assert not missing, f"README's family table has no row for {missing}: add one (## Models)"


def test_the_vllm_column_follows_the_registry():
    rows = registered_rows()
    for family in families():
        served = any(c.vllm_class for c in family.classes)
        cell = rows[family.name][COLUMNS.index("vLLM 0.32")]
        assert cell.startswith("yes") == served, f"{family.name}: registry serves={served}, README says {cell!r}"


def test_unregistered_rows_say_why():
    for row in table()[1:]:
        if not any(n for n in names(row[0]) if _known(n)):
            assert "not yet" in row[1] or "in progress" in row[1], row


def _known(name: str) -> bool:
    try:
        get_family(name)
    except ValueError:
        return False
    return True
