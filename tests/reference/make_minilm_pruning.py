"""Regenerate mha_lesson/data/minilm_pruning.npz: head importance and pruning curves of all-MiniLM-L6-v2.

The lesson shows these numbers without recomputing them (it takes minutes on two cores). From the repository
root, with the project's environment:

    .venv/bin/python tests/reference/make_minilm_pruning.py

It saves head_analysis.pruning_results(load_minilm()) on every pair of mha_lesson/data/paraphrases.tsv, plus
paraphrases_sha256 and model_sha256 (the data file and model.safetensors it was computed from), numpy's version
and the seconds it took. tests/head_analysis/test_pruning.py checks the hashes and recomputes a few entries.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mha_lesson import head_analysis, pretrained  # noqa: E402


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> None:
    """Compute and save the results, printing the time taken and the two curves' ends."""
    model = pretrained.load_minilm()
    start = time.perf_counter()
    results = head_analysis.pruning_results(model)
    seconds = time.perf_counter() - start
    out = ROOT / "mha_lesson" / "data" / "minilm_pruning.npz"
    np.savez_compressed(
        out,
        **results,
        paraphrases_sha256=np.array(sha256(head_analysis.DATA / "paraphrases.tsv")),
        model_sha256=np.array(sha256(pretrained.model_dir() / "model.safetensors")),
        numpy_version=np.array(np.__version__),
        seconds=np.array(seconds),
    )
    print(
        f"{out.relative_to(ROOT)} written in {seconds:.0f} s; intact accuracy {float(results['intact_accuracy']):.3f}"
    )


if __name__ == "__main__":
    main()
