"""One BLAS thread for small work.

OpenBLAS splits even tiny matrix products across all cores. For lesson-sized problems that gains nothing,
and on a busy machine (a browser drawing, other programs running) it costs up to 100x: its threads spin
waiting for each other. Measured here on 2 busy cores: n=64, d_model=256 took 124 ms with the default
threads and 1.4 ms with one.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController, threadpool_info

_controller: ThreadpoolController | None = None


def one_blas_thread() -> contextlib.AbstractContextManager:
    """Context manager: BLAS runs on one thread inside it (about 20 µs to enter and leave)."""
    global _controller
    if _controller is None:  # scanning the loaded libraries takes about 1 ms: do it once
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")


def blas_name() -> str:
    """The BLAS numpy uses, with its version and CPU kernels: results are bit for bit only on the same ones."""
    blas = [lib for lib in threadpool_info() if lib.get("user_api") == "blas"]
    if not blas:
        return "unknown"
    # Other packages may load a BLAS of their own (scipy bundles another OpenBLAS): take the one numpy ships with
    # (under numpy's folder), else the first, as for a numpy built against the system's BLAS.
    numpy_dir = Path(np.__file__).parent  # wheels put it in numpy.libs beside numpy (or in numpy/.libs)
    homes = (numpy_dir.with_name(f"{numpy_dir.name}.libs"), numpy_dir / ".libs")
    own = [lib for lib in blas if Path(lib.get("filepath", "")).parent in homes]
    lib = (own or blas)[0]
    return f"{lib.get('internal_api')} {lib.get('version')} {lib.get('architecture')}"
