"""`make lab` lands on the start page whichever way the learner gets in, with nothing over it.

The server is started by running the Makefile's own `lab` target, so the test cannot drift from it. Only the
surroundings differ from a learner's first run: the port (JUPYTER_PORT), a stand-in browser that records the URL
JupyterLab opens by itself (BROWSER), private Jupyter dirs (a new learner: no saved workspace, settings or config),
a copy of the notebooks (nothing is written into the checkout) and the Python environment (the one running the
tests, without re-installing it; make still copies the project's JupyterLab settings into it if they are missing or
older, as `make lab` does).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks import _lab

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
START_PAGE = "00_start_here.ipynb"
# How long a page may keep changing after its kernel is idle. In trials JupyterLab's news question appeared
# before the notebook's first cell did, so anything that pops up on start is there well within this.
SETTLE_S = 2.0
FRONT_S = 30.0  # from JupyterLab's first tab to the start page in front
SCREENSHOTS = ROOT / "build" / "screenshots"
CURRENT_LABEL = "#jp-main-dock-panel .lm-TabBar-tab.jp-mod-current .lm-TabBar-tabLabel"

# What the page shows: the label of the current tab in the main area, whether the widget under it shows the
# start page's heading, and whatever sits over it (dialogs, toasts, or any element that covers a point of it).
LANDING_JS = r"""
(heading) => {
  const main = document.querySelector('#jp-main-dock-panel');
  const current = main ? [...main.querySelectorAll('.lm-TabBar-tab.jp-mod-current')] : [];
  const label = (tab) => tab.querySelector('.lm-TabBar-tabLabel').textContent;
  const panel = current.length === 1 ? document.getElementById(current[0].dataset.id) : null;
  const describe = (el) => el ? `<${el.tagName.toLowerCase()} class="${el.className}">` : 'nothing';
  const covered = [];
  if (panel) {
    const box = panel.getBoundingClientRect();
    for (const fx of [0.05, 0.25, 0.5, 0.75, 0.95]) {
      for (const fy of [0.05, 0.25, 0.5, 0.75, 0.95]) {
        const el = document.elementFromPoint(box.left + fx * box.width, box.top + fy * box.height);
        if (!panel.contains(el)) covered.push(`${Math.round(fx * 100)}%, ${Math.round(fy * 100)}%: ${describe(el)}`);
      }
    }
  }
  const overlays = [...document.querySelectorAll('.jp-Dialog, .Toastify__toast')]
    .map((el) => el.innerText.trim().replace(/\s+/g, ' ').slice(0, 120));
  return {
    current: current.map(label),
    shown: !!panel && (panel.querySelector('.jp-RenderedMarkdown h1')?.textContent ?? '').startsWith(heading),
    overlays,
    covered,
  };
}
"""


@dataclass
class MadeLab:
    """The server `make lab` started, the URLs it printed and the one it opened in the (stand-in) browser."""

    server: _lab.LabServer
    printed: list[str]
    opened: str


@pytest.fixture(scope="module")
def made_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MadeLab]:
    """Run `make lab` on a free port with a stand-in browser; stop it and its kernels at the end."""
    reason = _lab.browser_unavailable() or (None if shutil.which("make") else "make not found")
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run under CI=true, but {reason}", pytrace=False)
        pytest.skip(reason)
    workdir = tmp_path_factory.mktemp("make-lab")
    checkout, env = learner_checkout(workdir), private_env(workdir)
    port = _lab.free_port()
    env["JUPYTER_PORT"] = str(port)
    log, opened = workdir / "make-lab.log", workdir / "opened.txt"
    env["BROWSER"] = str(stand_in_browser(workdir / "browser", opened))
    # The environment running the tests, given relative to the checkout as the Makefile's own `.venv` is.
    venv = os.path.relpath(sys.prefix, checkout)
    # `-o <stamp>`: use that environment as it is; a stale stamp must not start a pip install in the test.
    cmd = ["make", "--no-print-directory", "-C", str(checkout), f"VENV={venv}", "-o", stamp(checkout, venv), "lab"]
    with log.open("w") as log_file:
        # Own process group (make, its shell and the server), stopped as one in the `finally`.
        process = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = None
    try:
        printed = wait_for_urls(process, log, port)
        http = next(u for u in printed if u.startswith("http"))
        token = urllib.parse.parse_qs(urllib.parse.urlsplit(http).query)["token"][0]
        server = _lab.LabServer(f"http://127.0.0.1:{port}", token, checkout / "notebooks", process, log)
        yield MadeLab(server, printed, wait_for_opened(process, opened, log))
    finally:
        if server is not None:
            with contextlib.suppress(OSError):  # a server that already exited has no kernels left
                server.shutdown_kernels()
        _lab.stop_process_group(process)


def learner_checkout(workdir: Path) -> Path:
    """A checkout as a learner has it: links to the project's files, and a copy of notebooks/ to serve."""
    checkout = workdir / "checkout"
    checkout.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in ("notebooks", "build") and not entry.name.startswith("."):
            (checkout / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "notebooks", checkout / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return checkout


def private_env(workdir: Path) -> dict[str, str]:
    """This process's environment as a learner's shell has it (no JUPYTER_* settings, not inside another make),
    with Jupyter and IPython dirs of their own: nothing of ~ is read or written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "MAKE", "MFLAGS"))}
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("IPYTHONDIR", "ipython")]:  # fmt: skip
        env[var] = str(workdir / sub)
    return env


def stand_in_browser(path: Path, record: Path) -> Path:
    """An executable that Python's `webbrowser` (through $BROWSER) runs with the URL; it appends it to `record`."""
    script = f"""#!{sys.executable}
import sys

with open({str(record)!r}, "a") as f:
    print(sys.argv[1], file=f)
"""
    path.write_text(script)
    path.chmod(0o755)
    return path


def stamp(checkout: Path, venv: str) -> str:
    """The Makefile's install stamp for `venv` (asked of make, so a renamed stamp cannot start an install)."""
    ask = ["--eval=print-stamp: ; @echo $(STAMP)", "print-stamp"]
    cmd = ["make", "--no-print-directory", "-s", "-C", str(checkout), f"VENV={venv}", *ask]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def wait_for_urls(process: subprocess.Popen, log: Path, port: int) -> list[str]:
    """Every distinct URL the server printed, once it has printed where to reach it (`localhost` and 127.0.0.1)."""
    deadline = time.monotonic() + _lab.OPEN_TIMEOUT_S
    while True:
        text = log.read_text()
        text = text[: text.rfind("\n") + 1]  # whole lines only: a URL may be half written
        urls = list(dict.fromkeys(re.findall(r"(?:https?|file)://\S+", text)))
        hosts = {urllib.parse.urlsplit(u).hostname for u in urls if u.startswith("http")}
        if {"localhost", "127.0.0.1"} <= hosts and "copy and paste" in text:
            assert all(f":{port}/" in u for u in urls if u.startswith("http")), f"not on port {port}:\n{text}"
            return urls
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(
                f"make lab printed no localhost and 127.0.0.1 URLs (exit code {process.poll()}):\n{text}"
            )
        time.sleep(0.3)


def wait_for_opened(process: subprocess.Popen, record: Path, log: Path) -> str:
    """The URL JupyterLab handed to the browser it opens by itself."""
    deadline = time.monotonic() + 30
    while not (record.exists() and record.read_text().strip()):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"make lab opened no browser:\n{log.read_text()}")
        time.sleep(0.3)
    return record.read_text().split()[0]


@pytest.fixture(scope="module")
def browser(made_lab: MadeLab, lab) -> Iterator[object]:
    """Headless Chromium; each URL is opened in a fresh context, as a browser that never saw this server.

    It is the lesson tests' Chromium (the session's `lab`): Playwright's sync API allows one instance per thread,
    so a second sync_playwright() in the same run fails. A new context shares no cookies, storage or cache.
    """
    yield lab.context.browser


def start_page_heading() -> str:
    """The first line of the start page's first cell, as the rendered page shows it (without the `#`)."""
    cell = json.loads((ROOT / "notebooks" / START_PAGE).read_text())["cells"][0]
    return "".join(cell["source"]).splitlines()[0].lstrip("#").strip()


def wait_for_kernel(server: _lab.LabServer, notebook: str) -> None:
    """Wait until `notebook` has a session whose kernel is idle (the page has then finished starting it)."""
    deadline = time.monotonic() + _lab.OPEN_TIMEOUT_S
    while time.monotonic() < deadline:
        states = [s["kernel"]["execution_state"] for s in server.api("GET", "/api/sessions") if s["path"] == notebook]
        if states == ["idle"]:
            return
        time.sleep(0.3)
    raise TimeoutError(f"{notebook}'s kernel was not idle within {_lab.OPEN_TIMEOUT_S:.0f} s")


def wait_for_saved_current(server: _lab.LabServer, widget: str) -> None:
    """Wait until the default workspace saved on the server has `widget` (e.g. notebook:<path>) in front."""
    deadline = time.monotonic() + _lab.OPEN_TIMEOUT_S
    while time.monotonic() < deadline:
        data = server.api("GET", "/lab/api/workspaces/default")["data"]
        if data.get("layout-restorer:data", {}).get("main", {}).get("current") == widget:
            return
        time.sleep(0.3)
    raise TimeoutError(f"the workspace did not save {widget} as the current tab within {_lab.OPEN_TIMEOUT_S:.0f} s")


def forget_open_tabs(server: _lab.LabServer) -> None:
    """Delete the default workspace, where JupyterLab keeps the open tabs on the server (if it saved one yet)."""
    try:
        server.api("DELETE", "/lab/api/workspaces/default")
    except urllib.error.HTTPError as err:
        if err.code != 404:
            raise


def landing(browser: object, made_lab: MadeLab, url: str, shot: Path) -> dict:
    """Open `url` in a fresh context and report what it shows once settled (see LANDING_JS); saves a screenshot."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport=_lab.VIEWPORT)
    try:
        page = context.new_page()
        page.goto(url, timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        # A file:// URL redirects after a second; the wait follows it to JupyterLab.
        page.wait_for_selector(CURRENT_LABEL, timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        # A restored workspace shows its saved tab first; the start page comes to the front once the URL's path
        # is resolved (about 2 s later in trials).
        try:
            page.wait_for_function(
                "([sel, name]) => document.querySelector(sel)?.textContent === name",
                arg=[CURRENT_LABEL, START_PAGE],
                timeout=FRONT_S * 1e3,
            )
            wait_for_kernel(made_lab.server, START_PAGE)
        except PlaywrightTimeout:
            pass  # the report below says which tab is in front instead
        page.wait_for_timeout(SETTLE_S * 1e3)
        state = page.evaluate(LANDING_JS, start_page_heading())
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot))
        return state
    finally:
        context.close()


def problems(state: dict) -> list[str]:
    """What keeps a learner from seeing the start page at once, from a LANDING_JS report (empty when nothing)."""
    found = []
    if state["current"] != [START_PAGE]:
        found.append(f"the current tab is {state['current']}, not {START_PAGE}")
    elif not state["shown"]:
        found.append(f"the current tab does not show the start page's heading {start_page_heading()!r}")
    found += [f"a pop-up is open: {text!r}" for text in state["overlays"]]
    found += [f"covered at {where}" for where in state["covered"]]
    return found


def test_printed_urls_are_local_and_carry_the_token(made_lab):
    http = [u for u in made_lab.printed if u.startswith("http")]
    assert {urllib.parse.urlsplit(u).hostname for u in http} == {"localhost", "127.0.0.1"}
    assert all(f"token={made_lab.server.token}" in u for u in http)
    assert made_lab.opened in made_lab.printed, "the page JupyterLab opens itself should be printed too"


def test_every_way_in_shows_the_start_page_with_nothing_over_it(made_lab, browser):
    report = {}
    for i, url in enumerate([made_lab.opened, *[u for u in made_lab.printed if u != made_lab.opened]]):
        forget_open_tabs(made_lab.server)  # each URL as the learner's first way in
        host = urllib.parse.urlsplit(url).hostname or "file"
        state = landing(browser, made_lab, url, SCREENSHOTS / f"landing_{i}_{host}.png")
        report[url] = problems(state)
    assert not any(report.values()), "\n".join(f"{url}:\n  " + "\n  ".join(p) for url, p in report.items() if p)


def test_a_printed_url_shows_the_start_page_after_another_lesson_was_left_open(made_lab, browser):
    # A returning learner pastes the URL again: the workspace restores their tabs, the start page is in front.
    server = made_lab.server
    other = next(p.name for p in sorted(server.root.glob("*.ipynb")) if p.name != START_PAGE)
    context = browser.new_context(viewport=_lab.VIEWPORT)
    try:
        page = context.new_page()
        page.goto(f"{server.url}/lab/tree/{other}?token={server.token}", timeout=_lab.OPEN_TIMEOUT_S * 1e3)
        wait_for_saved_current(server, f"notebook:{other}")
    finally:
        context.close()
    url = next(u for u in made_lab.printed if urllib.parse.urlsplit(u).hostname == "localhost")
    state = landing(browser, made_lab, url, SCREENSHOTS / "landing_returning.png")
    assert not problems(state), "\n".join(problems(state))
