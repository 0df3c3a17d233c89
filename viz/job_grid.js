// The Job view's grid (viz/job_view.py JobGrid): shows the job summary markup Python rendered with
// autoescaping templates, and reports clicks. A click on a grid cell or a rank link sets `picked`
// ({rank, frame, n}; frame "" when the rank has no such frame, n makes every click a change); a
// click on a finding's "side by side" link opens that finding's details in place. `current` marks
// the cell whose capture Python shows. A finding's view is sent only when it is opened (Note [A
// finding's view on demand] in viz/job_view.py): opening its details sets `want` ({side, n}), and
// Python answers in `sides` (index -> HTML). Each view is a report fragment (`.ds-report`: the
// frames' reports, their drawings block and their nodes' facts); report.js's setUpReports draws its
// graphs and fills its guards views and inspector (only this widget's own element: markup placed in
// a widget runs no script of its own).
import { setUpReports } from "./report.js";

function render({ model, el }) {
  let clicks = Date.now();
  const mark = () => {
    const cur = model.get("current") || {};
    for (const e of el.querySelectorAll(".ds-picked")) e.classList.remove("ds-picked");
    const rank = String(cur.rank ?? "");
    for (const e of el.querySelectorAll("td[data-rank][data-frame], a.ds-rank[data-rank]")) {
      const cell = e.tagName === "TD";
      if (e.dataset.rank === rank && (cell ? e.dataset.frame === cur.frame : !cur.frame)) e.classList.add("ds-picked");
    }
  };
  const fill = () => {
    const sides = model.get("sides") || {};
    for (const det of el.querySelectorAll("details.ds-sidebyside[data-side]")) {
      const html = sides[det.dataset.side];
      const body = det.querySelector(".ds-lazy-body");
      if (html === undefined || body === null || det.dataset.dsLoaded) continue;
      body.innerHTML = html;
      setUpReports(body);
      det.dataset.dsLoaded = "1";
    }
  };
  const show = () => {
    el.innerHTML = model.get("html");
    setUpReports(el);
    fill();
    mark();
  };
  // toggle does not bubble: listened to while it goes down to the details (capture)
  el.addEventListener("toggle", (ev) => {
    const det = ev.target;
    if (!(det instanceof HTMLDetailsElement) || !det.open || det.dataset.side === undefined) return;
    if (det.dataset.dsLoaded || (model.get("sides") || {})[det.dataset.side] !== undefined) return fill();
    model.set("want", { side: Number(det.dataset.side), n: ++clicks });
    model.save_changes();
  }, true);
  el.addEventListener("click", (ev) => {
    const t = ev.target instanceof Element ? ev.target : null;
    if (t === null) return;
    const side = t.closest('a[href^="#ds-side-"]');
    if (side !== null) {
      ev.preventDefault();
      const target = el.querySelector(`[id="${CSS.escape(side.getAttribute("href").slice(1))}"]`);
      if (target !== null) {
        target.open = true;
        target.scrollIntoView({ block: "nearest" });
      }
      return;
    }
    const hit = t.closest("td[data-rank][data-frame], a.ds-rank[data-rank]");
    if (hit === null || !el.contains(hit)) return;
    ev.preventDefault();
    const frame = hit.tagName === "TD" && hit.querySelector("a") !== null ? hit.dataset.frame : "";
    model.set("picked", { rank: Number(hit.dataset.rank), frame, n: ++clicks });
    model.save_changes();
  });
  model.on("change:html", show);
  model.on("change:sides", fill);
  model.on("change:current", mark);
  show();
}

export default { render };
