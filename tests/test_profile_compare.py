"""The same module profiled eagerly and compiled, compared per source line and per module (tracer.diff of two Profiles)."""

from __future__ import annotations

import json
import sys

import pytest
import torch
from test_profile import _line, one_thread

import tracer
import viz  # noqa: F401  (registers the ProfileDiff renderer)
from tracer.eager_profiling import MARKERS
from viz.mimebundle import WIDGET_MIME
from viz.profile_diff_view import ProfileDiffView, profile_diff_html


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(512, 2048)

    def forward(self, x):
        a = torch.sin(x)
        b = a * 2
        c = b + 1
        big = self.proj(c)
        return torch.relu(big) - 1


MATMUL = "big = self.proj(c)"


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(128, 512, requires_grad=True)  # the Linear: 128*512*2048 multiply-adds; the rest elementwise
    trace = tmp_path_factory.mktemp("eager") / "trace.json"
    # 8 steps, not 3: times are wall time, and in CI (two suites on two cores) one preemption inside a small
    # elementwise line once outweighed three steps of the matmul (as in test_profile_inductor)
    with one_thread():  # See one_thread's docstring
        eager = tracer.profile(net, x, steps=8, eager=True, trace_file=str(trace))
        compiled = tracer.profile(net, x, steps=8, backend="inductor")
    return eager, compiled, trace


def test_both_sides_put_the_matmul_line_first(profiles):
    eager, compiled, _ = profiles
    for prof in (eager, compiled):
        top = prof.by_line()[0]
        assert (top.line, top.code) == (_line(Net.forward, MATMUL), MATMUL), prof.backend
        assert top.forward_us > 0 and top.backward_us > 0
    # eager: a backward op is on the line of the forward op that made its autograd node
    mm = next(n for n in eager.nodes if n.graph == "backward" and n.code == MATMUL)
    assert "aten::mm" in mm.ops and mm.modules == [["L['self'].proj", "torch.nn.modules.linear.Linear"]]
    lines = {(r.line, r.code) for r in eager.by_line()}
    assert {(_line(Net.forward, t), t) for t in ("a = torch.sin(x)", "b = a * 2", "c = b + 1")} <= lines
    assert all(n.compile_id == "" and n.file == __file__ for n in eager.nodes) and eager.capture is None


def test_each_side_adds_up_to_the_profilers_total(profiles):
    eager, compiled, trace = profiles
    for prof in (eager, compiled):
        assert prof.attributed_us + sum(prof.unattributed.values()) == pytest.approx(prof.total_us, rel=0.01)
        assert prof.attributed_us > 0.5 * prof.total_us  # the matmuls dominate
    assert eager.unattributed.get(MARKERS, 0) > 0  # the line markers' own time: kept apart, by name
    # the profiler's own view of the eager run: every aten op of the trace is in the total once
    data = json.loads(trace.read_text())
    names = {e["name"] for e in data["traceEvents"] if e.get("cat") == "cpu_op"}
    ours = {op for n in eager.nodes for op in n.ops} | set(eager.unattributed)
    assert {"aten::addmm", "aten::mm", "aten::sin"} <= names and names <= ours


def test_the_comparison_covers_both_sides_lines_and_modules(profiles):
    eager, compiled, _ = profiles
    d = tracer.diff(eager, compiled)
    assert isinstance(d, tracer.ProfileDiff) and (d.a, d.b) == ("eager", "inductor")
    keys = {r.key for r in d.lines}
    assert keys == {f"{r.file}:{r.line}" if r.file else ":0" for p in (eager, compiled) for r in p.by_line()}
    top = d.lines[0]
    assert top.label == MATMUL and top.a_us > 0 and top.b_us > 0
    eager_mm = next(r for r in eager.by_line() if r.code == MATMUL)  # the same row, read from one side alone
    assert top.a_us == pytest.approx(eager_mm.total_us / eager.steps)
    assert top.difference_us == pytest.approx(top.b_us - top.a_us)
    mods = {r.key: r for r in d.modules}
    assert {"L['self'].proj", "(top level)"} <= set(mods) and mods["L['self'].proj"].a_us > 0 < mods["L['self'].proj"].b_us
    assert mods["L['self'].proj"].label == "torch.nn.modules.linear.Linear"
    for side in ("a", "b"):  # unattributed is the side's own, per step, never spread over rows
        prof = eager if side == "a" else compiled
        assert getattr(d, f"unattributed_{side}_us") == pytest.approx(sum(prof.unattributed.values()) / prof.steps)
        assert getattr(d, f"attributed_{side}_us") == pytest.approx(prof.attributed_us / prof.steps)
    assert "big = self.proj(c)" in str(d).splitlines()[2]


def test_round_trip_and_views_of_a_loaded_diff(profiles):
    eager, compiled, _ = profiles
    again = tracer.Profile.from_json(eager.to_json())
    assert again.by_line() == eager.by_line() and again.by_module() == eager.by_module()
    d = tracer.diff(eager, compiled)
    loaded = tracer.ProfileDiff.from_json(d.to_json())
    assert loaded == d and tracer.diff(again, compiled) == d
    page = profile_diff_html(loaded)
    assert page == profile_diff_html(d) and loaded._repr_mimebundle_()["text/html"] == page
    assert "L[&#39;self&#39;].proj" in page and 'class="ds-diff-' in page
    with pytest.raises(ValueError, match="not a dynascope profile diff"):
        tracer.ProfileDiff.from_json('{"fn": 1}')


def test_user_text_is_escaped(tmp_path):
    d = tracer.ProfileDiff("<f>", "eager", "inductor", 1, 1, 10.0, 8.0, 1.0, 1.0,
                           lines=[tracer.TimeDelta("/x/<b>.py:3", "y = '<script>alert(1)</script>'", 9.0, 7.0)],
                           modules=[tracer.TimeDelta("L['<i>']", "<Mod>", 9.0, 0.0)], problems=["<p>"])
    for page in (profile_diff_html(d), viz.export_html(d, tmp_path / "d.html").read_text()):
        assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "<b>.py" not in page and "<i>" not in page and "<Mod>" not in page and "<p>" not in page
        assert 'class="ds-diff-faster"' in page and 'class="ds-diff-removed"' in page


def test_the_widget_orders_the_rows_as_picked():
    rows = [tracer.TimeDelta("/m.py:1", "slow_line", 100.0, 90.0), tracer.TimeDelta("/m.py:2", "won_line", 50.0, 5.0),
            tracer.TimeDelta("/m.py:3", "lost_line", 10.0, 40.0)]
    d = tracer.ProfileDiff("f", "eager", "inductor", 1, 1, 200.0, 150.0, 40.0, 15.0, lines=rows)
    view = ProfileDiffView(d)

    def order():
        page = view.tables.value
        return sorted(("slow_line", "won_line", "lost_line"), key=page.index)

    assert order() == ["slow_line", "won_line", "lost_line"]  # by the larger side's time, as d.lines
    view.sort.value = "compiled faster first"
    assert order() == ["won_line", "slow_line", "lost_line"]
    view.sort.value = "compiled slower first"
    assert order() == ["lost_line", "slow_line", "won_line"]
    bundle = d._repr_mimebundle_()
    assert WIDGET_MIME in bundle and bundle["text/html"] == profile_diff_html(d) and bundle["text/plain"] == str(d)
    with pytest.raises(ValueError, match="must be one of"):
        profile_diff_html(d, "fastest")


def test_eager_options_and_nothing_left_installed():
    x = torch.randn(8, 8)
    with pytest.raises(ValueError, match="only backward applies"):
        tracer.profile(torch.sin, x, eager=True, backend="inductor")
    with pytest.raises(TypeError, match="two tracer.Profile"):
        tracer.compare_profiles(tracer.profile(torch.sin, x, steps=1, eager=True), "x")

    def boom(t):
        t = t * 2
        raise KeyError("user")

    before = sys.gettrace()
    with pytest.raises(KeyError):
        tracer.profile(boom, x, eager=True, warmup=0)
    assert sys.gettrace() is before
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:  # no marker comes back
        Net()(torch.randn(2, 512))
    assert not [e.name for e in p.events() if "dynascope" in e.name]
