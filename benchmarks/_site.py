"""Drive the static site's replayed explorers in headless Chromium: every control through its recorded values.

Shared by tests/site (which asserts on the moves) and `python -m benchmarks site` (which prints their latency).
Pages open from file://; every other request is refused, so a page that needs the network fails here.
"""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path
from typing import Any

# Time from the learner's key press or click to the new frame decoded, measured inside the page.
LISTEN = """
window.__mhaMoves = [];
document.addEventListener('keydown', () => { window.__mhaT0 = performance.now(); }, true);
document.addEventListener('pointerdown', () => { window.__mhaT0 = performance.now(); }, true);
document.addEventListener('mha-frame', (e) => {
  const root = e.target;
  window.__mhaMoves.push({frame: e.detail.frame, ms: performance.now() - (window.__mhaT0 || performance.now()),
                          explorer: [...document.querySelectorAll('.mha-site-explorer')].indexOf(root)});
}, true);
"""

# What an explorer shows now: the frame index, the values its controls display, picture, readouts, note.
STATE = """root => {
  const img = root.querySelector('img.mha-frame');
  return {
    frame: +root.dataset.frame,
    src: img && !img.hidden ? img.getAttribute('src') : null,
    readouts: [...root.querySelectorAll('.mha-readout')].map(el => el.innerHTML),
    note: root.querySelector('.mha-state-note').textContent,
    controls: [...root.querySelectorAll('.mha-control:not(.mha-run)')].map(c => {
      const out = c.querySelector('output'), on = c.querySelector('[aria-checked=true]');
      const select = c.querySelector('select'), box = c.querySelector('input[type=checkbox]');
      if (out) return out.textContent;
      if (on) return on.textContent;
      if (select) return select.options[select.selectedIndex].text;
      if (box) return box.checked ? 'on' : 'off';
      return c.querySelector('input').value;
    }),
  };
}"""


def _label(spec: dict, value: Any) -> str:
    """How explorer.js labels a value: the option's label, on/off, or the number as JavaScript prints it."""
    if "labels" in spec:
        return spec["labels"][spec["values"].index(value)]
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclasses.dataclass
class Move:
    """One move of one control on one page: what was asked, what the page showed, and how long it took."""

    page: str
    explorer: int
    control: str
    value: Any
    ms: float | None
    problems: list[str]


def block_network(page: Any, refused: list[str]) -> None:
    """Refuse every request of this page that is not for a file, adding its URL to refused (a page, not the context:
    the JupyterLab tests share the context and reach their server)."""

    def route(r: Any) -> None:
        if r.request.url.startswith(("file://", "data:")):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    page.route("**/*", route)


def _check(root: Any, manifest: dict, page_name: str, k: int, name: str, value: Any) -> Move:
    """The move's record: problems where the picture, readouts or asked value disagree with the frame shown."""
    shown = root.evaluate(STATE)
    frame = manifest["frames"][shown["frame"]]
    problems = []
    if frame["values"][name] != value:
        problems.append(f"asked {name} = {value!r}, the frame shows {frame['values'][name]!r}")
    expected = [_label(spec, frame["values"][spec["name"]]) for spec in manifest["controls"]]
    if shown["controls"][: len(expected)] != expected:
        problems.append(f"controls read {shown['controls']}, frame {shown['frame']} is {expected}")
    if "src" in frame and shown["src"] != frame["src"]:
        problems.append(f"picture {shown['src']} is not frame {shown['frame']}'s {frame['src']}")
    if shown["readouts"] != frame["readouts"]:
        problems.append("readouts differ from the frame's")
    return Move(page_name, k, name, value, None, problems)


def move_everything(context: Any, page_path: Path, manifests: list[dict], refused: list[str]) -> list[Move]:
    """Open the page (offline) and move every control of every explorer through every recorded value, by keyboard and
    mouse."""
    page = context.new_page()
    block_network(page, refused)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.add_init_script(LISTEN)
    page.goto(page_path.as_uri())
    page.wait_for_selector(".mha-site-explorer .mha-controls > *")
    moves: list[Move] = []
    roots = page.locator(".mha-site-explorer")
    for k, manifest in enumerate(manifests):
        root = roots.nth(k)
        root.scroll_into_view_if_needed()
        for c, spec in enumerate(manifest["controls"]):
            control = root.locator(".mha-control").nth(c)
            for i, value in enumerate(spec["values"]):
                before = page.evaluate("window.__mhaMoves.length")
                if spec["kind"] == "slider":
                    slider = control.locator("input[type=range]")
                    if slider.is_disabled() or (i == 0 and slider.input_value() == "0"):
                        continue  # greyed out, or already at its first value: Home would change nothing
                    slider.focus()
                    page.keyboard.press("Home" if i == 0 else "ArrowRight")
                elif spec["kind"] == "switch":
                    box = control.locator("input[type=checkbox]")
                    if box.is_disabled() or box.is_checked() == bool(value):
                        continue
                    box.click()
                elif control.locator("select").count():
                    control.locator("select").select_option(str(i))
                else:
                    button = control.locator("[role=radio]").nth(i)
                    if button.is_disabled():
                        continue
                    button.click()
                try:
                    page.wait_for_function("n => window.__mhaMoves.length > n", arg=before, timeout=5000)
                except Exception:  # noqa: BLE001 - reported as the move's problem
                    moves.append(Move(page_path.name, k, spec["name"], value, None, ["no new frame"]))
                    continue
                move = _check(root, manifest, page_path.name, k, spec["name"], value)
                shown = page.evaluate("window.__mhaMoves[window.__mhaMoves.length - 1]")
                move.ms = shown["ms"]
                moves.append(move)
    page.close()
    if errors:
        moves.append(Move(page_path.name, -1, "", None, None, [f"page error: {e}" for e in errors]))
    return moves


def latency_line(moves: list[Move]) -> str:
    """Median and p90 milliseconds per switch beside the targets (30 and 60 ms)."""
    times = sorted(m.ms for m in moves if m.ms is not None)
    if not times:
        return "no timed switches"
    p90 = times[min(len(times) - 1, round(0.9 * (len(times) - 1)))]
    return (
        f"{len(times)} switches: median {statistics.median(times):.1f} ms (target <= 30), "
        f"p90 {p90:.1f} ms (target <= 60)"
    )


def play_runs(context: Any, page_path: Path, manifests: list[dict], refused: list[str]) -> list[str]:
    """Press each recorded run's Train button (offline) and wait for its last redraw; return what disagrees."""
    page = context.new_page()
    block_network(page, refused)
    page.add_init_script(LISTEN)
    page.goto(page_path.as_uri())
    page.wait_for_selector(".mha-site-explorer .mha-controls > *")
    problems = []
    for k, manifest in enumerate(manifests):
        run = manifest.get("run") or []
        if not run:
            continue
        root = page.locator(".mha-site-explorer").nth(k)
        root.scroll_into_view_if_needed()
        root.locator(".mha-run button").first.click()
        last = f"run-{len(run) - 1}"
        try:
            page.wait_for_function(
                "([r, f]) => r.dataset.frame === f", arg=[root.element_handle(), last], timeout=60000
            )
        except Exception:  # noqa: BLE001 - reported below
            problems.append(f"{page_path.name} explorer {k}: the run never reached its last redraw")
            continue
        shown = root.evaluate(STATE.replace("frame: +root.dataset.frame", "frame: root.dataset.frame"))
        if "src" in run[-1] and shown["src"] != run[-1]["src"]:
            problems.append(f"{page_path.name} explorer {k}: last picture {shown['src']}, not {run[-1]['src']}")
        if shown["readouts"] != run[-1]["readouts"]:
            problems.append(f"{page_path.name} explorer {k}: the readouts after the run are not its last redraw's")
        if not root.locator(".mha-run button").first.is_enabled():
            problems.append(f"{page_path.name} explorer {k}: Train stays greyed out after the run")
    page.close()
    return problems
