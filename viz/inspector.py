"""The inspector panel: one node's facts (a ``viz.node_info`` dict) drawn as a two-column table by the
browser code that the static report draws its inspector with (``viz/inspector.js``).

Invariant: only the JSON-friendly ``node_info`` dict and a plain-text note cross to the browser; the
table is built there with DOM calls (every value as text), so a new key from ``node_info`` shows up
without a change here. See Note [One inspector].

>>> panel = Inspector()
>>> panel.show({"name": "<x>", "op": "call_function"}, note="opened wrap_body_0")
>>> panel.info["name"], panel.note
('<x>', 'opened wrap_body_0')
"""

from __future__ import annotations

import pathlib
from typing import Any

import anywidget
import traitlets

from viz.browser_code import bundle

__all__ = ["Inspector"]

_HERE = pathlib.Path(__file__).parent

# Note [One inspector]
# ~~~~~~~~~~~~~~~~~~~~
# The explorer (this widget, and the Partition tab's) and the static report show what is known of a
# clicked node. Both take the same data, ``viz.node_info``'s dict (the report stores it per node, see
# viz/report_info.py), and draw it with the same function, viz/inspector.js ``drawInspector``: the
# rows, their order and how each value reads (a lifted chain as steps, the recorded user stack as its
# lines, nested values as sorted JSON) have one source, so the report and the widget cannot tell
# different stories about a node. Its CSS (viz/canvas.css) wraps every cell, so the table never gets
# wider than its panel.

# Note [Fits its panel]
# ~~~~~~~~~~~~~~~~~~~~~
# At 1,440 x 900 in JupyterLab with the file browser open, the explorer's Graphs tab is about 1,000 px
# wide. Nothing in it may be cut or scroll sideways: the inspector's table has a fixed layout at 100 %
# and wraps anywhere (a 4 kB user stack included); the side column hides horizontal overflow; tab labels
# are as wide as their text (viz/canvas.css); the frame picker spans the whole tab (a frame's label
# names its code); the minimap takes at most a fifth of its canvas's width and a quarter of its height
# (the minimap note in viz/view.js). tests/test_lab_layout_browser.py measures each of these.


class Inspector(anywidget.AnyWidget):
    """The inspector of one node: ``info`` (a ``viz.node_info`` dict, ``{}``: the hint) and a ``note``."""

    _esm = bundle("inspector")  # inspector.js and its render() (viz/browser_code.py)
    _css = _HERE / "canvas.css"

    info = traitlets.Dict().tag(sync=True)  # viz.node_info(...) of the selected node; {} for none
    note = traitlets.Unicode("").tag(sync=True)  # a line under the node's name (plain text)

    def show(self, info: dict[str, Any] | None, *, note: str = "") -> None:
        """Show ``info`` (``None`` or ``{}``: the hint) with ``note``."""
        with self.hold_sync():
            self.info = dict(info or {})
            self.note = note
