"""What a learner's `pip install .` ships: the package the lessons import, and nothing else.

The wheel is built here, offline, from this checkout (no build isolation: this environment's setuptools). Every
module in it must be reached by importing what the notebooks import, or be a command a learner runs
(`python -m ...`, found by its `if __name__ == "__main__":` block); the benchmarks, the browser driver and the
tests stay outside it.
"""

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel_modules(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(out)]
    subprocess.run([*cmd, str(ROOT)], check=True, capture_output=True, timeout=300)
    (wheel,) = out.glob("mha_lesson-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    outside = sorted(n for n in names if not n.startswith(("mha_lesson/", "mha_lesson-")))
    assert not outside, f"the wheel ships files outside the package: {outside}"
    modules = set()
    for name in names:
        if name.endswith(".py"):
            parts = name.removesuffix(".py").split("/")
            modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def _notebook_imports() -> set[str]:
    """Every mha_lesson module a lesson's code cells import, read from their syntax trees."""
    found = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(line for line in cell["source"] if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    found |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {name for name in found if name.split(".")[0] == "mha_lesson"}


def _commands(modules: set[str]) -> set[str]:
    """The modules a learner runs with `python -m`: those with a __main__ block, a package's __main__ included."""
    found = set()
    for module in modules:
        path = ROOT.joinpath(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body):
            found.add(module)
    return found


def test_the_wheel_holds_no_benchmark_driver_or_test(wheel_modules):
    assert "mha_lesson" in wheel_modules and "mha_lesson.head_analysis.syntax" in wheel_modules
    assert not {m for m in wheel_modules if ".bench" in m or "_lab" in m or "test" in m.split(".")[-1]}


def test_every_module_in_the_wheel_is_imported_by_a_lesson_or_is_a_command(wheel_modules):
    # Import what the lessons import, plus the commands, in a fresh interpreter; read back what got loaded.
    roots = sorted(_notebook_imports() | _commands(wheel_modules))
    code = (
        "import importlib, json, sys\n"
        f"for name in {roots!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError:\n"  # `from mha_lesson import show_source` names a function
        "        importlib.import_module(name.rpartition('.')[0])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'mha_lesson')))\n"
    )
    env = {"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True, cwd=ROOT, env=env
    )
    reached = set(json.loads(result.stdout.strip().splitlines()[-1]))
    unused = sorted(wheel_modules - reached)
    assert not unused, f"modules no lesson imports and no learner runs: {unused}"
