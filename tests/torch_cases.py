"""Reading the PyTorch fixtures of tests/reference: one .npz holds cases, each array keyed `<case>__<field>`."""

from pathlib import Path

import numpy as np

import mha_lesson as m


def read_cases(fixture: Path) -> dict[str, dict[str, np.ndarray]]:
    """case name -> {field: array} for every case saved in fixture."""
    with np.load(fixture) as data:
        cases: dict[str, dict[str, np.ndarray]] = {}
        for key in data.files:
            case, field = key.split("__")
            cases.setdefault(case, {})[field] = data[key]
    return cases


def case_params(case: dict[str, np.ndarray]) -> m.MHAParams:
    """The MHAParams saved with a case: its h (and h_kv, where saved) and its w_* and b_* arrays."""
    arrays = {name: a for name, a in case.items() if name[:2] in ("w_", "b_")}
    return m.MHAParams(h=int(case["h"]), h_kv=int(case.get("h_kv", case["h"])), **arrays)
