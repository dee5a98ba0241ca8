// A JupyterLab / Notebook 7 front-end plugin without a build step: a module-federation container by hand (init, get)
// exposing one plugin. Why: JupyterLab opens `21_review.ipynb#head` and looks for the heading as soon as the file is
// loaded, before its Markdown cells have rendered, finds nothing and leaves the notebook at its top. This plugin
// waits (up to 20 s) for the heading to be in the page and scrolls it into view. It needs every cell in the page
// (windowingMode "none", set in jupyter/overrides.json5). Installed by `make lab`; the browser tests load it too.
(function () {
  const WAIT_MS = 20000;
  const STEP_MS = 100;
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

  const heading = (node, fragment) => {
    const id = CSS.escape(decodeURIComponent(fragment.replace(/^#/, '')));
    return node.querySelector(`[id="${id}"], [data-jupyter-id="${id}"]`);
  };
  const onScreen = (el, node) => {
    const box = el.getBoundingClientRect(), view = node.getBoundingClientRect();
    return box.height > 0 && box.top >= view.top && box.bottom <= view.bottom;
  };

  // Scroll the document `widget` to `fragment` once its heading exists; scroll again if the layout then moves it.
  async function land(widget, fragment) {
    if (!fragment || fragment.length < 2 || fragment.includes('=')) return;  // "#cell-id=..." works already
    await widget.context.ready;
    for (let waited = 0; waited < WAIT_MS; waited += STEP_MS) {
      const el = heading(widget.node, fragment);
      if (el && el.getBoundingClientRect().height > 0) {
        el.scrollIntoView();
        await sleep(500);
        if (!widget.isDisposed && !onScreen(el, widget.node)) el.scrollIntoView();
        return;
      }
      await sleep(STEP_MS);
    }
  }

  const mainWidgets = (app) => {
    try { return [...app.shell.widgets('main')]; } catch (e) { return []; }
  };

  const plugin = {
    id: 'mha-lesson-links:plugin',
    description: 'Links to a heading of another notebook land on it once its cells have rendered.',
    autoStart: true,
    activate: (app) => {
      // JupyterLab: a clicked link runs this command with the path and the fragment.
      app.commands.commandExecuted.connect((_, args) => {
        if (args.id !== 'rendermime:handle-local-link' || !args.args || !args.args.id) return;
        const path = args.args.path, fragment = args.args.id;
        Promise.resolve(args.result).then(async () => {
          for (let waited = 0; waited < WAIT_MS; waited += STEP_MS) {
            const widget = mainWidgets(app).find((w) => w.context && w.context.path === path);
            if (widget) return land(widget, fragment);
            await sleep(STEP_MS);
          }
        }).catch(() => {});
      });
      // Notebook 7 opens the link in a new browser tab: the fragment is in the page's address.
      if (window.location.hash) {
        const fragment = window.location.hash;
        app.restored.then(async () => {
          for (let waited = 0; waited < WAIT_MS; waited += STEP_MS) {
            const widget = mainWidgets(app).find((w) => w.context);
            if (widget) return land(widget, fragment);
            await sleep(STEP_MS);
          }
        });
      }
    },
  };

  window._JUPYTERLAB = window._JUPYTERLAB || {};
  window._JUPYTERLAB['mha-lesson-links'] = {
    init: () => {},
    get: (module) => Promise.resolve(() => ({__esModule: true, default: [plugin]})),
  };
})();
