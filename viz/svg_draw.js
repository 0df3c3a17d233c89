// The browser's renderer of a drawing (viz/drawing.py): the <svg> of one laid-out graph, built with
// DOM calls. It draws what viz/svg.py's to_svg writes as text (same elements, classes, data-*
// attributes, numbers; the shapes' sizes come from constants.js, generated from viz/svg.py), so CSS
// and tests address both alike. Strings from user code only ever reach the page through textContent
// and setAttribute, never as markup, so a node named "<img onerror=...>" is text.
import { SVG } from "./constants.js";

const SVG_NS = "http://www.w3.org/2000/svg";

export function svgEl(tag, attrs) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

// Same numbers as viz/svg.py's _f: one decimal, no trailing ".0".
export const fmt = (v) => { const s = Number(v).toFixed(1); return s.endsWith(".0") ? s.slice(0, -2) : s; };

// Edge points [x0, y0, x1, y1, ...]: a start, then cubic bezier triples; a stray tail is drawn straight
// (as viz/svg.py's _path does).
function pathD(pts) {
  if (pts.length < 2) return "";
  const parts = [`M${fmt(pts[0])},${fmt(pts[1])}`];
  const n = (pts.length - 2) / 2, full = n - (n % 3);
  let i = 2;
  for (let k = 0; k < full; k += 3, i += 6) {
    parts.push(`C${fmt(pts[i])},${fmt(pts[i + 1])} ${fmt(pts[i + 2])},${fmt(pts[i + 3])} ${fmt(pts[i + 4])},${fmt(pts[i + 5])}`);
  }
  for (; i + 1 < pts.length; i += 2) parts.push(`L${fmt(pts[i])},${fmt(pts[i + 1])}`);
  return parts.join(" ");
}

const TOKEN = /^[A-Za-z0-9_-]+$/;  // a class name built from data must be one plain token

// The <svg> element with its role styles and the arrow marker. Several canvases share a page (and a
// hidden tab's SVG does not render its <defs>), so the marker's id carries this canvas's suffix.
function svgRoot(d, roleCss, arrow) {
  const w = d.w || 1, h = d.h || 1;
  const svg = svgEl("svg", { class: "ds-graph", width: fmt(w), height: fmt(h), viewBox: `0 0 ${fmt(w)} ${fmt(h)}` });
  svg.setAttribute("data-engine", d.engine || "");
  const style = document.createElementNS(SVG_NS, "style");
  style.textContent = roleCss;
  svg.appendChild(style);
  const defs = svgEl("defs");
  const marker = svgEl("marker", { id: arrow, ...SVG.marker });
  marker.appendChild(svgEl("path", { d: SVG.arrow_path, fill: SVG.arrow_fill }));
  defs.appendChild(marker);
  svg.appendChild(defs);
  return svg;
}

function edgeEl(e, hi, arrow) {
  const cls = hi.has(e.src) && hi.has(e.dst) ? "edge highlight" : "edge";
  const g = svgEl("g", { class: e.kind ? `${cls} ${e.kind}` : cls });
  g.setAttribute("data-src", e.src);
  g.setAttribute("data-dst", e.dst);
  g.appendChild(svgEl("path", { d: pathD(e.pts || []), "marker-end": `url(#${arrow})` }));
  return g;
}

// A profiled drawing's time (Note [Time on the drawing] in viz/report_graphs.py): [share 0..1, µs].
function heatOf(heat, id) {
  const h = heat && Object.prototype.hasOwnProperty.call(heat, id) ? heat[id] : null;
  return Array.isArray(h) && h.length === 2 ? h.map(Number) : null;
}

function boxEl(b, hi, heat) {
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
  const rect = svgEl("rect", { x: fmt(b.x), y: fmt(b.y), width: fmt(b.w), height: fmt(b.h),
    rx: isGroup ? SVG.group_rx : SVG.node_rx });
  const h = heatOf(heat, b.id);
  if (h) {
    g.setAttribute("data-time-us", String(h[1]));
    rect.style.fill = `hsl(8, 85%, ${Math.round(96 - 46 * Math.max(0, Math.min(1, h[0])))}%)`;
    title.textContent += `\n${(h[1] / 1000).toFixed(3)} ms (all profiled steps)`;
  }
  g.appendChild(rect);
  const cx = b.x + b.w / 2, line1 = b.y + b.h / 2 + (b.sub ? SVG.label_dy_two_lines : SVG.label_dy_one_line);
  const t1 = svgEl("text", { x: fmt(cx), y: fmt(line1), "text-anchor": "middle" });
  t1.textContent = b.label;
  g.appendChild(t1);
  if (b.sub) {
    const t2 = svgEl("text", { class: "sub", x: fmt(cx), y: fmt(line1 + SVG.sub_dy), "text-anchor": "middle" });
    t2.textContent = b.sub;
    g.appendChild(t2);
  }
  return g;
}

// The <svg> of one drawing (see viz/drawing.py drawing()): edges below boxes, as in to_svg.
export function buildSvg(d, roleCss, uid) {
  const arrow = `${SVG.arrow_id}-${uid}`;
  const svg = svgRoot(d, roleCss, arrow);
  const hi = new Set(d.hi || []);
  const edges = svgEl("g", { class: "edges" });
  for (const e of d.edges || []) edges.appendChild(edgeEl(e, hi, arrow));
  svg.appendChild(edges);
  const boxes = svgEl("g", { class: "boxes" });
  for (const b of d.boxes || []) boxes.appendChild(boxEl(b, hi, d.heat));
  svg.appendChild(boxes);
  return svg;
}
