"""Project hygiene: dependencies agree, notebooks are committed clean, the quick start is two commands."""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _split(req: str) -> tuple[str, str]:
    """'numpy>=1.24; marker' -> ('numpy', '>=1.24'): the name normalised, the version bound as written."""
    req = req.split(";")[0].split("#")[0].strip()
    name, bound = re.match(r"([A-Za-z0-9_.\-]+)\s*(.*)", req).groups()
    return re.sub(r"[-_.]+", "-", name).lower(), bound.replace(" ", "")


def test_environment_yml_and_pyproject_list_the_same_packages_and_bounds():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(map(_split, project["dependencies"] + project["optional-dependencies"]["test"]))
    env = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    conda = [d for d in env if isinstance(d, str) and not d.startswith(("python", "pip"))]
    pip = [d for d in env if isinstance(d, dict)][0]["pip"]
    listed = dict(map(_split, conda + [p for p in pip if not p.startswith("-e")]))
    assert listed == wanted
    assert "-e ." in pip, "environment.yml must install the project itself"
    python = [d for d in env if isinstance(d, str) and d.startswith("python")]
    assert python == [f"python{project['requires-python']}"]


def test_core_dependencies_have_lower_bounds_and_no_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for req in project["dependencies"] + project["optional-dependencies"]["test"]:
        bound = _split(req)[1]
        assert bound.startswith(">="), f"{req}: use a lower bound"
        assert "==" not in bound and "<" not in bound.lstrip(">="), f"{req}: no pins or upper bounds"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs_and_with_a_kernelspec(path):
    nb = json.loads(path.read_text())
    dirty = [i for i, c in enumerate(nb["cells"]) if c.get("outputs") or c.get("execution_count")]
    assert dirty == [], f"cells with outputs or execution counts: {dirty}"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb["metadata"], "saved widget state belongs to outputs"


def test_notebooks_are_numbered_in_reading_order():
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(len(numbers))), "lessons are numbered 00, 01, 02, ... without gaps"


def test_readme_quick_start_is_the_two_make_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", readme, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make lab", "make test"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_lesson_ends_with_a_hinglish_recap_and_a_link_onwards(path):
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    assert any("## Recap in Hinglish" in s for s in cells), f"{path.name} has no Hinglish recap"
    if path != NOTEBOOKS[-1]:
        assert re.search(r"Next:\** \[Lesson \d+", "\n".join(cells)), f"{path.name} links no next lesson"
