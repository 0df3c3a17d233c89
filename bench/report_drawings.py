"""CPU of the report's drawings of a log (viz.report_graphs.graph_drawing of every graph of every frame,
no cache: the first view, every module box's opened drawings, packed), and a digest of what they hold.

Invariant: the graphs are parsed before the clock starts and the cyclic GC is off while it runs (as in
report_data, Note [No cyclic GC while a report renders]), so the figure is the drawings' alone; the
digest is of the packed drawings and the string table, so two trees giving the same digest draw the
same page. Run: ``python -m bench.report_drawings LOG [ROUNDS]``; one line per round, then the digest.
"""

from __future__ import annotations

import gc
import hashlib
import sys
import time

import msgspec

from tracer.trace_log import load_trace
from viz.report_graphs import frame_graphs, graph_drawing

__all__ = ["drawings_cpu"]


def drawings_cpu(path: str, rounds: int = 3) -> tuple[list[float], str]:
    """CPU seconds of each round of drawing every graph of the log at ``path``, and the drawings' digest."""
    cap = load_trace(path, read_only=True)
    work = [(g, hi) for f in cap.frames for _, _, g, hi in frame_graphs(f)]
    for g, _ in work:
        len(g.nodes)  # parsed now, not on the clock
    times, digest = [], ""
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        try:
            strings: dict[str, int] = {"": 0}
            t = time.process_time()
            out = [graph_drawing(g, hi, strings) for g, hi in work]
            times.append(time.process_time() - t)
        finally:
            gc.enable()
        digest = hashlib.sha256(msgspec.json.encode([out, list(strings)])).hexdigest()
    return times, digest


if __name__ == "__main__":
    secs, dig = drawings_cpu(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    for k, s in enumerate(secs):
        print(f"round {k}: {s:.3f} s CPU")
    print("digest", dig)
