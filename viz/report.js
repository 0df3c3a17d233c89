// The static report's graphs (viz/report_graphs.py): draws every `.ds-graphbox` of a `.ds-report`
// from the report's JSON block with the same view as the explorer's canvas (dsView: pan, zoom, fit,
// search, minimap). A click on a module box opens the layout of what it holds, one level down (Note
// [Folding in the report]); a click on a node shows its facts in the inspector the widget draws too
// (inspector.js, Note [One inspector] in viz/inspector.py). No kernel, no network. Also the report's
// guards view and module links. setUpReports() is what a page (report_page.js) or the job widget
// (job_grid.js) calls on an element holding reports.
import { BOX_KEYS, INTERNED_KEYS } from "./constants.js";
import { clickedCodeLine, dsView } from "./view.js";
import { drawInspector } from "./inspector.js";
import { kernelMates, markCode, packedBox } from "./report_kernels.js";

const INTERNED = new Set(INTERNED_KEYS);

// A packed drawing (viz/report_graphs.py pack, Note [Compact drawings]) back to the drawing dsView draws.
function unpack(p, strings) {
  const boxes = p.b.map((row) => {
    const b = {};
    BOX_KEYS.forEach((k, i) => { if (i < row.length && row[i] !== 0) b[k] = INTERNED.has(i) ? strings[row[i]] : row[i]; });
    if (b.label === undefined) b.label = b.id;
    if (b.sub === undefined) b.sub = "";
    return b;
  });
  const edges = p.e.map(([si, di, pts, kind]) => {
    const s = boxes[si], t = boxes[di];
    if (!pts) {
      const x0 = s.x + s.w / 2, y0 = s.y + s.h, x1 = t.x + t.w / 2, y1 = t.y, mid = (y0 + y1) / 2;
      pts = [x0, y0, x0, mid, x1, mid, x1, y1];
    }
    return kind ? { src: s.id, dst: t.id, pts, kind } : { src: s.id, dst: t.id, pts };
  });
  const find = { ...(p.find || {}) };  // a module box's nodes: those of its own drawing, at any depth
  for (const [id, sub] of Object.entries(p.open || {})) find[id] = folded(sub, strings, [id]);
  return { ...p, boxes, edges, find, opened: {} };
}

// What search finds of the nodes in packed drawing `p` and in the drawings of its module boxes (Note
// [Search reaches folded nodes] in viz/drawing.py); `via`: the module boxes to open, in turn, from
// the drawing that folds them.
const [SUB, SRC, GROUP] = ["sub", "src", "group"].map((k) => BOX_KEYS.indexOf(k));
function folded(p, strings, via) {
  const out = [];
  for (const row of p.b) {
    const inner = p.open && p.open[row[0]];
    if (inner) {  // a module box: found by its path (a module link) when no node matches
      out.push({ id: row[0], sub: strings[row[SUB] || 0], group: strings[row[GROUP]], via });
      out.push(...folded(inner, strings, [...via, row[0]]));
    }
    else if (!row[GROUP]) out.push({ id: row[0], sub: strings[row[SUB] || 0], src: strings[row[SRC] || 0], via });
  }
  return out;
}

// The drawing of module box `boxId` of unpacked drawing `d` (Note [Folding in the report]), unpacked once.
function openIn(d, boxId, strings) {
  const p = d.open && d.open[boxId];
  if (!p) return null;
  if (!d.opened[boxId]) d.opened[boxId] = unpack(p, strings);
  return d.opened[boxId];
}

// Note [One kernel chooser]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The report offers the widget's kernel chooser (viz/code_view.py CodeTab): above a frame's root graph
// a list of its Inductor kernels, each once, labelled and in the order of `kernel_choices` (the widget's
// own list, Note [Kernel identity]), each option carrying the Dynamo nodes it computes
// (`kernel_nodes`, the `dynamo_nodes` the widget highlights). Choosing one draws and highlights every
// one of those nodes as the widget does (the drawing's `hi`, drawn by svg_draw.js for both) and selects
// and inspects the first. The report has one precomputed drawing per module box (Note [Folding in the
// report]); the rule: a kernel whose nodes are all drawn by the drawing that opens, from the top, the
// boxes folding its first node (its search's way, view.js) is shown there; any other kernel (most fused
// kernels of a model span two blocks) gets a drawing of its own, the widget's: the first view with
// every module box folding one of its nodes opened (viz/graph_layout.py `opening`), made by
// viz/report_kernels.py, stored under the root drawing's `kd` (`k`: option value -> index), only for
// such kernels and once per set of opened boxes. A module box of that drawing opens the first view's
// drawing of the same box; "back" returns to the first view. The highlight (module boxes folding a
// node too, as for saved values) stays at every level shown until another kernel, or none, is chosen.
// A click on a node highlights its kernel-mates instead, every node of the kernels computing it (the
// widget's CodeTab.on_node), from the same option lists; the inspector lists its kernels
// (viz/info.py, both). Where the report has the frame's code tab, the chosen kernel's lines of output
// code are marked, the lines the widget's code tab marks (viz/code_view.py kernel_lines; the root
// drawing's `kl`; report_kernels.js markCode).
const idOf = (e) => (typeof e === "string" ? e : e.id);

// True when drawing `d` draws node `name` as a box of its own.
const drawnIn = (d, name) => (d.boxes || []).some((b) => b.id === name && typeof b.group !== "string");

// True when module box `boxId` of unpacked drawing `d` folds one of `names`.
function folds(d, boxId, names) {
  return ((d.find || {})[boxId] || []).some((e) => names.has(idOf(e)));
}

// Drawing `d` with `names` (a Set, or null for none chosen) as its highlighted nodes and module boxes,
// its own highlights kept aside and put back when no kernel is chosen; the same object, changed.
function withMarks(d, names) {
  if (!Object.prototype.hasOwnProperty.call(d, "hi0")) d.hi0 = d.hi;
  if (!names) { d.hi = d.hi0; return d; }
  d.hi = (d.boxes || []).filter((b) => (typeof b.group === "string" ? folds(d, b.id, names) : names.has(b.id))).map((b) => b.id);
  return d;
}

// The facts of node `name` of graph `index` from the report's node-info block (viz/report_info.py),
// its stored-once values restored (Note [Interned node facts]); null when the block has none.
function nodeFacts(facts, index, name) {
  const g = facts && facts.graphs[index];
  if (!g || !Object.prototype.hasOwnProperty.call(g, name)) return null;
  const stored = (x) => (typeof x === "string" ? x : back(x));  // a stored string is as written
  const back = (v) => (typeof v === "string" ? (v.startsWith("\u0001") ? stored(facts.values[Number(v.slice(1))]) : v)
    : Array.isArray(v) ? v.map(back)
      : v && typeof v === "object" ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, back(x)])) : v);
  return back(g[name]);
}

function dsReport(root) {
  const block = root.querySelector("script.ds-drawings");
  if (!block) return;
  const data = JSON.parse(block.textContent);
  const factsBlock = root.querySelector("script.ds-node-info");
  let facts;  // parsed when a node is first clicked
  const factsOf = (index, name) => {
    if (facts === undefined) facts = factsBlock ? JSON.parse(factsBlock.textContent) : null;
    return nodeFacts(facts, index, name);
  };
  // Note [Drawing on sight]: a graph is drawn when it comes near the window (IntersectionObserver), so
  // a report with eight big graphs paints its first one without waiting for the others.
  const near = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver((seen) => {
    for (const e of seen) if (e.isIntersecting) { near.unobserve(e.target); e.target.dsInit(); }
  }, { rootMargin: "400px" });
  for (const host of root.querySelectorAll(".ds-graphbox")) {
    let ready = false;
    host.dsFind = () => {};
    host.dsInit = () => { if (!ready) { ready = true; setup(host); } };
    host.dsShow = (needle) => { host.dsInit(); host.dsFind(needle); };
    // after the first drawing's fit (the next animation frame), so the fit does not undo the centring
    host.dsGoTo = (name) => { host.dsInit(); requestAnimationFrame(() => { if (host.dsNode) host.dsNode(name); }); };
    host.dsKernelShow = (names, which) => { host.dsInit(); if (host.dsKernel) host.dsKernel(names, which); };
    if (near) near.observe(host); else host.dsInit();
  }

  function setup(host) {
    const packed = data.graphs[Number(host.dataset.graph)];
    if (!packed) return;
    const entry = unpack(packed, data.strings);
    globalThis.__dynascopeCanvases = (globalThis.__dynascopeCanvases || 0) + 1;
    const crumbs = document.createElement("div");
    crumbs.className = "ds-crumbs";
    const canvasEl = document.createElement("div");
    const info = document.createElement("div");
    info.className = "ds-nodeinfo";
    host.replaceChildren(crumbs, canvasEl, info);
    let current = entry;
    let trail = [];  // the drawings above the one shown, with their titles: "back" returns one level
    const FIRST = "module boxes: click one to open it, \u201cback\u201d to return";
    let v = null;
    let marked = null;  // the chosen kernel's nodes (Note [One kernel chooser]), marked in every drawing shown
    const kernelDrawings = {};  // index into packed.kd -> its drawing, unpacked once
    const mates = kernelMates(root, host.dataset.graph);  // node -> the nodes of the kernels computing it
    const show = (d, title) => { current = d; crumbs.textContent = title; v.draw(withMarks(d, marked), true); };
    // One level down from `current` into its module box `boxId`, not drawn yet; false if it has none.
    const down = (boxId) => {
      let sub = openIn(current, boxId, data.strings);
      if (!sub && current.kernel) {  // a kernel's drawing: the first view's drawing of the same box
        const p = packedBox(packed, boxId);
        if (p) sub = unpack(p, data.strings);
      }
      if (!sub) return false;
      const b = (current.boxes || []).find((x) => x.id === boxId);
      trail.push([current, crumbs.textContent]);
      current = sub;
      crumbs.textContent = `opened ${(b && b.group) || boxId}: ${sub.boxes.length} boxes`;
      return true;
    };
    const inspect = (name) => {
      const got = factsOf(Number(host.dataset.graph), name);
      if (got) { drawInspector(info, got, ""); return; }
      const b = (current.boxes || []).find((x) => x.id === name);  // a report without the facts block
      info.textContent = b ? [b.label, b.sub, b.src].filter(Boolean).join("\n") : name;
    };
    v = dsView(canvasEl, {
      height: Number(host.dataset.height) || 520, roleCss: data.css, uid: `dsr${globalThis.__dynascopeCanvases}`,
      onNode(name) {  // the node's kernel-mates highlighted (Note [One kernel chooser]), as the widget does
        if (mates) { marked = mates[name] ? new Set(mates[name]) : null; v.draw(withMarks(current, marked), false); }
        inspect(name);
      },
      onGroup(path, boxId) { if (down(boxId)) show(current, crumbs.textContent); },
      searchIn: () => entry,  // the whole graph, whatever level is shown
      onReveal(hit, d) {  // a search hit folded in module boxes of drawing `d` (shown, or above it): open them
        if (d !== current) {
          const i = trail.findIndex(([t]) => t === d);
          if (i < 0 && d !== entry) return;
          crumbs.textContent = i < 0 ? FIRST : trail[i][1];
          trail = i < 0 ? [] : trail.slice(0, i);
          current = d;
        }
        for (const boxId of hit.via || []) if (!down(boxId)) break;
        show(current, crumbs.textContent);  // the view centres the hit once drawn
      },
      extraButtons: [["back", "show the drawing one level up", () => {
        const up = trail.pop();
        if (up) show(up[0], up[1]); else show(entry, FIRST);
      }]],
    });
    crumbs.textContent = Object.keys(packed.open || {}).length ? FIRST : "every node";
    host.dsFind = (needle) => {  // the module view's links: back to the first view, then find the module
      trail = [];
      show(entry, FIRST);
      v.search.value = needle;
      requestAnimationFrame(() => v.find(false));
    };
    host.dsKernel = (names, which) => {  // Note [One kernel chooser]
      marked = names.length ? new Set(names) : null;
      trail = [];
      current = entry;
      crumbs.textContent = Object.keys(packed.open || {}).length ? FIRST : "every node";
      markCode(host, packed.kl && names.length ? packed.kl[which] : null);
      const own = names.length && packed.k ? packed.k[which] : undefined;
      if (own !== undefined) {  // a drawing of its own: every node drawn
        if (!kernelDrawings[own]) kernelDrawings[own] = { ...unpack(packed.kd[own], data.strings), kernel: true };
        current = kernelDrawings[own];
        crumbs.textContent = `kernel: its ${names.length} nodes drawn, the module boxes folding them opened`;
      }
      const first = new Set(names.slice(0, 1));
      while (names.length && !drawnIn(current, names[0])) {  // down to the first node, the one selected
        const holder = current.boxes.find((b) => typeof b.group === "string" && folds(current, b.id, first));
        if (!holder || !down(holder.id)) break;
      }
      const here = names.filter((n) => drawnIn(current, n)).length;
      show(current, crumbs.textContent + (here < names.length ? ` \u00b7 kernel: ${here} of its ${names.length} nodes`
        + " drawn here; \u201cback\u201d shows the module boxes holding the others, highlighted" : ""));
      // after the new drawing's fit (the next animation frame), so the fit does not undo the centring
      if (here && drawnIn(current, names[0])) requestAnimationFrame(() => { v.goTo(names[0]); v.setSelected(names[0]); inspect(names[0]); });
    };
    host.dsNode = (name) => {  // Note [Code lines link to nodes] (view.js): opened, selected, centred, inspected
      if (!v.goTo(name)) return false;
      v.setSelected(name);
      inspect(name);
      return true;
    };
    v.draw(entry, true);
    const details = host.closest("details");
    if (details) details.addEventListener("toggle", () => { if (details.open) v.fit(); });
  }
}

// The guards view of the report (viz/panels.py guards_html(report=True)): rows come from the panel's
// JSON block and become table rows (text only) when a group opens; the filter box matches kind, source,
// code and user stack, shows only the groups with a match and opens them.
function dsGuards(root) {
  for (const panel of root.querySelectorAll(".ds-guards")) {
    const block = panel.querySelector("script.ds-guard-data");
    const box = panel.querySelector("input.ds-guard-filter");
    if (!block || !box) continue;
    const data = JSON.parse(block.textContent);
    const count = panel.querySelector(".ds-guard-count");
    const total = count.textContent;
    const cell = (tr, text) => { const td = document.createElement("td"); td.textContent = text; tr.appendChild(td); return td; };
    // Note [Packed guard rows] (viz/panels.py): restore the exact source and code of every row once.
    data.groups.forEach((rows, gi) => {
      const title = panel.querySelectorAll("details.ds-guard-group")[gi].dataset.title;
      for (const r of rows) {
        if (r[0].startsWith("\u0002")) r[0] = title + r[0].slice(1);
        r[2] = r[2].map((c) => c.split("\u0001").join(r[0]));
      }
    });
    const rowText = (r) => `${r[0]}\n${r[1]}\n${r[2].join("\n")}\n${data.stacks[r[3]]}`.toLowerCase();
    const fill = (group, needle) => {
      const rows = data.groups[Number(group.dataset.group)] || [];
      const body = group.querySelector("tbody");
      const title = group.dataset.title;
      const out = [];
      for (const r of rows) {
        if (needle && !rowText(r).includes(needle)) continue;
        const tr = document.createElement("tr");
        const src = cell(tr, r[0] || "(no source)");
        if (r[4]) { const i = document.createElement("i"); i.className = "ds-muted"; i.textContent = ` mentions ${title}`; src.appendChild(i); }
        cell(tr, r[1]);
        const code = cell(tr, "");
        code.style.whiteSpace = "pre-wrap";
        code.textContent = r[2].join("\n");
        const stack = data.stacks[r[3]];
        const td = cell(tr, "");
        if (stack) {
          const lines = stack.split("\n");
          const det = document.createElement("details");
          const sum = document.createElement("summary");
          sum.textContent = lines[lines.length - 1];
          const pre = document.createElement("pre");
          pre.textContent = stack;
          det.append(sum, pre);
          td.appendChild(det);
        }
        out.push(tr);
      }
      body.replaceChildren(...out);
      group.dataset.filled = needle || "*";
      return out.length;
    };
    for (const group of panel.querySelectorAll("details.ds-guard-group")) {
      group.addEventListener("toggle", () => { if (group.open && !group.dataset.filled) fill(group, ""); });
    }
    box.addEventListener("input", () => {
      const needle = box.value.trim().toLowerCase();
      let shown = 0;
      for (const group of panel.querySelectorAll("details.ds-guard-group")) {
        const n = fill(group, needle);
        group.style.display = n ? "" : "none";
        group.open = Boolean(needle) && n > 0;
        shown += n;
      }
      count.textContent = needle ? `${shown} row(s) match \u201c${box.value.trim()}\u201d (of ${total})` : total;
    });
  }
}

// The module view's paths: a click shows that module in the frame's root graph (search centres on it).
function dsModuleLinks(root) {
  for (const a of root.querySelectorAll("a.ds-module-link")) {
    a.addEventListener("click", (ev) => {
      ev.preventDefault();
      const host = root.querySelector(`.ds-graphbox[data-graph="${Number(a.dataset.graph)}"]`);
      if (!host || !host.dsShow) return;
      const details = host.closest("details");
      if (details) details.open = true;
      host.scrollIntoView({ block: "center" });
      host.dsShow(a.dataset.module);
    });
  }
}

// A graph's code (Note [Code lines link to nodes] in view.js): a click on a line defining a node shows
// that node in the graph drawn from it (`data-graph`: its index in the report's drawings).
function dsCodeLinks(root) {
  root.addEventListener("click", (ev) => {
    const hit = clickedCodeLine(ev);
    if (!hit || hit.box.dataset.graph === undefined || hit.box.closest(".ds-report") !== root) return;
    const host = root.querySelector(`.ds-graphbox[data-graph="${Number(hit.box.dataset.graph)}"]`);
    if (!host || !host.dsGoTo) return;
    const details = host.closest("details");
    if (details) details.open = true;
    host.scrollIntoView({ block: "center" });
    host.dsGoTo(hit.name);
  });
}

// The kernel chooser of a frame's root graph (Note [One kernel chooser]): the chosen kernel's nodes
// highlighted in the graph of `data-graph`.
function dsKernels(root) {
  for (const sel of root.querySelectorAll("select.ds-kernel-choice")) {
    if (sel.closest(".ds-report") !== root) continue;
    sel.addEventListener("change", () => {
      const host = root.querySelector(`.ds-graphbox[data-graph="${Number(sel.dataset.graph)}"]`);
      if (!host || !host.dsKernelShow) return;
      const opt = sel.options[sel.selectedIndex];
      const details = host.closest("details");
      if (details) details.open = true;
      host.dsKernelShow(((opt && opt.dataset.nodes) || "").split(" ").filter(Boolean), opt ? opt.value : "");
    });
  }
}

// Every report inside `root` not set up yet (a page may hold several: the CLI's, one per rank), set
// up once.
export function setUpReports(root) {
  for (const r of root.querySelectorAll(".ds-report")) {
    if (r.dataset.dsReady) continue;
    r.dataset.dsReady = "1";
    dsReport(r);
    dsGuards(r);
    dsModuleLinks(r);
    dsCodeLinks(r);
    dsKernels(r);
  }
}
