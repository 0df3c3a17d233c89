// The Job view's grid (viz/job_view.py JobGrid): shows the job summary markup Python rendered with
// autoescaping templates, and reports clicks. A click on a grid cell or a rank link sets `picked`
// ({rank, frame, n}; frame "" when the rank has no such frame, n makes every click a change); a
// click on a finding's "side by side" link opens that finding's details in place. `current` marks
// the cell whose capture Python shows. A finding's view is sent only when it is opened (Note [A
// finding's view on demand] in viz/job_view.py): opening its details sets `want` ({side, n}), and
// Python answers in `sides` (index -> HTML). A view holds its diff and one folded line per rank's
// frame (Note [A rank's frame in a finding's view on demand]); opening a line (or a view whose lines
// open with it) sets `want` ({frames: [keys], n}) and Python answers in `frame` ({n, frames: key ->
// HTML}, the last answer only: kept here by key). Each frame is a report fragment (`.ds-report`: the
// frame's report, its drawings block and its nodes' facts); report.js's setUpReports draws its
// graphs and fills its guards views and inspector (only this widget's own element: markup placed in
// a widget runs no script of its own).
import { setUpReports } from "./report.js";

function render({ model, el }) {
  let clicks = Date.now();
  const got = new Map();  // frame key -> its HTML, as answered in `frame`
  let asking = null;  // frame keys to ask for together, sent at the end of this task
  const asked = new Set();  // keys asked for and not answered yet (a line may say it opened twice)
  const showFrame = (det) => {
    const html = got.get(det.dataset.payload);
    const body = det.querySelector(":scope > .ds-lazy-body");
    if (html === undefined || body === null || det.dataset.dsLoaded) return;
    body.innerHTML = html;
    setUpReports(body);
    det.dataset.dsLoaded = "1";
  };
  const openFrame = (det) => {
    const key = det.dataset.payload;
    if (got.has(key)) return showFrame(det);
    if (asked.has(key)) return;
    asked.add(key);
    if (asking === null) {
      asking = new Set();
      queueMicrotask(() => {
        model.set("want", { frames: [...asking], n: ++clicks });
        model.save_changes();
        asking = null;
      });
    }
    asking.add(key);
  };
  const frames = () => {
    const answer = model.get("frame") || {};
    for (const [key, html] of Object.entries(answer.frames || {})) {
      got.set(key, html);
      asked.delete(key);
    }
    if (answer.error) asked.clear();
    for (const det of el.querySelectorAll("details.ds-side-frame[data-payload][open]")) {
      if (got.has(det.dataset.payload)) showFrame(det);
      else if (answer.error) {
        det.querySelector(":scope > .ds-lazy-body").textContent = `this frame could not be shown: ${answer.error}`;
        det.dataset.dsLoaded = "error";
      }
    }
  };  const mark = () => {
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
      for (const line of body.querySelectorAll("details.ds-side-frame[data-payload][open]")) openFrame(line);
    }
  };
  const show = () => {
    el.innerHTML = model.get("html");
    setUpReports(el);
    fill();
    frames();
    mark();
  };
  // toggle does not bubble: listened to while it goes down to the details (capture)
  el.addEventListener("toggle", (ev) => {
    const det = ev.target;
    if (!(det instanceof HTMLDetailsElement) || !det.open) return;
    if (det.dataset.side === undefined) return det.matches("details.ds-side-frame[data-payload]") ? openFrame(det) : undefined;
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
  model.on("change:frame", frames);
  model.on("change:current", mark);
  show();
}

export default { render };
