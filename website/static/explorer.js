// Replays an explorer's recorded states: real controls (same labels and ranges as in Jupyter) that swap in the
// picture and text the real explorer code rendered for that state. Nothing here computes: every frame was
// recorded by website/record.py. A combination that was not recorded moves the other controls to the nearest
// recorded state and says so, so the picture never silently disagrees with the controls.
"use strict";
(function () {
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  function setUp(root) {
    const data = JSON.parse(root.querySelector("script.mha-states").textContent);
    const frames = data.frames;
    const names = data.controls.map((c) => c.name);
    const keyOf = (values) => JSON.stringify(names.map((n) => values[n]));
    const byKey = new Map(frames.map((f, i) => [keyOf(f.values), i]));
    const box = root.querySelector(".mha-controls");
    const note = root.querySelector(".mha-state-note");
    const inputs = {};
    let current = { ...frames[0].values };
    let preloaded = false;

    function label(spec, value) {
      const i = spec.values.findIndex((v) => same(v, value));
      return spec.labels ? spec.labels[i] : typeof value === "boolean" ? (value ? "on" : "off") : String(value);
    }

    function makeControl(spec) {
      const wrap = document.createElement("div");
      wrap.className = "mha-control mha-" + spec.kind;
      const id = "mha-" + Math.random().toString(36).slice(2);
      const name = document.createElement("label");
      name.htmlFor = id;
      name.textContent = spec.label;
      wrap.appendChild(name);
      let input;
      if (spec.kind === "slider") {
        input = document.createElement("input");
        input.type = "range";
        input.min = 0;
        input.max = spec.values.length - 1;
        input.step = 1;
        const out = document.createElement("output");
        out.htmlFor = id;
        input.addEventListener("input", () => choose(spec.name, spec.values[+input.value]));
        input.show = (v) => {
          input.value = spec.values.findIndex((x) => same(x, v));
          out.textContent = label(spec, v);
          input.setAttribute("aria-valuetext", label(spec, v));
        };
        wrap.append(input, out);
      } else if (spec.kind === "choice" && spec.values.length <= 5 && !spec.select) {
        input = document.createElement("div");
        input.setAttribute("role", "radiogroup");
        input.setAttribute("aria-labelledby", id + "-l");
        name.id = id + "-l";
        const buttons = spec.values.map((v, i) => {
          const b = document.createElement("button");
          b.type = "button";
          b.textContent = spec.labels[i];
          b.setAttribute("role", "radio");
          b.addEventListener("click", () => choose(spec.name, v));
          b.addEventListener("keydown", (e) => {
            const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
            if (step) {
              e.preventDefault();
              const j = (i + step + buttons.length) % buttons.length;
              buttons[j].focus();
              choose(spec.name, spec.values[j]);
            }
          });
          input.appendChild(b);
          return b;
        });
        input.show = (v) =>
          buttons.forEach((b, i) => {
            const on = same(spec.values[i], v);
            b.setAttribute("aria-checked", on);
            b.tabIndex = on ? 0 : -1;
          });
        input.disable = (off) => buttons.forEach((b) => (b.disabled = off));
        wrap.appendChild(input);
      } else if (spec.kind === "choice") {
        input = document.createElement("select");
        spec.values.forEach((v, i) => input.add(new Option(spec.labels[i], String(i))));
        input.addEventListener("change", () => choose(spec.name, spec.values[+input.value]));
        input.show = (v) => (input.value = String(spec.values.findIndex((x) => same(x, v))));
        wrap.appendChild(input);
      } else {
        input = document.createElement("input");
        input.type = "checkbox";
        input.addEventListener("change", () => choose(spec.name, input.checked));
        input.show = (v) => (input.checked = !!v);
        wrap.insertBefore(input, name);
      }
      input.id = input.id || id;
      input.disable = input.disable || ((off) => (input.disabled = off));
      box.appendChild(wrap);
      inputs[spec.name] = input;
    }

    data.controls.forEach(makeControl);
    data.fixed.forEach((f) => {
      const wrap = document.createElement("div");
      wrap.className = "mha-control mha-fixed";
      wrap.innerHTML = `<label></label><input type="text" readonly><span class="mha-hint">type your own in Jupyter</span>`;
      wrap.querySelector("label").textContent = f.label;
      wrap.querySelector("input").value = f.value;
      wrap.querySelector("input").setAttribute("aria-label", f.label);
      box.appendChild(wrap);
    });

    function preload() {
      if (preloaded) return;
      preloaded = true;
      frames.forEach((f) => {
        if (f.src) {
          const im = new Image();
          im.src = f.src;
          im.decode().catch(() => {});
        }
      });
    }

    function show(i, moved, f = frames[i]) {
      const t0 = performance.now();
      current = { ...f.values };
      data.controls.forEach((spec) => {
        inputs[spec.name].show(f.values[spec.name]);
        inputs[spec.name].disable(f.disabled.includes(spec.name));
      });
      let img = root.querySelector("img.mha-frame");
      let msg = root.querySelector("p.mha-message");
      if (f.src) {
        if (!img) {
          img = document.createElement("img");
          img.className = "mha-frame";
          root.appendChild(img);
        }
        img.hidden = false;
        img.src = f.src;
        img.width = f.width;
        img.alt = f.alt;
        if (msg) msg.hidden = true;
      } else {
        if (!msg) {
          msg = document.createElement("p");
          msg.className = "mha-message";
          root.insertBefore(msg, img || null);
        }
        msg.hidden = false;
        msg.textContent = "\u26a0 " + (f.message || "");
        if (img) img.hidden = true; // as in Jupyter: the message replaces the picture and the text describing it
      }
      root.querySelectorAll(".mha-readout").forEach((el, k) => {
        el.innerHTML = f.readouts[k] || "";
        el.hidden = !f.src;
      });
      note.textContent = moved.length
        ? "Recorded state shown: " + moved.join(", ") + ". Every combination runs live in Jupyter (make lab)."
        : "";
      root.dataset.frame = i;
      const done = () => {
        root.dataset.switchMs = (performance.now() - t0).toFixed(2);
        root.dispatchEvent(new CustomEvent("mha-frame", { detail: { frame: i } }));
      };
      if (img && f.src) img.decode().then(done, done);
      else done();
    }

    function choose(name, value) {
      preload();
      if (root.mhaStop) root.mhaStop();
      const wanted = { ...current, [name]: value };
      let i = byKey.get(keyOf(wanted));
      let moved = [];
      if (i === undefined) {
        // The recorded state with this value that keeps most of the other controls where they are.
        let best = -1;
        frames.forEach((f, j) => {
          if (!same(f.values[name], value)) return;
          const score = names.filter((n) => same(f.values[n], wanted[n])).length;
          if (score > best) [best, i] = [score, j];
        });
        if (i === undefined) i = 0;
        const specs = Object.fromEntries(data.controls.map((s) => [s.name, s]));
        moved = names
          .filter((n) => n !== name && !same(frames[i].values[n], wanted[n]))
          .map((n) => `${specs[n].label} ${label(specs[n], frames[i].values[n])}`);
      }
      show(i, moved);
    }

    if (data.run && data.run.length) {
      // A recorded training run from the starting state: Train plays its redraws in order, Stop pauses it.
      const bar = document.createElement("div");
      bar.className = "mha-control mha-run";
      const train = document.createElement("button");
      const stop = document.createElement("button");
      train.type = stop.type = "button";
      train.textContent = "\u25b6 Train (recorded run)";
      stop.textContent = "\u25a0 Stop";
      stop.disabled = true;
      const status = document.createElement("span");
      status.className = "mha-hint";
      bar.append(train, stop, status);
      box.appendChild(bar);
      let timer = null, next = 0;
      const halt = () => {
        clearInterval(timer);
        timer = null;
        train.disabled = false;
        stop.disabled = true;
      };
      train.addEventListener("click", () => {
        preload();
        data.run.forEach((f) => f.src && (new Image().src = f.src));
        const start = frames[0].values;
        const moved = names.filter((n) => !same(current[n], start[n]));
        if (next >= data.run.length || moved.length) next = 0;
        train.disabled = true;
        stop.disabled = false;
        status.textContent = moved.length ? "The recorded run starts from the lesson's settings." : "";
        timer = setInterval(() => {
          show("run-" + next, [], data.run[next]);
          next += 1;
          if (next >= data.run.length) halt();
        }, 150);
      });
      stop.addEventListener("click", halt);
      root.mhaStop = halt;
    }

    show(0, []);
    root.addEventListener("pointerenter", preload, { once: true });
    root.addEventListener("focusin", preload, { once: true });
    root.mhaChoose = choose;
  }

  function start() {
    document.querySelectorAll(".mha-site-explorer").forEach(setUp);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
