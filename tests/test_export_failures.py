"""A failing tracer.export is a record, not a traceback: the kind of failure, torch's own message, the
user line, and draft_export's report with user lines (real exports that fail)."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

import tracer
from tests.export_models import Breaks, DataDependent, Reshape4


def _line_of(cls, marker: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(cls.forward)
    return first + next(i for i, line in enumerate(lines) if marker in line)


def test_data_dependent_branch_is_a_record_with_the_user_line_and_the_draft_report():
    x = torch.ones(3)
    with pytest.raises(Exception) as torch_error:  # what torch itself raises for this module
        torch.export.export(DataDependent(), (x,))
    cap = tracer.export(DataDependent(), (x,))
    tracer.validate(cap)
    run = cap.export
    assert run.status == "failed" and run.failure.kind == "data_dependent"
    assert run.failure.message == str(torch_error.value) and run.failure.error_type == type(torch_error.value).__name__
    line = _line_of(DataDependent, "the data-dependent line")
    assert (run.failure.user_line.file, run.failure.user_line.line) == (__import__("tests.export_models").export_models.__file__, line)
    assert cap.frames[0].status == "failed" and cap.frames[0].status_reason.startswith(type(torch_error.value).__name__)
    # the graph torch had traced so far, as torch attached it to its exception: it stops at the `if`
    assert run.failure.partial_graph == torch_error.value.partial_fx_graph
    assert run.failure.partial_graph.strip().splitlines()[-1].strip().startswith("gt:")
    # draft_export ran instead: one data-dependent failure at the same line, and its program as frame 0/1
    (d,) = run.draft
    assert d.kind == "data_dependent" and d.user_line.line == line and "n > 2" in d.user_line.code
    assert "u0 > 2" in d.workaround
    assert cap.frames[1].export.stage == "draft" and cap.frames[1].graph.find(target="aten.item")
    back = tracer.Capture.from_json(cap.to_json())
    assert back == cap
    # again in the same process: the file was interned by the first run (Note [File names draft_export did not see])
    (again,) = tracer.export(DataDependent(), (x,)).export.draft
    assert again.user_line == d.user_line and "export_models.py" in again.message


def test_constraint_violation_from_dynamic_shapes():
    x = torch.ones(8)
    shapes = {"x": {0: Dim("n")}}
    with pytest.raises(Exception) as torch_error:
        torch.export.export(Reshape4(), (x,), dynamic_shapes=shapes)
    cap = tracer.export(Reshape4(), (x,), dynamic_shapes=shapes, draft=False)
    assert cap.export.failure.kind == "constraint_violation"
    assert cap.export.failure.message == str(torch_error.value)
    assert cap.export.dynamic_shapes == repr(shapes) and len(cap.frames) == 1
    tracer.validate(cap)


def test_graph_break_in_strict_export_points_at_the_break():
    cap = tracer.export(Breaks(), (torch.ones(2),), strict=True, draft=False)
    f = cap.export.failure
    assert f.kind == "graph_break" and f.error_type == "Unsupported"
    assert f.user_line.line == _line_of(Breaks, "the break line") and "graph_break()" in f.user_line.code
    # the same module exports non-strict: graph_break() is a no-op outside Dynamo
    assert tracer.export(Breaks(), (torch.ones(2),)).export.status == "exported"


def test_raise_on_failure_reraises_torchs_own_exception_with_the_record():
    with pytest.raises(Exception) as err:
        tracer.export(DataDependent(), (torch.ones(3),), raise_on_failure=True)
    assert type(err.value).__name__ == "GuardOnDataDependentSymNode"
    assert err.value.capture.export.failure.kind == "data_dependent"


def test_a_successful_export_with_dynamic_shapes_has_range_constraints():
    shapes = {"x": {0: Dim("n", min=4, max=64) * 4}}
    cap = tracer.export(Reshape4(), (torch.ones(32),), dynamic_shapes=shapes)
    assert cap.export.status == "exported"
    ep = torch.export.export(Reshape4(), (torch.ones(32),), dynamic_shapes=shapes)
    ours = [(r.symbol, r.lower, r.upper) for r in cap.frames[0].export.range_constraints]
    assert ours == [(str(s), str(vr.lower), str(vr.upper)) for s, vr in ep.range_constraints.items()]
    assert ("4", "64") in [(lo, hi) for _, lo, hi in ours]  # n itself, as dynamic_shapes asked


@pytest.mark.parametrize("strict", [False, True])
def test_shape_guards_and_their_user_lines(strict):
    from tests.export_models import ShapeChecks

    args, shapes = (torch.ones(8), torch.ones(3)), ({0: Dim.AUTO}, {0: Dim.AUTO})
    cap = tracer.export(ShapeChecks(), args, dynamic_shapes=shapes, strict=strict)
    tracer.validate(cap)
    f = cap.frames[0]
    ep = torch.export.export(ShapeChecks(), args, dynamic_shapes=shapes, strict=strict)
    assert sorted(s.name for s in f.symbols) == sorted(str(s) for s in ep.range_constraints)
    x = next(s.name for s in f.symbols if s.value == "8")
    (div,) = [sp for sp in f.specializations if sp.kind == "divisibility"]
    assert (div.symbol, div.value) == (x, "2")
    if strict:  # Dynamo logs the user stack of each guard; non-strict export logs none (and we guess none)
        lines = {g.user_stack[-1].line for g in f.shape_guards}
        assert lines == {_line_of(ShapeChecks, "the slice guard"), _line_of(ShapeChecks, "the divisibility guard")}
        assert div.user_line.line == _line_of(ShapeChecks, "the divisibility guard")
    else:
        assert all(not g.user_stack for g in f.shape_guards) and div.user_line is None


def test_nothing_stays_installed_after_an_export_or_a_failed_one():
    import torch._logging._internal as internal

    handlers, structured = list(internal.trace_log.handlers), internal.trace_structured
    tracer.export(Reshape4(), (torch.ones(8),))
    tracer.export(Breaks(), (torch.ones(2),), strict=True, draft=False)
    with pytest.raises(RuntimeError):  # torch's GuardOnDataDependentSymNode
        tracer.export(DataDependent(), (torch.ones(3),), raise_on_failure=True)
    assert internal.trace_log.handlers == handlers and internal.trace_structured is structured
    assert torch._logging.trace_structured is structured


def test_an_operator_without_fake_kernel():
    from tests.export_models import NoFakeKernel

    with pytest.raises(RuntimeError) as torch_error:
        torch.export.export(NoFakeKernel(), (torch.ones(3),))
    cap = tracer.export(NoFakeKernel(), (torch.ones(3),))
    tracer.validate(cap)
    f = cap.export.failure
    assert f.message == str(torch_error.value) and f.user_line.line == _line_of(NoFakeKernel, "the custom op line")
    # torch raises a plain RuntimeError: the kind is "other", and draft_export names what is missing
    assert f.kind == "other" and [d.kind for d in cap.export.draft] == ["missing_fake_kernel"]


def test_export_while_a_trace_is_paused_fails_fast():
    from session_cases import finish, root_fn

    s = tracer.trace(root_fn, torch.randn(3), torch.randn(3)).start()
    try:
        assert s.wait(timeout=120) is not None  # paused: it holds Dynamo's compile lock
        with pytest.raises(RuntimeError, match=r"tracer\.export\(\) cannot run while .*compile lock"):
            tracer.export(Reshape4(), (torch.ones(8),))
    finally:
        finish(s)
    assert tracer.export(Reshape4(), (torch.ones(8),)).export.status == "exported"


def test_shape_guards_in_hop_bodies_show_the_user_line_not_torchs():
    import os

    from tests.export_models import LoopCheck
    from viz.export_view import signature_html

    args, shapes = (torch.ones(8), torch.ones(8)), ({0: Dim.AUTO}, {0: Dim.AUTO})
    cap = tracer.export(LoopCheck(), args, dynamic_shapes=shapes)  # non-strict: torch logs Python stacks
    tracer.validate(cap)
    f = cap.frames[0]
    torch_dir = os.path.dirname(torch.__file__) + os.sep
    stacked = [g for g in f.shape_guards if g.user_stack]
    assert stacked and all(any(s.file.startswith(torch_dir) for s in g.user_stack) for g in stacked)
    assert {g.user_line.line for g in stacked} == {_line_of(LoopCheck, m) for m in
                                                    ("the loop's check", "the loop's slice", "the branch's add")}
    assert all(g.user_line.file == inspect_file(LoopCheck) for g in stacked)
    page = signature_html(f)
    assert "while_loop.py" not in page and "cond.py" not in page and "non_strict_utils.py" not in page
    assert "torch._check(z.shape[0] &gt;= 4)" in page
    # a symbol torch created for a HOP operand has only torch frames: its 0/1 specialization names no line
    torch_only = {s.name for s in f.symbols if s.user_stack and all(fr.file.startswith(torch_dir) for fr in s.user_stack)}
    assert torch_only
    assert all(sp.user_line is None for sp in f.specializations if sp.kind == "zero_one" and sp.symbol in torch_only)


def test_the_symbols_table_names_the_user_line_or_says_torch_created_the_symbol():
    import os

    from tests.export_models import LoopCheck
    from viz.code_view import shapes_html
    from viz.info import _symbols_of

    args, shapes = (torch.ones(8), torch.ones(8)), ({0: Dim.AUTO}, {0: Dim.AUTO})
    f = tracer.export(LoopCheck(), args, dynamic_shapes=shapes).frames[0]  # non-strict: torch logs Python stacks
    torch_dir = os.path.dirname(torch.__file__) + os.sep

    def torch_only(s):
        return s.user_stack and all(fr.file.startswith(torch_dir) for fr in s.user_stack)

    # torch creates a symbol for each HOP operand inside while_loop.py / cond.py: its stack has torch frames only
    created_by_torch = [s for s in f.symbols if torch_only(s)]
    assert created_by_torch and all(s.user_line is None for s in created_by_torch)
    with_user = [s for s in f.symbols if s.user_stack and not torch_only(s)]
    for s in with_user:  # the innermost frame outside torch, the one torch logged
        assert s.user_line == [fr for fr in s.user_stack if not fr.file.startswith(torch_dir)][-1]
        assert s.user_line.file == inspect_file(LoopCheck)
    page = shapes_html(f)
    rows = {r[0]: r[4] for r in _table_rows(page[:page.index("</table>")])}
    assert {n: rows[n] for n in (s.name for s in created_by_torch)} == {
        s.name: "unknown (only torch frames)" for s in created_by_torch}
    assert all(rows[s.name] == str(s.user_line) for s in with_user)
    assert all(rows[s.name] == "not logged by torch" for s in f.symbols if not s.user_stack)
    assert "non_strict_utils.py" not in page and "while_loop.py" not in page and "cond.py" not in page
    # the node inspector's symbol lines say the same
    s = created_by_torch[0]
    assert any("created at unknown (only torch frames)" in t for t in _symbols_of(f, {"shape": [s.name]}))


def _table_rows(page: str) -> list[list[str]]:
    import html
    import re

    return [[html.unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", page, re.S) if "<td>" in row]


def inspect_file(cls) -> str:
    import inspect

    return inspect.getsourcefile(cls)


@pytest.mark.parametrize("strict", [False, True])
def test_an_operator_with_no_fake_or_meta_kernel_is_an_unsupported_operator(strict):
    """A torch.library operator with a CPU kernel only: fake tensors cannot run it, torch raises its
    UnsupportedOperatorException (under strict export wrapped in Dynamo's Unsupported)."""
    from tests.export_models import NoMetaKernel

    x = torch.ones(3)
    with pytest.raises(Exception) as torch_error:
        torch.export.export(NoMetaKernel(), (x,), strict=strict)
    chain, e = [], torch_error.value
    while e is not None:
        chain.append(type(e).__name__)
        e = e.__cause__ or e.__context__
    assert "UnsupportedOperatorException" in chain
    draft = torch.export.draft_export(NoMetaKernel(), (x,), strict=strict)
    report = next(v for v in vars(draft).values() if type(v).__name__ == "DraftExportReport")  # torch's own report
    cap = tracer.export(NoMetaKernel(), (x,), strict=strict)
    tracer.validate(cap)
    f = cap.export.failure
    assert cap.export.status == "failed" and f.kind == "unsupported"
    assert f.message == str(torch_error.value) and f.error_type == type(torch_error.value).__name__
    line = _line_of(NoMetaKernel, "the unsupported op line")
    assert (f.user_line.file, f.user_line.line) == (inspect_file(NoMetaKernel), line)
    assert "no_kernel_for_fakes(y)" in f.user_line.code
    assert f.partial_graph == getattr(torch_error.value, "partial_fx_graph", "") == ""  # torch attached none
    if strict:  # Dynamo's Unsupported: the break it stopped at, at the same line
        (brk,) = cap.graph_breaks
        assert brk.location == f"export_models.py:{line}" and brk.reason == torch_error.value.msg
    else:
        assert cap.graph_breaks == []
    # draft_export ran on: its report names the missing fake kernel, as torch's own report does
    assert [(d.kind, d.error_type) for d in cap.export.draft] == [
        ("missing_fake_kernel", r.failure_type.name) for r in report.failures]
    assert "dynascope_tests.no_kernel_for_fakes" in cap.export.draft[0].message
    assert cap.export.draft[0].user_line is None  # torch's report of a missing fake kernel has no stack
    assert cap.frames[1].export.stage == "draft"
    assert cap.frames[1].graph.find(target="dynascope_tests.no_kernel_for_fakes")


def test_strict_export_keeps_the_graph_dynamo_had_traced_node_for_node():
    """Dynamo attaches the graph it had traced to a data-dependent branch's error (``partial_fx_graph``);
    the record keeps torch's text, and its nodes are those Dynamo traces before that branch when
    torch.compile breaks the graph there instead."""
    from tests.export_models import TensorBranch
    from tracer.trace_log.graph_text import parse_readable

    x = torch.ones(3)
    with pytest.raises(Exception) as torch_error:
        torch.export.export(TensorBranch(), (x,), strict=True)
    cap = tracer.export(TensorBranch(), (x,), strict=True, draft=False)
    tracer.validate(cap)
    f = cap.export.failure
    assert f.kind == "graph_break" and f.partial_graph == torch_error.value.partial_fx_graph
    assert f.user_line.line == _line_of(TensorBranch, "the tensor branch line")
    assert cap.graph_breaks[0].location.endswith(f":{f.user_line.line}")
    parsed = parse_readable(f.partial_graph)
    assert not parsed.errors

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    try:
        torch.compile(TensorBranch(), backend=backend)(x)  # breaks at the branch: its first graph stops there
    finally:
        torch._dynamo.reset()
    compiled = [n for n in graphs[0].graph.nodes if n.op not in ("placeholder", "output")]
    ours = [n for n in parsed.graph.nodes if n.op not in ("placeholder", "output")]
    assert [(n.name, n.op) for n in ours] == [(n.name, n.op) for n in compiled] == [
        ("sin", "call_method"), ("y", "call_function"), ("sum_1", "call_method"), ("gt", "call_function")]
    # the input is named after export's flattened argument there, after forward's parameter here
    (ph,), (compiled_ph,) = parsed.graph.placeholders, [n for n in graphs[0].graph.nodes if n.op == "placeholder"]
    for a, b in zip(ours, compiled, strict=True):
        assert a.target.rsplit(".", 1)[-1] == (b.target if isinstance(b.target, str) else b.target.__name__)
        assert [compiled_ph.name if i == ph.name else i for i in a.inputs] == [i.name for i in b.all_input_nodes]
