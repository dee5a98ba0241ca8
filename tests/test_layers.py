"""The package's layers: the numpy library (root, lm/, head_analysis/), then demos and aids, plots, widgets, exercises.

Every module's imports are read from its syntax tree (nothing is imported), resolved to the layer they reach,
and checked against what its own layer may use. The README's Layout section must name exactly these folders.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mha_lesson"
SUBPACKAGES = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))

# What each layer must never import. "root" is every module directly in mha_lesson/; lm/ and head_analysis/ are
# the library's own sub-packages, held to the root's rule.
ABOVE_THE_LIBRARY = {"demos", "aids", "plots", "widgets", "exercises"}
FORBIDDEN = {
    "root": ABOVE_THE_LIBRARY,
    "lm": ABOVE_THE_LIBRARY,
    "head_analysis": ABOVE_THE_LIBRARY,
    "demos": {"aids", "plots", "widgets", "exercises"},
    "aids": {"plots", "widgets", "exercises"},
    "plots": {"widgets", "exercises"},
}
# Outside the package a learner installs: nothing in it may import these.
OUTSIDE = ("benchmarks", "tests", "website")


def layer_of(module: str) -> str:
    """'mha_lesson.plots.cost' -> 'plots'; 'mha_lesson.attention' or 'mha_lesson' -> 'root'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SUBPACKAGES else "root"


def module_name(path: Path) -> str:
    """mha_lesson/plots/cost.py -> 'mha_lesson.plots.cost' (a package's __init__ is the package itself)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every mha_lesson module that path imports, relative imports resolved."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from .. import plots` reaches the subpackage named, not just the package.
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] in ("mha_lesson", *OUTSIDE)}


def test_layer_of_and_resolution():
    assert layer_of("mha_lesson.plots.cost") == "plots"
    assert layer_of("mha_lesson.attention") == "root"
    assert module_name(PACKAGE / "demos" / "toy.py") == "mha_lesson.demos.toy"
    assert "mha_lesson.attention" in imported_modules(PACKAGE / "demos" / "toy.py")
    assert "mha_lesson.demos.toy" in imported_modules(PACKAGE / "demos" / "connections.py")
    assert layer_of("mha_lesson.head_analysis.syntax") == "head_analysis"
    assert "mha_lesson.head_analysis.syntax" in imported_modules(PACKAGE / "head_analysis" / "selection.py")


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_respect_its_layer(path):
    own = layer_of(module_name(path)) if path.parent != PACKAGE else "root"
    reached = {name: layer_of(name) for name in imported_modules(path)}
    bad = {name for name, layer in reached.items() if layer in FORBIDDEN.get(own, set())}
    bad |= {name for name in reached if name.split(".")[0] in OUTSIDE}
    assert not bad, f"{path.relative_to(ROOT)} ({own} layer) imports {sorted(bad)}"


def test_every_subpackage_has_a_rule_or_is_the_top():
    # A new sub-package must say what it may not import; widgets and exercises sit on top of everything.
    assert set(SUBPACKAGES) - set(FORBIDDEN) == {"widgets", "exercises"}


def test_readme_layout_names_every_subpackage():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`mha_lesson/(\w+)/`", layout))
    assert named == set(SUBPACKAGES), f"README Layout names {sorted(named)}, the package has {SUBPACKAGES}"
