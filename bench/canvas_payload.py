"""What the graph canvas sends to the browser and how fast Chromium draws, pans and zooms it.

Owns the before/after measurement of issue "#14 item 2": the canvas used to receive the server-rendered
SVG string (``viz.to_svg``); it now receives layout data (``viz.canvas.drawing``) and ``canvas.js``
builds the SVG. Invariant: both variants are measured on the same Layout of the same graph, in the same
headless Chromium, through the real widget modules (today's ``GraphCanvas._esm``, the old ``canvas.js``
from git when git has it), driven
by a stand-in for anywidget's model (``get``/``set``/``on``/``off``/``save_changes``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from statistics import median
from typing import Any, Optional

from tracer.model import Capture, Graph
from viz.canvas import GraphCanvas
from viz.graph_layout import layout
from viz.svg import to_svg

__all__ = ["OLD_CANVAS_REV", "browser_steps", "load_seconds", "payloads", "run"]

REPO = Path(__file__).resolve().parent.parent
OLD_CANVAS_REV = "84056a0"  # the last commit whose canvas.js took an `svg` trait
UNGROUPED = 10**9  # a grouping threshold no graph reaches: every node is its own box
CHROMIUM = os.environ.get("DYNASCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

_PAGE = """<!doctype html><html><head><style>{css}</style></head>
<body style="margin:0"><div id="host" style="width:900px"></div></body></html>"""

# Runs in the page: render one canvas with a stand-in model, then time draw, zoom steps and pan steps.
# Each step is timed from the event to the end of the next frame (two requestAnimationFrame turns).
_DRIVER = """async ([src, state, steps]) => {
  const mod = await import(URL.createObjectURL(new Blob([src], {type: "text/javascript"})));
  const handlers = {};
  const model = {
    get: (k) => state[k], set: (k, v) => { state[k] = v; }, save_changes: () => {},
    on: (ev, cb) => { (handlers[ev] = handlers[ev] || []).push(cb); }, off: () => {},
  };
  const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const el = document.getElementById("host");
  el.replaceChildren();
  let t0 = performance.now();
  mod.default.render({ model, el });
  await frame();
  const draw = performance.now() - t0;
  const view = el.querySelector(".ds-view");
  const r = view.getBoundingClientRect();
  const zoom = [], pan = [];
  for (let i = 0; i < steps; i++) {
    t0 = performance.now();
    view.dispatchEvent(new WheelEvent("wheel", { deltaY: i % 2 ? 100 : -100, clientX: r.left + 300,
                                                 clientY: r.top + 200, bubbles: true, cancelable: true }));
    await frame();
    zoom.push(performance.now() - t0);
  }
  for (let i = 0; i < steps; i++) {
    t0 = performance.now();
    const x = r.left + 300, y = r.top + 200, d = i % 2 ? -40 : 40;
    view.dispatchEvent(new PointerEvent("pointerdown", { button: 0, clientX: x, clientY: y, bubbles: true }));
    window.dispatchEvent(new PointerEvent("pointermove", { clientX: x + d, clientY: y + d, bubbles: true }));
    window.dispatchEvent(new PointerEvent("pointerup", { clientX: x + d, clientY: y + d, bubbles: true }));
    await frame();
    pan.push(performance.now() - t0);
  }
  const med = (a) => a.slice().sort((p, q) => p - q)[a.length >> 1];
  return { draw_ms: draw, zoom_ms: med(zoom), pan_ms: med(pan),
           elements: el.querySelectorAll("*").length, nodes: el.querySelectorAll("[data-node]").length };
}"""


def payloads(graph: Graph, *, threshold: Optional[int] = None) -> dict[str, int]:
    """Bytes of the canvas state for ``graph``'s first view: the SVG string before, the layout JSON now."""
    lay = layout(graph) if threshold is None else layout(graph, threshold=threshold)
    canvas = GraphCanvas()
    canvas.draw(lay)
    return {"boxes": len(lay.boxes), "svg_bytes": len(to_svg(lay).encode()),
            "drawing_bytes": len(json.dumps(canvas.get_state()["drawing"], separators=(",", ":")).encode()),
            "drawing_bytes_as_sent": len(json.dumps(canvas.get_state()["drawing"]).encode())}


def load_seconds(cap: Capture, repeat: int = 5) -> dict[str, Any]:
    """Median seconds of ``Capture.from_json`` on ``cap``'s JSON (msgspec typed decoding)."""
    text = cap.to_json()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        Capture.from_json(text)
        times.append(time.perf_counter() - t0)
    return {"json_bytes": len(text.encode()), "load_seconds": round(median(times), 4)}


def _old_canvas_js() -> Optional[str]:
    try:
        return subprocess.run(["git", "show", f"{OLD_CANVAS_REV}:viz/canvas.js"], cwd=REPO, capture_output=True,
                              text=True, check=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None  # not a git checkout: only the current canvas is measured


def browser_steps(graph: Graph, *, threshold: Optional[int] = None, steps: int = 30) -> dict[str, Any]:
    """Draw, zoom-step and pan-step times (ms, medians) of the old (SVG) and new (layout data) canvas."""
    from playwright.sync_api import sync_playwright

    lay = layout(graph) if threshold is None else layout(graph, threshold=threshold)
    canvas = GraphCanvas(graph="g")
    canvas.draw(lay)
    state = {k: v for k, v in canvas.get_state().items() if k in ("drawing", "graph", "selected", "expanded",
                                                                     "height", "role_css")}
    variants = {"new": (GraphCanvas._esm, state)}
    old = _old_canvas_js()
    if old is not None:
        variants["old"] = (old, {**{k: state[k] for k in ("graph", "selected", "expanded", "height")},
                                 "svg": to_svg(lay)})
    out: dict[str, Any] = {}
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = b.new_page(viewport={"width": 1000, "height": 700})
            page.set_content(_PAGE.format(css=(REPO / "viz" / "canvas.css").read_text()))
            for name, (src, st) in variants.items():
                page.evaluate(_DRIVER, [src, st, steps])  # warm-up: JIT, fonts
                res = [page.evaluate(_DRIVER, [src, st, steps]) for _ in range(3)]
                out[name] = {k: round(median(r[k] for r in res), 2) for k in res[0]}
        finally:
            b.close()
    return out


def run(cap: Capture, *, browser: bool = True) -> dict[str, Any]:
    """Every canvas measurement on the (first) joint graph of ``cap`` (the 12-layer transformer in bench)."""
    out: dict[str, Any] = {"canvas_load": load_seconds(cap)}
    joint = next((f.aot.joint for f in cap.frames if f.aot is not None and f.aot.joint), None)
    if joint is None:
        return out
    out["canvas_joint_nodes"] = len(joint.nodes)
    out["canvas_payload_first_view"] = payloads(joint)
    out["canvas_payload_ungrouped"] = payloads(joint, threshold=UNGROUPED)
    if browser:  # asked for and absent is an error naming the fix, never a silently shorter result
        if not Path(CHROMIUM).exists():
            raise RuntimeError(f"Chromium not found at {CHROMIUM} (run `make chromium`, or set DYNASCOPE_CHROMIUM)")
        out["canvas_browser_first_view"] = browser_steps(joint)
        out["canvas_browser_ungrouped"] = browser_steps(joint, threshold=UNGROUPED)
    return out


if __name__ == "__main__":
    import tracer
    from bench import models
    from bench.timing import fresh

    m, a = models.make("transformer12", "full")
    fresh()
    print(json.dumps(run(tracer.capture(m, *a)), indent=1))
