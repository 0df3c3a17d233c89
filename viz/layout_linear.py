"""The linear-time layered layout: instant for any FX graph, however long its edges.

Invariant: O(boxes + edges log edges); boxes never overlap; every edge gets a path. It exploits
what FX guarantees: items arrive in topological order, so one forward pass ranks them.
See Note [Linear layered layout].
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from viz.graph_layout import Box

__all__ = ["MARGIN", "RANK_GAP", "NODE_GAP", "ROW_MAX_W", "place", "ranks", "wrap"]

MARGIN = 12.0
RANK_GAP = 40.0  # vertical space between rows, where edges turn
NODE_GAP = 18.0  # horizontal space between boxes of one row
LANE_GAP = 7.0  # horizontal space between the vertical lanes of long edges
ROW_MAX_W = 2880.0  # a row's boxes wrap onto the next row past this width: two 1,440-px windows (Note [Wrapped rows])

# Note [Linear layered layout]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``dot`` spends its time in network simplex (rank and x assignment) and in routing long edges
# through chains of virtual nodes; an AOT joint graph, where every backward node reads a saved
# forward value hundreds of ranks up, makes both explode (Note [dot limits] in viz/layout_dot.py). We give up dot's optimality:
#   rank    = longest-path depth, one pass in graph order (FX order is topological; an edge that
#             points backwards, which only a folded module group can create, is ignored for ranking);
#             sources then move down to just above their first user;
#   order   = within a row, by the mean x of the predecessors (one barycenter pass), ties by graph order;
#   x       = each box at its predecessors' mean x, pushed right past its left neighbour;
#   edges   = an edge between adjacent rows is one S-curve; a longer (or backward) edge leaves its row,
#             runs down a vertical lane right of all boxes, and comes back in above its target's row.
#             Lanes are reused by interval scheduling, so long edges never cross boxes.

# Note [Wrapped rows]
# ~~~~~~~~~~~~~~~~~~~
# Longest-path ranks put every box whose inputs are ready at once in one row. A row of many parallel
# boxes is drawn as wide as all of them: a TORCH_TRACE log's resnet18 backward graph opens on 41 runs
# of the "(no module)" group (Note [Runs of the no-module group] in viz/backward_groups.py) that all
# read the one folded module box above them, one row 7,836 px wide, past four 1,440-px windows. So a
# row wraps like a line of text: boxes are taken in row order, then graph order (for a backward graph
# the order the autograd engine runs them), and a box that would take the row past ROW_MAX_W px
# closes that row and goes to the next open row, below its predecessors as always; every box
# after it in the ranking moves down as far as its own predecessors require. Nothing is hidden or
# merged: the wrapped boxes are the same boxes, their edges to rows further away take lanes. A graph
# whose rows all fit is laid out exactly as before.


def ranks(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """Longest-path depth of items 0..n-1 given edges (src, dst) by index; backward edges ignored.

    A source (no predecessors: an input, a parameter, a get_attr) then moves down to the row just above
    its first user, so the 200 parameters of a transformer sit beside their layers, not all in row 0.

    >>> ranks(4, [(0, 2), (2, 3), (1, 3)])  # item 1, a parameter read by item 3, moves down to row 1
    [0, 1, 1, 2]
    """
    rank = [0] * n
    preds = _preds(n, edges)
    first_user: list[Optional[int]] = [None] * n  # a source's first user's rank (None: no user)
    for i in range(n):
        if preds[i]:
            rank[i] = max(rank[p] for p in preds[i]) + 1
    for s, d in edges:
        fu = first_user[s]
        if s < d and not preds[s]:
            first_user[s] = rank[d] if fu is None else min(fu, rank[d])
    for i, fu in enumerate(first_user):
        if fu is not None:
            rank[i] = fu - 1
    return rank


def wrap(widths: list[float], rank: list[int], edges: list[tuple[int, int]], max_w: float = ROW_MAX_W) -> list[int]:
    """``rank`` with rows wider than ``max_w`` (boxes of ``widths`` and NODE_GAP between) wrapped onto
    the rows below (Note [Wrapped rows]); forward edges still go down. ``rank`` itself when every row fits.

    >>> wrap([100.0] * 4, [0, 1, 1, 1], [(0, 1), (0, 2), (0, 3)], max_w=250)  # two boxes of row 1 fit
    [0, 1, 1, 2]
    """
    need: dict[int, float] = {}
    for i, r in enumerate(rank):
        need[r] = need.get(r, -NODE_GAP) + widths[i] + NODE_GAP
    if all(v <= max_w for v in need.values()):
        return rank
    preds = _preds(len(rank), edges)
    out = [0] * len(rank)
    used: dict[int, float] = {}  # new row -> width taken
    after: dict[int, int] = {}  # a closed row -> a row below it to look at next (path-halved: linear overall)

    def open_row(r: int) -> int:
        while r in after:
            after[r] = after.get(after[r], after[r])
            r = after[r]
        return r

    for i in sorted(range(len(rank)), key=lambda i: (rank[i], i)):
        r = open_row(max([out[p] + 1 for p in preds[i]], default=rank[i]))
        while r in used and used[r] + NODE_GAP + widths[i] > max_w:
            after[r] = r + 1  # this row is full: like a line of text, it takes nothing more
            r = open_row(r + 1)
        used[r] = used[r] + NODE_GAP + widths[i] if r in used else widths[i]
        out[i] = r
    return out


def _straight(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A polyline as cubic bezier control points (each segment p->q is the curve p, p, q, q)."""
    out = [points[0]]
    for k in range(1, len(points)):
        out.extend([points[k - 1], points[k], points[k]])
    return out


def place(boxes: list[Box], edges: list[tuple[str, str]],
          ranking: Optional[list[tuple[str, str]]] = None) -> tuple[list[list[tuple[float, float]]], float, float]:
    """Set ``x``/``y`` of ``boxes`` (in topological order) in place; return (edge paths, width, height).

    Edge paths are cubic bezier control points, like ``Edge.points``. The steps of Note [Linear
    layered layout]: rank, rows and their heights, x within rows, lanes for long edges, edge paths.
    Ranks, rows and x follow ``ranking`` (box id pairs, default ``edges``; Note [Saved edges do not rank]
    in viz/backward_groups.py): a box on no ranking edge is a source, in the top row.
    """
    index = {b.id: i for i, b in enumerate(boxes)}
    ie = [(index[s], index[d]) for s, d in edges]
    ranked = ie if ranking is None else [(index[s], index[d]) for s, d in ranking]
    rank = wrap([b.w for b in boxes], ranks(len(boxes), ranked), ranked)
    rows = _rows(rank)
    row_y, row_h, height = _row_heights(boxes, rows)
    cx = _place_x(boxes, rows, row_y, row_h, _preds(len(boxes), ranked))
    max_right = max((b.x + b.w for b in boxes), default=MARGIN)
    lane_of, lanes = _lanes(rank, ie)
    ends = [(round(x, 1), round(b.y, 1), round(b.y + b.h, 1)) for x, b in zip(cx, boxes, strict=True)]
    paths = [_edge_path(boxes, ends, rank, row_y, row_h, max_right, s, d, lane_of.get(k)) for k, (s, d) in enumerate(ie)]
    width = max_right + LANE_GAP * (lanes + 1) + MARGIN
    return paths, round(width, 1), round(height, 1)


def _preds(n: int, ie: list[tuple[int, int]]) -> list[list[int]]:
    """Predecessors of each item along forward edges."""
    preds: list[list[int]] = [[] for _ in range(n)]
    for s, d in ie:
        if s < d:
            preds[d].append(s)
    return preds


def _rows(rank: list[int]) -> list[list[int]]:
    """Item indices of each row, in graph order."""
    rows: list[list[int]] = [[] for _ in range(max(rank, default=0) + 1)]  # no items: one empty row
    for i, r in enumerate(rank):
        rows[r].append(i)
    return rows


def _row_heights(boxes: list[Box], rows: list[list[int]]) -> tuple[list[float], list[float], float]:
    """Top y and height of each row (its tallest box), and the drawing's height."""
    row_h = [max((boxes[i].h for i in row), default=0.0) for row in rows]
    row_y: list[float] = []
    y = MARGIN
    for h in row_h:
        row_y.append(y)
        y += h + RANK_GAP
    return row_y, row_h, y - RANK_GAP + MARGIN


def _place_x(boxes: list[Box], rows: list[list[int]], row_y: list[float], row_h: list[float],
             preds: list[list[int]]) -> list[float]:
    """Order each row by its boxes' predecessors' mean x, set every box's x/y (rows centred
    vertically, the drawing shifted to the left margin); return the boxes' centre x."""
    cx: dict[int, float] = {}  # centre x of each placed box; predecessors are placed first (earlier rows)
    for r, row in enumerate(rows):
        want = {i: (sum(cx[p] for p in preds[i]) / len(preds[i]) if preds[i] else None) for i in row}
        # row 0 has no predecessors: all its keys are (inf, i) and it keeps graph order
        row.sort(key=lambda i: (want[i] if want[i] is not None else math.inf, i))
        right = None
        for i in row:
            b = boxes[i]
            # no predecessors: the first box of row 0 (any x: the drawing is shifted after), or a moved source,
            # sorted after boxes that have some and pushed right of them (their centres are all >= 0)
            x = want[i] - b.w / 2 if want[i] is not None else 0.0
            if right is not None:
                x = max(x, right + NODE_GAP)
            b.x = x
            b.y = row_y[r] + (row_h[r] - b.h) / 2
            right = x + b.w
            cx[i] = x + b.w / 2
    shift = MARGIN - min((b.x for b in boxes), default=MARGIN)
    for b in boxes:
        b.x = round(b.x + shift, 1)
        b.y = round(b.y, 1)
    return [b.x + b.w / 2 for b in boxes]


def _lanes(rank: list[int], ie: list[tuple[int, int]]) -> tuple[dict[int, int], int]:
    """A lane for each edge that does not join adjacent rows (edge index -> lane), by interval
    scheduling over the rows it spans, and the number of lanes. See Note [Linear layered layout]."""
    long_edges = sorted(
        (min(rank[s], rank[d]), max(rank[s], rank[d]), k) for k, (s, d) in enumerate(ie) if rank[d] - rank[s] != 1
    )
    lane_of: dict[int, int] = {}
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (last row, lane)
    lanes = 0
    for lo, hi, k in long_edges:
        while busy and busy[0][0] < lo:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else lanes
        lanes = max(lanes, lane + 1)
        lane_of[k] = lane
        heapq.heappush(busy, (hi, lane))
    return lane_of, lanes


# Note [Edge points rounded once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# An edge path's points are 0.1 px like the boxes, each coordinate ``round(v, 1)`` of the value the
# steps compute. The values are few: a box's centre x, top and bottom (``ends``, rounded once per box),
# an S-curve's middle y, a lane's x and its turning y's; a path repeats them (a lane's polyline is 16
# points of 7 values). So each is rounded once, and the points are built from the rounded values: the
# same numbers as rounding every point (the report's 396 graphs of the distinct-frames log: 5,608
# layouts, ~0.7 M ``round`` calls before; bench/RESULTS.md).
def _edge_path(boxes: list[Box], ends: list[tuple[float, float, float]], rank: list[int], row_y: list[float],
               row_h: list[float], max_right: float, s: int, d: int, lane: int | None) -> list[tuple[float, float]]:
    """The path of edge s -> d: one S-curve between adjacent rows, else down its lane right of all boxes;
    ``ends``: each box's (centre x, top y, bottom y), rounded (Note [Edge points rounded once])."""
    x0, _, y0 = ends[s]
    x1, y1, _ = ends[d]
    if lane is None:
        bs, bd = boxes[s], boxes[d]
        mid = round((bs.y + bs.h + bd.y) / 2, 1)
        return [(x0, y0), (x0, mid), (x1, mid), (x1, y1)]
    lane_x = round(max_right + LANE_GAP * (lane + 1), 1)
    below = round(row_y[rank[s]] + row_h[rank[s]] + RANK_GAP / 3, 1)
    above = round(row_y[rank[d]] - RANK_GAP / 3, 1)
    return _straight([(x0, y0), (x0, below), (lane_x, below), (lane_x, above), (x1, above), (x1, y1)])
