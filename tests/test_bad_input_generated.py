"""Property: each public function, method and widget constructor, given a bad argument, raises ValueError or
TypeError naming it, or works.

The cases come from tests/bad_input_sweep.py (generated from each function's signature and valid call); hypothesis
draws from them, and every call runs in a forked child with a memory cap and a time limit.
"""

import inspect

import bad_input_sweep as sweep
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CASES = sweep.cases()


def test_every_public_function_is_swept_or_left_out_with_a_reason():
    left_out = {fn for fns in sweep.LEFT_OUT.values() for fn in fns}
    missing = [sweep.label(fn) for fn in sweep.public_functions() if fn not in sweep.VALID and fn not in left_out]
    assert not missing


def test_every_public_method_is_swept_or_left_out_with_a_reason():
    swept = {fn.__func__ for fn in sweep.VALID if inspect.ismethod(fn)}
    left_out = {fn for fns in sweep.LEFT_OUT.values() for fn in fns}
    missing = [m.__qualname__ for m in sweep.public_methods() if m not in swept and m not in left_out]
    assert not missing


def test_every_public_widget_constructor_is_swept_or_a_record():
    missing = [sweep.label(c) for c in sweep.widget_constructors() if c not in sweep.VALID]
    assert not [m for m in missing if m not in map(sweep.label, sweep.WIDGET_RECORDS)]
    assert len(sweep.WIDGET_RECORDS) < len(sweep.widget_constructors()) / 4  # the explorers themselves are swept


def test_every_function_left_out_as_unchecked_says_so_in_its_docstring():
    quiet = [sweep.label(fn) for fn in sweep.LEFT_OUT["unchecked, as its docstring says"]]
    assert not [q for q, fn in zip(quiet, sweep.LEFT_OUT["unchecked, as its docstring says"], strict=True)
                if "unchecked" not in (fn.__doc__ or "").lower()]  # fmt: skip


def test_the_sweep_covers_every_argument_of_every_swept_function():
    for fn, valid in sweep.VALID.items():
        params = inspect.signature(fn).parameters
        named = {n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - {"self"}
        extra = any(p.kind is p.VAR_KEYWORD for p in params.values())  # **sizes: overrides swept by name too
        assert set(valid) == named or (extra and set(valid) > named), sweep.label(fn)


def test_every_array_argument_gets_the_issue_33_variants():
    labels = {label for fn, name, label, _, _ in CASES if (fn, name) == (sweep.encoder.gelu, "x")}
    wanted = {"None", "a string", "a dict", "0-D", "zero size", "NaN", "+inf", "-inf", "an int array",
              "a bool array", "float16", "a huge broadcast view"}  # fmt: skip
    assert wanted <= labels


@pytest.mark.parametrize("fn", list(sweep.VALID), ids=sweep.label)
def test_every_valid_call_gives_a_finite_answer(fn):
    assert sweep.call((fn, None, "valid", None, False)) == sweep.RIGHT


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES))
def test_bad_input_is_named_or_works(case):
    fn, name, label, _, _ = case
    outcome = sweep.call(case)
    assert outcome in (sweep.NAMED, sweep.RIGHT), f"{sweep.label(fn)}({name}={label}): {outcome}"
