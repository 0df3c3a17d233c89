// The graph canvas (viz/canvas.py). Python sends the SVG; this file pans, zooms and reports clicks.
// Clicks go back through the synced traits `selected` (a node) and `expanded` (a module box).
// Names are never turned into markup here: the SVG arrives escaped and we only read attributes.

// Several canvases share a page (and a hidden tab's SVG does not render its <defs>), so every id
// inside a drawing (the arrow marker) gets this canvas's suffix, and so do its url(#...) references.
function scopeIds(svg, suffix) {
  const ids = new Set();
  for (const m of svg.matchAll(/\sid="([^"]+)"/g)) ids.add(m[1]);
  for (const id of ids) {
    svg = svg.split(`id="${id}"`).join(`id="${id}-${suffix}"`).split(`url(#${id})`).join(`url(#${id}-${suffix})`);
  }
  return svg;
}

function render({ model, el }) {
  // A page-wide counter: anywidget may evaluate this module once per widget model.
  globalThis.__dynascopeCanvases = (globalThis.__dynascopeCanvases || 0) + 1;
  const uid = `dsc${globalThis.__dynascopeCanvases}`;
  el.classList.add("ds-canvas");
  const bar = document.createElement("div");
  bar.className = "ds-toolbar";
  const view = document.createElement("div");
  view.className = "ds-view";
  const stage = document.createElement("div");
  stage.className = "ds-stage";
  view.appendChild(stage);
  el.appendChild(bar);
  el.appendChild(view);

  const button = (label, title, onclick) => {
    const b = document.createElement("button");
    b.textContent = label;
    b.title = title;
    b.addEventListener("click", onclick);
    bar.appendChild(b);
    return b;
  };
  let k = 1, tx = 0, ty = 0;
  const apply = () => { stage.style.transform = `translate(${tx}px, ${ty}px) scale(${k})`; };
  const zoomAt = (factor, cx, cy) => {
    const nk = Math.min(8, Math.max(0.02, k * factor));
    tx = cx - (cx - tx) * (nk / k);
    ty = cy - (cy - ty) * (nk / k);
    k = nk;
    apply();
  };
  const size = () => {
    const svg = stage.querySelector("svg");
    if (!svg) return [1, 1];
    const w = parseFloat(svg.getAttribute("width")) || svg.getBoundingClientRect().width / k || 1;
    const h = parseFloat(svg.getAttribute("height")) || svg.getBoundingClientRect().height / k || 1;
    return [w, h];
  };
  const fit = () => {
    const [w, h] = size();
    const vw = view.clientWidth || 600, vh = view.clientHeight || model.get("height");
    k = Math.min(1.5, (vw - 16) / w, (vh - 16) / h);
    if (!(k > 0)) k = 1;
    // A tall graph would shrink to nothing: keep it readable and start at its top.
    if (k < 0.35) { k = Math.min(1, (vw - 16) / w); tx = Math.max(8, (vw - w * k) / 2); ty = 8; }
    else { tx = (vw - w * k) / 2; ty = (vh - h * k) / 2; }
    apply();
  };
  button("+", "zoom in", () => zoomAt(1.25, view.clientWidth / 2, view.clientHeight / 2));
  button("\u2212", "zoom out", () => zoomAt(0.8, view.clientWidth / 2, view.clientHeight / 2));
  button("fit", "fit the graph in view", fit);
  button("collapse", "collapse every opened module box", () => {
    model.set("expanded", []);
    model.save_changes();
  });
  const hint = document.createElement("span");
  hint.className = "ds-hint";
  hint.textContent = "drag to pan \u00b7 wheel to zoom \u00b7 click a node";
  bar.appendChild(hint);

  const mark = () => {
    // "selected" is what viz.to_svg drew; "ds-selected" follows clicks without a redraw.
    for (const e of stage.querySelectorAll(".ds-selected, .selected")) e.classList.remove("ds-selected", "selected");
    const name = model.get("selected");
    if (!name) return;
    for (const e of stage.querySelectorAll("[data-node]")) {
      if (e.getAttribute("data-node") === name) e.classList.add("ds-selected");
    }
  };
  let drawn = null;  // the `graph` last fitted: a new graph is fitted, a redraw of the same one keeps the view
  const draw = () => {
    view.style.height = `${model.get("height")}px`;
    stage.innerHTML = scopeIds(model.get("svg"), uid);
    mark();
    if (drawn !== model.get("graph")) {
      drawn = model.get("graph");
      // Wait for the element to be in the page so clientWidth is known.
      requestAnimationFrame(fit);
    }
  };

  // Pan with the mouse; a press that did not move is a click on what is under it.
  let drag = null;
  const onMove = (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (drag.moved) { tx = drag.tx + dx; ty = drag.ty + dy; apply(); }
  };
  const onUp = () => {
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
    view.classList.remove("ds-dragging");
    setTimeout(() => { drag = null; }, 0);
  };
  view.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, tx, ty, moved: false };
    view.classList.add("ds-dragging");
    window.addEventListener("pointermove", onMove);
    window.addEventListener("pointerup", onUp);
  });
  view.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const hit = ev.target.closest("[data-node], [data-group]");
    if (!hit || !stage.contains(hit)) return;
    const group = hit.getAttribute("data-group");
    const node = hit.getAttribute("data-node");
    if (node !== null) {
      model.set("selected", node);
      model.save_changes();
      mark();
    } else if (group !== null) {
      const open = model.get("expanded");
      if (!open.includes(group)) {
        model.set("expanded", [...open, group]);
        model.save_changes();
      }
    }
  });
  view.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = view.getBoundingClientRect();
    zoomAt(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
  }, { passive: false });

  model.on("change:svg", draw);
  model.on("change:selected", mark);
  model.on("change:height", draw);
  draw();
  return () => {
    model.off("change:svg", draw);
    model.off("change:selected", mark);
    model.off("change:height", draw);
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
  };
}

export default { render };
