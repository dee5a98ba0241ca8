"""Drive JupyterLab in headless Chromium as a learner does: open a lesson, run all cells, try every control.

Shared by the browser tests (tests/browser, which assert on the `Visit` records) and by
`python -m benchmarks browser` (which prints the latency table). It sits in benchmarks/, outside the package
a learner installs, beside the benchmark that uses it; the leading underscore keeps the dispatcher from listing
it. Playwright and psutil (test extras) are imported only when a browser or server starts.

Every enabled slider is moved with the keyboard; then every other enabled control (toggle buttons, checkbox,
dropdown, text field) is changed with a click, a choice or Enter, and put back. A toggle that enables sliders
(an explorer's "random" input) has those sliders moved before it is put back.

How a move is judged, inside the page: a MutationObserver watches the control's explorer (the `.mha-explorer`
box, or the whole widget output for a slider outside an explorer) with the controls masked out, since a
slider's own readout changes on every move. Latency is the time from the key press or click to the last change
of that masked view (the new <img> src or text) before the kernel is idle and the page quiet.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
# Without the networking flags Chromium keeps trying to reach Google's servers in the background.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 900}
# Bounded but generous: this is a 2-core machine shared with other jobs.
OPEN_TIMEOUT_S = 180.0
RUN_TIMEOUT_S = 600.0  # lesson 15 (MiniLM) took 240 s with the machine loaded
WIDGET_TIMEOUT_S = 60.0
MOVE_TIMEOUT_S = 30.0
GROWTH_TOLERANCE_PX = 48  # a message line that wraps differently is not a pile-up; a second figure is
TARGET_MEDIAN_MS = 100.0
TARGET_P90_MS = 120.0  # over every slider move of every explorer
# Window widths at which the images are measured: the reference width (a 1400-pixel window shows a cell about 950
# CSS pixels wide), then a narrower and a wider one (an explorer's figure must keep its size, never stretch).
WINDOW_WIDTHS = (1400, 1200, 1600)
# A laptop: 1024 pixels wide with the file browser open. An explorer scales down to fit (never stretched), no
# part of it is cut off, and nothing in the output area scrolls sideways.
LAPTOP_VIEWPORT = {"width": 1024, "height": 768}
IMAGE_RATIO = (0.9, 1.05)  # displayed / natural CSS width of every image at 1400 pixels
HIDPI_VIEWPORT = {"width": 1400, "height": 1000}
FOCUS_PAUSE_MS = 300  # between focusing a slider and its first key press: a person's reaction time
RESTORED_PIXELS = 0.002  # fraction of pixels allowed to differ when every control is back at its start
# Typed into text fields (the first that differs from the field's text): short, so a map of its tokens stays legible.
TYPED_TEXTS = ("The cat sat on the mat.", "Birds sing at dawn.")

# The setting defaults `make lab` installs (no news or update checks; no windowing, so every cell's output stays in
# the DOM at its real height and a link to a far heading finds it): the temporary server reads the same file, found
# above this module wherever the folder of browser helpers sits in the checkout.
OVERRIDES = next(
    (d / "jupyter" / "overrides.json5" for d in Path(__file__).resolve().parents if (d / "jupyter").is_dir()),
    Path("jupyter/overrides.json5"),
)
LABEXTENSIONS = OVERRIDES.parent / "labextensions"  # front-end plugins `make lab` installs (a link that lands)

# Installed in every page before JupyterLab loads; the Python side calls these through `__mha`.
PAGE_LIB = r"""
(() => {
  const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
  const CONTROLS = ['.mha-controls', '.widget-slider', '.widget-hslider', '.widget-vslider', '.widget-dropdown',
    '.widget-select', '.widget-select-multiple', '.widget-checkbox', '.widget-toggle-button',
    '.widget-toggle-buttons', '.widget-radio', '.widget-text', '.widget-textarea', '.widget-button',
    '.widget-play', '.widget-colorpicker', '.widget-datepicker', '.widget-upload'].join(', ');
  const PLACEHOLDERS = ['Loading widget...', 'Error displaying widget', 'Error rendering'];
  const RAW_REPR = /^\s*(Output|VBox|HBox|Box|GridBox|Tab|Accordion|Image|HTML|Label|\w*Slider|Dropdown|Checkbox)\(/;
  const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
  // The controls a visit knows how to change, by kind (the first selector an element matches names its kind).
  const KINDS = [['slider', '.widget-hslider, .widget-vslider'], ['toggle buttons', '.widget-toggle-buttons'],
    ['checkbox', '.widget-checkbox'], ['dropdown', '.widget-dropdown'],
    ['text', '.widget-text:has(> input[type="text"])']];  // IntText is a .widget-text too, but takes no sentence
  const KNOWN = KINDS.map(([, selector]) => selector).join(', ');
  const M = {ran: null, idleAt: null, move: null, kept: {}};
  window.__mha = M;

  const shown = (el) => el.style.display !== 'none';
  M.open = (path) => {
    if (!window.jupyterapp) return false;
    for (const w of window.jupyterapp.shell.widgets('main')) {
      if (w.context && w.context.path === path && w.content && w.context.isReady) {
        const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
        if (!kernel || kernel.status !== 'idle') return false;
        M.panel = w;
        return true;
      }
    }
    return false;
  };
  M.kernel = () => M.panel.sessionContext.session && M.panel.sessionContext.session.kernel;
  M.idle = () => { const k = M.kernel(); return !!k && k.status === 'idle'; };
  M.runAll = () => {
    const kernel = M.kernel();
    kernel.statusChanged.connect((_, status) => {
      if (status === 'busy' && M.move && M.move.busy === null) M.move.busy = performance.now();
      if (status === 'idle') M.idleAt = performance.now();
    });
    // Output of a slider callback belongs to no cell, so a traceback there never shows in the notebook:
    // collect errors and stderr that arrive while a move is in progress. (Outside moves the widget manager's
    // start-up handshake logs a harmless "No such comm target" before the lesson imports ipywidgets.)
    kernel.iopubMessage.connect((_, msg) => {
      if (!M.move) return;
      const type = msg.header.msg_type;
      if (type === 'error') M.move.log.push(`${msg.content.ename}: ${msg.content.evalue}`);
      if (type === 'stream' && msg.content.name === 'stderr') M.move.log.push(`stderr: ${msg.content.text.trim()}`);
    });
    window.jupyterapp.shell.activateById(M.panel.id);
    window.jupyterapp.commands.execute('notebook:run-all-cells').then(
      () => { M.ran = 'ok'; }, (e) => { M.ran = `run-all-cells failed: ${e}`; });
  };
  M.done = () => M.ran !== null && M.idle();
  M.pendingWidgets = () => M.panel.content.widgets.filter((c) => c.model.type === 'code')
    .some((c) => c.outputArea.node.textContent.includes('Loading widget...'));

  const outputNode = (child) => child.node.querySelector('.jp-OutputArea-output') || child.node;
  M.cells = () => M.panel.content.widgets.map((cell, index) => {
    const m = cell.model;
    const info = {index, type: m.type, source: m.sharedModel.getSource(), count: null, outputs: []};
    if (m.type !== 'code') return info;
    info.count = m.executionCount;
    const area = cell.outputArea;
    for (let j = 0; j < area.model.length; j++) {
      const o = area.model.get(j).toJSON();
      const node = outputNode(area.widgets[j]);
      const text = node.textContent || '';
      const out = {type: o.output_type, name: o.name || null, mime: node.getAttribute('data-mime-type'),
        text: text.slice(0, 2000), problem: null};
      if (o.output_type === 'error') {
        const tb = (o.traceback || []).join('\n').replace(ANSI, '');
        out.text = `${o.ename}: ${o.evalue}\n${tb.slice(-1500)}`;
      }
      const view = o.data && o.data[WIDGET_MIME];
      if (view && view.model_id) {
        if (out.mime) out.problem = `widget shown as its ${out.mime} fallback: the widget manager did not render it`;
        else if (PLACEHOLDERS.some((p) => text.includes(p))) out.problem = `not rendered: "${text.slice(0, 120)}"`;
        else if (!node.querySelector('[class*="widget-"]')) out.problem = 'widget output is empty';
      }
      if (!out.problem && (out.mime === 'text/plain' || !out.mime) && RAW_REPR.test(text) && view) {
        out.problem = `raw widget repr instead of the widget: "${text.slice(0, 80)}"`;
      }
      info.outputs.push(out);
    }
    return info;
  });

  // Controls, grouped by the explorer (or widget output with sliders) they belong to; tagged so Playwright can
  // find them. Any other child of an explorer's controls box is listed with kind null: a visit cannot change it.
  const labelOf = (el) => {
    const texts = [...el.querySelectorAll('.widget-label, .widget-label-basic')]
      .map((l) => l.textContent.replace(/\u200b/g, '').trim());  // an unlabelled checkbox holds a zero-width space
    return texts.find((t) => t) || [...el.classList].filter((c) => c.startsWith('widget-')).join(' ');
  };
  M.groups = () => {
    const groups = [];
    M.panel.content.widgets.forEach((cell, index) => {
      if (cell.model.type !== 'code') return;
      const roots = [...cell.outputArea.node.querySelectorAll('.mha-explorer')];
      for (const out of cell.outputArea.node.querySelectorAll('.jp-OutputArea-output')) {
        if (out.querySelector('.mha-explorer') || !out.querySelector('.widget-hslider, .widget-vslider')) continue;
        roots.push(out);
      }
      roots.forEach((root, k) => {
        const gid = `${index}.${k}`;
        root.setAttribute('data-mha-group', gid);
        const named = [...root.classList].find((c) => c.startsWith('mha-explorer-'));
        const controls = [...root.querySelectorAll(`${KNOWN}, .mha-controls > *`)].map((el, c) => {
          const cid = `${gid}.${c}`;
          el.setAttribute('data-mha-control', cid);
          const kind = KINDS.find(([, selector]) => el.matches(selector));
          return {cid, kind: kind ? kind[0] : null, label: labelOf(el) || `control ${c}`,
            vertical: el.classList.contains('widget-vslider')};
        });
        // An echo (lesson 0's set-up check) reports the last value it received, so its text after a move back
        // rightly differs from the prompt it starts with.
        const echo = !!root.querySelector('.mha-echo') || root.classList.contains('mha-echo');
        if (controls.length) groups.push({gid, cell: index, name: named ? named.slice(13) : null, controls, echo});
      });
    });
    return groups;
  };
  const group = (gid) => document.querySelector(`[data-mha-group="${gid}"]`);
  const control = (cid) => document.querySelector(`[data-mha-control="${cid}"]`);
  M.disabled = (cid) => { const el = control(cid); return !el || !!el.querySelector('[disabled]'); };
  M.sliderState = (cid) => {
    const h = control(cid) && control(cid).querySelector('.noUi-handle');
    if (!h) return null;
    const num = (a) => parseFloat(h.getAttribute(a));
    return {now: num('aria-valuenow'), min: num('aria-valuemin'), max: num('aria-valuemax')};
  };
  // A control's value as the page shows it: the slider's position, the pressed button, the box or the field.
  M.value = (cid) => {
    const el = control(cid);
    if (!el) return null;
    const handle = el.querySelector('.noUi-handle');
    if (handle) return handle.getAttribute('aria-valuenow');
    if (el.matches('.widget-toggle-buttons')) {
      const pressed = el.querySelector('.mod-active');
      return pressed ? pressed.textContent.trim() : null;
    }
    const input = el.querySelector('input, select');
    if (!input) return null;
    return input.type === 'checkbox' ? String(input.checked) : input.value;
  };
  // The options of toggle buttons or a dropdown, and the index of the chosen one (-1 for none).
  M.choices = (cid) => {
    const options = [...control(cid).querySelectorAll('.widget-toggle-button, option')];
    return {labels: options.map((o) => o.textContent.trim()),
      now: options.findIndex((o) => o.classList.contains('mod-active') || o.selected)};
  };

  // What a control drives: everything in its group except the controls (images by src, text, hidden parts).
  const driven = (root) => {
    const parts = [];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.nodeType === 1 && n.matches(CONTROLS) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT)
    });
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.nodeType === 3) { if (n.data.trim()) parts.push(n.data); continue; }
      if (n.tagName === 'IMG') parts.push({img: n.src, shown: shown(n)});
      else if (!shown(n)) parts.push('(hidden)');
    }
    return parts;
  };
  const signature = (root) => JSON.stringify(driven(root));

  // The input starts with the first key press, click, or change event (Playwright's select_option sends no
  // click; Enter in a text field comes as a key press before its change event).
  const INPUTS = ['keydown', 'click', 'change'];
  M.arm = (gid, cid) => {
    const root = group(gid);
    const st = {t0: null, last: null, sig: signature(root), cid, value: M.value(cid), busy: null, log: []};
    st.onInput = (e) => { if (st.t0 === null) st.t0 = e.timeStamp; };
    for (const type of INPUTS) document.addEventListener(type, st.onInput, true);
    st.observer = new MutationObserver(() => {
      const sig = signature(root);
      if (sig === st.sig) return;
      st.sig = sig;
      st.last = performance.now();
    });
    st.observer.observe(root, {subtree: true, childList: true, attributes: true, characterData: true});
    M.idleAt = null;
    M.move = st;
  };
  // Settled: kernel idle and nothing changed for 250 ms after a change, or 1.5 s of idle with no change at all
  // (or 1.5 s after an input that did not change the control, so no message went to the kernel).
  M.settled = () => {
    const st = M.move, now = performance.now();
    if (st.t0 === null) return false;
    if (M.idleAt === null && st.last === null) return now - st.t0 > 1500 && M.value(st.cid) === st.value;
    if (!M.idle() || M.idleAt === null) return false;
    if (st.last !== null) return now - Math.max(st.last, M.idleAt) > 250;
    return now - M.idleAt > 1500;
  };
  M.disarm = () => {
    const st = M.move;
    st.observer.disconnect();
    for (const type of INPUTS) document.removeEventListener(type, st.onInput, true);
    M.move = null;
    return {t0: st.t0, last: st.last, busy: st.busy, idle: M.idleAt, log: st.log};
  };

  const digest = async (src) => {
    if (!src) return '';
    const bytes = await (await fetch(src)).arrayBuffer();
    const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    return [...hash.slice(0, 12)].map((b) => b.toString(16).padStart(2, '0')).join('');
  };
  // Content (text, and image bytes hashed so a re-sent identical PNG counts as unchanged), control values, and
  // the size of the cell's output area: in all, and without the explorers' figures and controls, whose size is
  // theirs to choose (the attention-map grid grows a row of panels with h, the ablation's "switch off" buttons
  // wrap to a second row at h = 16). What remains grows only when outputs pile up.
  M.snapshot = async (gid, index) => {
    const root = group(gid);
    const parts = driven(root);
    const text = parts.filter((p) => typeof p === 'string').join('\n');
    const imgs = [];
    for (const p of parts) if (typeof p !== 'string') imgs.push(`${await digest(p.img)} ${p.shown}`);
    const controls = [...root.querySelectorAll('[data-mha-control]')].map((el) => M.value(el.dataset.mhaControl));
    const message = root.querySelector('.mha-message');
    const area = M.panel.content.widgets[index].outputArea;
    const height = area.node.getBoundingClientRect().height;
    let sized = 0;
    for (const el of area.node.querySelectorAll('.mha-figure, .mha-controls')) {
      sized += el.getBoundingClientRect().height;
    }
    return {text, imgs: imgs.join(' '), controls: JSON.stringify(controls),
      message: message ? message.textContent.trim() : '',
      outputs: area.widgets.length, images: area.node.querySelectorAll('img').length,
      height: Math.round(height), rest: Math.round(height - sized)};
  };
  // Pixels of the group's images, kept to compare with later (blob URLs are revoked once replaced).
  const pixels = async (gid) => {
    const out = [];
    for (const p of driven(group(gid))) {
      if (typeof p === 'string' || !p.img) continue;
      const bitmap = await createImageBitmap(await (await fetch(p.img)).blob());
      const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
      const ctx = canvas.getContext('2d');
      ctx.drawImage(bitmap, 0, 0);
      out.push(ctx.getImageData(0, 0, bitmap.width, bitmap.height));
    }
    return out;
  };
  // Kept under a key: a toggle's starting pixels must survive the slider moves made while it is switched.
  M.keep = async (gid, key) => { M.kept[key] = await pixels(gid); };
  // Fraction of pixels that differ visibly (any channel by more than 64 of 255) from the kept images; a
  // different number or size of images counts as 1. Sub-pixel layout noise changes a handful of pixels only.
  M.differs = async (gid, key) => {
    const now = await pixels(gid), kept = M.kept[key];
    if (now.length !== kept.length) return 1;
    let worst = 0;
    now.forEach((a, i) => {
      const b = kept[i];
      if (a.width !== b.width || a.height !== b.height) { worst = 1; return; }
      let n = 0;
      for (let j = 0; j < a.data.length; j += 4) {
        if (Math.max(...[0, 1, 2, 3].map((c) => Math.abs(a.data[j + c] - b.data[j + c]))) > 64) n++;
      }
      worst = Math.max(worst, n / (a.width * a.height));
    });
    return worst;
  };
  // Every image shown in a code cell's output: its width on the page, the CSS width it declares (the width
  // attribute of a retina PNG, or the CSS width in pixels an explorer sets: its natural size) and its pixels.
  M.images = () => {
    const out = [];
    M.panel.content.widgets.forEach((cell, index) => {
      if (cell.model.type !== 'code') return;
      for (const img of cell.outputArea.node.querySelectorAll('img')) {
        const box = img.getBoundingClientRect();
        if (!img.naturalWidth || !box.width) continue;  // hidden (a message in its place) or not loaded
        const attr = parseFloat(img.getAttribute('width'));
        const css = img.style.width.endsWith('px') ? parseFloat(img.style.width) : NaN;
        out.push({cell: index, explorer: !!img.closest('.mha-explorer'), shown: box.width,
          declared: Number.isFinite(attr) ? attr : (Number.isFinite(css) ? css : null), pixels: img.naturalWidth});
      }
    });
    return out;
  };
  // Each explorer in a narrow window: its figure's box against its natural CSS size, and how far the figure and the
  // whole explorer reach past the output area's right edge (or need a sideways scroll inside it).
  // Control labels shown cut off (ipywidgets ends a text too long for its box with an ellipsis).
  const cutLabels = (root) => [...root.querySelectorAll(
    '.mha-controls :is(.widget-label, .widget-label-basic, .widget-toggle-button, .widget-readout)')]
    .filter((el) => el.offsetParent && el.textContent.trim() && el.scrollWidth > el.clientWidth + 1)
    .map((el) => `"${el.textContent.trim()}" (${el.scrollWidth} px of text in ${el.clientWidth})`);
  // Toggle buttons whose first button sits on a line below their label instead of beside it.
  const stackedButtons = (root) => [...root.querySelectorAll('.mha-controls .widget-toggle-buttons')].filter((tb) => {
    const label = tb.querySelector('.widget-label'), first = tb.querySelector('.widget-toggle-button');
    return label && label.textContent.trim() && first &&
      first.getBoundingClientRect().top >= label.getBoundingClientRect().bottom - 1;
  }).map((tb) => `"${tb.querySelector('.widget-label').textContent.trim()}"`);
  M.fit = () => {
    const out = [];
    M.panel.content.widgets.forEach((cell, index) => {
      if (cell.model.type !== 'code') return;
      for (const root of cell.outputArea.node.querySelectorAll('.mha-explorer')) {
        const img = root.querySelector('img.mha-figure');
        const output = root.closest('.jp-OutputArea-output') || root;
        const area = output.getBoundingClientRect();  // right of the prompt column
        const box = img ? img.getBoundingClientRect() : null;
        const css = img && img.style.width.endsWith('px') ? parseFloat(img.style.width) : null;
        out.push({cell: index, name: [...root.classList].find((c) => c.startsWith('mha-explorer-')) || '',
          shown: box ? box.width : null, shownHeight: box ? box.height : null, natural: css,
          aspect: img && img.naturalWidth ? img.naturalHeight / img.naturalWidth : null,
          figureOver: box && box.width ? Math.round(box.right - area.right) : 0,
          explorerOver: Math.round(root.getBoundingClientRect().right - area.right),
          scroll: Math.max(output.scrollWidth - output.clientWidth, root.scrollWidth - root.clientWidth),
          area: Math.round(area.width), cut: cutLabels(root), stacked: stackedButtons(root)});
      }
    });
    return out;
  };
  // Open the file browser (laptop layout); returns whether the left area was collapsed before.
  M.openSidebar = () => {
    const shell = window.jupyterapp.shell, was = shell.leftCollapsed;
    shell.activateById('filebrowser');
    shell.expandLeft();
    return was;
  };
  M.imagesLoaded = () => [...M.panel.content.node.querySelectorAll('.jp-OutputArea img')].every((i) => i.complete);
  // Page height that shows the whole notebook without scrolling (the file browser folded away for width).
  M.fullHeight = () => {
    window.jupyterapp.shell.collapseLeft();
    const scroller = M.panel.content.node.querySelector('.jp-WindowedPanel-outer') || M.panel.content.node;
    scroller.scrollTop = 0;
    return scroller.scrollHeight + (window.innerHeight - scroller.clientHeight);
  };
})();
"""


@dataclass
class Move:
    """One input on one control (a key press on a slider, a click...): latency in ms (None when nothing it drives
    changed), the part of it the kernel was busy (its callback, as seen from the page), and what went wrong."""

    explorer: str
    control: str
    ms: float | None
    problems: list[str] = field(default_factory=list)
    kernel_ms: float | None = None
    kind: str = "slider"  # or "toggle buttons", "checkbox", "dropdown", "text"


@dataclass
class Visit:
    """Everything observed while a learner's session on one notebook ran (times in seconds)."""

    notebook: str
    open_s: float = 0.0
    run_s: float = 0.0
    controls_s: float = 0.0
    errors: list[str] = field(default_factory=list)  # error outputs, cells left unrun, tracebacks, page errors
    stderr: list[str] = field(default_factory=list)  # stderr shown in cells (warnings)
    widget_problems: list[str] = field(default_factory=list)
    moves: list[Move] = field(default_factory=list, repr=False)
    sliders: int = 0
    other_controls: int = 0
    unchangeable: list[str] = field(default_factory=list)  # controls the visit does not know how to change
    requests: list[str] = field(default_factory=list, repr=False)
    screenshot: Path | None = None
    images: dict[int, list[dict]] = field(default_factory=dict, repr=False)  # window width -> M.images()
    laptop: list[dict] = field(default_factory=list, repr=False)  # M.fit() at LAPTOP_VIEWPORT, file browser open

    @property
    def image_size_problems(self) -> list[str]:
        """Images shown at other than their natural CSS size (beyond IMAGE_RATIO) in a 1400-pixel window."""
        problems = []
        for img in self.images.get(WINDOW_WIDTHS[0], []):
            natural = img["declared"] or img["pixels"]
            ratio = img["shown"] / natural
            if not IMAGE_RATIO[0] <= ratio <= IMAGE_RATIO[1]:
                kind = "explorer" if img["explorer"] else "figure"
                shown = f"{img['shown']:.0f} px ({ratio:.2f}x)"
                problems.append(f"cell {img['cell']}: {kind} {natural:.0f} CSS px wide shown at {shown}")
        return problems

    @property
    def growing_explorers(self) -> list[str]:
        """Explorer images that widen with the window beyond their natural CSS width (1200 -> 1600 pixels); one
        scaled down to fit the narrower window may grow back to its natural width."""
        narrow, wide = self.images.get(1200, []), self.images.get(1600, [])
        return [
            f"cell {a['cell']}: explorer image {a['shown']:.0f} px wide at 1200, {b['shown']:.0f} px at 1600"
            for a, b in zip(narrow, wide, strict=False)
            if a["explorer"] and b["shown"] > a["shown"] + 1 and b["shown"] > (b["declared"] or b["pixels"]) + 1
        ]

    @property
    def laptop_problems(self) -> list[str]:
        """Explorers that do not fit a 1024-pixel window with the file browser open: cut off, scrolling sideways,
        stretched or squeezed out of shape, or shrunk although they would fit; control labels cut off, and toggle
        buttons that sit below their label."""
        problems = []
        for e in self.laptop:
            where = f"cell {e['cell']} {e['name']}"
            if e["figureOver"] > 1 or e["explorerOver"] > 1:
                problems.append(f"{where}: reaches {max(e['figureOver'], e['explorerOver'])} px past the output area")
            if e["scroll"] > 1:
                problems.append(f"{where}: scrolls sideways by {e['scroll']} px")
            problems += [f"{where}: label cut off: {label}" for label in e.get("cut", [])]
            problems += [f"{where}: toggle buttons below their label {label}" for label in e.get("stacked", [])]
            if not e["shown"] or not e["natural"]:
                continue
            if e["shown"] > e["natural"] + 1:
                problems.append(f"{where}: figure stretched from {e['natural']:.0f} to {e['shown']:.0f} CSS px")
            if e["shown"] < e["natural"] - 1 and e["shown"] < e["area"] - 24:
                problems.append(f"{where}: figure shrunk to {e['shown']:.0f} px although the area is {e['area']} px")
            if e["aspect"] and abs(e["shownHeight"] / e["shown"] - e["aspect"]) > 0.02:
                problems.append(f"{where}: figure out of shape ({e['shownHeight']:.0f} x {e['shown']:.0f} px)")
        return problems

    @property
    def slider_problems(self) -> list[str]:
        """Every problem seen while moving sliders, one line each."""
        return [f"{m.explorer} / {m.control}: {p}" for m in self.moves if m.kind == "slider" for p in m.problems]

    @property
    def other_control_problems(self) -> list[str]:
        """Every problem seen while changing the other controls, and the controls no input could change."""
        moves = [m for m in self.moves if m.kind != "slider"]
        return [f"{m.explorer} / {m.control}: {p}" for m in moves for p in m.problems] + self.unchangeable

    @property
    def remote_requests(self) -> list[str]:
        """Requests that left the machine (anything but loopback, data: and blob: URLs)."""
        return [url for url in self.requests if not is_local(url)]


def is_local(url: str) -> bool:
    """True for loopback http(s)/ws(s) URLs and for in-page data:, blob: and about: URLs."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname in ("127.0.0.1", "localhost", "::1")


def browser_unavailable() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found (install it with: apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    return None


# --- server -------------------------------------------------------------------------------------------------
@dataclass
class LabServer:
    """A running JupyterLab server on loopback; `url` has no token, pages log in with `?token=`."""

    url: str
    token: str
    root: Path
    process: subprocess.Popen
    log: Path
    client: str = "lab"  # or "notebook": Notebook 7

    def api(self, method: str, path: str) -> Any:
        """Call the REST API directly (no proxy: it is loopback)."""
        request = urllib.request.Request(
            self.url + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Delete every session and kernel, so one notebook's kernel does not idle on while the next runs."""
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def page_url(self, notebook: str) -> str:
        """The URL that opens `notebook` alone (`?reset` ignores any saved workspace; Notebook 7 has none)."""
        if self.client == "notebook":
            return f"{self.url}/notebooks/{urllib.parse.quote(notebook)}?token={self.token}"
        return f"{self.url}/lab/tree/{urllib.parse.quote(notebook)}?reset&token={self.token}"


def free_port() -> int:
    """A TCP port that was free on loopback a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def lab_server(
    notebooks: Path, workdir: Path, env_extra: dict[str, str] | None = None, client: str = "lab"
) -> Iterator[LabServer]:
    """Serve a copy of `notebooks` from `workdir`; stop the server and every kernel on exit, even on error.

    env_extra: environment variables for the server and its kernels (the benchmark sets MHA_LESSON_PIXEL_RATIO).
    client: "lab" for JupyterLab, "notebook" for Notebook 7 (same settings and front-end plugins).
    """
    if client not in ("lab", "notebook"):
        raise ValueError(f"client: expected 'lab' or 'notebook', got {client!r}")
    # The lessons run from a copy (a learner's checkpoints and caches must not change the run, and the run must
    # not write into the checkout), placed among links to its siblings so that paths like ../tests/ resolve
    # as they do for a learner who starts `jupyter lab` in notebooks/.
    checkout = workdir / "checkout"
    checkout.mkdir()
    for sibling in notebooks.resolve().parent.iterdir():
        if sibling.name != notebooks.resolve().name and not sibling.name.startswith("."):
            (checkout / sibling.name).symlink_to(sibling)
    root = checkout / notebooks.resolve().name
    shutil.copytree(notebooks, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    # An empty user settings folder (a tester's own JupyterLab settings must not change the run) and the project's
    # defaults where `make lab` puts them, in an app settings folder of the server's own.
    settings = workdir / "user-settings"
    settings.mkdir()
    if not OVERRIDES.is_file():
        raise FileNotFoundError(f"the JupyterLab settings `make lab` installs were expected at {OVERRIDES}")
    app_settings = workdir / "app-settings"
    (app_settings / "overrides.d").mkdir(parents=True)
    shutil.copy(OVERRIDES, app_settings / "overrides.d" / "mha-lesson.json5")
    shutil.copytree(LABEXTENSIONS, workdir / "data" / "labextensions")  # JUPYTER_DATA_DIR below
    # Private Jupyter/IPython dirs: no user config, kernels or startup files leak in, nothing is written to ~.
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env_extra or {})}
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("IPYTHONDIR", "ipython")]:  # fmt: skip
        env[var] = str(workdir / sub)
    port, token = free_port(), secrets.token_hex(24)
    app = "LabApp" if client == "lab" else "JupyterNotebookApp"
    cmd = [
        sys.executable, "-m", "jupyterlab" if client == "lab" else "notebook", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--ServerApp.allow_root=True",  # CI containers run as root
        "--ServerApp.terminals_enabled=False",
        f"--{app}.expose_app_in_browser=True",
        f"--{app}.user_settings_dir={settings}", f"--{app}.workspaces_dir={workdir / 'workspaces'}",
        f"--{app}.app_settings_dir={app_settings}",
    ]  # fmt: skip
    if client == "lab":
        # Nothing may reach the network: no news feed, no update check, no PyPI extension manager.
        cmd += ["--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.extension_manager=readonly"]  # fmt: skip
    log = workdir / "jupyterlab.log"
    with log.open("w") as log_file:
        # Own process group, so stopping it never signals the test runner.
        process = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    server = LabServer(f"http://127.0.0.1:{port}", token, root, process, log, client)
    try:
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                server.api("GET", "/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"jupyter lab did not answer within {OPEN_TIMEOUT_S:.0f} s") from None
                time.sleep(0.3)
        yield server
    finally:
        with contextlib.suppress(Exception):
            server.shutdown_kernels()
        stop_process_group(process)


def stop_process_group(process: subprocess.Popen) -> None:
    """End `process` (started with start_new_session=True), its process group and every process it started."""
    import psutil

    # Kernels run in sessions of their own: note their pids before the server goes, then end leftovers.
    children = []
    with contextlib.suppress(psutil.Error):
        children = psutil.Process(process.pid).children(recursive=True)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    # A parent that exits at once (make) must not cut short the server's own shutdown of its kernels.
    _, alive = psutil.wait_procs(children, timeout=10)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A context (one profile) of Debian's headless Chromium via Playwright, no browser download; closed on exit.

    One profile for all notebooks, so JupyterLab's scripts come from the cache after the first page; each
    notebook still gets a page of its own, opened with `?reset`.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            context.add_init_script(PAGE_LIB)
            yield context
        finally:
            browser.close()


# --- one notebook -------------------------------------------------------------------------------------------
def visit_notebook(
    context: Any, server: LabServer, notebook: str, *, moves: int = 2, screenshot_dir: Path | None = None
) -> Visit:
    """Open `notebook`, run all cells, check outputs and widgets, move every slider `moves` steps and back, and
    change every other control and back."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    visit = Visit(notebook)

    def record(request: Any) -> None:
        visit.requests.append(request.url)

    context.on("request", record)  # the context sees requests of workers too, not only of the page
    page = context.new_page()
    page.on("websocket", lambda ws: visit.requests.append(ws.url))
    page.on("pageerror", lambda exc: visit.errors.append(f"page error: {exc}"))
    page.on("console", lambda msg: visit.errors.append(f"console error: {msg.text}") if msg.type == "error" else None)
    try:
        start = time.monotonic()
        page.goto(server.page_url(notebook), timeout=OPEN_TIMEOUT_S * 1e3)
        page.wait_for_function("p => __mha.open(p)", arg=notebook, timeout=OPEN_TIMEOUT_S * 1e3)
        visit.open_s = time.monotonic() - start
        start = time.monotonic()
        page.evaluate("() => __mha.runAll()")
        try:
            page.wait_for_function("() => __mha.done()", timeout=RUN_TIMEOUT_S * 1e3)
        except PlaywrightTimeout:
            visit.errors.append(f"run all cells did not finish within {RUN_TIMEOUT_S:.0f} s")
        try:
            page.wait_for_function("() => !__mha.pendingWidgets()", timeout=WIDGET_TIMEOUT_S * 1e3)
        except PlaywrightTimeout:
            visit.widget_problems.append(f"widgets still loading after {WIDGET_TIMEOUT_S:.0f} s")
        visit.run_s = time.monotonic() - start
        if page.evaluate("() => __mha.ran") not in (None, "ok"):
            visit.errors.append(page.evaluate("() => __mha.ran"))
        cells = page.evaluate("() => __mha.cells()")
        check_cells(cells, visit)
        visit.images = measure_images(page)
        visit.laptop = measure_laptop(page)
        start = time.monotonic()
        for group in page.evaluate("() => __mha.groups()"):
            exercise(page, group, explorer_name(notebook, group, cells), moves, visit)
        visit.controls_s = time.monotonic() - start
        if screenshot_dir is not None:
            visit.screenshot = screenshot(page, screenshot_dir / f"{Path(notebook).stem}.png")
    finally:
        page.close()
        context.remove_listener("request", record)
        with contextlib.suppress(Exception):
            server.shutdown_kernels()
    # The same console error repeats once per widget; one line each, with a count, is easier to read.
    counts = {line: visit.errors.count(line) for line in visit.errors}
    visit.errors = [line if n == 1 else f"{line} (x{n})" for line, n in counts.items()]
    return visit


def measure_images(page: Any) -> dict[int, list[dict]]:
    """Every output image's sizes (see `__mha.images`) at each of WINDOW_WIDTHS; the window is put back after."""
    page.wait_for_function("() => __mha.imagesLoaded()", timeout=WIDGET_TIMEOUT_S * 1e3)
    sizes = {}
    for width in WINDOW_WIDTHS:
        page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
        page.wait_for_timeout(600)  # let Lumino lay the panels out again
        sizes[width] = page.evaluate("() => __mha.images()")
    page.set_viewport_size(VIEWPORT)
    page.wait_for_timeout(300)
    return sizes


def measure_laptop(page: Any) -> list[dict]:
    """Every explorer's fit (see `__mha.fit`) in LAPTOP_VIEWPORT with the file browser open; put back after."""
    page.set_viewport_size(LAPTOP_VIEWPORT)
    was_collapsed = page.evaluate("() => __mha.openSidebar()")
    page.wait_for_timeout(800)  # let Lumino lay the panels out again
    fit = page.evaluate("() => __mha.fit()")
    if was_collapsed:
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    page.set_viewport_size(VIEWPORT)
    page.wait_for_timeout(300)
    return fit


@dataclass
class Shot:
    """A screenshot of one output image and what it shows: CSS width on the page and the image's own pixels."""

    path: Path
    shown: float
    pixels: int

    @property
    def density(self) -> float:
        """Image pixels per CSS pixel: at least the device pixel ratio for the image to be sharp."""
        return self.pixels / self.shown


def hidpi_screenshots(
    browser: Any, server: LabServer, notebook: str, out_dir: Path, explorer: str = ""
) -> dict[str, Shot]:
    """Run `notebook` in a window of device pixel ratio 2 and screenshot the figure of its first explorer (of class
    `explorer`, if given) and its first static figure: `<stem>-explorer@2x.png`, `<stem>-figure@2x.png` in out_dir."""
    context = browser.new_context(viewport=HIDPI_VIEWPORT, device_scale_factor=2)
    context.add_init_script(PAGE_LIB)
    page = context.new_page()
    try:
        page.goto(server.page_url(notebook), timeout=OPEN_TIMEOUT_S * 1e3)
        page.wait_for_function("p => __mha.open(p)", arg=notebook, timeout=OPEN_TIMEOUT_S * 1e3)
        page.evaluate("() => __mha.runAll()")
        page.wait_for_function("() => __mha.done()", timeout=RUN_TIMEOUT_S * 1e3)
        page.wait_for_function("() => !__mha.pendingWidgets() && __mha.imagesLoaded()", timeout=WIDGET_TIMEOUT_S * 1e3)
        out_dir.mkdir(parents=True, exist_ok=True)
        shots = {}
        outputs = ".jp-Cell .jp-OutputArea-output"
        named = f".mha-explorer-{explorer}" if explorer else ".mha-explorer"
        for kind, selector in (("explorer", f"{outputs} {named} img.mha-figure"),
                               ("figure", f"{outputs}:not(:has(.mha-explorer)) img")):  # fmt: skip
            img = page.locator(selector).first
            img.scroll_into_view_if_needed()
            path = out_dir / f"{Path(notebook).stem}-{kind}@2x.png"
            img.screenshot(path=str(path))
            size = img.evaluate("i => [i.getBoundingClientRect().width, i.naturalWidth]")
            shots[kind] = Shot(path, size[0], size[1])
        return shots
    finally:
        context.close()
        with contextlib.suppress(Exception):
            server.shutdown_kernels()


def check_cells(cells: list[dict], visit: Visit) -> None:
    """Record error outputs, unrun code cells, stderr and widgets that did not render."""
    for cell in cells:
        where = f"cell {cell['index']}"
        if cell["type"] == "code" and cell["source"].strip() and cell["count"] is None:
            visit.errors.append(f"{where} was not run (an earlier cell failed?)")
        for out in cell["outputs"]:
            if out["type"] == "error":
                visit.errors.append(f"{where}: {out['text']}")
            elif out["type"] == "stream" and out["name"] == "stderr":
                serious = any(word in out["text"] for word in ("Traceback", "Error", "Warning"))
                target = visit.errors if serious else visit.stderr
                target.append(f"{where}: {out['text'].strip()}")
            if out["problem"]:
                visit.widget_problems.append(f"{where}: {out['problem']}")


def explorer_name(notebook: str, group: dict, cells: list[dict]) -> str:
    """`<notebook stem>:<explorer>`: its `mha-explorer-<Name>` class if any, else the function called by the cell's
    last statement (`wc.cost_explorer(...)` -> cost_explorer), else the cell number."""
    name = group["name"]
    if not name:
        statements = [line for line in cells[group["cell"]]["source"].splitlines() if re.match(r"[A-Za-z_]", line)]
        call = re.match(r"(?:\w+\s*=\s*)?(?:\w+\.)*(\w+)\s*\(", statements[-1]) if statements else None
        name = call.group(1) if call else f"cell {group['cell']}"
    return f"{Path(notebook).stem}:{name}"


def exercise(page: Any, group: dict, name: str, moves: int, visit: Visit) -> None:
    """Move every enabled slider of a group, then change every other enabled control and put it back."""
    # In view and painted first, as a learner sees an explorer before touching it (a key press would scroll to it).
    page.locator(f'[data-mha-group="{group["gid"]}"]').scroll_into_view_if_needed()
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
    # Sliders first, at the explorer's starting state, so their latency rows mean what they always meant.
    for slider in group["controls"]:
        if slider["kind"] == "slider" and not is_disabled(page, slider):
            visit.sliders += 1
            visit.moves += move_slider(page, group, slider, name, moves)
    for control in group["controls"]:
        if control["kind"] is None:
            visit.unchangeable.append(f"{name} / {control['label']}: the visit does not know how to change it")
        elif control["kind"] != "slider" and not is_disabled(page, control):
            change_and_restore(page, group, control, name, moves, visit)


def is_disabled(page: Any, control: dict) -> bool:
    """Whether the control is greyed out (or gone) right now."""
    return page.evaluate("c => __mha.disabled(c)", control["cid"])


def snapshot(page: Any, group: dict) -> dict:
    """What the group shows and the size of its cell's output area (see `__mha.snapshot`)."""
    return page.evaluate("([g, c]) => __mha.snapshot(g, c)", [group["gid"], group["cell"]])


def move_slider(page: Any, group: dict, slider: dict, name: str, moves: int) -> list[Move]:
    """Press arrow keys `moves` times away from the start (turning at the end of the range), then back."""
    cid = slider["cid"]
    state = page.evaluate("c => __mha.sliderState(c)", cid)
    if state is None or state["max"] <= state["min"]:
        return []
    up, down = ("ArrowUp", "ArrowDown") if slider["vertical"] else ("ArrowRight", "ArrowLeft")
    away, back = (up, down) if state["now"] < state["max"] else (down, up)
    handle = page.locator(f'[data-mha-control="{cid}"] .noUi-handle').first
    # A learner clicks (or tabs to) the handle before pressing a key: focus it first and pause as a person would.
    # Focus activates the explorer's cell in JupyterLab (50-80 ms of page work, once per explorer); Playwright's
    # press alone would focus and press in the same instant, so that work used to land in the first move's time.
    handle.focus()
    page.wait_for_timeout(FOCUS_PAUSE_MS)
    start = before = snapshot(page, group)
    page.evaluate("([g, k]) => __mha.keep(g, k)", [group["gid"], cid])
    result: list[Move] = []

    def step(key: str) -> None:
        nonlocal before
        move, before = act(page, group, slider, name, key, lambda: handle.press(key), before, start)
        result.append(move)

    for _ in range(moves):
        state = page.evaluate("c => __mha.sliderState(c)", cid)
        if (state["now"] >= state["max"]) if away == up else (state["now"] <= state["min"]):
            break
        step(away)
    for _ in range(len(result)):
        step(back)
    if result:
        check_restored(page, group, cid, start, before, result[-1])
    return result


def change_and_restore(page: Any, group: dict, control: dict, name: str, moves: int, visit: Visit) -> None:
    """Change a control other than a slider, move the sliders only that change enabled, then put it back."""
    steps = change_steps(page, control)
    if steps is None:
        return
    (what, change), (what_back, restore) = steps
    visit.other_controls += 1
    asleep = [c for c in group["controls"] if c["kind"] == "slider" and is_disabled(page, c)]
    start = snapshot(page, group)
    page.evaluate("([g, k]) => __mha.keep(g, k)", [group["gid"], control["cid"]])
    move, _ = act(page, group, control, name, what, change, start, start)
    visit.moves.append(move)
    # Sliders this change woke (the toy sentence's greyed-out sizes under "random") can only be moved now.
    for slider in asleep:
        if not is_disabled(page, slider):
            visit.sliders += 1
            visit.moves += move_slider(page, group, slider, name, moves)
    move, end = act(page, group, control, name, what_back, restore, snapshot(page, group), start)
    visit.moves.append(move)
    check_restored(page, group, control["cid"], start, end, move)


Step = tuple[str, Callable[[], None]]  # what an input is (for messages) and how to give it


def change_steps(page: Any, control: dict) -> tuple[Step, Step] | None:
    """The input that changes the control and the one that puts it back; None if it offers nothing else."""
    el = page.locator(f'[data-mha-control="{control["cid"]}"]')
    if control["kind"] == "checkbox":
        box = el.locator("input[type=checkbox]")
        return ("click", box.click), ("click again", box.click)
    if control["kind"] == "text":
        return text_steps(el.locator("input"))
    return choice_steps(page, el, control)


def text_steps(entry: Any) -> tuple[Step, Step]:
    """Type a sentence other than the field's and press Enter; then type the old text back."""
    old = entry.input_value()
    new = next(text for text in TYPED_TEXTS if text != old)
    there = (f"type {new!r}, Enter", lambda: type_enter(entry, new))
    return there, ("type it back, Enter", lambda: type_enter(entry, old))


def choice_steps(page: Any, el: Any, control: dict) -> tuple[Step, Step] | None:
    """Choose the option after the chosen one (click the button, or select it in the dropdown); then the old one."""
    choices = page.evaluate("c => __mha.choices(c)", control["cid"])
    labels, now = choices["labels"], choices["now"]
    if now < 0 or len(labels) < 2:  # nothing chosen to go back to, or nothing else to choose
        return None
    other = (now + 1) % len(labels)

    def choose(i: int) -> None:
        if control["kind"] == "toggle buttons":
            el.locator(".widget-toggle-button").nth(i).click()
        else:
            el.locator("select").select_option(index=i)

    return (f"choose {labels[other]!r}", lambda: choose(other)), (f"choose {labels[now]!r} again", lambda: choose(now))


def type_enter(entry: Any, text: str) -> None:
    """Replace a text field's content and press Enter (which sends it when continuous_update is off)."""
    entry.fill(text)
    entry.press("Enter")


def act(
    page: Any, group: dict, control: dict, name: str, what: str, give: Callable[[], None], before: dict, start: dict
) -> tuple[Move, dict]:
    """Give one input (`what`, done by `give`) to a control; returns the move (latency, problems) and the
    snapshot after it. `before` is the snapshot just before, `start` the one before the control's first input."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    cid = control["cid"]
    value = page.evaluate("c => __mha.value(c)", cid)
    page.evaluate("([g, c]) => __mha.arm(g, c)", [group["gid"], cid])
    give()
    problems: list[str] = []
    try:
        page.wait_for_function("() => __mha.settled()", timeout=MOVE_TIMEOUT_S * 1e3)
    except PlaywrightTimeout:
        problems.append(f"{what}: the kernel did not settle within {MOVE_TIMEOUT_S:.0f} s")
    times = page.evaluate("() => __mha.disarm()")
    problems += [f"{what}: the kernel reported {line}" for line in times["log"]]
    after = snapshot(page, group)
    if page.evaluate("c => __mha.value(c)", cid) == value:
        problems.append(f"{what} did not change the control")
    changed = times["last"] is not None and (after["text"], after["imgs"]) != (before["text"], before["imgs"])
    if not changed:
        problems.append(f"{what} changed neither its figure nor its text")
    if "unexpected error" in after["message"]:  # the message starts with a warning sign
        problems.append(f"{what}: {after['message']}")
    if (after["outputs"], after["images"]) != (start["outputs"], start["images"]):
        problems.append(
            f"{what}: the output area grew from {start['outputs']} outputs / {start['images']} images "
            f"to {after['outputs']} / {after['images']}"
        )
    elif after["rest"] > start["rest"] + GROWTH_TOLERANCE_PX:
        problems.append(f"{what}: the output area besides the figure grew from {start['rest']} to {after['rest']} px")
    ms = times["last"] - times["t0"] if changed and times["t0"] is not None else None
    kernel_ms = times["idle"] - times["busy"] if times["busy"] is not None and times["idle"] is not None else None
    return Move(name, control["label"], ms, problems, kernel_ms, control["kind"]), after


def check_restored(page: Any, group: dict, key: str, start: dict, end: dict, last: Move) -> None:
    """With every control back where it started, the figure and text must be the starting ones again (pixels
    kept under `key`); problems go to the last move."""
    if end["controls"] != start["controls"]:
        return
    differs = page.evaluate("([g, k]) => __mha.differs(g, k)", [group["gid"], key])
    if (end["text"] != start["text"] and not group.get("echo")) or differs > RESTORED_PIXELS:
        last.problems.append(f"back at the start, the text or figure differs from the start ({differs:.2%} of pixels)")
    if abs(end["height"] - start["height"]) > 2:
        last.problems.append(f"back at the start, output height {start['height']} -> {end['height']} px")


def screenshot(page: Any, path: Path) -> Path:
    """Save the whole notebook (the viewport stretched to its height, capped below Chromium's texture limit)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    height = min(int(page.evaluate("() => __mha.fullHeight()")) + 20, 16000)
    page.set_viewport_size({"width": VIEWPORT["width"], "height": max(height, VIEWPORT["height"])})
    page.wait_for_timeout(500)  # let Lumino relayout after the resize
    page.screenshot(path=str(path))
    return path


# --- latency summary ----------------------------------------------------------------------------------------
def latency_rows(visits: list[Visit], *, sliders: bool = True) -> list[dict]:
    """One row per explorer: median and max ms over every measured move of its sliders (sliders=False: of its other
    controls), and the median time the kernel was busy during those moves (the rest is messaging and the browser)."""
    by_explorer: dict[str, list[Move]] = {}
    for visit in visits:
        for move in visit.moves:
            if move.ms is not None and (move.kind == "slider") == sliders:
                by_explorer.setdefault(move.explorer, []).append(move)
    rows = []
    for name, moves in by_explorer.items():
        ms = [round(m.ms, 1) for m in moves]
        kernel = [round(m.kernel_ms, 1) for m in moves if m.kernel_ms is not None]
        rows.append(
            {"explorer": name, "median_ms": statistics.median(ms), "p90_ms": percentile(ms, 90), "max_ms": max(ms),
             "moves": len(ms), "kernel_median_ms": statistics.median(kernel) if kernel else None, "all_ms": ms}
        )  # fmt: skip
    return rows


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile of values, linearly interpolated between the nearest ranks (as numpy's default)."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def pooled(rows: list[dict]) -> dict[str, float]:
    """Median and 90th percentile over every move of every row (the targets are about these)."""
    ms = [t for r in rows for t in r["all_ms"]]
    return {"median_ms": statistics.median(ms), "p90_ms": percentile(ms, 90), "moves": len(ms)} if ms else {}


def latency_table(rows: list[dict], other_rows: list[dict] | None = None) -> str:
    """The slider rows as a fixed-width table, with the target; then the rows of the other controls, if given."""
    width = max([48] + [len(r["explorer"]) for r in rows + (other_rows or [])])
    lines = table_lines(rows, width)
    every = pooled(rows)
    if every:
        lines.append(
            f"{'every slider move':<{width}} {every['median_ms']:>10.0f} {every['p90_ms']:>8.0f} {'':>8} {'':>10} "
            f"{every['moves']:>6}"
        )
    lines.append("(ms from a slider key press to the updated image/text in the page; kernel ms: the part the kernel")
    lines.append(
        f" was busy. Targets over every slider move: median under {TARGET_MEDIAN_MS:.0f} ms, 90th percentile under "
        f"{TARGET_P90_MS:.0f} ms)"
    )
    if other_rows:
        lines += ["", "Other controls (ms from a click, a choice or Enter to the updated image/text):"]
        lines += table_lines(other_rows, width)
    return "\n".join(lines)


def table_lines(rows: list[dict], width: int) -> list[str]:
    """A header and one line per row, explorer names padded to `width`."""
    lines = [f"{'explorer':<{width}} {'median ms':>10} {'p90 ms':>8} {'max ms':>8} {'kernel ms':>10} {'moves':>6}"]
    for r in rows:
        kernel = "-" if r["kernel_median_ms"] is None else f"{r['kernel_median_ms']:.0f}"
        lines.append(
            f"{r['explorer']:<{width}} {r['median_ms']:>10.0f} {r['p90_ms']:>8.0f} {r['max_ms']:>8.0f} {kernel:>10} "
            f"{r['moves']:>6}"
        )
    return lines


def write_latency(rows: list[dict], path: Path, other_rows: list[dict] | None = None) -> None:
    """Save the slider rows (and those of the other controls) as JSON (times in ms)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "target_median_ms": TARGET_MEDIAN_MS,
        "target_p90_ms": TARGET_P90_MS,
        "every_slider_move": pooled(rows),
        "explorers": rows,
        "other_controls": other_rows or [],
    }
    path.write_text(json.dumps(data, indent=1) + "\n")
