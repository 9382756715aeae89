"""``arr-coc demo`` in a real browser: Debian's headless Chromium driven by Playwright, against a live server.

The app is served by the real command, ``arr-coc demo --port P``, on 127.0.0.1 in a child process (stopped at the
end), with an audit hook that logs every DNS look-up and connection it makes. The tests open the page,
upload the example invoice, ask, and check that the heatmap appears and that the page's token count is the one the
grid and the budget give; that a bad upload shows a message; that every request the page made went to the local
server and that the server itself contacted no other host (offline: no fonts, scripts, analytics or version
checks from elsewhere); and call the named ``/allocate`` endpoint with
``gradio_client``. Every wait is bounded.

Screenshot: the page after the first question is saved under pytest's tmp dir, and to the path in the environment
variable ``ARR_COC_DEMO_SCREENSHOT`` when it is set (the README's picture: ``ARR_COC_DEMO_SCREENSHOT=docs/demo.png``).

Skipped, with the reason, when Chromium (``/usr/bin/chromium``; ``apt-get install chromium``), Playwright or
Gradio are not installed; ``.ci/run`` installs all three so that in CI it runs. A browser that Playwright downloads
by itself is not used (``playwright install`` cannot reach its download host here).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

CHROMIUM = Path(os.environ.get("ARR_COC_CHROMIUM", "/usr/bin/chromium"))
if not CHROMIUM.is_file():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install -y chromium chromium-driver)", allow_module_level=True)
pytest.importorskip(
    "gradio", reason="the [demo] extra is not installed: pip install -e '.[demo]' in the arr-coc-vis clone"
)
playwright_api = pytest.importorskip("playwright.sync_api", reason="no Playwright: pip install playwright")

from PIL import Image  # noqa: E402

from arr_coc import allocate  # noqa: E402
from arr_coc.attending import resolve_budget  # noqa: E402
from arr_coc.grid import GridSpec  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
INVOICE = ROOT / "examples" / "invoice.jpg"
QUESTION = "How much must be paid?"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGE_MS = 60_000  # page load and element waits
RUN_MS = 240_000  # one allocation; text mode's first request loads the OCR and text models (slow on a busy CPU)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected_tokens(path: Path, budget: float, family: str = "qwen2.5-vl") -> tuple[int, int]:
    """(tokens before, tokens after) from the processor's grid and the budget rule alone (no allocation run)."""
    with Image.open(path) as im:
        w, h = im.size
    n = GridSpec.for_family(family).grid_for(h, w).n_tokens
    return n, resolve_budget(budget, n)


# The server runs the real command line (`arr-coc demo`) in a child process whose every DNS look-up and socket
# connection is logged by an audit hook; the last test checks that none went to another host.
SERVER_CODE = """
import sys
LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
def hook(event, args):
    if event == "socket.getaddrinfo":
        host = args[0].decode() if isinstance(args[0], bytes) else args[0]
    elif event == "socket.connect" and isinstance(args[1], tuple):
        host = args[1][0]
    else:
        return
    if host is not None and str(host) not in LOCAL:
        print("OUTSIDE", event, host, file=sys.stderr, flush=True)
sys.addaudithook(hook)
from arr_coc.cli import main
sys.exit(main(["demo", "--host", "127.0.0.1", "--port", sys.argv[1]]))
"""
START_S = 180  # importing torch + gradio and binding the port, on a busy 2-core CPU


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``arr-coc demo`` on a free local port in a child process; yields (url, path of its stderr log)."""
    port = free_port()
    log = tmp_path_factory.mktemp("demo-server") / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_CODE, str(port)], cwd=ROOT, env=env, stdout=err, stderr=err
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"arr-coc demo exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"arr-coc demo did not answer on {url} within {START_S} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=PAGE_MS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, server):
    """A fresh page on the demo; ``page.requests`` records every URL it asked for."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(PAGE_MS)
    pg.requests = []
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.goto(server[0], wait_until="load", timeout=PAGE_MS)
    pg.wait_for_selector("#allocate-button")
    try:
        yield pg
    finally:
        context.close()


def assert_all_local(urls: list[str], server: str) -> None:
    local = urlparse(server).netloc
    outside = [u for u in urls if urlparse(u).scheme not in ("data", "blob") and urlparse(u).netloc != local]
    assert not outside, f"the page fetched from other hosts: {outside}"


def ask(page, image: Path, question: str, budget: str, mode: str) -> None:
    page.locator("input[type=file]").first.set_input_files(str(image))
    page.get_by_label("question").fill(question)
    page.get_by_label("budget", exact=False).fill(budget)
    page.get_by_label(mode, exact=True).check()
    page.locator("#allocate-button").click()


def test_upload_ask_heatmap_and_token_count(page, server, tmp_path):
    before, after = expected_tokens(INVOICE, 0.11)
    # The token count does not depend on the mode; the README's picture shows the default (auto: text when the
    # [ocr] extra is installed), the plain test the fast texture mode (no OCR models to load).
    ask(page, INVOICE, QUESTION, "0.11", "auto" if os.environ.get("ARR_COC_DEMO_SCREENSHOT") else "texture")
    summary = page.locator("#summary")
    summary.get_by_text("Visual tokens").wait_for(timeout=RUN_MS)
    assert f"Visual tokens: {before} → {after}" in summary.inner_text()
    for elem in ("#heatmap", "#baseline"):  # both pictures are shown and decoded
        img = page.locator(f"{elem} img").first
        img.wait_for(timeout=PAGE_MS)
        assert img.evaluate("i => i.complete && i.naturalWidth") > 0
    shot = tmp_path / "demo.png"
    page.screenshot(path=str(shot), full_page=True)
    assert Image.open(shot).size[0] >= 1000
    if os.environ.get("ARR_COC_DEMO_SCREENSHOT"):
        Path(os.environ["ARR_COC_DEMO_SCREENSHOT"]).parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=os.environ["ARR_COC_DEMO_SCREENSHOT"], full_page=True)
    assert_all_local(page.requests, server[0])
    assert any("/gradio_api/queue/join" in u for u in page.requests)  # the question really went to the server


def test_bad_uploads_show_a_message(page, server, tmp_path):
    fake = tmp_path / "scan.png"  # an image's name, a text file's bytes: passes the page's type check
    fake.write_text("not pixels")
    ask(page, fake, QUESTION, "0.11", "texture")
    page.get_by_text("'scan.png' is not an image Pillow can read").wait_for(timeout=PAGE_MS)
    notes = tmp_path / "notes.txt"  # refused by the page itself before any upload
    notes.write_text("hello")
    page.locator("input[type=file]").first.set_input_files(str(notes))
    page.get_by_text("Invalid file type").first.wait_for(timeout=PAGE_MS)
    assert "Traceback" not in page.locator("body").inner_text()
    assert_all_local(page.requests, server[0])


def test_empty_question_shows_a_message(page, server):
    ask(page, INVOICE, "", "0.11", "texture")
    page.get_by_text("Type a question").wait_for(timeout=PAGE_MS)
    assert_all_local(page.requests, server[0])


def test_gradio_client_allocate(server, tmp_path):
    from gradio_client import Client, handle_file

    before, after = expected_tokens(INVOICE, 0.11)
    client = Client(server[0], verbose=False, download_files=str(tmp_path))
    heatmap, record = client.predict(
        handle_file(str(INVOICE)), QUESTION, "0.11", "qwen2.5-vl", "texture", api_name="/allocate"
    )
    fields = allocate(Image.new("RGB", (56, 56)), "q", 1, mode="texture").to_json()  # the `allocate --json` contract
    assert set(record) == set(fields)
    assert record["id"] == "invoice" and record["budget"] == len(record["kept"]) == after
    assert record["grid"][0] * record["grid"][1] == before
    with Image.open(heatmap) as im:
        assert im.format == "PNG" and im.width > 0


def test_the_server_contacted_no_other_host(server):
    # Runs last (pytest keeps file order): by now the page was loaded, asked, and the API called.
    log = server[1].read_text()
    assert "Running on local URL" in log or "127.0.0.1" in log  # the log is the server's
    assert "OUTSIDE" not in log, log
