"""The plugin behind vLLM's OpenAI-compatible server (127.0.0.1 only, bounded waits), and switched off.

One server for the module, started as a user would (``python -m vllm.entrypoints.openai.api_server``) with
``--trust-request-mm-kwargs`` and server-wide defaults in ``--mm-processor-kwargs``; requests carry their own
options in the body's ``mm_processor_kwargs``. The plugin switched off (``VLLM_PLUGINS=``, in a child process)
gives vLLM's own result, which the plugin's server gives too for a request that disables pruning.
"""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("vllm", reason="vllm not installed (the plugin's tests run in .venv-vllm: bash .ci/vllm_env.sh)")

from plugin_checks import chat_prompt, image  # noqa: E402

FAMILY = "qwen2.5-vl"
QUESTION = "What is the total amount due?"
DEFAULTS = {"arr_coc": {"budget": 0.33, "mode": "texture"}}
START_TIMEOUT_S = 900  # a cold server: ~100-130 s on 2 quiet cores, 6.5 min seen at load 37
REQUEST_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def data_url(img) -> str:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def post(port: int, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT_S) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def chat_body(model: str, img, question: str, options: dict | None) -> dict:
    body = {
        "model": model,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": data_url(img)}},
                    {"type": "text", "text": question},
                ],
            }
        ],
        "max_tokens": 4,
        "temperature": 0,
        "logprobs": True,
    }
    if options is not None:
        body["mm_processor_kwargs"] = {"arr_coc": options}
    return body


@pytest.fixture(scope="module")
def server(checkpoints, tmp_path_factory):
    folder = checkpoints[FAMILY]
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    cmd = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(folder), "--host", "127.0.0.1", "--port", str(port),
        "--dtype", "float32", "--max-model-len", "4096", "--max-num-seqs", "8", "--enforce-eager",
        "--kv-cache-memory-bytes", str(256 << 20), "--limit-mm-per-prompt", json.dumps({"image": 3, "video": 0}),
        "--trust-request-mm-kwargs", "--mm-processor-kwargs", json.dumps(DEFAULTS),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "VLLM_ENABLE_V1_MULTIPROCESSING"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the server did not come up in {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")
            time.sleep(2)
        yield port, str(folder)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def answer(resp: dict) -> tuple[int, list[str], list[float]]:
    choice = resp["choices"][0]
    content = choice["logprobs"]["content"]
    return resp["usage"]["prompt_tokens"], [c["token"] for c in content], [c["logprob"] for c in content]


def test_server_defaults_per_request_options_and_opt_out(server):
    port, model = server
    img = image("invoice.jpg")
    status, unpruned = post(port, chat_body(model, img, QUESTION, {"enabled": False}))
    assert status == 200, unpruned
    status, default = post(port, chat_body(model, img, QUESTION, None))  # the server's 33%
    assert status == 200, default
    status, small = post(port, chat_body(model, img, QUESTION, {"budget": 0.11}))  # overrides the default budget
    assert status == 200, small
    n_full, n_default, n_small = (answer(r)[0] for r in (unpruned, default, small))
    assert n_full > n_default > n_small
    status, kept_all = post(port, chat_body(model, img, QUESTION, {"budget": 1.0}))
    assert status == 200
    assert answer(kept_all) == answer(unpruned)  # keep-all through the foveated path == vLLM's own


def test_bad_request_is_400_and_does_not_disturb_others(server):
    port, model = server
    img = image("invoice.jpg")
    good = chat_body(model, img, QUESTION, {"budget": 0.22})
    (expected,) = [answer(post(port, good)[1])]
    bad = chat_body(model, img, QUESTION, {"budget": 3.5})
    results: dict[int, tuple[int, dict]] = {}

    def send(i: int, body: dict) -> None:
        results[i] = post(port, body)

    threads = [threading.Thread(target=send, args=(i, b)) for i, b in enumerate([good, bad, good, bad])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=REQUEST_TIMEOUT_S * 2)
    assert [results[i][0] for i in range(4)] == [200, 400, 200, 400]
    message = json.dumps(results[1][1])
    assert "arr_coc" in message and "budget" in message
    assert answer(results[0][1]) == expected and answer(results[2][1]) == expected
    status, resp = post(port, chat_body(model, img, QUESTION, {"budget": 0.2, "typo": 1}))
    assert status == 400 and "unknown option 'typo'" in json.dumps(resp)


OFF_SCRIPT = r"""
import json, sys
from PIL import Image
from vllm import LLM, SamplingParams
sys.path.insert(0, sys.argv[2])
from plugin_checks import engine_kwargs
llm = LLM(model=sys.argv[1], **engine_kwargs())
img = Image.open(sys.argv[3]).convert("RGB")
out = llm.generate([{"prompt": sys.argv[4], "multi_modal_data": {"image": img}}],
                   SamplingParams(temperature=0.0, max_tokens=4, logprobs=0), use_tqdm=False)[0]
name = llm.apply_model(lambda model: type(model).__name__)[0]
g = out.outputs[0]
print("RESULT" + json.dumps({"class": name, "prompt_ids": list(out.prompt_token_ids), "tokens": list(g.token_ids),
      "logprobs": [lp[t].logprob for t, lp in zip(g.token_ids, g.logprobs)]}))
"""


def run_engine_child(folder: str, prompt: str, plugins: str | None) -> dict:
    env = dict(os.environ, VLLM_ENABLE_V1_MULTIPROCESSING="0")
    env.pop("VLLM_PLUGINS", None)
    if plugins is not None:
        env["VLLM_PLUGINS"] = plugins
    here = os.path.dirname(os.path.abspath(__file__))
    img = os.path.join(here, "..", "..", "examples", "invoice.jpg")
    done = subprocess.run(
        [sys.executable, "-c", OFF_SCRIPT, folder, here, img, prompt],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT") :])


def test_plugin_switched_off_gives_vllms_own_result(server, checkpoints):
    """VLLM_PLUGINS= (no plugin) -> vLLM's own class and result; the plugin's server matches it when told not to
    prune, and through the foveated path at budget 1.0 (previous test)."""
    port, model = server
    folder = checkpoints[FAMILY]
    img = image("invoice.jpg")
    off = run_engine_child(str(folder), chat_prompt(folder, [img], QUESTION), plugins="")
    assert off["class"] == "Qwen2_5_VLForConditionalGeneration"
    status, resp = post(port, chat_body(model, img, QUESTION, {"enabled": False}))
    n_prompt, tokens, logprobs = answer(resp)
    assert n_prompt == len(off["prompt_ids"])
    assert logprobs == pytest.approx(off["logprobs"], abs=1e-5)  # same kernels; only the process differs
