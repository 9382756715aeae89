"""The reading package's rooms (``ocr/``, ``layout/``, ``matching/``) import one way, with no cycle.

Two checks: every module of ``arr_coc.reading`` imports on its own in a fresh interpreter (a cycle that only works
in one import order fails there), and the graph of the package's own imports (``from .x import``, including those
under ``TYPE_CHECKING`` and inside functions) is acyclic and never points from a lower room to a higher one.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import arr_coc.reading

PACKAGE = Path(arr_coc.reading.__file__).parent
# the package map's order: a module imports only from its own room or one above it in this list
RANK = {"errors": 0, "text": 0, "scripts": 1, "layout": 1, "config": 2, "ocr": 3, "matching": 4, "pipeline": 5}


def _modules() -> list[str]:
    """Dotted names of every module of ``arr_coc.reading`` (packages as their ``__init__``)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(("arr_coc", "reading", *parts)))
    return out


def _imports(module: str) -> set[str]:
    """The ``arr_coc.reading`` modules that ``module``'s source imports (relative or absolute, anywhere in the file)."""
    path = PACKAGE.joinpath(*module.split(".")[2:])
    is_pkg = path.is_dir()
    path = path / "__init__.py" if is_pkg else path.with_suffix(".py")
    package = module if is_pkg else module.rsplit(".", 1)[0]
    known = set(_modules())
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:  # ``from . import x`` may name a submodule
                if f"{target}.{alias.name}" in known:
                    found.add(f"{target}.{alias.name}")
            if target in known:
                found.add(target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
    found.discard(module)
    return found


def _room(module: str) -> str:
    return module.split(".")[2] if module.count(".") >= 2 else "__init__"


def test_the_package_map_names_every_module():
    doc = arr_coc.reading.__doc__ or ""
    for module in _modules():
        if module == "arr_coc.reading":
            continue
        name = module.split(".")[-1]
        assert (f"{name}.py" in doc) or (f"{name}/" in doc), f"{module} is missing from the package map"


def test_import_graph_is_acyclic_and_rooms_point_down():
    graph = {m: _imports(m) for m in _modules()}
    assert graph["arr_coc.reading.matching.matcher"] >= {"arr_coc.reading.matching.learned"}  # the checker sees edges
    # rooms: a module imports only from its own room or a lower one (the top-level ``__init__`` re-exports all)
    for module, targets in graph.items():
        if module == "arr_coc.reading":
            continue
        for target in targets:
            src, dst = _room(module), _room(target)
            if src != dst:
                assert RANK[dst] < RANK[src], f"{module} imports {target}: room {src!r} must not depend on {dst!r}"
    # cycles (depth-first search over the package's own edges; a package's ``__init__`` counts as a module)
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt == "arr_coc.reading":
                continue
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack[stack.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for module in graph:
        if module not in state:
            visit(module, [module])


def test_learned_scorer_does_not_import_the_matcher():
    assert "arr_coc.reading.matching.matcher" not in _imports("arr_coc.reading.matching.learned")


@pytest.mark.parametrize("module", _modules())
def test_each_module_imports_on_its_own(module):
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent.parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if module.endswith("torch_backend"):
        pytest.importorskip("rapidocr")
    if module.endswith("onnx_torch"):
        pytest.importorskip("onnx")
    out = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]


def test_public_names_stay_importable_from_the_package():
    from arr_coc.reading import (  # noqa: F401  the names the README and docs import
        LayoutConfig,
        OcrCache,
        PageLayoutConfig,
        QueryMatcher,
        Reading,
        ReadingConfig,
        TextBox,
        TextReader,
        default_reading,
        paint_boxes,
        text_relevance,
    )
    from arr_coc.reading.layout.structure import PageLayoutConfig as P
    from arr_coc.reading.matching.propagation import LayoutConfig as L

    assert P is PageLayoutConfig and L is LayoutConfig and P is not L  # one meaning per name
