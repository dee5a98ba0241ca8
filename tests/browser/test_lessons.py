"""Every lesson as a learner uses it: opened in JupyterLab in headless Chromium, run, and every control tried.

Headless execution (nbclient) cannot show a missing widget extension, a front-end error or a redraw that
piles up outputs; these tests look at the page itself. Each notebook is visited once (see conftest.Lab) and
the tests below judge different aspects of that one visit.
"""

from __future__ import annotations

import warnings

import pytest

pytestmark = pytest.mark.browser  # `notebook` is parametrized over notebooks/*.ipynb by conftest


def test_runs_without_errors(lab, notebook):
    visit = lab.visit(notebook)
    for line in visit.stderr:
        warnings.warn(f"{notebook} shows stderr: {line}", stacklevel=1)
    assert not visit.errors, "\n\n".join(visit.errors)


def test_every_widget_renders(lab, notebook):
    visit = lab.visit(notebook)
    assert not visit.widget_problems, "\n".join(visit.widget_problems)


def test_every_slider_redraws_in_place(lab, notebook):
    visit = lab.visit(notebook)
    assert not visit.slider_problems, "\n".join(visit.slider_problems)


def test_every_other_control_redraws_in_place(lab, notebook):
    # Toggle buttons, checkboxes, dropdowns and text fields: a message instead of the plot counts as a change.
    visit = lab.visit(notebook)
    assert not visit.other_control_problems, "\n".join(visit.other_control_problems)


def test_nothing_is_fetched_from_the_network(lab, notebook):
    visit = lab.visit(notebook)
    # The recorder must have seen the page load itself, or an empty list of remote requests proves nothing.
    assert any(url.startswith(lab.server.url) for url in visit.requests)
    assert any(url.startswith("ws://127.0.0.1") for url in visit.requests), "no kernel websocket recorded"
    assert not visit.remote_requests, "\n".join(visit.remote_requests)
