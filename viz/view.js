// The interactive view of one drawing: toolbar (zoom, fit, search), a pannable and zoomable stage, a
// minimap on big graphs, and a bottom edge to drag for the height. Used by the widget (canvas.js) and
// by the static report (report.js), so both behave alike. dsView puts together the steps below, each
// owning one part of the view; they share one state object `st` (drawing, scale, translation).
import { FONT_PX, READABLE_PX } from "./constants.js";
import { buildSvg, fmt, svgEl } from "./svg_draw.js";

const MINIMAP_FROM = 300;  // Note [Minimap]: boxes-or-nodes above which a graph gets an overview

// Note [Search reaches folded nodes] (viz/drawing.py): the search box matches a node by its name, its
// op/target line and its source line, drawn or folded in a collapsed module box (the drawing's "find":
// box id -> what each folded node's own box would show, and in the report the module boxes folded
// there). It counts nodes; a module box is a hit only when no node matches (a search for a module path).
const said = (e) => `${e.id}\n${e.label || ""}\n${e.sub || ""}\n${e.src || ""}`.toLowerCase();

const entry = (e) => (typeof e === "string" ? { id: e } : e);  // a drawing without an index names nodes only

function searchHits(d, needle) {
  const nodes = [], groups = [];
  const folded = d.find || {};
  for (const b of d.boxes || []) {
    if (typeof b.group !== "string") { if (said(b).includes(needle)) nodes.push(b.id); continue; }
    for (const e of (folded[b.id] || []).map(entry)) if (said(e).includes(needle)) (e.group ? groups : nodes).push(e.id);
    if (said(b).includes(needle)) groups.push(b.id);
  }
  return nodes.length ? nodes : groups;
}

// The folded entry of node `id` in drawing `d` and the box folding it, or null.
function foldedIn(d, id) {
  for (const [box, list] of Object.entries(d.find || {})) {
    const e = (list || []).map(entry).find((x) => x.id === id);
    if (e) return { e, box };
  }
  return null;
}

// Note [Code lines link to nodes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A graph's code (`.ds-graph-code`, its `data-graph` naming the drawing: the widget's Code side tab,
// the report's "Code of" blocks) is fx's Python for it, one line per node: `add = torch.add(x, y)` or
// `add: "f32[3]" = ...` (the lines viz/panels.py code_html marks for the selected node). A click on
// such a line shows that node in its graph: the module boxes folding it opened, the node selected and
// centred. The line is found from the click point in the text (no markup per line, so the report's
// bytes do not grow); a line that defines no node of the graph does nothing.
const DEFINES = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::|=(?!=))/;

function caretAt(x, y) {
  if (document.caretPositionFromPoint) {
    const p = document.caretPositionFromPoint(x, y);
    return p ? [p.offsetNode, p.offset] : null;
  }
  const r = document.caretRangeFromPoint ? document.caretRangeFromPoint(x, y) : null;
  return r ? [r.startContainer, r.startOffset] : null;
}

// The code block and the node name defined by the line clicked in `ev`, or null.
export function clickedCodeLine(ev) {
  const box = ev.target && ev.target.closest ? ev.target.closest(".ds-graph-code") : null;
  const pre = box && ev.target.closest("pre");
  const at = pre && box.contains(pre) ? caretAt(ev.clientX, ev.clientY) : null;
  if (!at || !pre.contains(at[0])) return null;
  const before = document.createRange();
  before.setStart(pre, 0);
  before.setEnd(at[0], at[1]);
  const line = pre.textContent.split("\n")[before.toString().split("\n").length - 1] || "";
  const m = DEFINES.exec(line);
  return m ? { box, name: m[1] } : null;
}

// The elements of a view: toolbar, the clipped view, the transformed stage in it, the minimap corner.
function frame(el, height) {
  el.classList.add("ds-canvas");
  const bar = document.createElement("div");
  bar.className = "ds-toolbar";
  const view = document.createElement("div");
  view.className = "ds-view";
  view.style.height = `${height || 520}px`;
  const stage = document.createElement("div");
  stage.className = "ds-stage";
  view.appendChild(stage);
  const mini = document.createElement("div");
  mini.className = "ds-minimap";
  view.appendChild(mini);
  el.appendChild(bar);
  el.appendChild(view);
  return { bar, view, stage, mini };
}

function addButton(bar, label, title, onclick) {
  const b = document.createElement("button");
  b.textContent = label;
  b.title = title;
  b.addEventListener("click", onclick);
  bar.appendChild(b);
  return b;
}

// Scale and translation of the stage: apply them, zoom at a point, fit, centre on a box.
function viewport(parts, st, height) {
  const { view, stage } = parts;
  const apply = () => {
    stage.style.transform = `translate(${st.tx}px, ${st.ty}px) scale(${st.k})`;
    const m = st.miniView;
    if (m) {
      m.rect.setAttribute("x", fmt(-st.tx / st.k * m.s)); m.rect.setAttribute("y", fmt(-st.ty / st.k * m.s));
      m.rect.setAttribute("width", fmt(view.clientWidth / st.k * m.s));
      m.rect.setAttribute("height", fmt(view.clientHeight / st.k * m.s));
    }
  };
  const zoomAt = (factor, cx, cy) => {
    const nk = Math.min(8, Math.max(0.02, st.k * factor));
    st.tx = cx - (cx - st.tx) * (nk / st.k);
    st.ty = cy - (cy - st.ty) * (nk / st.k);
    st.k = nk;
    apply();
  };
  // See Note [Readable first view] in viz/style.py: never below READABLE_PX labels.
  const readable = READABLE_PX / FONT_PX;
  const fit = () => {
    const w = st.d.w || 1, h = st.d.h || 1;
    const vw = view.clientWidth || 600, vh = view.clientHeight || height || 520;
    st.k = Math.min(1.5, (vw - 16) / w, (vh - 16) / h);
    if (!(st.k > 0)) st.k = 1;
    if (st.k < readable) {
      st.k = Math.max(readable, Math.min(1, (vw - 16) / w));
      st.tx = Math.max(8, (vw - w * st.k) / 2);
      if (w * st.k > vw) st.tx = 8;
      st.ty = 8;
    } else { st.tx = (vw - w * st.k) / 2; st.ty = (vh - h * st.k) / 2; }
    apply();
  };
  const centreOn = (b) => {
    st.k = Math.max(st.k, 1);
    st.tx = view.clientWidth / 2 - (b.x + b.w / 2) * st.k;
    st.ty = view.clientHeight / 2 - (b.y + b.h / 2) * st.k;
    apply();
  };
  return { apply, zoomAt, fit, centreOn };
}

// The search box: Enter finds the first match, Enter again the next; the match is marked and centred.
// A node folded in a module box: `reveal(entry, drawing)` asks for its groups to open (widget: the
// `expanded` trait; report: the box's own drawing) and the view centres the node when it is drawn
// (`st.pending`); with no `reveal` the box folding it is marked and centred. `searchIn()`: the drawing
// to search when it is not the one shown (the report's first view, whatever level is shown).
// `beforeFind()`: false when the search must wait (the widget asks Python for the graph's index and
// calls find(false, true) when it comes).
function searchBox(parts, st, centreOn, reveal, searchIn, beforeFind) {
  const { bar, stage } = parts;
  const search = document.createElement("input");
  search.type = "search";
  search.className = "ds-search";
  search.placeholder = "find node: name, op, source line";
  bar.appendChild(search);
  const found = document.createElement("span");
  found.className = "ds-found";
  bar.appendChild(found);
  let hits = [], hitAt = -1, base = null;  // hit ids, and the drawing they were found in
  const mark = (b) => {
    const attr = typeof b.group === "string" ? "data-group" : "data-node";
    const want = typeof b.group === "string" ? b.group : b.id;
    for (const e of stage.querySelectorAll(`[${attr}]`)) {
      if (e.getAttribute(attr) === want && (attr === "data-node" || e.getAttribute("data-box") === b.id)) e.classList.add("ds-hit");
    }
    centreOn(b);
  };
  const find = (again, now) => {
    const needle = search.value.trim().toLowerCase();
    for (const e of stage.querySelectorAll(".ds-hit")) e.classList.remove("ds-hit");
    st.pending = "";
    if (!needle) { hits = []; found.textContent = ""; return; }
    if (!now && beforeFind && !beforeFind()) { found.textContent = "searching\u2026"; return; }
    if (!again) { base = (searchIn && searchIn()) || st.d; hits = searchHits(base, needle); hitAt = -1; }
    if (!hits.length) { found.textContent = "no match"; return; }
    hitAt = (hitAt + 1) % hits.length;
    const id = hits[hitAt];
    found.textContent = `${hitAt + 1} of ${hits.length}`;
    const b = (st.d.boxes || []).find((x) => x.id === id);
    if (b) { mark(b); return; }
    // base: the drawing searched (the report shows one level at a time, and may show another now)
    const at = foldedIn(st.d, id) || foldedIn(base, id) || { e: { id, via: [], open: [] }, box: "" };
    if (reveal && (at.e.open || at.e.via)) { st.pending = id; reveal(at.e, foldedIn(st.d, id) ? st.d : base); return; }
    const box = (st.d.boxes || []).find((x) => x.id === at.box);
    if (box) mark(box);
  };
  // Node `id` (Note [Code lines link to nodes]) marked and centred; one folded in a module box is opened
  // first, by `reveal` or, with `reveal` false, by whoever redraws (the widget's Python); false when
  // no drawing names it.
  const goTo = (id, useReveal = true) => {
    for (const e of stage.querySelectorAll(".ds-hit")) e.classList.remove("ds-hit");
    st.pending = "";
    const b = (st.d.boxes || []).find((x) => x.id === id && typeof x.group !== "string");
    if (b) { mark(b); return true; }
    if (!useReveal) { st.pending = id; return true; }
    const top = (searchIn && searchIn()) || st.d;
    const at = foldedIn(st.d, id) || foldedIn(top, id);
    if (!at || at.e.group) return false;
    if (reveal && (at.e.open || at.e.via)) { st.pending = id; reveal(at.e, foldedIn(st.d, id) ? st.d : top); return true; }
    const box = (st.d.boxes || []).find((x) => x.id === at.box);
    if (box) mark(box);
    return true;
  };
  // After a new drawing: the node a search asked to open, marked and centred.
  const onDrawn = () => {
    const b = st.pending && (st.d.boxes || []).find((x) => x.id === st.pending);
    st.pending = "";
    if (b) mark(b);
  };
  search.addEventListener("keydown", (ev) => { if (ev.key === "Enter") find(search.dataset.last === search.value); search.dataset.last = search.value; });
  search.addEventListener("input", () => { search.dataset.last = ""; });
  return { search, find, goTo, onDrawn };
}

// Note [Minimap]: graphs of more than MINIMAP_FROM boxes-or-nodes get a small overview in the corner;
// a click on it centres the view there. It draws boxes as plain rects (no text). It takes at most
// MINIMAP_SHARE of the view's width and height (160 x 200 px at most), so in a narrow canvas (the
// Partition tab's two side by side) it covers at most a fifth of the width and a quarter of the
// height; it is drawn again when the view's size changes.
const MINIMAP_SHARE = [0.2, 0.25];
function drawMinimap(parts, st, apply) {
  const { view, mini } = parts;
  mini.replaceChildren();
  st.miniView = null;
  const d = st.d;
  const n = d.nodes || (d.boxes || []).length;
  st.miniFor = [view.clientWidth, view.clientHeight];
  if (!d.boxes || n <= MINIMAP_FROM || !view.clientWidth) { mini.style.display = "none"; return; }
  mini.style.display = "block";
  const W = Math.min(160, MINIMAP_SHARE[0] * view.clientWidth), H = Math.min(200, MINIMAP_SHARE[1] * view.clientHeight);
  const s = Math.min(W / (d.w || 1), H / (d.h || 1));
  const svg = svgEl("svg", { width: fmt((d.w || 1) * s), height: fmt((d.h || 1) * s) });
  for (const b of d.boxes) svg.appendChild(svgEl("rect", { x: fmt(b.x * s), y: fmt(b.y * s), width: fmt(Math.max(1, b.w * s)),
    height: fmt(Math.max(1, b.h * s)), class: typeof b.group === "string" ? "g" : "n" }));
  const rect = svgEl("rect", { class: "ds-mini-view" });
  svg.appendChild(rect);
  mini.appendChild(svg);
  st.miniView = { s, rect };
  mini.onpointerdown = (ev) => ev.stopPropagation();
  mini.onclick = (ev) => {
    ev.stopPropagation();
    const r = svg.getBoundingClientRect();
    const x = (ev.clientX - r.left) / s, y = (ev.clientY - r.top) / s;
    st.tx = view.clientWidth / 2 - x * st.k; st.ty = view.clientHeight / 2 - y * st.k;
    apply();
  };
}

function markSelected(stage, selected) {
  for (const e of stage.querySelectorAll(".ds-selected")) e.classList.remove("ds-selected");
  if (!selected) return;
  for (const e of stage.querySelectorAll("[data-node]")) {
    if (e.getAttribute("data-node") === selected) e.classList.add("ds-selected");
  }
}

// Pan with the mouse, zoom with the wheel; a press that did not move is a click on what is under it
// (`onClick(element)`). Returns the function that removes the window listeners.
function pointer(parts, st, vp, onClick) {
  const { view, stage } = parts;
  let drag = null;
  const onMove = (ev) => {
    if (!drag) return;
    const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (drag.moved) { st.tx = drag.tx + dx; st.ty = drag.ty + dy; vp.apply(); }
  };
  const onUp = () => {
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
    view.classList.remove("ds-dragging");
    setTimeout(() => { drag = null; }, 0);
  };
  view.addEventListener("pointerdown", (ev) => {
    if (ev.button !== 0) return;
    drag = { x: ev.clientX, y: ev.clientY, tx: st.tx, ty: st.ty, moved: false };
    view.classList.add("ds-dragging");
    window.addEventListener("pointermove", onMove);
    window.addEventListener("pointerup", onUp);
  });
  view.addEventListener("click", (ev) => {
    if (drag && drag.moved) return;
    const hit = ev.target.closest("[data-node], [data-group]");
    if (hit && stage.contains(hit)) onClick(hit);
  });
  view.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = view.getBoundingClientRect();
    vp.zoomAt(ev.deltaY < 0 ? 1.15 : 1 / 1.15, ev.clientX - r.left, ev.clientY - r.top);
  }, { passive: false });
  // The view's height follows a drag of its bottom edge (CSS resize), and the minimap follows it.
  if (typeof ResizeObserver !== "undefined") {
    new ResizeObserver(() => {
      const [w, h] = st.miniFor || [];
      if (w !== view.clientWidth || h !== view.clientHeight) drawMinimap(parts, st, vp.apply);  // Note [Minimap]
      vp.apply();
    }).observe(view);
  }
  return () => {
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", onUp);
  };
}

// `opts`: { height, roleCss, uid, onNode(name), onGroup(path, boxId), onReveal(foldedEntry, drawing),
// searchIn(), beforeFind(), extraButtons: [[label, title, fn]] } (the last three: see searchBox).
export function dsView(el, opts) {
  const parts = frame(el, opts.height);
  const st = { d: {}, k: 1, tx: 0, ty: 0, miniView: null, selected: "", pending: "" };
  const vp = viewport(parts, st, opts.height);
  const { view, stage, bar } = parts;
  addButton(bar, "+", "zoom in", () => vp.zoomAt(1.25, view.clientWidth / 2, view.clientHeight / 2));
  addButton(bar, "\u2212", "zoom out", () => vp.zoomAt(0.8, view.clientWidth / 2, view.clientHeight / 2));
  addButton(bar, "fit", "fit the graph in view (never below readable labels)", vp.fit);
  for (const [label, title, fn] of opts.extraButtons || []) addButton(bar, label, title, fn);
  const { search, find, goTo, onDrawn } = searchBox(parts, st, vp.centreOn, opts.onReveal, opts.searchIn, opts.beforeFind);
  const hint = document.createElement("span");
  hint.className = "ds-hint";
  hint.textContent = "drag to pan \u00b7 wheel to zoom \u00b7 click a node";
  bar.appendChild(hint);
  const destroy = pointer(parts, st, vp, (hit) => {
    const group = hit.getAttribute("data-group");
    const node = hit.getAttribute("data-node");
    if (node !== null) {
      st.selected = node;
      markSelected(stage, st.selected);
      if (opts.onNode) opts.onNode(node);
    } else if (group !== null && opts.onGroup) opts.onGroup(group, hit.getAttribute("data-box"));
  });
  return {
    view, stage, fit: vp.fit, find, goTo, search, bar, destroy,
    setHeight(px) { view.style.height = `${px}px`; },
    setSelected(name) { st.selected = name || ""; markSelected(stage, st.selected); },
    // Draw `drawing`; `refit`: a new graph (fit it) rather than a redraw of the same one (keep the view).
    draw(drawing, refit) {
      st.d = drawing || {};
      stage.replaceChildren(...(st.d.boxes ? [buildSvg(st.d, opts.roleCss, opts.uid)] : []));
      markSelected(stage, st.selected);
      drawMinimap(parts, st, vp.apply);
      if (refit) requestAnimationFrame(() => { vp.fit(); onDrawn(); }); else { vp.apply(); onDrawn(); }
    },
  };
}
