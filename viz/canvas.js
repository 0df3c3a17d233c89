// The graph canvas widget (viz/canvas.py): anywidget's render() around dsView (view.js). Python sends
// layout data (the synced `drawing`); clicks come back through the synced traits `selected` and
// `expanded`.
import { clickedCodeLine, dsView } from "./view.js";

// The drawing with what search finds of each folded node (Note [Search reaches folded nodes] in
// viz/drawing.py): the box's node names, looked up in the graph's search index (the `search` trait),
// become { id, sub, src, open: the module paths from the box's path down the node's chain }.
function withSearch(d, ix) {
  if (!d || !d.find || !ix || !ix.nodes) return d;
  const s = ix.strings, groupOf = {};
  for (const b of d.boxes || []) if (typeof b.group === "string") groupOf[b.id] = b.group;
  const find = {};
  for (const [box, names] of Object.entries(d.find)) {
    find[box] = names.map((id) => {
      const e = ix.nodes[id];
      if (!e) return { id, open: [groupOf[box]] };
      const paths = ix.chains[e[2]].map((i) => s[i]);
      const at = paths.indexOf(groupOf[box]);
      return { id, sub: s[e[0]], src: s[e[1]], open: at >= 0 ? paths.slice(at) : [groupOf[box]] };
    });
  }
  return { ...d, find };
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
    // Note [Search reaches folded nodes]: the graph's search index comes from Python when first asked for.
    beforeFind() {
      if (indexed()) return true;
      clearTimeout(asked);
      asked = setTimeout(() => { asked = null; v.find(false, true); }, 3000);  // no kernel answers: names only
      model.set("search_for", model.get("graph"));
      model.save_changes();
      return false;
    },
    onReveal(entry) {  // a search hit folded in module boxes: open them (Python redraws)
      const open = model.get("expanded");
      const add = (entry.open || []).filter((p) => !open.includes(p));
      if (add.length) { model.set("expanded", [...open, ...add]); model.save_changes(); }
    },
    extraButtons: [["collapse", "collapse every opened module box", () => { model.set("expanded", []); model.save_changes(); }]],
  });
  let asked = null;  // a search waiting for the index (its fallback timer)
  const indexed = () => (model.get("search") || {}).graph === model.get("graph");
  let drawn = null;  // the `graph` last fitted: a new graph is fitted, a redraw of the same one keeps the view
  const draw = () => {
    v.setHeight(model.get("height"));
    v.setSelected(model.get("selected"));
    const refit = drawn !== model.get("graph");
    drawn = model.get("graph");
    v.draw(withSearch(model.get("drawing") || {}, indexed() ? model.get("search") : null), refit);
  };
  const onIndex = () => {
    if (!indexed()) return;
    draw();
    if (asked !== null) { clearTimeout(asked); asked = null; v.find(false, true); }
  };
  // Note [Code lines link to nodes] (view.js): a line of the Code side tab of this canvas's explorer,
  // for the graph drawn here, selects its node; Python opens the boxes folding it (Explorer), the view
  // centres it once drawn.
  const onCode = (ev) => {
    const hit = clickedCodeLine(ev);
    const root = hit && hit.box.closest(".ds-explorer");
    if (!hit || hit.box.dataset.graph !== model.get("graph") || !root || !root.contains(el)) return;
    v.goTo(hit.name, false);
    model.set("selected", hit.name);
    model.save_changes();
  };
  document.addEventListener("click", onCode);
  const mark = () => v.setSelected(model.get("selected"));
  model.on("change:drawing", draw);
  model.on("change:selected", mark);
  model.on("change:height", draw);
  model.on("change:search", onIndex);
  draw();
  return () => {
    model.off("change:drawing", draw);
    model.off("change:selected", mark);
    model.off("change:height", draw);
    model.off("change:search", onIndex);
    clearTimeout(asked);
    document.removeEventListener("click", onCode);
    v.destroy();
  };
}

export default { render };
