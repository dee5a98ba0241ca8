"""Property: each public function and method, given a bad argument, raises ValueError or TypeError naming it, or works.

The cases come from tests/bad_input_sweep.py (generated from each function's signature and valid call); hypothesis
draws from them, and every call runs in a forked child with a memory cap and a time limit.
"""

import inspect

import bad_input_sweep as sweep
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CASES = sweep.cases()
# Calls that may legitimately allocate between the sweep's 1 GiB cap and the library's 4 GiB max_bytes rule.
WITHIN_MAX_BYTES = {("padding_mask", "n", "huge")}
# Known gaps, each a ValueError that names a related argument rather than the one swept (see the sweep's -v): none.
KNOWN: set[tuple[str, str, str]] = set()


def test_every_public_function_is_swept_or_left_out_with_a_reason():
    left_out = {fn for fns in sweep.LEFT_OUT.values() for fn in fns}
    missing = [sweep.label(fn) for fn in sweep.public_functions() if fn not in sweep.VALID and fn not in left_out]
    assert not missing


def test_every_public_method_is_swept_or_left_out_with_a_reason():
    swept = {fn.__func__ for fn in sweep.VALID if inspect.ismethod(fn)}
    left_out = {fn for fns in sweep.LEFT_OUT.values() for fn in fns}
    missing = [m.__qualname__ for m in sweep.public_methods() if m not in swept and m not in left_out]
    assert not missing


def test_the_sweep_covers_every_argument_of_every_swept_function():
    for fn, valid in sweep.VALID.items():
        params = inspect.signature(fn).parameters
        assert set(valid) == {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD} - {"self"}, sweep.label(fn)


@pytest.mark.parametrize("fn", list(sweep.VALID), ids=sweep.label)
def test_every_valid_call_gives_a_finite_answer(fn):
    assert sweep.call((fn, None, "valid", None, False)) == sweep.RIGHT


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES))
def test_bad_input_is_named_or_works(case):
    fn, name, label, _, _ = case
    if (fn.__name__, name, label) in WITHIN_MAX_BYTES | KNOWN:
        return
    outcome = sweep.call(case)
    assert outcome in (sweep.NAMED, sweep.RIGHT), f"{sweep.label(fn)}({name}={label}): {outcome}"
