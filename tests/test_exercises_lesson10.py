"""Lesson 10's exercise checks: right answers pass, common wrong ones get a specific hint, None is friendly."""

import pytest

from mha_lesson.exercises import lesson10 as ex


def test_none_and_non_numbers_get_a_friendly_message():
    check = ex.check_param_count
    assert not check(None) and "Replace None" in check(None).message
    assert not check("12") and "number" in check("12").message
    assert not check(float("nan"))


def test_param_count():
    assert ex.check_param_count(4 * 1280**2) and ex.check_param_count(6_553_600)
    assert ex.check_param_count(float(4 * 1280**2))
    assert "biases" in ex.check_param_count(4 * 1280**2 + 4 * 1280).message
    assert "W^O" in ex.check_param_count(3 * 1280**2).message
    assert "full width" in ex.check_param_count(20 * 4 * 1280**2).message
    assert "one head" in ex.check_param_count(4 * 1280 * 64).message
    assert not ex.check_param_count(4 * 1024**2)  # the table's BERT-large row is a different layer
    assert not ex.check_param_count(123)


RIGHT_CHANGES = {"h": "about the same", "d_model": "about double", "ffn": "about triple"}


def test_crossover_factors_against_the_closed_form():
    """n* = 8d²/(4d + 5h) for the sub-layer; the FFN's 16·n·d² makes it 24d²/(4d + 5h)."""

    def n_star(d, h, ffn=False):
        return (24 if ffn else 8) * d * d / (4 * d + 5 * h)

    base = n_star(512, 8)
    factors = ex.crossover_factors()
    assert factors["h"] == pytest.approx(n_star(512, 16) / base) and 0.97 < factors["h"] < 1
    assert factors["d_model"] == pytest.approx(n_star(1024, 8) / base) and 2 < factors["d_model"] < 2.05
    assert factors["ffn"] == pytest.approx(3.0)


def test_crossover_changes_check():
    assert ex.check_crossover_changes(RIGHT_CHANGES)
    assert ex.check_crossover_changes({"H": "About the same", "D_MODEL": "about double", "FFN": "about triple"})
    for key, value, hint in [
        ("h", "about half", "5·h·n²"),
        ("h", "about double", "5·h·n²"),
        ("d_model", "about the same", "grows like d²"),
        ("ffn", "about double", "each token alone"),
        ("ffn", "about the same", "each token alone"),
    ]:
        feedback = ex.check_crossover_changes(RIGHT_CHANGES | {key: value})
        assert not feedback.correct and hint in feedback.message and f"'{key}'" in feedback.message
    assert "Replace None" in ex.check_crossover_changes(None).message
    assert "missing ['ffn']" in ex.check_crossover_changes({"h": "about the same", "d_model": "about double"}).message
    assert "got ['triple']" in ex.check_crossover_changes(RIGHT_CHANGES | {"ffn": "triple"}).message


def test_memory_fixes_measured_against_h_n2_bytes():
    n, h = 16_384, 16
    assert ex.weight_bytes() == h * n * n * 4 > 16e9
    assert ex.weight_bytes("a") == 8 * n * n * 4 == ex.weight_bytes("c") <= 16e9  # half the heads, half the bytes
    assert ex.weight_bytes("b") == ex.weight_bytes("d") == ex.weight_bytes()  # d_model and d_k do not enter


def test_memory_fixes_check():
    assert ex.check_memory_fixes({"a", "c"}) and ex.check_memory_fixes("ac") and ex.check_memory_fixes(["C", "A"])
    assert "d_model or d_k" in ex.check_memory_fixes({"a", "b", "c"}).message
    assert "d_model or d_k" in ex.check_memory_fixes({"d"}).message
    assert "missing" in ex.check_memory_fixes({"a"}).message
    assert "Replace None" in ex.check_memory_fixes(None).message
    assert "got ['e']" in ex.check_memory_fixes({"e"}).message
