"""The static report of a real training capture: its size, write time and first paint, beside tlparse.

Invariant: every number comes from a real run: ``tracer.capture`` of bench.models' transformer12
(training: AOT joint / forward / backward), ``viz.export_html`` timed best of ``repeat``; the same
model's TORCH_TRACE log (bench.report_vs_tlparse.training_log) through ``dynascope report`` and
``tlparse``, whole processes; first paints measured in headless Chromium at 1,440 x 900 with the
page's own ``performance.now()``: the report's first drawn graph, and the explorer's first view
(``viz.Explorer`` built in Python, then its canvas drawing drawn by the canvas's dsView, viz/view.js).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

__all__ = ["run"]

CHROMIUM = os.environ.get("DYNASCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

_REPORT_PAINT = """async () => {
  const t0 = performance.timeOrigin;
  for (let i = 0; i < 600; i++) {
    if (document.querySelector('.ds-graphbox svg .boxes')) return performance.now();
    await new Promise((r) => setTimeout(r, 5));
  }
  return null;
}"""

_CANVAS_PAINT = """async ([src, d]) => {
  const { dsView } = await import(URL.createObjectURL(new Blob([src], {type: "text/javascript"})));
  const el = document.createElement('div');
  document.body.appendChild(el);
  const t0 = performance.now();
  const v = dsView(el, {height: 520, roleCss: '', uid: 'bench'});
  v.draw(d, false);
  v.fit();
  el.querySelector('svg').getBoundingClientRect();  // force layout
  return performance.now() - t0;
}"""


def _dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _paints(report: str, drawing: dict[str, Any], script: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], timeout=60_000)
        try:
            page = b.new_page(viewport={"width": 1440, "height": 900})
            page.goto("file://" + report)
            report_ms = page.evaluate(_REPORT_PAINT)
            blank = b.new_page(viewport={"width": 1440, "height": 900})
            blank.set_content("<html><body></body></html>")
            canvas_ms = blank.evaluate(_CANVAS_PAINT, [script, drawing])
        finally:
            b.close()
    return {"report_first_graph_ms": round(report_ms, 1) if report_ms is not None else None,
            "explorer_canvas_draw_ms": round(canvas_ms, 1)}


def run(repeat: int = 3, size: str = "full", browser: bool = True, tlparse: bool = True) -> dict[str, Any]:
    """Keys: report_bytes (target <= 1,000,000), report_write_seconds, explorer_first_paint_seconds
    (Python build + canvas draw; target <= 0.5), and the log-report / tlparse comparison."""
    import tracer
    import viz
    from bench import models, report_vs_tlparse
    from bench.timing import fresh
    from viz.browser_code import Bundle, join
    from viz.canvas import drawing

    model, args = models.make("transformer12", size)
    fresh()
    cap = tracer.capture(model, *args)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="dynascope-report-") as tmp:
        path = os.path.join(tmp, "report.html")
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            viz.export_html(cap, path)
            best = min(best, time.perf_counter() - t0)
        out["report_bytes"] = os.path.getsize(path)
        out["report_write_seconds"] = round(best, 3)
        build = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            ex = viz.Explorer(cap)
            build = min(build, time.perf_counter() - t0)
        out["explorer_build_seconds"] = round(build, 3)
        if browser:
            paints = _paints(path, drawing(ex._layouts.get(ex.graph, ex.expanded)), join(Bundle(("svg_draw.js", "view.js"), "module")))
            out.update(paints)
            out["explorer_first_paint_seconds"] = round(build + paints["explorer_canvas_draw_ms"] / 1000, 3)
        if tlparse:
            env = dict(os.environ, PYTHONPATH=report_vs_tlparse.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
            log = report_vs_tlparse.training_log(tmp, size)
            ours = os.path.join(tmp, "from_log.html")
            theirs = os.path.join(tmp, "tl_out")
            out["log_report_seconds"] = round(report_vs_tlparse._best_wall(
                [sys.executable, "-m", "viz.cli", "report", log, "-o", ours], repeat, env), 3)
            out["tlparse_seconds"] = round(report_vs_tlparse._best_wall(
                [report_vs_tlparse._tlparse(), log, "-o", theirs, "--overwrite", "--no-browser"], repeat, env), 3)
            out["log_report_bytes"] = os.path.getsize(ours)
            out["tlparse_bytes"] = _dir_bytes(theirs)
            out["log_bytes"] = os.path.getsize(log)
    return out


if __name__ == "__main__":
    print(json.dumps(run(repeat=int(sys.argv[1]) if len(sys.argv) > 1 else 3), indent=1))
