"""The README's "Serve with vLLM" example runs as written (in the vLLM environment, as a script: spawn included).

The example is fenced as ```py (not ```python) so that tests/test_readme.py, which runs in the main environment
without vLLM, leaves it to this test. It is read from README.md's "Serve with vLLM" section.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def vllm_example() -> str:
    for path in (ROOT / "README.md",):
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        start = text.find("## Serve with vLLM")
        if start < 0:
            continue
        found = re.search(r"^```py\n(.*?)^```", text[start:], flags=re.S | re.M)
        if found:
            return found.group(1)
    pytest.fail("no ```py block under '## Serve with vLLM' in README.md")


def test_readme_vllm_example_runs_as_written(tmp_path):
    script = tmp_path / "example.py"
    script.write_text(vllm_example(), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "VLLM_ENABLE_V1_MULTIPROCESSING"}  # as a user runs it
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    match = re.search(r"^(\d+) -> (\d+) prompt tokens$", done.stdout, flags=re.M)
    assert match, done.stdout[-2000:]
    assert int(match.group(2)) < int(match.group(1))
