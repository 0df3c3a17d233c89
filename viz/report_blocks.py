"""A report's payloads as text: HTML compressed into base64 (:func:`encode_payload`, and back) and the
inert ``<script>`` block that holds one (:func:`payload_block`), with what a page's writer counts
(:class:`ReportStats`). The one-file report (viz/report_file.py), its worker paths
(viz/report_frames.py, viz/report_ranks.py) and the recompiles' diffs (viz/report_diffs.py) write
their blocks with these.

Invariant: a payload is ``A-Z a-z 0-9 + / =`` only, so nothing in it can end its ``<script>`` element;
the same HTML always gives the same payload (zlib at a fixed level is deterministic).
"""

from __future__ import annotations

import base64
import pathlib
import zlib
from dataclasses import dataclass, field

__all__ = ["ReportStats", "decode_payload", "encode_payload", "payload_block"]

_LEVEL = 5  # zlib level, for a 12-layer training frame's 0.96 MB: 6 takes 16.7 ms, 5 9.7 ms for 3.5 % more bytes, 1 4.7 ms for 28 % more


def encode_payload(html: str) -> str:
    """``html`` as a payload: UTF-8, zlib (``DecompressionStream("deflate")``'s format), base64.

    >>> p = encode_payload("<b>frame 0/0 </script></b>")
    >>> set(p) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), decode_payload(p)
    (True, '<b>frame 0/0 </script></b>')
    """
    return base64.b64encode(zlib.compress(html.encode("utf-8"), _LEVEL)).decode("ascii")


def decode_payload(payload: str) -> str:
    """The HTML of a payload (:func:`encode_payload`'s inverse); ``ValueError`` if it is not one."""
    try:
        return zlib.decompress(base64.b64decode(payload, validate=True)).decode("utf-8")
    except (zlib.error, ValueError) as e:
        raise ValueError(f"not a report payload: {e}") from e


def payload_block(key: str, payload: str, parts: list[int]) -> str:
    """The page's block of payload ``key`` (a frame, a diff), naming the parts that follow its own text."""
    named = f' data-parts="{" ".join(map(str, parts))}"' if parts else ""
    return f'<script type="application/octet-stream" class="ds-payload" data-frame="{key}" data-encoding="deflate"{named}>{payload}</script>'


@dataclass
class ReportStats:
    """What a report's writer wrote (:func:`viz.report_file.write_report`)."""

    path: pathlib.Path
    frames: int = 0
    payload_bytes: int = 0  # base64 text of every payload
    html_bytes: int = 0  # the payloads' HTML before compression
    layouts_reused: int = 0  # graphs drawn from an equal graph's layout (Note [Drawings of equal graphs])
    headings: list[str] = field(default_factory=list)
