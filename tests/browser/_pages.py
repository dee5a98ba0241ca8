"""Page scripts shared by the browser tests (a plain module: conftest.py is no place for constants)."""

# The heading a fragment names (JupyterLab sets `id`, or `data-jupyter-id` when its sanitizer drops ids), and
# whether it lies inside the visible part of the notebook in front.
ON_SCREEN_JS = r"""
([path, fragment]) => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!w || !w.context || w.context.path !== path) return null;
  const sel = `[id="${fragment}"], [data-jupyter-id="${fragment}"]`;
  const heading = w.node.querySelector(sel);
  if (!heading) return {found: false};
  const scroller = w.content.node.querySelector('.jp-WindowedPanel-outer') || w.content.node;
  const view = scroller.getBoundingClientRect(), box = heading.getBoundingClientRect();
  return {found: true, text: heading.textContent.replace('¶', '').trim(),
          // 1 px of slack: scrollIntoView puts the heading's top at the scroller's top, give or take a sub-pixel.
          onScreen: box.top >= view.top - 1 && box.bottom <= view.bottom + 1 && box.height > 0,
          top: Math.round(box.top - view.top), scrolled: Math.round(scroller.scrollTop)};
}
"""


def open_and_run(page, server, notebook: str) -> None:
    """Open `notebook` in `page`, run all its cells and wait until every widget has rendered."""
    from benchmarks import _lab

    page.goto(server.page_url(notebook), timeout=_lab.OPEN_TIMEOUT_S * 1e3)
    page.wait_for_function("p => __mha.open(p)", arg=notebook, timeout=_lab.OPEN_TIMEOUT_S * 1e3)
    page.evaluate("() => __mha.runAll()")
    page.wait_for_function("() => __mha.done()", timeout=_lab.RUN_TIMEOUT_S * 1e3)
    page.wait_for_function("() => !__mha.pendingWidgets()", timeout=_lab.WIDGET_TIMEOUT_S * 1e3)
