"""Regenerate tests/reference/gpt_oss_sinks.npz: outputs of gpt-oss's own `sdpa` (attention with per-head sinks).

Neither PyTorch nor gpt-oss is a dependency; only this script imports them. gpt-oss 0.0.9's wheel (PyPI, pure
Python, sha256 4bbd174a...7f9c) needs Python >= 3.12, so it is imported straight from the downloaded wheel file
rather than installed. From the repository root, in a scratch environment with torch (2.13.0 here) and safetensors:

    pip download --no-deps --python-version 3.12 --only-binary=:all: gpt-oss==0.0.9 -d /tmp/gptoss
    /tmp/scratch24/bin/python tests/reference/make_gpt_oss_fixture.py /tmp/gptoss/gpt_oss-0.0.9-py3-none-any.whl

`sdpa(Q, K, V, S, sm_scale, sliding_window)` in gpt_oss/torch/model.py (the same function as openai/gpt-oss on
GitHub) takes Q (n, h_kv, group, d), K and V (n, h_kv, d), one sink logit per query head S (h_kv * group,), and
applies its causal mask (and the sliding window when > 0). Each case is stored as "<case>__<field>":
Q, K, V, S, sliding_window (0-d) and out (n, h * d).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, sys.argv[1])  # a pure-Python wheel is a zip archive that Python imports from directly
from gpt_oss.torch.model import sdpa  # noqa: E402

OUT = Path(__file__).with_name("gpt_oss_sinks.npz")
# name: (n, h_kv, group, d, sliding_window, sink scale)
CASES = {
    "causal_gqa": (6, 2, 2, 4, 0, 2.0),
    "one_kv_head": (5, 1, 3, 3, 0, 0.5),
    "sliding_window": (9, 2, 1, 4, 3, 2.0),
    "strong_sinks": (4, 2, 2, 2, 0, 8.0),
}


def main() -> None:
    arrays = {}
    for name, (n, h_kv, group, d, window, sink_scale) in CASES.items():
        g = torch.Generator().manual_seed(len(arrays))
        Q = torch.randn(n, h_kv, group, d, generator=g, dtype=torch.float64)
        K = torch.randn(n, h_kv, d, generator=g, dtype=torch.float64)
        V = torch.randn(n, h_kv, d, generator=g, dtype=torch.float64)
        S = sink_scale * torch.randn(h_kv * group, generator=g, dtype=torch.float64)
        out = sdpa(Q, K, V, S, 1.0 / d**0.5, sliding_window=window)
        fields = {"Q": Q, "K": K, "V": V, "S": S, "out": out}
        arrays |= {f"{name}__{k}": v.numpy() for k, v in fields.items()}
        arrays[f"{name}__sliding_window"] = np.array(window)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({len(CASES)} cases), torch {torch.__version__}")


if __name__ == "__main__":
    main()
