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


def random_mask(rng, target):
    """A boolean mask that broadcasts to target (..., n_q, n_kv): some dimensions 1, leading ones maybe dropped."""
    # The structure comes from rng rather than from hypothesis draws, whose bias toward simple values
    # would mostly give all-False masks of size 1; rng is seeded from a draw, so runs stay deterministic.
    shape = tuple(n if rng.random() < 0.7 else 1 for n in target)[rng.integers(0, len(target) - 1) :]
    mask = rng.random(shape) < rng.choice([0.3, 0.6, 0.9, 0.0, 1.0], p=[0.3, 0.3, 0.2, 0.1, 0.1])
    if shape[-2] > 1 and rng.random() < 0.4:
        mask[..., rng.integers(shape[-2]), :] = False  # one query that may attend to nothing
    return mask


@pytest.fixture(scope="session")
def executed_notebook():
    """Path -> the notebook run headless (cached: the notebook and static-export tests share one run each)."""
    run = functools.lru_cache(maxsize=None)(execute)

    def get(path: Path):
        return copy.deepcopy(run(Path(path)))

    return get
