"""Regenerate mha_lesson/data/training_sweep.npz: lesson 13's h sweep on the two-lookup task.

Every h in 1, 2, 4, 8, 16 and seed in 0-4 trains the default two_lookups model (mha_lesson.training, pure numpy)
for 3,000 steps with a checkpoint every 250, plus a two-layer single-head model for the same seeds. It takes
several minutes, too long for the lesson, which loads this file and trains one entry again to show that it comes
out the same to the last bit. From the repository root, with the project's environment:

    .venv/bin/python tests/reference/make_h_sweep.py

tests/test_lesson11_training.py recomputes entries and compares them with the file bit for bit (on a machine
with the same numpy and BLAS; the file records both).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mha_lesson.demos import training as lesson  # noqa: E402


def main() -> None:
    """Run the sweep, save it, and print the time taken."""
    start = time.perf_counter()
    sweep = lesson.run_sweep()
    lesson.save_sweep(sweep)
    print(f"{lesson.SWEEP_PATH.relative_to(ROOT)} written in {time.perf_counter() - start:.0f} s ({sweep.blas})")


if __name__ == "__main__":
    main()
