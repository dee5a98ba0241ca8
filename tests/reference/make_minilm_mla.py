"""Regenerate mha_lesson/data/minilm_mla.npz: paraphrase retrieval of all-MiniLM-L6-v2 with its keys and values
computed from a rank-d_c latent (lesson 19, multi-head latent attention).

The lesson reads these numbers (computing them takes about a minute on two busy cores). From the repository root:

    .venv/bin/python tests/reference/make_minilm_mla.py

It saves demos.today.latent_retrieval(load_minilm()) on every pair of mha_lesson/data/paraphrases.tsv and the
seconds it took; tests/test_lesson19.py recomputes one d_c.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mha_lesson import pretrained  # noqa: E402
from mha_lesson.demos import today  # noqa: E402


def main() -> None:
    """Compute and save the results, printing them."""
    model = pretrained.load_minilm()
    start = time.perf_counter()
    results = today.latent_retrieval(model)
    seconds = time.perf_counter() - start
    np.savez_compressed(ROOT / "mha_lesson" / "data" / "minilm_mla.npz", seconds=seconds, **results)
    print(f"{seconds:.1f} s")
    for key, value in results.items():
        print(key, np.round(value, 4))


if __name__ == "__main__":
    main()
