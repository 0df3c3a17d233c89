// The static report's kernel helpers (Note [One kernel chooser] in report.js): where a module box's
// stored drawing is, a node's kernel-mates from the chooser's options, and the chosen kernel's lines
// marked in the frame's code tab. Plain DOM, no network; strings set as text only.

// The packed drawing of module box `boxId` anywhere below packed drawing `p`, null when none.
export function packedBox(p, boxId) {
  const open = p.open || {};
  if (open[boxId]) return open[boxId];
  for (const sub of Object.values(open)) {
    const got = packedBox(sub, boxId);
    if (got) return got;
  }
  return null;
}

// The chosen kernel's lines in the output code of its frame's code tab (viz/code_view.py, part "inductor"):
// `where` = [index of its Inductor graph, line numbers from 1] (viz/report_kernels.py kernel_code_lines,
// the lines the widget's code tab marks), or null to clear. Each line gets a band behind its text.
export function markCode(host, where) {
  const section = host.closest(".ds-frame");
  const codes = section ? section.querySelectorAll(".ds-code-tab .ds-output-code") : [];
  for (const c of codes) for (const m of c.querySelectorAll(".ds-kernel-line")) m.remove();
  const tab = section && section.querySelector(".ds-code-tab");
  if (tab && !tab.dsMarks) tab.addEventListener("toggle", () => { if (tab.open) markCode(host, tab.dsMarks[0]); });
  if (tab) tab.dsMarks = [where];  // marked again when the tab opens: a closed tab has no line positions
  const box = where && codes[where[0]];
  const pre = box && box.querySelector("pre");
  if (!pre || !pre.getClientRects().length) return;
  const texts = [];  // the line starts, found by a Range on the text (highlighting splits it into spans)
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) texts.push(t);
  const starts = [0];
  let offset = 0;
  for (const t of texts) {
    for (let i = t.data.indexOf("\n"); i >= 0; i = t.data.indexOf("\n", i + 1)) starts.push(offset + i + 1);
    offset += t.data.length;
  }
  const origin = box.getBoundingClientRect().top - box.scrollTop;
  let k = 0, before = 0;  // the text node holding a line's start, and the characters before it
  for (const line of where[1]) {
    const at = starts[line - 1];
    if (at === undefined || at >= offset) continue;
    while (at >= before + texts[k].data.length) { before += texts[k].data.length; k += 1; }
    const r = document.createRange();
    r.setStart(texts[k], at - before);
    r.setEnd(texts[k], Math.min(at - before + 1, texts[k].data.length));
    const rect = r.getBoundingClientRect();
    const m = document.createElement("div");
    m.className = "ds-kernel-line";
    m.dataset.line = String(line);
    m.style.cssText = `position:absolute;left:0;right:0;height:${rect.height}px;top:${rect.top - origin}px;`
      + "background:rgba(255,200,0,0.35);pointer-events:none";
    box.appendChild(m);
  }
}

// Node -> every node of the kernels computing it, from the kernel chooser of graph `index` of report
// `root` (the options' `data-nodes`, Note [One kernel chooser]); null when that graph has none.
export function kernelMates(root, index) {
  const sel = [...root.querySelectorAll("select.ds-kernel-choice")]
    .find((s) => s.closest(".ds-report") === root && s.dataset.graph === index);
  if (!sel) return null;
  const out = {};
  for (const opt of sel.options) {
    const names = (opt.dataset.nodes || "").split(" ").filter(Boolean);
    for (const n of names) out[n] = [...new Set([...(out[n] || []), ...names])];
  }
  return out;
}
