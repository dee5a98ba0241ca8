"""Shared test settings (hypothesis runs are derandomized: every run checks the same examples) and helpers."""

import copy
import functools
from pathlib import Path

import pytest
from hypothesis import settings

from mha_lesson.export_html import execute

# derandomize: examples come from a fixed seed, so a failure reproduces on every machine and run;
# database=None then keeps .hypothesis/ out of the checkout. deadline=None: shared CI cores are noisy.
settings.register_profile("mha", derandomize=True, database=None, deadline=None, max_examples=60)
settings.load_profile("mha")


@pytest.fixture(scope="session")
def executed_notebook():
    """Path -> the notebook run headless (cached: the notebook and static-export tests share one run each)."""
    run = functools.lru_cache(maxsize=None)(execute)

    def get(path: Path):
        return copy.deepcopy(run(Path(path)))

    return get
