"""The command lines given a bad path: one line saying what is wrong, a non-zero exit, no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def assert_one_line_error(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def bad_outputs(tmp_path: Path) -> dict[str, Path]:
    """Output paths that cannot be written, by why."""
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "a_dir").mkdir()
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    # root may write into a read-only folder, but not create a file in sysfs.
    unwritable = Path("/sys/mha_lesson_cards.tsv") if os.geteuid() == 0 else locked / "cards.tsv"
    return {
        "parent is a file": tmp_path / "a_file" / "cards.tsv",
        "a directory": tmp_path / "a_dir",
        "unwritable": unwritable,
        "missing mount": Path("/proc/no_such_mount/cards.tsv"),
    }


@pytest.mark.parametrize("why", ["parent is a file", "a directory", "unwritable", "missing mount"])
def test_flashcards_names_an_output_it_cannot_write(why, tmp_path):
    out = bad_outputs(tmp_path)[why]
    assert_one_line_error(run("mha_lesson.aids.flashcards", str(out), cwd=tmp_path), "cannot write", str(out))


def test_site_names_a_lesson_that_does_not_exist(tmp_path):
    result = run("website", "--lessons", "01", "99", "--out", str(tmp_path / "site"), cwd=ROOT)
    assert_one_line_error(result, "--lessons", "99")


def test_site_names_an_out_under_a_file(tmp_path):
    (tmp_path / "a_file").write_text("x")
    out = tmp_path / "a_file" / "site"
    assert_one_line_error(run("website", "--lessons", "01", "--out", str(out), cwd=ROOT), "--out", str(out))
