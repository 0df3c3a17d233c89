// The graph canvas (viz/canvas.py). Python sends layout data (boxes, edges, labels); this file draws
// it as SVG elements, pans, zooms and reports clicks through the synced traits `selected` (a node) and
// `expanded` (a module box). Strings from user code only ever reach the page through textContent and
// setAttribute, never as markup, so a node named "<script>" is text.

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
    if (isGroup) g.setAttribute("data-group", b.group);
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
    // "ds-selected" follows the `selected` trait (a click, or Python) without a redraw.
    for (const e of stage.querySelectorAll(".ds-selected")) e.classList.remove("ds-selected");
    const name = model.get("selected");
    if (!name) return;
    for (const e of stage.querySelectorAll("[data-node]")) {
      if (e.getAttribute("data-node") === name) e.classList.add("ds-selected");
    }
  };
  let drawn = null;  // the `graph` last fitted: a new graph is fitted, a redraw of the same one keeps the view
  const draw = () => {
    view.style.height = `${model.get("height")}px`;
    const d = model.get("drawing") || {};
    stage.replaceChildren(...(d.boxes ? [buildSvg(d, model.get("role_css"), uid)] : []));
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

  model.on("change:drawing", draw);
  model.on("change:selected", mark);
  model.on("change:height", draw);
  draw();
  return () => {
    model.off("change:drawing", draw);
    model.off("change:selected", mark);
    model.off("change:height", draw);
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
  };
}

export default { render };
