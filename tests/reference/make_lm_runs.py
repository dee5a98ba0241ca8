"""Regenerate lesson 20's runs: the shipped Shakespeare GPT, the h sweep and the induction-head run.

    .venv/bin/python tests/reference/make_lm_runs.py default    # ~6 min: mha_lesson/data/shakespeare_gpt.{npz,log}
    .venv/bin/python tests/reference/make_lm_runs.py evaluate   # ~20 s: mha_lesson/data/lm_evaluation.npz
    .venv/bin/python tests/reference/make_lm_runs.py sweep      # ~20 min: mha_lesson/data/lm_head_sweep.npz
    .venv/bin/python tests/reference/make_lm_runs.py long       # ~12 min: mha_lesson/data/lm_head_long.npz
    .venv/bin/python tests/reference/make_lm_runs.py induction  # ~15 min: mha_lesson/data/lm_induction.npz

Each is deterministic: the same seed gives the same losses on the same numpy and BLAS kernel (the default run's
log records both). `default` is exactly `python -m mha_lesson.lm train` with its defaults. tests/test_lesson20_lm.py
retrains short prefixes and compares them with these files.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mha_lesson.demos import lm as lesson  # noqa: E402
from mha_lesson.lm import __main__ as cli  # noqa: E402
from mha_lesson.lm.train import save_checkpoint  # noqa: E402


def default() -> None:
    """The default run, its printed log saved beside the checkpoint."""
    with open(lesson.TRAIN_LOG, "w") as log, contextlib.redirect_stdout(log):
        status = cli.main(["train", "--out", str(lesson.CHECKPOINT)])
    print((lesson.TRAIN_LOG).read_text().splitlines()[-1])
    sys.exit(status)


def sweep() -> None:
    """h = 1, 2, 4, 8, 16 with two seeds each, the same budget of steps."""
    np.savez_compressed(lesson.SWEEP_PATH, **lesson.run_sweep())


def evaluate() -> None:
    """The shipped model on the whole validation text, its two plays, and as much training text."""
    params, config, _, _ = lesson.load_model()
    result = lesson.evaluation(params, config)
    np.savez_compressed(lesson.EVALUATION_PATH, **result)
    print({k: round(float(v), 4) for k, v in result.items()})


def long() -> None:
    """h = 1 and 16 at the default run's full budget (3,500 steps), beside the shipped h = 4."""
    np.savez_compressed(lesson.LONG_PATH, **lesson.run_long())


def induction() -> None:
    """The run with repeated letters mixed in, and the same run without them (the control)."""
    start = time.perf_counter()
    trainer, probes = lesson.induction_run()
    control, control_probes = lesson.induction_run(repeat_fraction=0.0)
    trainer.log |= {k: list(v) for k, v in probes.items()}
    trainer.log |= {"control_val_step": control.log["val_step"], "control_val_loss": control.log["val_loss"]}
    trainer.log |= {f"control_{k}": list(v) for k, v in control_probes.items() if k != "probe_step"}
    save_checkpoint(lesson.INDUCTION_PATH, trainer)
    print(
        f"val {trainer.log['val_loss'][-1]:.4f}, control {control.log['val_loss'][-1]:.4f}; "
        f"{time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    {"default": default, "evaluate": evaluate, "sweep": sweep, "long": long, "induction": induction}[sys.argv[1]]()
