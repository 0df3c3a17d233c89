"""Where the bytes of a one-file report (viz/report_file.py) go: the bytes on disk of each kind of
content, so a report over the 1 MB target (bench/report_bytes.py) says what to cut.

Invariant: the figures add up to the file's size. A frame payload is its head (the frame's section)
and two parts stored once per distinct text (Note [Equal parts of payloads stored once]): the
drawings (the layout) and the nodes' facts for the inspector; those are counted as written. A head
is one zlib stream, so its pieces (guards, the Code tab's code, the guard function, Inductor's output
code, the graphs' code, the tables) are each compressed alone at the report's level and the head's
written bytes shared out in proportion: an estimate of each piece's share, not of a file without it.
"""

from __future__ import annotations

import base64
import re
import sys
import zlib
from typing import Any

from viz.report_file import decode_payload

__all__ = ["PIECES", "breakdown", "table"]

_BLOCK = re.compile(r'<script type="application/octet-stream" class="ds-payload" data-frame="[0-9a-z-]+" '
                    r'data-encoding="deflate"(?: data-parts="([0-9 ]*)")?>([A-Za-z0-9+/=]*)</script>')
_PART = re.compile(r'<script type="application/octet-stream" class="ds-part" data-part="([0-9]+)" '
                   r'data-encoding="deflate">([A-Za-z0-9+/=]*)</script>')
# (piece, its HTML in a frame's head), taken out in this order (the guard function and Inductor's
# code sit inside the Code tab); what is left of a head is "frame tables"
PIECES = [
    ("guard function", re.compile(r"<h4>Guard function</h4><pre[^>]*>.*?</pre>", re.S)),
    ("inductor code", re.compile(r"<h4>Inductor [^<]*</h4>.*?</table>", re.S)),
    ("code tab", re.compile(r'<details class="ds-code-tab">.*?(?=</section>)', re.S)),
    ("graph code", re.compile(r"<details><summary>Code of the .*?</details>", re.S)),
    ("guards", re.compile(r'<h3>Guards \(.*?(?=<h3>|<details>|<details class="ds-code-tab">|</section>)', re.S)),
]


def _written(text: str) -> int:
    return len(base64.b64encode(zlib.compress(text.encode("utf-8"), 5)))


def breakdown(page: str) -> dict[str, int]:
    """Bytes of ``page`` (a written report's text) by kind: "layout" and "node facts" (the parts, as
    written), the head pieces of :data:`PIECES` and "frame tables" (estimated shares of the heads'
    written bytes), "recompile diffs" (their payloads) and "page" (the overview, styles and script:
    everything outside the payloads). Sums to the page's UTF-8 bytes."""
    out = {k: 0 for k in ("layout", "node facts", *(p for p, _ in PIECES), "frame tables", "recompile diffs", "page")}
    kind: dict[str, str] = {}
    for m in _BLOCK.finditer(page):
        named = (m.group(1) or "").split()
        if not named:
            out["recompile diffs"] += len(m.group(0))
            continue
        kind.setdefault(named[0], "layout")
        kind.setdefault(named[1], "node facts")
        head = decode_payload(m.group(2))
        alone: dict[str, int] = {}
        for piece, rx in PIECES:
            alone[piece] = sum(_written(x) for x in rx.findall(head))
            head = rx.sub("", head)
        alone["frame tables"] = _written(head)
        total = sum(alone.values()) or 1
        for piece, n in alone.items():
            out[piece] += round(len(m.group(0)) * n / total)
    for m in _PART.finditer(page):
        out[kind.get(m.group(1), "page")] += len(m.group(0))
    out["page"] += len(page.encode("utf-8")) - sum(out.values())
    return out


def table(sizes: dict[str, dict[str, int]]) -> str:
    """A markdown table: one row per report, one column per kind, in kB (1,000 bytes)."""
    kinds = [k for k in next(iter(sizes.values()))]
    lines = ["| report | " + " | ".join(kinds) + " |", "| --- |" + " --- |" * len(kinds)]
    lines += [f"| {name} | " + " | ".join(f"{v[k] / 1000:.0f}" for k in kinds) + " |" for name, v in sizes.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    res: dict[str, Any] = {}
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            res[path] = breakdown(f.read())
    print(table(res))
