"""Lesson 00's set-up check: the import report and the widget that falls back to a hint."""

import importlib.metadata

from mha_lesson.widgets.setup_check import FIX, PROMPT, REQUIRED, WidgetCheck, check_imports, report, setup_check


def test_import_report_lists_versions_and_names_what_is_missing():
    found = check_imports(REQUIRED + (("no_such_module_xyz", "no-such-module-xyz", "testing the check"),))
    versions = dict((m, v) for m, v, _ in found)
    assert versions["numpy"] == importlib.metadata.version("numpy")
    assert versions["no_such_module_xyz"] is None
    text = report(found)
    assert f"\u2714 numpy {versions['numpy']}" in text
    assert "\u2718 no_such_module_xyz is missing (testing the check)" in text
    assert text.endswith(f"Missing: no_such_module_xyz. {FIX}")
    assert report(check_imports(REQUIRED[:2])).endswith("All imports work.")


def test_slider_moves_are_echoed_by_the_kernel():
    check = WidgetCheck()
    assert "Move the slider" in check.echo.value
    check.slider.value = 7
    assert "received 7" in check.echo.value


def test_going_back_to_0_is_echoed_too():
    check = WidgetCheck()
    assert check.echo.value == PROMPT  # nothing received yet
    for value in (3, 0, 10, 0):
        check.slider.value = value
        assert check.echo.value == f"&#10004; The kernel received {value}: widgets work both ways."


def test_bundle_offers_the_widget_and_a_hint_for_frontends_without_the_extension(capsys):
    bundle = setup_check()._repr_mimebundle_()
    out = capsys.readouterr().out
    assert out.startswith("Python ") and len(out.splitlines()) == len(REQUIRED) + 2
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "jupyterlab_widgets" in bundle["text/html"] and "jupyterlab_widgets" in bundle["text/plain"]
    assert "<code>" not in bundle["text/plain"]
