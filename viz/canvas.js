// The graph canvas (viz/canvas.py) and the static report's graphs (viz/report.js): Python sends layout data
// (boxes, edges, labels); this file draws it as SVG elements, pans, zooms, searches, shows a minimap, and
// reports clicks (the widget through the synced traits `selected` and `expanded`). Strings from user code
// only ever reach the page through textContent and setAttribute, never as markup, so a node named
// "<img onerror=...>" is text.

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

// Same numbers as viz/svg.py's _f: one decimal, no trailing ".0".
const f = (v) => { const s = Number(v).toFixed(1); return s.endsWith(".0") ? s.slice(0, -2) : s; };

// Edge points [x0, y0, x1, y1, ...]: a start, then cubic bezier triples; a stray tail is drawn straight
// (as viz/svg.py's _path does).
function pathD(pts) {
  if (pts.length < 2) return "";
  const parts = [`M${f(pts[0])},${f(pts[1])}`];
  const n = (pts.length - 2) / 2, full = n - (n % 3);
  let i = 2;
  for (let k = 0; k < full; k += 3, i += 6) {
    parts.push(`C${f(pts[i])},${f(pts[i + 1])} ${f(pts[i + 2])},${f(pts[i + 3])} ${f(pts[i + 4])},${f(pts[i + 5])}`);
  }
  for (; i + 1 < pts.length; i += 2) parts.push(`L${f(pts[i])},${f(pts[i + 1])}`);
  return parts.join(" ");
}

const TOKEN = /^[A-Za-z0-9_-]+$/;  // a class name built from data must be one plain token

// The <svg> of one drawing (see viz/canvas.py drawing()). Classes and data-* attributes are those of
// viz.to_svg, so CSS and tests address both alike. Several canvases share a page (and a hidden tab's
// SVG does not render its <defs>), so the arrow marker's id carries this canvas's suffix.
function buildSvg(d, roleCss, uid) {
  const w = d.w || 1, h = d.h || 1;
  const svg = svgEl("svg", { class: "ds-graph", width: f(w), height: f(h), viewBox: `0 0 ${f(w)} ${f(h)}` });
  svg.setAttribute("data-engine", d.engine || "");
  const style = document.createElementNS(SVG_NS, "style");
  style.textContent = roleCss;
  svg.appendChild(style);
  const arrow = `ds-arrow-${uid}`;
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: arrow, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7,
    markerHeight: 7, orient: "auto-start-reverse" });
  marker.appendChild(svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#94a3b8" }));
  defs.appendChild(marker);
  svg.appendChild(defs);
  const hi = new Set(d.hi || []);
  const edges = svgEl("g", { class: "edges" });
  for (const e of d.edges || []) {
    const g = svgEl("g", { class: hi.has(e.src) && hi.has(e.dst) ? "edge highlight" : "edge" });
    g.setAttribute("data-src", e.src);
    g.setAttribute("data-dst", e.dst);
    g.appendChild(svgEl("path", { d: pathD(e.pts || []), "marker-end": `url(#${arrow})` }));
    edges.appendChild(g);
  }
  svg.appendChild(edges);
  const boxes = svgEl("g", { class: "boxes" });
  for (const b of d.boxes || []) {
    const isGroup = typeof b.group === "string";
    const cls = [isGroup ? "group" : "node"];
    if (TOKEN.test(b.role)) cls.push(`role-${b.role}`);
    if (b.part && TOKEN.test(b.part)) cls.push(`partition-${b.part}`);
    if (hi.has(b.id)) cls.push("highlight");
    const g = svgEl("g", { class: cls.join(" ") });
    if (isGroup) { g.setAttribute("data-group", b.group); g.setAttribute("data-box", b.id); }
    else g.setAttribute("data-node", b.id);
    const title = document.createElementNS(SVG_NS, "title");
    title.textContent = isGroup ? `${b.group}\n${b.sub}\n(click to expand)` : (b.sub ? `${b.label}\n${b.sub}` : b.label);
    g.appendChild(title);
    g.appendChild(svgEl("rect", { x: f(b.x), y: f(b.y), width: f(b.w), height: f(b.h), rx: isGroup ? 8 : 4 }));
    const cx = b.x + b.w / 2, line1 = b.sub ? b.y + b.h / 2 - 3 : b.y + b.h / 2 + 4;
    const t1 = svgEl("text", { x: f(cx), y: f(line1), "text-anchor": "middle" });
    t1.textContent = b.label;
    g.appendChild(t1);
    if (b.sub) {
      const t2 = svgEl("text", { class: "sub", x: f(cx), y: f(line1 + 14), "text-anchor": "middle" });
      t2.textContent = b.sub;
      g.appendChild(t2);
    }
    boxes.appendChild(g);
  }
  svg.appendChild(boxes);
  return svg;
}

// A search box's needle against one drawn box: its name, its op/target line, its source line, and for
// a collapsed module box the names of the nodes folded inside it ("find" of the drawing).
function matches(b, needle, folded) {
  const hay = `${b.id}\n${b.label}\n${b.sub || ""}\n${b.src || ""}`.toLowerCase();
  if (hay.includes(needle)) return true;
  return (folded[b.id] || []).some((n) => n.toLowerCase().includes(needle));
}

// The interactive view of one drawing: toolbar (zoom, fit, search), a pannable and zoomable stage, a
// minimap on big graphs, and a bottom edge to drag for the height. Used by the widget (render) and by
// the static report (viz/report.js), so both behave alike. `opts`: { height, roleCss, uid,
// onNode(name), onGroup(path), extraButtons: [[label, title, fn]] }.
function dsView(el, opts) {
  el.classList.add("ds-canvas");
  const bar = document.createElement("div");
  bar.className = "ds-toolbar";
  const view = document.createElement("div");
  view.className = "ds-view";
  view.style.height = `${opts.height || 520}px`;
  const stage = document.createElement("div");
  stage.className = "ds-stage";
  view.appendChild(stage);
  const mini = document.createElement("div");
  mini.className = "ds-minimap";
  view.appendChild(mini);
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
  let d = {}, k = 1, tx = 0, ty = 0, miniView = null;
  const apply = () => {
    stage.style.transform = `translate(${tx}px, ${ty}px) scale(${k})`;
    if (miniView) {
      const s = miniView.s;
      miniView.rect.setAttribute("x", f(-tx / k * s)); miniView.rect.setAttribute("y", f(-ty / k * s));
      miniView.rect.setAttribute("width", f(view.clientWidth / k * s));
      miniView.rect.setAttribute("height", f(view.clientHeight / k * s));
    }
  };
  const zoomAt = (factor, cx, cy) => {
    const nk = Math.min(8, Math.max(0.02, k * factor));
    tx = cx - (cx - tx) * (nk / k);
    ty = cy - (cy - ty) * (nk / k);
    k = nk;
    apply();
  };
  // Note [Readable first view]: labels are FONT_PX (12 px) at scale 1; "fit" never goes below
  // READABLE (10 px labels). A graph too big for that starts at its top, centred or left-aligned,
  // and the minimap shows where the view is.
  const READABLE = 10 / 12;
  const fit = () => {
    const w = d.w || 1, h = d.h || 1;
    const vw = view.clientWidth || 600, vh = view.clientHeight || opts.height || 520;
    k = Math.min(1.5, (vw - 16) / w, (vh - 16) / h);
    if (!(k > 0)) k = 1;
    if (k < READABLE) {
      k = Math.max(READABLE, Math.min(1, (vw - 16) / w));
      tx = Math.max(8, (vw - w * k) / 2);
      if (w * k > vw) tx = 8;
      ty = 8;
    } else { tx = (vw - w * k) / 2; ty = (vh - h * k) / 2; }
    apply();
  };
  const centreOn = (b) => {
    k = Math.max(k, 1);
    tx = view.clientWidth / 2 - (b.x + b.w / 2) * k;
    ty = view.clientHeight / 2 - (b.y + b.h / 2) * k;
    apply();
  };
  button("+", "zoom in", () => zoomAt(1.25, view.clientWidth / 2, view.clientHeight / 2));
  button("\u2212", "zoom out", () => zoomAt(0.8, view.clientWidth / 2, view.clientHeight / 2));
  button("fit", "fit the graph in view (never below readable labels)", fit);
  for (const [label, title, fn] of opts.extraButtons || []) button(label, title, fn);
  const search = document.createElement("input");
  search.type = "search";
  search.className = "ds-search";
  search.placeholder = "find node: name, op, source line";
  bar.appendChild(search);
  const found = document.createElement("span");
  found.className = "ds-found";
  bar.appendChild(found);
  let hits = [], hitAt = -1;
  const find = (again) => {
    const needle = search.value.trim().toLowerCase();
    for (const e of stage.querySelectorAll(".ds-hit")) e.classList.remove("ds-hit");
    if (!needle) { hits = []; found.textContent = ""; return; }
    if (!again) {
      const folded = d.find || {};
      hits = (d.boxes || []).filter((b) => matches(b, needle, folded));
      hitAt = -1;
    }
    if (!hits.length) { found.textContent = "no match"; return; }
    hitAt = (hitAt + 1) % hits.length;
    const b = hits[hitAt];
    found.textContent = `${hitAt + 1} of ${hits.length}`;
    const attr = typeof b.group === "string" ? "data-group" : "data-node";
    const want = typeof b.group === "string" ? b.group : b.id;
    for (const e of stage.querySelectorAll(`[${attr}]`)) {
      if (e.getAttribute(attr) === want && (attr === "data-node" || e.getAttribute("data-box") === b.id)) e.classList.add("ds-hit");
    }
    centreOn(b);
  };
  search.addEventListener("keydown", (ev) => { if (ev.key === "Enter") find(search.dataset.last === search.value); search.dataset.last = search.value; });
  search.addEventListener("input", () => { search.dataset.last = ""; });
  const hint = document.createElement("span");
  hint.className = "ds-hint";
  hint.textContent = "drag to pan \u00b7 wheel to zoom \u00b7 click a node";
  bar.appendChild(hint);

  const minimap = () => {
    // Note [Minimap]: graphs of more than 300 boxes-or-nodes get a small overview in the corner; a
    // click on it centres the view there. It draws boxes as plain rects (no text).
    mini.replaceChildren();
    miniView = null;
    const n = d.nodes || (d.boxes || []).length;
    if (!d.boxes || n <= 300) { mini.style.display = "none"; return; }
    mini.style.display = "block";
    const W = 160, s = Math.min(W / (d.w || 1), 200 / (d.h || 1));
    const svg = svgEl("svg", { width: f((d.w || 1) * s), height: f((d.h || 1) * s) });
    for (const b of d.boxes) svg.appendChild(svgEl("rect", { x: f(b.x * s), y: f(b.y * s), width: f(Math.max(1, b.w * s)),
      height: f(Math.max(1, b.h * s)), class: typeof b.group === "string" ? "g" : "n" }));
    const rect = svgEl("rect", { class: "ds-mini-view" });
    svg.appendChild(rect);
    mini.appendChild(svg);
    miniView = { s, rect };
    mini.addEventListener("pointerdown", (ev) => ev.stopPropagation());
    mini.onclick = (ev) => {
      ev.stopPropagation();
      const r = svg.getBoundingClientRect();
      const x = (ev.clientX - r.left) / s, y = (ev.clientY - r.top) / s;
      tx = view.clientWidth / 2 - x * k; ty = view.clientHeight / 2 - y * k;
      apply();
    };
  };

  let selected = "";
  const mark = () => {
    for (const e of stage.querySelectorAll(".ds-selected")) e.classList.remove("ds-selected");
    if (!selected) return;
    for (const e of stage.querySelectorAll("[data-node]")) {
      if (e.getAttribute("data-node") === selected) e.classList.add("ds-selected");
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
      selected = node;
      mark();
      if (opts.onNode) opts.onNode(node);
    } else if (group !== null && opts.onGroup) opts.onGroup(group, hit.getAttribute("data-box"));
  });
  view.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = view.getBoundingClientRect();
    zoomAt(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
  }, { passive: false });
  // The view's height follows a drag of its bottom edge (CSS resize), and the minimap follows it.
  if (typeof ResizeObserver !== "undefined") new ResizeObserver(() => apply()).observe(view);

  return {
    view, stage, fit, find, search, bar,
    setHeight(px) { view.style.height = `${px}px`; },
    setSelected(name) { selected = name || ""; mark(); },
    // Draw `drawing`; `refit`: a new graph (fit it) rather than a redraw of the same one (keep the view).
    draw(drawing, refit) {
      d = drawing || {};
      stage.replaceChildren(...(d.boxes ? [buildSvg(d, opts.roleCss, opts.uid)] : []));
      mark();
      minimap();
      if (refit) requestAnimationFrame(fit); else apply();
    },
    destroy() {
      window.removeEventListener("pointermove", onMove);
      window.removeEventListener("pointerup", onUp);
    },
  };
}

function render({ model, el }) {
  // A page-wide counter: anywidget may evaluate this module once per widget model.
  globalThis.__dynascopeCanvases = (globalThis.__dynascopeCanvases || 0) + 1;
  const uid = `dsc${globalThis.__dynascopeCanvases}`;
  const v = dsView(el, {
    height: model.get("height"), roleCss: model.get("role_css"), uid,
    onNode(name) { model.set("selected", name); model.save_changes(); },
    onGroup(group) {
      const open = model.get("expanded");
      if (!open.includes(group)) { model.set("expanded", [...open, group]); model.save_changes(); }
    },
    extraButtons: [["collapse", "collapse every opened module box", () => { model.set("expanded", []); model.save_changes(); }]],
  });
  let drawn = null;  // the `graph` last fitted: a new graph is fitted, a redraw of the same one keeps the view
  const draw = () => {
    v.setHeight(model.get("height"));
    v.setSelected(model.get("selected"));
    const refit = drawn !== model.get("graph");
    drawn = model.get("graph");
    v.draw(model.get("drawing") || {}, refit);
  };
  const mark = () => v.setSelected(model.get("selected"));
  model.on("change:drawing", draw);
  model.on("change:selected", mark);
  model.on("change:height", draw);
  draw();
  return () => {
    model.off("change:drawing", draw);
    model.off("change:selected", mark);
    model.off("change:height", draw);
    v.destroy();
  };
}

export default { render };
