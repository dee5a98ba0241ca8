"""Train and Stop on a background thread: the part lessons 13's and 20's training explorers share.

The kernel handles a button click only between the cells it runs, so a training loop run from a click handler
would hold the kernel until it ends and Stop could never arrive; on a thread, the kernel stays free. One lock
guards the trainer and the figures: the thread holds it while it trains and redraws, a control move waits for it.
ipywidgets 8 sends widget values from any thread; nothing here prints or uses an Output widget, which would not be
thread-safe.
"""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets as widgets


class BackgroundTraining:
    """Mixin for an Explorer (listed before it): the lock, the worker thread, Train/Stop buttons and their states.

    A subclass calls `init_background` before Explorer.__init__ (whose first refresh takes the lock), starts its
    thread with `start_worker`, and has that thread call `set_running(False)` when it ends.
    """

    def init_background(self, train_description: str) -> None:
        """The lock, no thread yet, and the two buttons (Stop greyed out)."""
        self.lock = threading.RLock()
        self.worker: threading.Thread | None = None
        self.stop_event = threading.Event()
        self.train_button = widgets.Button(description=train_description, icon="play", button_style="success")
        self.stop_button = widgets.Button(description="Stop", icon="stop", disabled=True)

    def start_worker(self, target: Any, *args: Any, name: str) -> threading.Event:
        """Make a fresh stop event and a daemon thread running target(*args, stop); grey out Train; return the event.

        The caller starts it with `self.worker.start()` (after any redraw it wants first), holding the lock.
        """
        self.stop_event = stop = threading.Event()
        self.worker = threading.Thread(target=target, args=(*args, stop), daemon=True, name=name)
        self.set_running(True)
        return stop

    def on_stop(self, _: Any = None) -> None:
        """Stop button: the thread stops after its current step (and redraws the stopped state itself)."""
        self.stop_event.set()

    def on_setting(self, _: dict) -> None:
        """A move of a control that selects the run stops the thread (before the redraw shows the new setting)."""
        self.stop_event.set()

    @property
    def running(self) -> bool:
        """Whether a training thread is alive."""
        return self.worker is not None and self.worker.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the training thread ends (for tests and scripts); True if none is running any more."""
        worker = self.worker
        if worker is not None:
            worker.join(timeout)
        return not self.running

    def set_running(self, running: bool) -> None:
        """Grey out Train while a run goes, Stop while none does."""
        self.train_button.disabled = running
        self.stop_button.disabled = not running

    def refresh(self) -> None:
        """Recompute and redraw under the lock, so a move never draws while the thread does."""
        with self.lock:
            super().refresh()  # the Explorer's
