"""The static site, built from two lessons: pages, budget, links and anchors, search, offline, and frames that equal
what the live explorer draws for the same state."""

from __future__ import annotations

import base64
import html
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from benchmarks.widgets import all_explorers
from website.build import PIXEL_RATIO
from website.record import MAX_BYTES, MAX_FRAMES

pytestmark = pytest.mark.notebook


def test_every_chosen_lesson_has_a_page_and_the_home_lists_it_with_its_minutes(site):
    names = {p.stem for p in site.pages}
    assert {"index", "search"} <= names
    home = (site.out / "index.html").read_text(encoding="utf-8")
    for number in site.lessons:
        (page,) = [p for p in site.pages if p.stem.startswith(number)]
        assert f'href="{page.name}"' in home and "min</a>" in home


def test_each_explorer_keeps_within_its_budget_and_the_build_prints_it(site):
    explorers = site.explorers()
    assert {page.stem[:2] for page, _ in explorers} == {"01", "07", "13"} & set(site.lessons)
    for page, manifest in explorers:
        files = [site.out / f["src"] for f in manifest["frames"] if "src" in f]
        assert 1 < len(manifest["frames"]) <= MAX_FRAMES, (page.name, manifest["explorer"])
        assert sum(f.stat().st_size for f in files) <= MAX_BYTES
    assert "whole site" in site.report and str(MAX_FRAMES) in site.report


def test_every_frame_equals_the_live_explorer_in_that_state(site, monkeypatch):
    # The page's picture and readouts for a state are what the explorer itself draws when set to that state
    # (at two pixels per CSS pixel, as the build records them).
    monkeypatch.setenv(PIXEL_RATIO, "2")
    classes = {c.__name__: c for c in all_explorers()}
    for _, manifest in site.explorers():
        call = manifest["call"]  # the lesson's own arguments (none here is an object such as a model)
        assert not any(isinstance(a, dict) and "object" in a for a in [*call["args"], *call["kwargs"].values()])
        live = classes[manifest["explorer"]](*call["args"], **call["kwargs"])
        for frame in manifest["frames"]:
            live.set(**frame["values"])
            assert live.error == frame["message"], frame["values"]
            assert [getattr(w, "value", "") for w in live.readouts] == frame["readouts"], frame["values"]
            if "src" in frame:
                assert (site.out / frame["src"]).read_bytes() == live.image.value, frame["values"]


def _targets(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    return [html.unescape(h) for h in re.findall(r'<a [^>]*href="([^"]+)"', text)]


def test_glossary_links_reach_their_terms(site):
    lesson = site.out / "01_one_head_is_not_enough.html"
    terms = re.findall(r'href="21_review.html#([^"]+)"', lesson.read_text(encoding="utf-8"))
    review = (site.out / "21_review.html").read_text(encoding="utf-8")
    assert len(terms) >= 3 and all(f'id="{term}"' in review for term in terms), terms


def test_every_internal_link_and_anchor_resolves(site):
    ids = {p.name: set(re.findall(r'\bid="([^"]+)"', p.read_text(encoding="utf-8"))) for p in site.pages}
    broken = []
    for page in site.pages:
        for href in _targets(page):
            parts = urlsplit(href)
            if parts.scheme or href.startswith("//"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists():
                broken.append(f"{page.name}: {href}")
            elif parts.fragment and target.suffix == ".html" and parts.fragment not in ids[target.name]:
                broken.append(f"{page.name}: {href} (no such anchor)")
    assert not broken, broken[:20]


def test_every_heading_has_a_deep_link(site):
    for page in site.pages:
        if page.stem in ("search", "genindex"):  # Sphinx's own pages
            continue
        text = page.read_text(encoding="utf-8").split("<article", 1)[-1].split("</article>", 1)[0]  # the lesson itself
        headings = re.findall(r"<h[1-4]>(.*?)</h[1-4]>", text, re.DOTALL)
        assert headings, page.name
        assert all('class="headerlink"' in h for h in headings), page.name


def test_the_search_index_finds_the_pages_that_teach_softmax(site):
    index = (site.out / "searchindex.js").read_text(encoding="utf-8")
    assert "softmax" in index
    assert (site.out / "search.html").exists()


def test_nothing_on_any_page_comes_from_the_network(site):
    pattern = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", re.I)
    for page in site.pages:
        assert not pattern.findall(page.read_text(encoding="utf-8")), page.name
    for css in site.out.rglob("*.css"):
        assert not re.search(r"@import\s+(url\()?\s*[\"']?(https?:)?//", css.read_text(encoding="utf-8")), css


def test_every_explorer_picture_has_alt_text_saying_what_it_shows(site):
    for _, manifest in site.explorers():
        for frame in manifest["frames"]:
            assert "Shown for" in frame["alt"] and len(frame["alt"]) > 40


def test_every_static_figure_is_a_file_with_alt_text_from_its_titles(site):
    figures = [m for p in site.pages for m in re.findall(r'<img class="mha-figure" ([^>]*)>', p.read_text("utf-8"))]
    assert figures
    for attrs in figures:
        src, alt = re.search(r'src="([^"]+)"', attrs)[1], html.unescape(re.search(r'alt="([^"]*)"', attrs)[1])
        assert (site.out / src).exists() and len(alt) > 10 and alt != "untitled", attrs[:200]


def test_exercise_checks_say_they_run_in_jupyter(site):
    pages = [p for p in site.pages if p.stem[:2] in site.lessons]
    assert any("This check runs in Jupyter" in p.read_text(encoding="utf-8") for p in pages)


def test_the_first_frame_shows_without_javascript(site):
    for page, manifest in site.explorers():
        first = manifest["frames"][0]
        text = page.read_text(encoding="utf-8")
        assert f'src="{first["src"]}"' in text
        assert base64.b64encode((site.out / first["src"]).read_bytes())


def test_the_pages_workflow_builds_with_make_site_and_deploys_that_folder():
    import yaml

    root = Path(__file__).resolve().parents[2]
    flow = yaml.safe_load((root / ".github" / "workflows" / "site.yml").read_text(encoding="utf-8"))
    on = flow.get("on", flow.get(True))  # YAML 1.1 reads the key `on` as True
    assert on["push"]["branches"] == ["main"]
    assert flow["permissions"]["pages"] == "write" and flow["permissions"]["id-token"] == "write"
    build, deploy = flow["jobs"]["build"], flow["jobs"]["deploy"]
    runs = [s.get("run") for s in build["steps"]]
    assert "make site" in runs
    (upload,) = [s for s in build["steps"] if str(s.get("uses", "")).startswith("actions/upload-pages-artifact@")]
    assert upload["with"]["path"] == "build/site"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages@") for s in deploy["steps"])


def test_actionlint_passes_the_workflow_and_catches_a_broken_one(tmp_path):
    root = Path(__file__).resolve().parents[2]
    # The venv's own, when it is not activated.
    actionlint = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    flow = root / ".github" / "workflows" / "site.yml"
    result = subprocess.run([actionlint, str(flow)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(flow.read_text().replace("runs-on: ubuntu-latest", "runs-on: ${{ matrix.nowhere }}", 1))
    assert subprocess.run([actionlint, str(broken)], capture_output=True, timeout=60).returncode != 0
