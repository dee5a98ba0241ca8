"""One BLAS thread for small work.

OpenBLAS splits even tiny matrix products across all cores. For lesson-sized problems that gains nothing,
and on a busy machine (a browser drawing, other programs running) it costs up to 100x: its threads spin
waiting for each other. Measured here on 2 busy cores: n=64, d_model=256 took 124 ms with the default
threads and 1.4 ms with one.
"""

from __future__ import annotations

import contextlib

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None


def one_blas_thread() -> contextlib.AbstractContextManager:
    """Context manager: BLAS runs on one thread inside it (about 20 µs to enter and leave)."""
    global _controller
    if _controller is None:  # scanning the loaded libraries takes about 1 ms: do it once
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")
