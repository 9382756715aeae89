"""``docs/serving-vllm.md`` runs as written: its offline example, its server command (server-wide ``arr_coc``
defaults, vLLM's default limits: videos allowed), its ``curl`` request and its Python client (one image request,
pruned by the defaults, and one video request, served by vLLM), then the request rules on that same server.

The blocks are read from the page by their ``<!-- docs-test: NAME -->`` markers and run by bash / Python from the
repository root, with this environment's ``bin`` first on ``PATH`` (what ``. .venv-vllm/bin/activate`` does). The
one change: when port 8000 is taken, every ``8000`` of the blocks becomes a free port.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "serving-vllm.md"
START_TIMEOUT_S = 900  # a cold server (compiling, as documented) on 2 cores: ~2-6 min seen under load
RUN_TIMEOUT_S = 300


def block(name: str) -> str:
    """The fenced block right after ``<!-- docs-test: name -->`` in the page."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"<!-- docs-test: {name} -->\n```[a-z]*\n(.*?)^```", text, re.S | re.M)
    assert found, f"no block marked 'docs-test: {name}' in {PAGE}"
    return found.group(1)


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def user_env() -> dict[str, str]:
    """The environment of a user with the vLLM environment activated (no test-only engine settings)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_PLUGINS")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_bash(code: str, port: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code.replace("8000", str(port))],
        cwd=ROOT, env=user_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The page's model command, then its server command, as written (port aside)."""
    port = 8000 if port_free(8000) else free_port()
    made = run_bash(block("model"), port)
    assert made.returncode == 0, made.stderr[-3000:]
    log = tmp_path_factory.mktemp("docs-server") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["bash", "-c", block("server").replace("8000", str(port))],
            cwd=ROOT, env=user_env(), stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the documented server exited with {proc.returncode}:\n{log.read_text()[-5000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the documented server did not come up in {START_TIMEOUT_S} s:\n{log.read_text()[-5000:]}")
            time.sleep(2)
        yield port, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the group: bash and the server it started
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def post(port: int, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=RUN_TIMEOUT_S) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def data_url(path: Path, mime: str) -> str:
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode()


def page_body(options: object = "absent", video: bool = False) -> dict:
    item = (
        {"type": "video_url", "video_url": {"url": data_url(ROOT / "examples" / "pages.mp4", "video/mp4")}}
        if video
        else {"type": "image_url", "image_url": {"url": data_url(ROOT / "examples" / "invoice.jpg", "image/jpeg")}}
    )
    body = {
        "model": "/tmp/tiny-qwen2.5-vl-vllm",
        "messages": [{"role": "user", "content": [item, {"type": "text", "text": "How much must be paid?"}]}],
        "max_tokens": 2,
    }
    if options != "absent":
        body["mm_processor_kwargs"] = {"arr_coc": options}
    return body


def prompt_tokens(port: int, options: object = "absent", video: bool = False) -> int:
    status, resp = post(port, page_body(options, video))
    assert status == 200, resp
    return resp["usage"]["prompt_tokens"]


def test_offline_example_runs_as_written(tmp_path):
    """First in the module: before the documented server starts (two engines at once on a small machine)."""
    script = tmp_path / "example.py"
    script.write_text(block("offline"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=user_env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    match = re.search(r"^(\d+) -> (\d+) prompt tokens$", done.stdout, flags=re.M)
    assert match, done.stdout[-2000:]
    assert int(match.group(2)) < int(match.group(1))


def test_client_prunes_an_image_and_serves_a_video(server):
    """The done-when: the documented server (arr_coc defaults, videos allowed) started, prunes the image request of
    the documented client and serves its video request."""
    port, log = server
    done = subprocess.run(
        [sys.executable, "-c", block("client").replace("8000", str(port))],
        cwd=ROOT, env=user_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:] + log.read_text()[-3000:]
    image = re.search(r"^image: (\d+) -> (\d+) prompt tokens$", done.stdout, re.M)
    video = re.search(r"^video: (\d+) prompt tokens, served unpruned$", done.stdout, re.M)
    assert image and video, done.stdout
    full, pruned = int(image.group(1)), int(image.group(2))
    assert pruned < 0.5 * full  # the server's 33% of the visual tokens, plus the text
    assert int(video.group(1)) > 64  # the clip's frames as vLLM serves them


def test_curl_request_reads_its_body_from_a_file(server):
    port, _ = server
    done = run_bash(block("curl"), port)
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.search(r'"prompt_tokens": (\d+)', done.stdout)
    assert found and '"content"' in done.stdout, done.stdout
    assert int(found.group(1)) < prompt_tokens(port, {"enabled": False})  # the request's 22%


def test_null_options_leave_the_server_defaults_in_force(server):
    """``"arr_coc": null`` used to switch the defaults off; now it is "not set", like a null option."""
    port, _ = server
    defaults = prompt_tokens(port)
    assert prompt_tokens(port, None) == defaults
    assert prompt_tokens(port, {"budget": None}) == defaults
    assert prompt_tokens(port, {"enabled": False}) > defaults


def test_budget_one_keeps_every_token_as_javascript_sends_it(server):
    """JSON ``1`` (JavaScript's 1.0) kept ONE token; it keeps all, as 1.0 does."""
    port, _ = server
    full = prompt_tokens(port, {"enabled": False})
    assert prompt_tokens(port, {"budget": 1}) == prompt_tokens(port, {"budget": 1.0}) == full


@pytest.mark.parametrize(
    "options, video, message",
    [
        ({"mode": "texture", "text_options": {"semantics": 0}}, False, "arr_coc: text_options.semantics must be"),
        ({"mode": "texture", "text_options": {"semantics": False}}, False, "arr_coc: text_options: unknown text"),
        ({"budget": 2.5}, False, "arr_coc: budget 2.5 is not a number in (0, 1]"),
        ({"budget": 0.2}, True, "arr_coc: prunes images only, and this request has a video"),
    ],
)
def test_bad_requests_get_a_400_with_a_user_facing_message(server, options, video, message):
    port, _ = server
    status, resp = post(port, page_body(options, video))
    assert status == 400, resp
    text = json.dumps(resp)
    assert message in text and "unexpected keyword" not in text
    assert prompt_tokens(port) > 0  # the server goes on
