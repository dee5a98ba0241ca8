"""Every `python -m mha_lesson...` command line: --help prints a usage with its choices, an unknown option is an error.

The entry points are found, not listed: every module under mha_lesson/ with an `if __name__ == "__main__":`
block, and every benchmark module the bench dispatcher runs. A new one is tested without editing this file.
"""

import ast
import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from benchmarks import __main__ as bench
from mha_lesson.aids import flashcards

ROOT = Path(__file__).resolve().parents[1]
PACKAGE, BENCH, SITE = ROOT / "mha_lesson", ROOT / "benchmarks", ROOT / "website"
# Benchmark modules, read off the folder (independently of the dispatcher's own discovery).
BENCHMARKS = sorted(p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_"))


def _has_main_block(path: Path) -> bool:
    """True when the module runs something under `if __name__ == "__main__":`."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    return False


def _module(path: Path) -> str:
    """mha_lesson/aids/flashcards.py -> mha_lesson.aids.flashcards; a package's __main__.py -> the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__main__" else parts)


ENTRY_POINTS = sorted(
    _module(p) for folder in (PACKAGE, BENCH, SITE) for p in folder.rglob("*.py") if _has_main_block(p)
)


def run_module(module: str, args: list[str], cwd: Path, monkeypatch) -> int:
    """Exit code of `python -m module args` run in this process, as runpy runs it, in cwd (0 if it returns)."""
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", [module, *args])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "found in sys.modules": imported earlier by the tests
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exit_:
            return 0 if exit_.code is None else exit_.code
    return 0


def test_the_entry_points_found_include_the_known_ones():
    assert {"mha_lesson.aids.flashcards", "website", "benchmarks"} <= set(ENTRY_POINTS)
    assert {"core", "minilm", "widgets"} <= set(BENCHMARKS)


def test_flashcards_help_from_a_real_shell_writes_no_file_named_help(tmp_path):
    """The issue's case, as a learner types it: a separate Python, in an empty folder."""
    result = subprocess.run(
        [sys.executable, "-m", "mha_lesson.aids.flashcards", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and result.stdout.startswith("usage: python -m mha_lesson.aids.flashcards")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_help_prints_usage_and_writes_nothing(module, tmp_path, monkeypatch, capsys):
    assert run_module(module, ["--help"], tmp_path, monkeypatch) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m {module}"), out[:200]
    assert list(tmp_path.iterdir()) == []  # no file named --help, no build/ folder


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_an_unknown_option_is_an_error_not_a_file_name(module, tmp_path, monkeypatch, capsys):
    assert run_module(module, ["--no-such-option"], tmp_path, monkeypatch) == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bench_help_lists_every_benchmark_module_with_its_summary(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    listing = out.split("benchmarks:\n", 1)[1]
    for name in BENCHMARKS:
        assert f"\n  {name} " in f"\n{listing}", f"{name} missing from:\n{out}"
    assert bench.benchmarks()["core"].startswith("Time the batched forward")  # the docstring's first line


def test_bench_refuses_an_unknown_benchmark_naming_the_choices(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["no_such_benchmark"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'no_such_benchmark'" in err and all(f"'{name}'" in err for name in BENCHMARKS)


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_has_its_own_help(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main([name, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m benchmarks {name}")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_refuses_an_unknown_option(name, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main([name, "--no-such-option"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err


def test_options_without_a_name_go_to_core(capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--repeats", "x"])  # core's parser reads it (and refuses the value)
    assert exit_.value.code == 2
    assert "python -m benchmarks core: error: argument --repeats" in capsys.readouterr().err


def test_flashcards_writes_the_named_file_and_reports_a_missing_deck(tmp_path, capsys):
    flashcards.main([str(tmp_path / "deck.tsv")])
    assert "cards from multi-head-attention.md" in capsys.readouterr().out
    assert (tmp_path / "deck.tsv").read_text(encoding="utf-8").startswith("#separator:tab\n")
    with pytest.raises(SystemExit) as exit_:
        flashcards.main(["--deck", str(tmp_path / "missing.md"), str(tmp_path / "other.tsv")])
    assert exit_.value.code == 1
    assert "missing.md" in capsys.readouterr().err and not (tmp_path / "other.tsv").exists()
