"""What the library uses ships inside the package: a built wheel holds the document generator (``arr-coc eval --task
docgen``), the demo's example images and the built-in relevance checkpoint (``--relevance learned``), so a
non-editable install can run them.

The wheel is built from a copy of ``pyproject.toml``, ``README.md`` and ``src/`` (the checkout itself is left
untouched) with ``pip wheel --no-deps --no-build-isolation``: no network, no dependency is installed, a few seconds.
The full check, ``pip install .`` into a fresh virtual environment then ``arr-coc eval --task docgen --limit 2`` and
the demo's examples, takes minutes (its last run: results/install_check.md in git history).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = [
    "arr_coc/evaluation/docgen.py",
    "arr_coc/loading.py",
    "arr_coc/tensors.py",
    "arr_coc/examples/invoice.jpg",
    "arr_coc/examples/chart.jpg",
    "arr_coc/examples/receipt.jpg",
    "arr_coc/examples/astronaut.jpg",
    # the built-in relevance checkpoint (Realizer.builtin("learned"), --relevance learned)
    "arr_coc/checkpoints/learned-2026-11/config.json",
    "arr_coc/checkpoints/learned-2026-11/scorer.json",
    "arr_coc/checkpoints/learned-2026-11/model.safetensors",
    "arr_coc/checkpoints/learned-2026-11/PROVENANCE.md",
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("setuptools is not installed (needed to build without isolation)")
    src = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (found,) = out.glob("arr_coc_vis-*.whl")
    return found


def test_the_wheel_ships_docgen_and_the_examples(wheel) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [name for name in SHIPPED if name not in names]
    assert not missing, f"not in the wheel: {missing}"
    images = zipfile.ZipFile(wheel)
    for name in SHIPPED[3:7]:  # the image bytes, not a link: the same as the repository's examples/
        assert images.read(name) == (ROOT / "examples" / Path(name).name).read_bytes()
    for name in SHIPPED[7:]:  # the checkpoint's bytes
        assert images.read(name) == (ROOT / "src" / name).read_bytes()


def test_the_library_finds_them_inside_the_package() -> None:
    import arr_coc
    from arr_coc.evaluation.datasets import _docgen_module

    package = Path(arr_coc.__file__).resolve().parent
    assert Path(_docgen_module().__file__).resolve().is_relative_to(package)
    pytest.importorskip("gradio")
    from arr_coc import demo

    rows = demo.example_rows()
    assert len(rows) == len(demo.EXAMPLES) and all(Path(r[0]).resolve().is_relative_to(package) for r in rows)


def test_the_benchmarks_name_is_the_same_module() -> None:
    """``from benchmarks import docgen`` (scripts, ``examples/make_examples.py``) is the package's module, not a copy:
    run as those scripts run it, from the repository root, in a process of its own."""
    code = "from benchmarks import docgen as old; from arr_coc.evaluation import docgen; "
    code += "assert old is docgen and old._occurrences is docgen._occurrences; print('same')"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "same", done.stderr
