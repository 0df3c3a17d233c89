"""viz.layout_linear on small hand-made box lists, with every coordinate worked out by hand from
Note [Linear layered layout] (MARGIN 12, RANK_GAP 40, NODE_GAP 18, LANE_GAP 7). Fast: what
`make mutants` runs against it (tests/test_viz_layout.py checks the invariants on real graphs)."""

from __future__ import annotations

from viz.graph_layout import Box
from viz.layout_linear import LANE_GAP, MARGIN, NODE_GAP, RANK_GAP, ROW_MAX_W, place, ranks, wrap


def box(name: str, w: float = 40.0, h: float = 20.0) -> Box:
    return Box(name, name, "", "op", 0.0, 0.0, w, h)


def xy(boxes: list[Box]) -> dict[str, tuple[float, float]]:
    return {b.id: (b.x, b.y) for b in boxes}


def test_the_gaps():
    assert (MARGIN, RANK_GAP, NODE_GAP, LANE_GAP) == (12.0, 40.0, 18.0, 7.0)


def test_ranks_are_longest_path_depths():
    assert ranks(4, [(0, 1), (1, 2), (0, 2), (2, 3)]) == [0, 1, 2, 3]
    assert ranks(3, [(0, 2), (1, 2)]) == [0, 0, 1]
    assert ranks(0, []) == [] and ranks(2, []) == [0, 0]


def test_backward_edges_do_not_rank():
    # 2 -> 0 points backwards (a folded group can make one): ignored, so 0 stays a source
    assert ranks(3, [(0, 1), (1, 2), (2, 0)]) == [0, 1, 2]
    assert ranks(2, [(1, 1)]) == [0, 0]


def test_a_source_moves_down_above_its_first_user():
    # 0 -> 2 -> 3 -> 4; item 1 is a source read by 4 (rank 3) and 3 (rank 2): it sits above the
    # first of them, in row 1
    assert ranks(5, [(0, 2), (2, 3), (3, 4), (1, 4), (1, 3)]) == [0, 1, 1, 2, 3]
    # a source whose first user is in row 1 stays in row 0; one without users stays in row 0
    assert ranks(3, [(0, 2), (1, 2)]) == [0, 0, 1]
    assert ranks(3, [(0, 1)]) == [0, 1, 0]
    # a node with predecessors is never moved, however far below its user is
    assert ranks(5, [(0, 1), (1, 4), (0, 2), (2, 3), (3, 4)]) == [0, 1, 1, 2, 3]


def test_a_chain_with_one_long_edge():
    a, b, c = box("a"), box("b", 60.0, 30.0), box("c")
    paths, width, height = place([a, b, c], [("a", "b"), ("a", "c"), ("b", "c")])
    # rows at y 12, 72 (12 + 20 + 40), 142 (72 + 30 + 40); every box centred under its predecessors'
    # mean x (a's centre, 20), b (60 wide) reaching furthest left: the drawing moves right by 22
    assert xy([a, b, c]) == {"a": (22.0, 12.0), "b": (12.0, 72.0), "c": (22.0, 142.0)}
    assert height == 174.0  # 142 + 20 + 12
    assert width == 98.0  # right edge of b (72) + one lane (2 * 7) + 12
    assert paths[0] == [(42.0, 32.0), (42.0, 52.0), (42.0, 52.0), (42.0, 72.0)]  # one S-curve to the next row
    assert paths[2] == [(42.0, 102.0), (42.0, 122.0), (42.0, 122.0), (42.0, 142.0)]
    # a -> c spans two rows: down to 40/3 below a's row, right to lane 0 (x 72 + 7), down to 40/3 above
    # c's row, back to c's centre: a polyline, each segment a cubic p, p, q, q
    pts = [(42.0, 32.0), (42.0, 45.3), (79.0, 45.3), (79.0, 128.7), (42.0, 128.7), (42.0, 142.0)]
    assert paths[1] == [pts[0]] + [p for s, q in zip(pts, pts[1:], strict=False) for p in (s, q, q)]


def test_rows_are_ordered_by_their_predecessors_and_pushed_apart():
    x, y, u, v = box("x"), box("y", 30.0), box("u"), box("v")
    # row 0: x, y in graph order (y at 40 + 18); row 1: v reads x (mean x 20), u reads y (mean x 73): v
    # first at 0, u wants 73 - 20 = 53 but is pushed to 0 + 40 + 18 = 58
    place([x, y, u, v], [("y", "u"), ("x", "v")])
    assert xy([x, y, u, v]) == {"x": (12.0, 12.0), "y": (70.0, 12.0), "v": (12.0, 72.0), "u": (70.0, 72.0)}
    # far enough apart nothing is pushed: y 60 wide has its centre at 58 + 30, so u wants 88 - 20 = 68
    x, y, u, v = box("x"), box("y", 60.0), box("u"), box("v")
    place([x, y, u, v], [("y", "u"), ("x", "v")])
    assert xy([x, y, u, v]) == {"x": (12.0, 12.0), "y": (70.0, 12.0), "v": (12.0, 72.0), "u": (80.0, 72.0)}
    # both read x: graph order breaks the tie, and the second is pushed right of the first
    x, y, u, v = box("x"), box("y", 30.0), box("u"), box("v")
    place([x, y, u, v], [("x", "u"), ("x", "v"), ("y", "v")])
    # u wants x 20 - 20 = 0; v wants the mean of x's and y's centres ((20 + 73) / 2 = 46.5) - 20 = 26.5,
    # pushed to 0 + 40 + 18 = 58
    assert xy([x, y, u, v]) == {"x": (12.0, 12.0), "y": (70.0, 12.0), "u": (12.0, 72.0), "v": (70.0, 72.0)}


def test_a_moved_source_goes_after_the_placed_boxes_of_its_row():
    # w (a parameter read by c) sits in the row above c, after b although it comes first in graph order
    # (it has no predecessors to centre under); c centres under b and w: (20 + 68) / 2 - 20 = 24
    a, w, b, c = box("a"), box("w", 20.0), box("b"), box("c")
    place([a, w, b, c], [("a", "b"), ("b", "c"), ("w", "c")])
    assert xy([a, w, b, c]) == {"a": (12.0, 12.0), "b": (12.0, 72.0), "w": (70.0, 72.0), "c": (36.0, 132.0)}


def test_boxes_of_a_row_are_centred_on_its_tallest():
    a, b, c = box("a", 40.0, 20.0), box("b", 40.0, 50.0), box("c")
    _, _, height = place([a, b, c], [("a", "c"), ("b", "c")])
    # row 0 is 50 high: a (20 high) sits 15 lower than b; c's row starts at 12 + 50 + 40
    assert xy([a, b, c]) == {"a": (12.0, 27.0), "b": (70.0, 12.0), "c": (41.0, 102.0)}
    assert height == 134.0


def test_lanes_are_reused_once_an_edge_has_left_the_rows_it_spans():
    names = [f"n{k}" for k in range(6)]
    boxes = [box(n) for n in names]
    chain = [(names[k], names[k + 1]) for k in range(5)]
    # long edges n0->n2 (rows 0-2) and n1->n3 (1-3) overlap: lanes 0 and 1; n3->n5 (3-5) starts after
    # n0->n2 ended: lane 0 again; n2->n4 (2-4) shares row 2 with n0->n2: not lane 0
    long_edges = [("n0", "n2"), ("n1", "n3"), ("n3", "n5")]
    paths, width, _ = place(boxes, chain + long_edges)
    right = 12.0 + 40.0  # every box at x 12
    lane_x = [max(x for x, _ in p) for p in paths[5:]]
    assert lane_x == [right + 7.0, right + 14.0, right + 7.0]
    assert width == right + 7.0 * 3 + 12.0
    paths, width, _ = place([box(n) for n in names], chain + [("n0", "n2"), ("n2", "n4")])
    assert [max(x for x, _ in p) for p in paths[5:]] == [right + 7.0, right + 14.0]


def test_a_backward_edge_runs_up_a_lane():
    a, b = box("a"), box("b")
    paths, width, height = place([a, b], [("a", "b"), ("b", "a")])
    assert xy([a, b]) == {"a": (12.0, 12.0), "b": (12.0, 72.0)}
    # from b's bottom (92) to 40/3 below b's row (105.3), up lane 0 (x 59) to 40/3 above a's row (-1.3), into a's top
    pts = [(32.0, 92.0), (32.0, 105.3), (59.0, 105.3), (59.0, -1.3), (32.0, -1.3), (32.0, 12.0)]
    assert paths[1] == [pts[0]] + [p for s, q in zip(pts, pts[1:], strict=False) for p in (s, q, q)]
    assert (width, height) == (78.0, 104.0)


def test_a_source_read_again_two_rows_down_uses_a_lane():
    a, b, c, d = box("a"), box("b"), box("c"), box("d")
    paths, _, _ = place([a, b, c, d], [("a", "c"), ("b", "c"), ("c", "d"), ("b", "d")])
    # b is read by c (row 1) first: it stays in row 0; b -> d spans rows 0-2 and takes lane 0
    assert xy([a, b, c, d])["b"][1] == 12.0
    assert max(x for x, _ in paths[3]) == 70.0 + 40.0 + 7.0


def test_coordinates_are_rounded_to_a_tenth():
    a, b = box("a", 33.33, 20.0), box("b", 10.0, 20.0)
    paths, width, height = place([a, b], [("a", "b")])
    # b centred under a's centre (16.665): x 11.665, shifted with a by 12 - 0 = 12 -> 23.7 (rounded)
    assert xy([a, b]) == {"a": (12.0, 12.0), "b": (23.7, 72.0)}
    assert paths == [[(28.7, 32.0), (28.7, 52.0), (28.7, 52.0), (28.7, 72.0)]]
    assert (width, height) == (round(12 + 33.33 + 7 + 12, 1), 104.0)


def test_y_and_height_are_rounded_to_a_tenth():
    a, b, c = box("a", 40.0, 20.33), box("b"), box("c")
    _, _, height = place([a, b, c], [("a", "c"), ("b", "c")])
    # b (20 high) centred in a row 20.33 high: 12 + 0.165; c's row at 12 + 20.33 + 40
    assert (a.y, b.y, c.y, height) == (12.0, 12.2, 72.3, 104.3)


def test_an_edge_from_a_box_to_itself_runs_through_a_lane():
    a, b = box("a"), box("b")
    paths, width, height = place([a, b], [("a", "b"), ("b", "b")])
    assert xy([a, b]) == {"a": (12.0, 12.0), "b": (12.0, 72.0)}  # the loop neither ranks nor places b
    pts = [(32.0, 92.0), (32.0, 105.3), (59.0, 105.3), (59.0, 58.7), (32.0, 58.7), (32.0, 72.0)]
    assert paths[1] == [pts[0]] + [p for s, q in zip(pts, pts[1:], strict=False) for p in (s, q, q)]
    assert (width, height) == (78.0, 104.0)


def test_no_boxes():
    assert place([], []) == ([], 31.0, 24.0)  # margins and the one lane's gap


def test_a_row_past_the_cap_wraps_below_its_predecessors():
    """Note [Wrapped rows]: 1 source feeding 5 boxes of 100 px, cap 250 px: two per row, in graph order,
    the box after them pushed below the last; a ranking whose rows fit is returned as it is."""
    edges = [(0, k) for k in range(1, 6)] + [(5, 6)]
    assert wrap([100.0] * 7, ranks(7, edges), edges, max_w=250) == [0, 1, 1, 2, 2, 3, 4]
    assert wrap([100.0] * 7, ranks(7, edges), edges, max_w=10_000) == ranks(7, edges)


def test_place_wraps_a_row_wider_than_row_max_w():
    """Forty parallel 200-px boxes under one source: one row of 8,702 px before; now no row is wider
    than ROW_MAX_W and no box overlaps another."""
    boxes = [box(f"b{k}", 200.0) for k in range(41)]
    _, width, _ = place(boxes, [("b0", f"b{k}") for k in range(1, 41)])
    rows: dict[float, list] = {}
    for b in boxes[1:]:
        rows.setdefault(b.y, []).append(b)
    assert len(rows) > 1 and all(max(b.x + b.w for b in r) - min(b.x for b in r) <= ROW_MAX_W for r in rows.values())
    assert width <= ROW_MAX_W + 2 * MARGIN + LANE_GAP * 41
