// The inspector: one node's facts (viz.node_info's dict) as a two-column table, built with DOM calls
// (every value set as text, never as markup). The explorer's inspector widget (inspector_widget.js)
// and the static report (report.js) both draw it with drawInspector, so a node clicked in either
// shows the same rows in the same order (Note [One inspector] in viz/inspector.py).

// Keys shown first, in this order; any other key follows in the dict's own order ("meta" last).
const FIRST = ["name", "graph", "op", "role", "target", "value", "args", "kwargs", "inputs", "users", "calls",
  "source", "code_line", "nn_module", "nn_module_type", "nn_module_stack", "input_kind", "supplied", "derived_from",
  "lifted_from", "lifted_chain", "saved_for_backward", "kernels", "symbols", "partition", "from"];

const where = (g, n) => `${n || "?"} in ${g || "root"}`;
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

// JSON with sorted keys, one space of indent: what a nested value shows as.
function sortedJson(v) {
  const sort = (x) => (Array.isArray(x) ? x.map(sort)
    : isObject(x) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, sort(x[k])])) : x);
  return JSON.stringify(sort(v), null, 1);
}

// One row's [kind, value]: "text", "pre" (kept as written, wrapped), "chain" (steps) or "none".
function cell(key, value) {
  if (key === "graph" && value === "") return ["text", "root"];
  // Note [Lifted chain] (viz/info.py): read as "this placeholder <- its feeder in the parent <- ...".
  if ((key === "lifted_from" || key === "derived_from") && isObject(value)) return ["text", where(value.graph, value.node)];
  if (key === "lifted_chain" && Array.isArray(value) && value.every(isObject)) {
    return ["chain", value.map((v) => `${where(v.graph, v.node)} (${v.kind || "?"})`)];
  }
  if (typeof value === "string") return [value.includes("\n") ? "pre" : "text", value];
  if (typeof value === "number" || typeof value === "boolean") return ["text", String(value)];
  if (Array.isArray(value) && value.every((v) => typeof v === "string" || typeof v === "number")) {
    return value.length ? ["text", value.join(", ")] : ["none", ""];
  }
  if (isObject(value) && !Object.keys(value).length) return ["none", ""];
  return ["pre", sortedJson(value)];
}

// [key, kind, value] of every row of `info`, in the order shown. The node's recorded user stack
// (meta.stack_trace) is a row of its own, its lines as written; "meta" shows the rest of the meta.
export function inspectorRows(info) {
  const keys = [...FIRST.filter((k) => k in info), ...Object.keys(info).filter((k) => !FIRST.includes(k) && k !== "meta")];
  const rows = keys.map((k) => [k, ...cell(k, info[k])]);
  const meta = isObject(info.meta) ? { ...info.meta } : null;
  if (meta && typeof meta.stack_trace === "string") {
    rows.push(["stack", "pre", meta.stack_trace.replace(/\s+$/, "")]);
    delete meta.stack_trace;
  }
  if (meta) rows.push(["meta", ...cell("meta", meta)]);
  return rows;
}

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

// Draw the inspector of `info` (a node_info dict; empty: the hint) in `host`, with `note` under the name.
export function drawInspector(host, info, note) {
  const panel = el("div", "ds-panel ds-inspect");
  if (!info || !Object.keys(info).length) {
    panel.appendChild(el("div", "ds-muted", "Click a node to inspect it. Click a HOP call to open its body."));
    host.replaceChildren(panel);
    return;
  }
  panel.appendChild(el("h4", "", String(info.name ?? "?")));
  if (note) panel.appendChild(el("div", "ds-muted", note));
  const table = el("table", "ds-inspector");
  for (const [key, kind, value] of inspectorRows(info)) {
    const tr = el("tr");
    tr.dataset.key = key;
    tr.appendChild(el("th", "", key));
    const td = el("td");
    if (kind === "chain") value.forEach((step, i) => { if (i) { td.appendChild(el("br")); td.append("\u2190 "); } td.append(step); });
    else if (kind === "pre") td.appendChild(el("pre", "", value));
    else if (kind === "none") td.appendChild(el("span", "ds-muted", "(none)"));
    else td.textContent = value;
    tr.appendChild(td);
    table.appendChild(tr);
  }
  panel.appendChild(table);
  host.replaceChildren(panel);
}
