"""Shared test settings (hypothesis runs are derandomized: every run checks the same examples) and helpers."""

import copy
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import settings

from benchmarks.notebooks import WORKERS, execute
from mha_lesson.aids.concept_map import NOTEBOOKS

# derandomize: examples come from a fixed seed, so a failure reproduces on every machine and run;
# database=None then keeps .hypothesis/ out of the checkout. deadline=None: shared CI cores are noisy.
settings.register_profile("mha", derandomize=True, database=None, deadline=None, max_examples=60)
settings.load_profile("mha")


@pytest.fixture(scope="session")
def executed_notebook():
    """Path -> the notebook run headless, each run once and shared by the notebook and static-export tests.

    The first request starts every lesson, WORKERS at a time, as `make site` runs them; a notebook whose cell
    fails raises only when that notebook is asked for.
    """
    with ThreadPoolExecutor(WORKERS) as pool:
        runs: dict[Path, Future] = {}

        def get(path: Path):
            if not runs:
                for lesson in sorted(NOTEBOOKS.resolve().glob("*.ipynb")):
                    runs[lesson] = pool.submit(execute, lesson, figures=True)
            path = Path(path).resolve()
            if path not in runs:
                runs[path] = pool.submit(execute, path, figures=True)
            return copy.deepcopy(runs[path].result())

        yield get
        for run in runs.values():
            run.cancel()  # a filtered run (-k) asked for a few: do not wait for the rest


@pytest.fixture(scope="session")
def minilm():
    """The pretrained MiniLM, loaded once for every test that reads it; skipped where the model package is missing
    (CI must have it)."""
    from mha_lesson import pretrained

    try:
        return pretrained.load_minilm()
    except pretrained.ModelNotInstalledError as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must have the model package: {err}")
        pytest.skip(str(err))


@pytest.fixture(scope="session")
def browser_context():
    """One headless Chromium context for every browser test of the session: Playwright's sync API allows one
    instance at a time in a thread, so the JupyterLab, Notebook 7 and static-site tests share it. Skips without
    Chromium or Playwright; fails instead under CI=true."""
    from benchmarks import _lab

    reason = _lab.browser_unavailable()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests must run under CI=true, but {reason}", pytrace=False)
        pytest.skip(reason)
    with _lab.chromium() as context:
        yield context
