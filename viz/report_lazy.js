// The one-file report's frames (viz/report_file.py, Note [One file, frames on demand]): each frame's
// section is a payload (UTF-8 HTML, zlib, base64) in an inert script element of type
// "application/octet-stream". Opening the frame's <details> (a click, the page's #ds-frame-<key> address, or every frame at
// load in a small report) decodes it with DecompressionStream, puts the HTML (rendered and escaped by
// viz's templates) in the frame's body and sets it up as any report (report.js setUpReports), once.
// A decoded payload may hold such frames of its own (a job finding's view: viz/job_view.py Note [A
// rank's frame in a finding's view on demand]): they are set up the same way, and decoded when opened.
// A payload may name parts (data-parts="N M": blocks of class ds-part, each written once however many
// frames share it, Note [Equal parts of payloads stored once]); its HTML is its own text, then theirs.
import { setUpReports } from "./report.js";

async function inflate(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Response(stream).text();
}

// The script comes before the payloads (viz/report_file.py), so the overview is usable while the
// browser still reads them; a payload is read once the whole document is (a block being parsed may
// hold part of its text only).
const parsed = () => (document.readyState === "loading"
  ? new Promise((done) => document.addEventListener("DOMContentLoaded", done, { once: true }))
  : Promise.resolve());

export function setUpLazyFrames(root) {
  const load = (det) => {
    if (det.dsLoading) return det.dsLoading;
    const body = det.querySelector(".ds-lazy-body");
    const t0 = performance.now();
    det.dsLoading = parsed()
      .then(() => {
        const block = root.querySelector(`script.ds-payload[data-frame="${det.dataset.payload}"]`);
        if (!block) throw new Error("its payload is missing");
        const parts = (block.dataset.parts || "").split(" ").filter((n) => n !== "").map((n) => {
          const part = root.querySelector(`script.ds-part[data-part="${n}"]`);
          if (!part) throw new Error(`its part ${n} is missing`);
          return part;
        });
        return Promise.all([block, ...parts].map((b) => inflate(b.textContent)));
      })
      .then((texts) => {
        const html = texts.join("");
        body.innerHTML = html;
        setUpReports(body);
        watch(body);  // the folded frames a decoded payload holds (a job finding's view names its ranks' frames)
        det.dataset.dsLoaded = "1";
        det.dataset.dsMs = String(Math.round(performance.now() - t0));
      })
      .catch((e) => {
        body.textContent = `this frame could not be shown: ${e && e.message ? e.message : e}`;
        det.dataset.dsLoaded = "error";
      });
    return det.dsLoading;
  };
  const watch = (scope) => {
    for (const det of scope.querySelectorAll("details.ds-lazy-frame")) {
      if (det.dsWatched) continue;
      det.dsWatched = true;
      det.addEventListener("toggle", () => { if (det.open) load(det); });
      if (det.open) load(det);
    }
  };
  watch(root);
  const fromAddress = () => {
    const id = decodeURIComponent(location.hash.slice(1));
    const det = id ? document.getElementById(id) : null;
    if (!det || !det.classList.contains("ds-lazy-frame")) return;
    det.open = true;
    load(det).then(() => det.scrollIntoView());
  };
  addEventListener("hashchange", fromAddress);
  fromAddress();
  // A small report opens every frame at load; data-ds-frames-loaded then says all are shown.
  for (const rep of root.querySelectorAll(".ds-lazy[data-open-all]")) {
    const all = [...rep.querySelectorAll("details.ds-lazy-frame")].map((det) => { det.open = true; return load(det); });
    Promise.all(all).then(() => { rep.dataset.dsFramesLoaded = "1"; });
  }
}
