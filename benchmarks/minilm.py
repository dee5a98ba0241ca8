"""Time all-MiniLM-L6-v2's encode on mha_lesson against sentence-transformers (PyTorch) on the same sentences.

`python -m benchmarks minilm [--sentences 64 --batch-size 32 --repeats 5]` encodes the lesson corpus
(repeated to the requested count) and prints each side's median time over interleaved repeats, the ratio, and
the smallest cosine between the two sides' embeddings. sentence-transformers is used only when it is
installed; without it the comparison is skipped and says so. Target: numpy / PyTorch <= 1.5.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from mha_lesson import pretrained


def sentence_transformers_encoder(batch_size: int) -> Callable[[list[str]], np.ndarray] | None:
    """encode(sentences) with sentence-transformers on the same weights, or None when it is not installed."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None
    # The same thread count on both sides: OPENBLAS_NUM_THREADS when set (numpy's BLAS reads it), else every CPU.
    torch.set_num_threads(int(os.environ.get("OPENBLAS_NUM_THREADS") or os.cpu_count() or 1))
    st = SentenceTransformer(str(pretrained.model_dir()), device="cpu")
    return lambda s: st.encode(s, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True)


def main(argv: list[str]) -> None:
    """Run the comparison and print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks minilm")
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    corpus = pretrained.corpus()
    sentences = (corpus * (args.sentences // len(corpus) + 1))[: args.sentences]
    try:
        model = pretrained.load_minilm()
    except pretrained.ModelNotInstalledError as err:
        sys.exit(str(err))
    ids, lengths, _ = model.tokenize(sentences)
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"{len(sentences)} sentences, {int(lengths.sum())} tokens (longest {ids.shape[1]}), batch size "
          f"{args.batch_size}, {os.cpu_count()} CPUs, OPENBLAS_NUM_THREADS={threads}")  # fmt: skip
    sides: dict[str, Callable[[list[str]], np.ndarray]] = {
        "numpy (mha_lesson)": lambda s: model.encode(s, batch_size=args.batch_size)
    }
    torch_encode = sentence_transformers_encoder(args.batch_size)
    if torch_encode is None:
        print("sentence-transformers is not installed: the comparison with PyTorch is skipped")
    else:
        sides["PyTorch (sentence-transformers)"] = torch_encode
    outputs = {name: fn(sentences) for name, fn in sides.items()}  # warm-up, and the results to compare
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.repeats):  # interleaved, so that a burst of load on the shared machine hits both
        for name, fn in sides.items():
            start = time.perf_counter()
            fn(sentences)
            times[name].append(time.perf_counter() - start)
    for name, ts in times.items():
        print(f"{name:34s} median {statistics.median(ts) * 1e3:8.1f} ms   best {min(ts) * 1e3:8.1f} ms")
    if torch_encode is not None:
        ours, theirs = (statistics.median(ts) for ts in times.values())
        cosine = np.sum(outputs["numpy (mha_lesson)"] * outputs["PyTorch (sentence-transformers)"], axis=1)
        print(f"ratio numpy / PyTorch: {ours / theirs:.2f} (target <= 1.5); smallest cosine between the two "
              f"sides' embeddings: {cosine.min():.7f}")  # fmt: skip
