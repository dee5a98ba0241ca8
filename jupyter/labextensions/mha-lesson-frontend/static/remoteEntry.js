// JupyterLab / Notebook 7 front-end plugins without a build step: a module-federation container by hand (init, get).
// Installed by `make lab`; the browser tests load it too.
// - Links: JupyterLab opens `21_review.ipynb#head` and looks for the heading as soon as the file is loaded, before
//   its Markdown cells have rendered, finds nothing and leaves the notebook at its top. This waits (up to 20 s) for
//   the heading to be in the page and scrolls it into view. It needs every cell in the page (windowingMode "none",
//   set in jupyter/overrides.json5).
// - Reopened lessons: a saved widget output whose kernel is gone shows "Error displaying widget: model not found".
//   The explorers save their starting picture next to the widget (image/png); this shows that picture instead,
//   with one line saying to run the cell.
// - Links in Notebook 7: it opens the linked notebook in a new tab with window.open and drops the link's
//   "#fragment"; the fragment of the link just clicked is put back on that URL.
// - Slider keys: Notebook 7 matches its keyboard shortcuts before the slider sees the key, so ArrowRight on a clicked
//   slider moved to the next cell. Lumino skips shortcuts for a target marked data-lm-suppress-shortcuts: the
//   slider's own keys get that mark for the moment of the key press.
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

  const MISSING = 'Error displaying widget: model not found';
  const NOTE = 'The starting picture: run the cell to make it live.';
  const NOTE_BARE = 'Run the cell to bring back this control.';

  // The saved output (its data and metadata) whose view holds `node`, from the notebooks in the main area.
  const outputOf = (app, node) => {
    for (const w of mainWidgets(app)) {
      const cells = w.content && w.content.widgets;
      if (!cells || !w.node.contains(node)) continue;
      for (const cell of cells) {
        const area = cell.outputArea;
        if (!area || !area.node.contains(node)) continue;
        for (let j = 0; j < area.widgets.length; j++) {
          if (area.widgets[j].node.contains(node)) return area.model.get(j);
        }
      }
    }
    return null;
  };

  // Put the saved picture (or a note) where the widget manager gave up.
  const fallBack = (app, node) => {
    const output = outputOf(app, node);
    if (!output) return;
    const png = output.data && output.data['image/png'];
    node.textContent = '';
    node.classList.add('mha-static-explorer');
    const note = document.createElement('div');
    note.className = 'mha-static-note';
    note.style.cssText = 'color: var(--jp-ui-font-color2); font-style: italic; margin: 2px 0 4px;';
    note.textContent = png ? NOTE : NOTE_BARE;
    node.appendChild(note);
    if (!png) return;
    const img = document.createElement('img');
    img.src = `data:image/png;base64,${String(png).replace(/\s/g, '')}`;
    const size = (output.metadata && output.metadata['image/png']) || {};
    if (size.width) img.style.width = `${size.width}px`;
    img.style.maxWidth = 'calc(100% - 4px)';  // as the live explorer: scaled down in a narrow output area
    img.style.height = 'auto';
    img.style.display = 'block';
    img.alt = 'the explorer as it starts (run the cell to make it live)';
    node.appendChild(img);
  };

  const watchMissingWidgets = (app) => {
    let queued = false;
    const scan = () => {
      queued = false;
      for (const node of document.querySelectorAll('.jp-OutputArea-output.jupyter-widgets')) {
        if (node.textContent === MISSING) fallBack(app, node);
      }
    };
    new MutationObserver(() => {
      if (!queued) { queued = true; requestAnimationFrame(scan); }
    }).observe(document.body, {childList: true, subtree: true, characterData: true});
  };

  const SLIDER_KEYS = new Set(['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown']);
  const keepSliderKeys = () => {
    // Capture on window: before Lumino's own listener on document, whichever phase that uses.
    window.addEventListener('keydown', (event) => {
      const target = event.target;
      if (!SLIDER_KEYS.has(event.key) || !(target instanceof Element) || !target.closest('.noUi-target')) return;
      if (target.hasAttribute('data-lm-suppress-shortcuts')) return;
      target.setAttribute('data-lm-suppress-shortcuts', 'true');
      setTimeout(() => target.removeAttribute('data-lm-suppress-shortcuts'), 0);
    }, true);
  };

  // Notebook 7 opens a clicked link to another notebook with window.open and a URL without the link's fragment,
  // so the new tab cannot land. Remember the fragment of the link just clicked (capture phase: before the click
  // handler) and put it back on the URL if the tab opened in the next few seconds is that file.
  const REMEMBER_MS = 10000;
  const keepLinkFragments = () => {
    let clicked = null;  // {file, hash, until}
    const fileOf = (url) => decodeURIComponent(new URL(url, window.location.href).pathname.split('/').pop());
    document.addEventListener('click', (event) => {
      const a = event.target instanceof Element && event.target.closest('.jp-RenderedMarkdown a[href]');
      if (!a) return;
      const url = new URL(a.href, window.location.href);
      if (url.origin !== window.location.origin || url.hash.length < 2 || url.hash.includes('=')) return;
      clicked = {file: fileOf(url.href), hash: url.hash, until: Date.now() + REMEMBER_MS};
    }, true);
    const open = window.open;
    window.open = function (url, ...rest) {
      if (clicked && Date.now() < clicked.until && url) {
        const target = new URL(String(url), window.location.href);  // a string or a URL object
        if (!target.hash && fileOf(target.href) === clicked.file) {
          target.hash = clicked.hash;
          url = target.href;
        }
        clicked = null;
      }
      return open.call(this, url, ...rest);
    };
  };

  const plugin = {
    id: 'mha-lesson-frontend:plugin',
    description: 'Links land on their heading; reopened explorers show their starting picture; slider keys move sliders.',
    autoStart: true,
    activate: (app) => {
      watchMissingWidgets(app);
      keepSliderKeys();
      keepLinkFragments();
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
  window._JUPYTERLAB['mha-lesson-frontend'] = {
    init: () => {},
    get: (module) => Promise.resolve(() => ({__esModule: true, default: [plugin]})),
  };
})();
