"""tracer.trace_log.assemble on hand-built ``LogState``/``AttemptLog`` inputs: one test per rule the
assembly implements (ids, code objects, graphs and their bodies, AOT graphs, root roles, guards,
statuses, breaks, recompiles, what the capture says of the log), no capture.

Graph texts, guard trees, stacks and metrics are written as torch 2.13 logs them (checked against
TORCH_TRACE logs of small programs: a closure over a global, a ``wrap`` with a symbolic size and a
SymInt argument, nested ``torch.cond`` under ``no_grad``, a ``Linear`` with a graph break trained one
step, a frame with no tensor op, a recompile on a new size); file paths shortened to /home/u/t.py.
"""

from __future__ import annotations

from test_trace_log_feeds import AUTOGRAD  # tests/ is on sys.path (conftest imports cases.py the same way)

from tracer.model.attempts import AttemptInfo
from tracer.model.guards import GraphBreak
from tracer.trace_log.assemble import LOG_LIMITS, assemble
from tracer.trace_log.events import AttemptLog, LogState
from tracer.trace_log.modules import LOG_MODULE_RULE

STRINGS = {0: "/venv/torch/_dynamo/convert_frame.py", 1: "/home/u/t.py"}

# compilation_metrics as torch 2.13 logs them (the fields the loader reads)
METRICS = {"co_name": "f", "co_filename": "/home/u/t.py", "co_firstlineno": 3, "graph_op_count": 1,
           "entire_frame_compile_time_s": 0.5, "backend_compile_time_s": 0.25, "fail_type": None,
           "fail_reason": None, "restart_reasons": [], "dynamo_time_before_restart_s": 0.0,
           "aot_autograd_cumulative_compile_time_us": 250000}

SIN = '''class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[3][1]cpu"):
        l_x_ = L_x_

        # File: /home/u/t.py:4 in f, code: return x.sin()
        sin: "f32[3][1]cpu" = l_x_.sin();  l_x_ = None
        return (sin,)
'''

# wrap(lambda a: a.sin() + n, x) with dynamic=True: the size s77 and the SymInt n are passed to the body
WRAP = '''class GraphModule(torch.nn.Module):
    def forward(self, s77: "Sym(s77)", L_x_: "f32[s77][1]cpu", L_n_: "Sym(s86)"):
        l_x_ = L_x_
        l_n_ = L_n_

        # File: /home/u/t.py:7 in f, code: return wrap(lambda a: a.sin() + n, x)
        wrap_body_0 = self.wrap_body_0
        wrap = torch.ops.higher_order.wrap(wrap_body_0, s77, l_x_, l_n_);  wrap_body_0 = s77 = l_x_ = l_n_ = None
        getitem: "f32[s77][1]cpu" = wrap[0];  wrap = None
        return (getitem,)

    class wrap_body_0(torch.nn.Module):
        def forward(self, s77: "Sym(s77)", l_x_: "f32[s77][1]cpu", l_n_: "Sym(s86)"):
            # File: /home/u/t.py:7 in <lambda>, code: return wrap(lambda a: a.sin() + n, x)
            sin: "f32[s77][1]cpu" = l_x_.sin();  l_x_ = None
            add: "f32[s77][1]cpu" = sin + l_n_;  sin = l_n_ = None
            return (add,)
'''

# the AOT inference graph of a torch.cond whose true branch calls another torch.cond (under no_grad)
NESTED = '''class <lambda>(torch.nn.Module):
    def forward(
        self,
        arg0_1: "f32[3][1]cpu",  # PlainAOTInput(idx=0)
    ):
        # File: /home/u/t.py:5 in f, code: return torch.cond(x.sum() > 0, lambda a: inner(a), lambda a: a * 2, (x,))
        sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(arg0_1)
        gt: "b8[][]cpu" = torch.ops.aten.gt.Scalar(sum_1, 0);  sum_1 = None
        true_graph_0 = self.true_graph_0
        false_graph_0 = self.false_graph_0
        cond = torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, (arg0_1,));  gt = true_graph_0 = false_graph_0 = arg0_1 = None
        getitem: "f32[3][1]cpu" = cond[0];  cond = None
        return (
            getitem,  # PlainAOTOutput(idx=0)
        )

    class true_graph_0(torch.nn.Module):
        def forward(self, arg0_1: "f32[3][1]cpu"):
            sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(arg0_1)
            gt: "b8[][]cpu" = torch.ops.aten.gt.Scalar(sum_1, 1);  sum_1 = None
            true_graph_0 = self.true_graph_0
            false_graph_0 = self.false_graph_0
            cond = torch.ops.higher_order.cond(gt, true_graph_0, false_graph_0, (arg0_1,));  gt = true_graph_0 = false_graph_0 = arg0_1 = None
            getitem: "f32[3][1]cpu" = cond[0];  cond = None
            return (getitem,)

        class true_graph_0(torch.nn.Module):
            def forward(self, arg0_1: "f32[3][1]cpu"):
                sin: "f32[3][1]cpu" = torch.ops.aten.sin.default(arg0_1);  arg0_1 = None
                return (sin,)

        class false_graph_0(torch.nn.Module):
            def forward(self, arg0_1: "f32[3][1]cpu"):
                cos: "f32[3][1]cpu" = torch.ops.aten.cos.default(arg0_1);  arg0_1 = None
                return (cos,)

    class false_graph_0(torch.nn.Module):
        def forward(self, arg0_1: "f32[3][1]cpu"):
            mul: "f32[3][1]cpu" = torch.ops.aten.mul.Tensor(arg0_1, 2);  arg0_1 = None
            return (mul,)
'''

FORWARD = '''class GraphModule(torch.nn.Module):
    def forward(
        self,
        primals_1: "f32[3][1]cpu",  # PlainAOTInput(idx=0)
    ):
        # File: /home/u/t.py:4 in f, code: return x.cos()
        cos: "f32[3][1]cpu" = torch.ops.aten.cos.default(primals_1)
        return (
            cos,  # PlainAOTOutput(idx=0)
            primals_1,  # SavedForBackwardsAOTOutput(idx=0)
        )
'''

BACKWARD = '''class GraphModule(torch.nn.Module):
    def forward(
        self,
        primals_1: "f32[3][1]cpu",  # PlainAOTInput(idx=0)
        tangents_1: "f32[3][1]cpu",  # TangentAOTInput(output=PlainAOTOutput(idx=0))
    ):
        # File: /home/u/t.py:4 in f, code: return x.cos()
        sin: "f32[3][1]cpu" = torch.ops.aten.sin.default(primals_1);  primals_1 = None
        neg: "f32[3][1]cpu" = torch.ops.aten.neg.default(sin);  sin = None
        mul: "f32[3][1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, neg);  tangents_1 = neg = None
        return (
            mul,  # GradAOTOutput(grad_of=PlainAOTInput(idx=0))
        )
'''

BROKEN = 'class GraphModule(torch.nn.Module):\n    def forward(self, L_x_: "f32[3][1]cpu"):\n        return (\n'


def _symbol(symbol: str, source: str, val: str = "4", vr: str = "[2, int_oo]", event: str = "create_symbol"):
    """A ShapeEnv create_symbol event as the log carries it (symbolic_shapes.py ``create_symbol``)."""
    return (event, {"symbol": symbol, "val": val, "vr": vr, "source": source,
                    "user_stack": [{"line": 7, "name": "f", "filename": 1}]}, None)


def _state(*attempts: tuple[tuple[int, int, int], AttemptLog], info: dict | None = None, **kw) -> LogState:
    st = LogState(dict(STRINGS), **kw)
    for key, a in attempts:
        st.order.append(key)
        st.attempts[key] = a
    st.info.update(info or {})
    return st


def _one(a: AttemptLog, metrics: dict | None = METRICS, **kw):
    """The one frame of a log with one compile (0/0) of one attempt."""
    info = {(0, 0): AttemptInfo(metrics=dict(metrics), final_attempt=0)} if metrics is not None else {}
    cap = assemble(_state(((0, 0, 0), a), info=info, **kw))
    assert len(cap.frames) == 1
    return cap.frames[0]


def _roles(g) -> list[tuple[str, str, str]]:
    """(placeholder target, role, its Source): the parser names the node after ``l_x_ = L_x_`` as fx does."""
    return [(n.target, n.role, n.meta.get("graph_arg_source", "-")) for n in g.placeholders]


# -- the capture --------------------------------------------------------------------------------
def test_an_empty_log_says_what_a_log_cannot_contain():
    cap = assemble(LogState({}), fn="t.log")
    assert (cap.fn, cap.frames, cap.graph_breaks, cap.recompiles, cap.problems) == ("t.log", [], [], [], [])
    assert cap.meta == {"source": "TORCH_TRACE", "module_groups": LOG_MODULE_RULE}  # how its module groups are found
    assert assemble(LogState({})).fn == ""
    # each limit once, "field: why", in LOG_LIMITS' order; the texts say what Note [What a log does not contain] says
    assert cap.limits == [
        "Frame.speculations: speculations are not recorded in TORCH_TRACE",
        "SubgraphInput.kind: a body input the HOP does not supply has kind 'unknown': whether it is an operand or "
        "lifted is decided by speculation, which is not in the log; its source is read from the call",
        "Node.role: a root placeholder read from a frame local (L['x']) has role 'unknown': an argument or a closure "
        "variable, the log does not name the frame's arguments; body placeholders as SubgraphInput.kind",
        "Frame.passes: graphs are as logged before Dynamo's graph passes; Frame.passes is unknown",
        "Frame.aot: AOT saved values and ViewAndMutationMeta are not read; only the AOT graphs are",
        "Node.meta: node meta holds only what print_readable prints (shape, stride, dtype, device, the innermost "
        "line of the node's stack); no nn_module_stack: 'log_module' where parameter Sources prove a node's module",
        "Frame.status_reason: why a frame produced no graph is logged at debug level only",
        "Frame.bytecode: Dynamo's bytecode is logged for resume functions only and is not read",
        "Frame.guards: guards are the C++ guard tree's leaves, with its kinds, not the guards Dynamo built",
    ]
    assert list(LOG_LIMITS) == [line.split(": ")[0] for line in cap.limits]


def test_torch_version_files_and_problems_of_the_log():
    st = _state(torch_version="2.13.0+cpu", files={"/tmp/x/fx.py": "def forward(x): ..."},
                problems=["line 9: dynamo_start not read (ValueError: no compile id in the metadata)"])
    st.unknown.update({"zz_new_event": 2, "aa_new_event": 1})
    cap = assemble(st)
    assert cap.meta == {"source": "TORCH_TRACE", "torch": "2.13.0+cpu", "files": {"/tmp/x/fx.py": "def forward(x): ..."},
                        "module_groups": LOG_MODULE_RULE}
    assert cap.problems == ["line 9: dynamo_start not read (ValueError: no compile id in the metadata)",
                            "1 record(s) of event 'aa_new_event' not read: not an event of torch 2.13's trace",
                            "2 record(s) of event 'zz_new_event' not read: not an event of torch 2.13's trace"]


# -- ids and code objects -----------------------------------------------------------------------
def test_capture_local_ids_and_torchs_own_ids():
    """Frames numbered by first appearance, compiles per frame, attempts kept; dynamo_id as torch prints it."""
    keys = [(5, 0, 0), (5, 0, 1), (2, 0, 0), (5, 1, 0)]
    info = {(5, 0): AttemptInfo(metrics=dict(METRICS), final_attempt=1), (2, 0): AttemptInfo(metrics=dict(METRICS), final_attempt=0),
            (5, 1): AttemptInfo(metrics=dict(METRICS), final_attempt=0)}
    cap = assemble(_state(*((k, AttemptLog(texts={"dynamo": (SIN, 1)})) for k in keys), info=info))
    assert [(f.compile_id, f.dynamo_id) for f in cap.frames] == [("0/0", "5/0"), ("0/0_1", "5/0_1"), ("1/0", "2/0"), ("0/1", "5/1")]


def test_code_object_from_the_metrics():
    assert _one(AttemptLog()).code == "t.py:3 in f"
    assert _one(AttemptLog(), {**METRICS, "co_filename": None}).code == "?:3 in f"  # one of the two is enough
    assert _one(AttemptLog(), {**METRICS, "co_name": None, "co_firstlineno": None}).code == "t.py:? in ?"


def test_code_object_from_the_innermost_frame_of_dynamo_start_without_metrics_naming_it():
    """A resume function: dynamo_start's stack is outermost first, the compiled frame last."""
    stack = [{"line": 7, "name": "<module>", "filename": 1, "loc": "f(x)"},
             {"line": 5, "name": "torch_dynamo_resume_in_f_at_5", "filename": 1}]
    for metrics in (None, {**METRICS, "co_name": "", "co_filename": ""}):
        f = _one(AttemptLog(start_stack=stack, texts={"dynamo": (SIN, 1)}), metrics)
        assert f.code == "t.py:5 in torch_dynamo_resume_in_f_at_5"
        assert f.meta["stack"] == ["t.py:7 in <module>", "t.py:5 in torch_dynamo_resume_in_f_at_5"]


def test_a_compile_torch_named_no_code_for():
    """Nothing names the code: unknown, said; a later compile of the same frame id takes the earlier code
    (Note [Code object from the frame id])."""
    f = _one(AttemptLog(), {**METRICS, "co_name": None, "co_filename": None})
    assert (f.code, f.problems[0]) == ("unknown", "torch did not say which code object this compile was for")
    reason = ("Dynamo recompile limit exceeded\n  Explanation: Dynamo attempted to recompile the code object too many "
              "times, exceeding the recompile_limit cache size limit (currently set to 1).")
    refused = {**METRICS, "co_name": None, "co_filename": None, "co_firstlineno": None, "graph_op_count": None,
               "fail_type": "Unsupported", "fail_reason": reason}  # as torch logs a compile recompile_limit refused
    cap = assemble(_state(((0, 0, 0), AttemptLog(texts={"dynamo": (SIN, 1)})), ((0, 1, 0), AttemptLog()),
                          info={(0, 0): AttemptInfo(metrics=dict(METRICS), final_attempt=0),
                                (0, 1): AttemptInfo(metrics=refused, final_attempt=0)}))
    assert [f.code for f in cap.frames] == ["t.py:3 in f", "t.py:3 in f"]
    assert (cap.frames[1].status, cap.frames[1].status_reason) == ("failed", f"Unsupported: {reason}")


def test_the_stack_of_dynamo_start_is_logged_once_for_attempt_0():
    stack = [{"line": 9, "name": "<module>", "filename": 1}, {"line": 3, "name": "f", "filename": 1}]
    info = {(0, 0): AttemptInfo(metrics={**METRICS, "restart_reasons": ["Call to `torch._dynamo.graph_break()`"]},
                                final_attempt=1, break_reasons={0: ["Call to `torch._dynamo.graph_break()`"]})}
    cap = assemble(_state(((0, 0, 0), AttemptLog(start_stack=stack)), ((0, 0, 1), AttemptLog(texts={"dynamo": (SIN, 1)})),
                          info=info))
    assert [f.meta.get("stack") for f in cap.frames] == [["t.py:9 in <module>", "t.py:3 in f"]] * 2
    other = assemble(_state(((3, 1, 0), AttemptLog(start_stack=stack)), ((3, 1, 1), AttemptLog(texts={"dynamo": (SIN, 1)})),
                            ((1, 1, 0), AttemptLog(start_stack=stack[:1])), info={(3, 1): info[(0, 0)]}))
    assert [f.meta.get("stack") for f in other.frames] == [["t.py:9 in <module>", "t.py:3 in f"]] * 2 + [["t.py:9 in <module>"]]
    alone = assemble(_state(((0, 0, 1), AttemptLog(texts={"dynamo": (SIN, 1)})), info=info))  # attempt 0 not in the log
    assert "stack" not in alone.frames[0].meta
    assert "stack" not in _one(AttemptLog()).meta


# -- graphs -------------------------------------------------------------------------------------
def test_a_graph_without_bodies_is_parsed_on_first_read():
    f = _one(AttemptLog(texts={"dynamo": (SIN, 12)}))
    assert (f.graph.code, f.graph.name, f.graph.parsed) == (SIN, "", False)
    assert [(n.name, n.op, n.target) for n in f.graph.nodes] == [("l_x_", "placeholder", "L_x_"),
                                                                  ("sin", "call_method", "sin"), ("output", "output", "output")]
    assert f.graph.placeholders[0].role == "unknown"  # L['x'] is not named by the log here
    assert (f.status, f.subgraphs, f.problems) == ("compiled", {}, [])


def test_a_graph_text_that_does_not_parse():
    """Its text is kept (so the attempt still has a graph), its nodes are none, and the frame says why."""
    waits = _one(AttemptLog(texts={"dynamo": (BROKEN, 12)}))
    assert (waits.graph.code, waits.status) == (BROKEN, "compiled")
    assert waits.problems[0].startswith("line 12: output graph text not parsed (SyntaxError: ")  # read by problems
    assert waits.graph.nodes == []
    with_body = BROKEN + "\n    class wrap_body_0(torch.nn.Module):\n        pass\n"
    now = _one(AttemptLog(texts={"dynamo": (with_body, 12)}))
    assert (now.graph.code, now.graph.nodes, now.subgraphs, now.status) == (with_body, [], {}, "compiled")
    assert now.problems[0].startswith("line 12: output graph text not parsed (SyntaxError: ")


def test_a_graph_with_bodies_is_parsed_at_load_into_its_subgraph_tree():
    """wrap's body inputs are fed by the call (s77, l_x_, l_n_); operand or lifted is not in the log, so
    their kind is "unknown", said once in LOG_LIMITS and not per frame."""
    st_events = [_symbol("s77", "L['x'].size()[0]"), _symbol("s86", "L['n']", "2", "[-int_oo, int_oo]")]
    f = _one(AttemptLog(texts={"dynamo": (WRAP, 30)}, sources=["L['x']"], shape_events=st_events))
    assert f.graph.parsed and (f.graph.code, f.graph.name) == (WRAP, "")
    assert list(f.subgraphs) == ["wrap_body_0"]
    body = f.subgraphs["wrap_body_0"]
    assert (body.hop, body.parent, body.call_node) == ("wrap", "", "wrap")
    assert [(i.name, i.kind, i.source, i.supplied) for i in body.inputs] == [
        ("s77", "unknown", "s77", ""), ("l_x_", "unknown", "l_x_", ""), ("l_n_", "unknown", "l_n_", "")]
    roles = {n.name: n.role for n in f.graph.nodes}
    assert (roles["wrap_body_0"], roles["wrap"]) == ("op", "hop")  # the body module is no parameter
    assert _roles(f.graph) == [("s77", "lifted_symbol", "L['x'].size()[0]"), ("L_x_", "unknown", "L['x']"),
                               ("L_n_", "unknown", "L['n']")]
    assert f.problems == []


def test_nested_bodies_of_a_dynamo_graph_have_qualified_names():
    text = NESTED.replace("class <lambda>", "class GraphModule")
    f = _one(AttemptLog(texts={"dynamo": (text, 1)}))
    assert list(f.subgraphs) == ["true_graph_0", "false_graph_0", "true_graph_0.true_graph_0", "true_graph_0.false_graph_0"]
    inner = f.subgraphs["true_graph_0.false_graph_0"]
    assert (inner.parent, inner.hop, [i.source for i in inner.inputs]) == ("true_graph_0", "cond", ["arg0_1"])
    assert [n.name for n in inner.graph.nodes] == ["arg0_1", "cos", "output"]


def test_hop_calls_are_the_calls_that_read_a_body():
    """A get_attr of a body is no parameter; a get_attr of a tensor constant stays one and a call reading
    it, or only reading a HOP's result (getitem), is no HOP call. A call that passes fewer values than the
    body has placeholders: the body's sources are unknown, said with the body's name."""
    text = SIN.replace('        sin: "f32[3][1]cpu" = l_x_.sin();  l_x_ = None\n        return (sin,)\n', """\
        _tensor_constant0 = self._tensor_constant0
        wrap_body_0 = self.wrap_body_0
        wrap = torch.ops.higher_order.wrap(wrap_body_0, l_x_);  wrap_body_0 = l_x_ = None
        getitem: "f32[3][1]cpu" = wrap[0];  wrap = None
        add: "f32[3][1]cpu" = getitem + _tensor_constant0;  getitem = _tensor_constant0 = None
        return (add,)

    class wrap_body_0(torch.nn.Module):
        def forward(self, l_x_: "f32[3][1]cpu", extra):
            sin: "f32[3][1]cpu" = l_x_.sin();  l_x_ = None
            return (sin,)
""")
    f = _one(AttemptLog(texts={"dynamo": (text, 1)}))
    assert [(n.name, n.role) for n in f.graph.nodes] == [
        ("l_x_", "unknown"), ("_tensor_constant0", "param"), ("wrap_body_0", "op"), ("wrap", "hop"), ("getitem", "op"),
        ("add", "op"), ("output", "output")]
    assert f.graph.node("wrap").calls == ["wrap_body_0"]
    assert [(i.name, i.kind, i.source) for i in f.subgraphs["wrap_body_0"].inputs] == [("l_x_", "unknown", ""), ("extra", "unknown", "")]
    assert f.problems == ["body 'wrap_body_0' called by 'wrap': the call passes 1 values for 2 placeholders; "
                          "their sources are unknown"]


def test_each_body_of_a_call_is_fed_as_that_body():
    """autograd_function_apply(fwd, bwd, *args): the forward gets the call's operands, the backward the
    gradients of the outputs and the values the forward saved (hop_supplied, as live)."""
    text = AUTOGRAD  # the logged graph of tests/test_trace_log_feeds.py
    f = _one(AttemptLog(texts={"dynamo": (text, 1)}))
    assert {k: [(i.name, i.kind, i.source, i.supplied) for i in b.inputs] for k, b in f.subgraphs.items()} == {
        "fwd_body_0": [("l_x_", "unknown", "l_x_", ""), ("cos", "unknown", "arg", "")],
        "bwd_body_0": [("g", "hop_supplied", "", "grad of output 0"), ("arg", "hop_supplied", "", "saved[0] of fwd_body_0"),
                       ("l_x_", "hop_supplied", "", "saved[1] of fwd_body_0")]}
    assert f.problems == []


# -- AOT graphs ---------------------------------------------------------------------------------
def test_an_inference_graph_is_the_forward():
    f = _one(AttemptLog(texts={"dynamo": (SIN, 1), "inference": (FORWARD, 20)}))
    assert (f.aot.mode, f.aot.joint, f.aot.backward, f.aot.backward_ran) == ("inference", None, None, False)
    assert f.aot.forward is f.aot.inference and f.aot.forward.code == FORWARD and f.aot.forward.name == "inference"
    assert f.aot.subgraphs == {} and not f.aot.forward.parsed  # no bodies: parsed on first read


def test_training_graphs_and_whether_the_backward_was_compiled():
    both = _one(AttemptLog(texts={"dynamo": (SIN, 1), "forward": (FORWARD, 20), "backward": (BACKWARD, 40)}))
    assert (both.aot.mode, both.aot.joint, both.aot.inference, both.aot.backward_ran) == ("training", None, None, True)
    assert [(g.name, g.code) for g in (both.aot.forward, both.aot.backward)] == [("forward", FORWARD), ("backward", BACKWARD)]
    assert [n.name for n in both.aot.backward.placeholders] == ["primals_1", "tangents_1"]
    fwd = _one(AttemptLog(texts={"dynamo": (SIN, 1), "joint": (BACKWARD, 10), "forward": (FORWARD, 20)}))
    assert (fwd.aot.mode, fwd.aot.backward, fwd.aot.backward_ran, fwd.aot.joint.code) == ("training", None, False, BACKWARD)
    assert fwd.aot.joint.name == "joint"
    assert _one(AttemptLog(texts={"dynamo": (SIN, 1)})).aot is None


def test_aot_bodies_are_flattened_under_the_graphs_name():
    f = _one(AttemptLog(texts={"dynamo": (SIN, 1), "inference": (NESTED, 20)}))
    assert f.aot.forward.parsed and [n.name for n in f.aot.forward.nodes][:3] == ["arg0_1", "sum_1", "gt"]
    assert list(f.aot.subgraphs) == ["inference.true_graph_0", "inference.true_graph_0.true_graph_0",
                                     "inference.true_graph_0.false_graph_0", "inference.false_graph_0"]
    assert [n.name for n in f.aot.subgraphs["inference.true_graph_0.false_graph_0"].nodes] == ["arg0_1", "cos", "output"]
    assert f.subgraphs == {} and f.problems == []
    broken = BROKEN + "\n    class b(torch.nn.Module):\n        pass\n"  # has a body: parsed at load
    for k in ("joint", "backward"):
        bad = _one(AttemptLog(texts={"dynamo": (SIN, 1), k: (broken, 9)}))
        g = getattr(bad.aot, k)
        assert (g.code, g.name, g.nodes, bad.aot.subgraphs) == (broken, k, [], {})
        assert bad.problems[0].startswith(f"line 9: {k} graph text not parsed (SyntaxError: ")


def test_an_aot_graph_that_waits_says_its_parse_problem_with_its_line():
    f = _one(AttemptLog(texts={"dynamo": (SIN, 1), "forward": (BROKEN, 23)}))
    assert (f.aot.forward.code, f.aot.forward.name, f.aot.forward.parsed) == (BROKEN, "forward", False)
    assert f.problems[0].startswith("line 23: forward graph text not parsed (SyntaxError: ")
    assert f.aot.forward.nodes == [] and len(f.problems) == 1


def test_aot_graphs_of_an_attempt_without_a_dynamo_graph_are_not_kept():
    no_graph = _one(AttemptLog(texts={"inference": (FORWARD, 20)}), {**METRICS, "graph_op_count": None})
    assert (no_graph.status, no_graph.aot) == ("no_graph", None)
    assert "AOT graphs logged for a compile that produced no Dynamo graph: not kept" in no_graph.problems
    failed = _one(AttemptLog(texts={"dynamo": (SIN, 1), "inference": (FORWARD, 20)}),
                  {**METRICS, "fail_type": "BackendCompilerFailed", "fail_reason": "boom"})
    assert (failed.status, failed.aot.forward.code, failed.problems) == ("failed", FORWARD, [])


def test_aot_graphs_of_an_attempt_that_restarted_are_not_kept():
    """TensorifyScalarRestartAnalysis is raised inside AOTAutograd after it logged its graph."""
    info = {(0, 0): AttemptInfo(metrics={**METRICS, "restart_reasons": ["<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>"]},
                                final_attempt=1)}
    cap = assemble(_state(((0, 0, 0), AttemptLog(texts={"dynamo": (SIN, 1), "inference": (FORWARD, 20)})),
                          ((0, 0, 1), AttemptLog(texts={"dynamo": (SIN, 30), "inference": (FORWARD, 40)})), info=info))
    first, second = cap.frames
    assert (first.status, first.status_reason, first.aot) == ("restarted", "<class 'torch._dynamo.exc.TensorifyScalarRestartAnalysis'>", None)
    assert first.problems == ["AOT graphs logged for an attempt that restarted: not kept"]
    assert (second.status, second.aot.forward.code, second.problems) == ("compiled", FORWARD, [])


# -- statuses and times -------------------------------------------------------------------------
def test_the_time_of_a_restart_is_split_only_for_a_compile_that_restarted_once():
    """settle_status gets how many attempts of this compile restarted (others' attempts do not count)."""
    once = {**METRICS, "restart_reasons": ["Call to `torch._dynamo.graph_break()`"], "dynamo_time_before_restart_s": 0.125}
    twice = {**METRICS, "restart_reasons": ["a", "b"], "dynamo_time_before_restart_s": 0.375}
    keys = [(0, 0, 0), (1, 0, 0), (0, 0, 1), (1, 0, 1), (1, 0, 2)]
    cap = assemble(_state(*((k, AttemptLog(texts={"dynamo": (SIN, 1)})) for k in keys),
                          info={(0, 0): AttemptInfo(metrics=once, final_attempt=1),
                                (1, 0): AttemptInfo(metrics=twice, final_attempt=2)}))
    by_id = {f.compile_id: f for f in cap.frames}
    assert by_id["0/0"].times == {"total": 0.125, "dynamo": 0.125}
    assert by_id["0/0"].status_reason == "Call to `torch._dynamo.graph_break()`"  # one restart: the logged reason
    assert [by_id[i].times for i in ("1/0", "1/0_1")] == [{}, {}]  # which attempt took how long is not logged
    assert [by_id[i].status for i in ("0/0", "1/0", "1/0_1")] == ["restarted"] * 3
    assert by_id["0/0_1"].times == {"total": 0.5, "backend": 0.25, "dynamo": 0.25, "aot_autograd": 0.25, "before_restart": 0.125}
    assert by_id["1/0_2"].status == "compiled"


def test_without_compilation_metrics_a_later_attempt_still_proves_a_restart():
    # Dynamo starts attempt N+1 of a compile only when attempt N raised RestartAnalysis (the attempt loop
    # of torch/_dynamo/convert_frame.py), so a logged attempt 1 says attempt 0 restarted, metrics or not
    cap = assemble(_state(((0, 0, 0), AttemptLog(texts={"dynamo": (SIN, 1)})), ((0, 0, 1), AttemptLog())))
    assert [f.status for f in cap.frames] == ["restarted", "failed"]
    assert cap.frames[0].status_reason == "unknown" and "torch did not say why this attempt restarted" in cap.frames[0].problems
    assert cap.frames[1].status_reason == "unknown: the compile did not finish (torch logged no compilation metrics)"


def test_a_frame_with_no_graph_and_a_failed_compile():
    nog = _one(AttemptLog(), {**METRICS, "graph_op_count": None, "backend_compile_time_s": None,
                              "aot_autograd_cumulative_compile_time_us": None, "dynamo_time_before_restart_s": 0.004})
    assert (nog.status, nog.status_reason, nog.graph.code) == ("no_graph", "unknown", "")
    assert nog.times == {"total": 0.5, "before_restart": 0.004}
    assert nog.problems == ["the compile produced no graph and torch did not say why"]


# -- root roles ---------------------------------------------------------------------------------
ROOTS = '''class GraphModule(torch.nn.Module):
    def forward(self, s77: "Sym(s77)", L_x_: "f32[s77][1]cpu", L_n_: "Sym(s86)", G_y0_: "f32[3][1]cpu", G_w_: "f32[3][1]cpu", G_lin_parameters_weight_: "f32[3, 3][3, 1]cpu", G_a_b_: "f32[3][1]cpu", s5: "Sym(s5)", u0: "Sym(u0)", L_z_0_: "f32[3][1]cpu"):
        l_x_ = L_x_

        # File: /home/u/t.py:4 in f, code: return x.sin()
        sin: "f32[s77][1]cpu" = l_x_.sin();  l_x_ = None
        return (sin,)
'''


def test_root_roles_from_the_sources_the_log_names():
    """Note [Root roles from a log]: each placeholder's Source from describe_source / create_symbol; a frame
    local is unknown, a global or a size lifted (a symbol as lifted_symbol), a Parameter a param; a
    placeholder two Sources would name, or none, is unknown."""
    a = AttemptLog(texts={"dynamo": (ROOTS, 1)},
                   sources=["L['x']", "G['y0']", "G['w']", "G['lin']._parameters['weight']", "G['a_b']", "G['a']['b']",
                            "L['z'][0]"],
                   shape_events=[_symbol("s77", "L['x'].size()[0]"), _symbol("s86", "L['n']", "2", "[-int_oo, int_oo]"),
                                 _symbol("s5", ""), ("create_unbacked_symbol", {"symbol": "u0", "vr": "[-int_oo, int_oo]",
                                                                                "source": "L['u']"}, None)])
    f = _one(a, param_sources={"G['w']"})
    assert not f.graph.parsed
    assert _roles(f.graph) == [
        ("s77", "lifted_symbol", "L['x'].size()[0]"),
        ("L_x_", "unknown", "L['x']"),
        ("L_n_", "unknown", "L['n']"),  # a SymInt argument, named by its create_symbol
        ("G_y0_", "lifted_freevar", "G['y0']"),
        ("G_w_", "param", "G['w']"),  # described as a Parameter
        ("G_lin_parameters_weight_", "param", "G['lin']._parameters['weight']"),
        ("G_a_b_", "unknown", "-"),  # G['a_b'] and G['a']['b'] both give this name
        ("s5", "unknown", "-"),  # its create_symbol names no source
        ("u0", "unknown", "-"),  # an unbacked symbol has no source of its own
        ("L_z_0_", "unknown", "L['z'][0]"),
    ]
    assert f.problems == []


def test_a_symbols_source_also_names_the_placeholder_dynamo_reads_it_from():
    """An unspecialized int L['n'] is read into a placeholder L_n_ and is symbol s86: both are named."""
    text = SIN.replace('forward(self, L_x_: "f32[3][1]cpu")', 'forward(self, G_k_: "Sym(s9)", L_x_: "f32[3][1]cpu")')
    f = _one(AttemptLog(texts={"dynamo": (text, 1)}, shape_events=[_symbol("s9", "G['k']")]))
    assert _roles(f.graph) == [("G_k_", "lifted_symbol", "G['k']"), ("L_x_", "unknown", "-")]
    # a symbol whose source is no graph input of its own: only the symbol's placeholder
    f = _one(AttemptLog(texts={"dynamo": (text.replace("G_k_", "s9"), 1)}, shape_events=[_symbol("s9", "G['k']")]))
    assert _roles(f.graph)[0] == ("s9", "lifted_symbol", "G['k']")


def test_root_roles_of_a_graph_with_bodies_are_set_at_load():
    f = _one(AttemptLog(texts={"dynamo": (WRAP, 1)}, sources=["L['x']", "G['w']"], shape_events=[_symbol("s77", "G['w'].size()[0]")]),
             param_sources={"G['w']"})
    assert _roles(f.graph) == [("s77", "lifted_symbol", "G['w'].size()[0]"), ("L_x_", "unknown", "L['x']"), ("L_n_", "unknown", "-")]


def test_guards_reach_the_frame_when_first_read():
    """tracer/trace_log/guards.py reads them (tests/test_trace_log_guards.py); here: each frame its own."""
    tree = "+- RootGuardManager\n| +- TORCH_FUNCTION_MODE_STACK: ___check_torch_function_mode_stack()"
    cap = assemble(_state(((0, 0, 0), AttemptLog(cpp_guards=tree)), ((1, 0, 0), AttemptLog(guards_json=[{"code": "a is b"}]))))
    assert [[(g.kind, g.code) for g in f.guards] for f in cap.frames] == [
        [("TORCH_FUNCTION_MODE_STACK", ["___check_torch_function_mode_stack()"])], [("", ["a is b"])]]


# -- graph breaks and recompiles ----------------------------------------------------------------
def test_graph_breaks_name_the_capture_local_attempt():
    gbs = [GraphBreak("Call to `torch._dynamo.graph_break()`", "t.py:5", compile_id="stale") for _ in range(3)]
    cap = assemble(_state(((7, 0, 0), AttemptLog()), ((7, 0, 1), AttemptLog()),
                          breaks=[((7, 0, 1), gbs[0]), (None, gbs[1]), ((8, 0, 0), gbs[2])]))
    assert [gb.compile_id for gb in cap.graph_breaks] == ["0/0_1", "", ""]
    assert cap.graph_breaks == gbs


def test_one_recompile_per_recompile_reasons_record():
    keys = [(2, 0, 0), (2, 1, 0), (2, 2, 0)]
    info = {k[:2]: AttemptInfo(metrics=dict(METRICS), final_attempt=0) for k in keys}
    cap = assemble(_state(*((k, AttemptLog(texts={"dynamo": (SIN, 1)})) for k in keys), info=info,
                          recompiles=[((2, 1), ["2/0: tensor 'x' size mismatch at index 0. expected 3, actual 5"]),
                                      ((2, 2), ["2/1: n == 1      # f.py:3", "2/0: n == 0"]),
                                      ((9, 0), ["9/0: lost"])]))  # its compile is not in the log: no record
    assert [(r.compile_id, r.reason, r.failed, r.replaced) for r in cap.recompiles] == [
        ("0/1", "0/0: tensor 'x' size mismatch at index 0. expected 3, actual 5",
         ["0/0: tensor 'x' size mismatch at index 0. expected 3, actual 5"], "0/0"),
        ("0/2", "0/1: n == 1  # f.py:3", ["0/1: n == 1  # f.py:3", "0/0: n == 0"], "0/1")]
    assert cap.problems == []
    # diffed when first read (as live, but lazily): loading parses no graph
    assert [f.graph.parsed for f in cap.frames] == [False, False, False]
    assert cap.recompiles[0].diff is not None
    assert [f.graph.parsed for f in cap.frames] == [True, True, False]


# -- shapes and DDP -----------------------------------------------------------------------------
def test_shape_symbols_are_read_by_the_live_captures_reader():
    f = _one(AttemptLog(texts={"dynamo": (WRAP, 1)}, shape_events=[_symbol("s77", "L['x'].size()[0]")]))
    assert [(s.name, s.source, s.value, s.range, [(u.file, u.line, u.fn) for u in s.user_stack]) for s in f.symbols] == [
        ("s77", "L['x'].size()[0]", "4", "[2, int_oo]", [("/home/u/t.py", 7, "f")])]
    # a range starting at 2 is Dynamo's 0/1 specialization (Note [Where a specialization came from])
    assert [(s.kind, s.symbol, s.sources) for s in f.specializations] == [("zero_one", "s77", ["L['x'].size()[0]"])]
    assert f.shape_guards == []


def test_ddp_split_graphs_are_kept_in_meta():
    f = _one(AttemptLog(texts={"dynamo": (SIN, 1)}, ddp_split="class GraphModule(torch.nn.Module): ...",
                        ddp_children={"submod_0": "class GraphModule(torch.nn.Module): ..."}))
    assert f.meta["ddp_split"] == {"graph": "class GraphModule(torch.nn.Module): ...",
                                   "children": {"submod_0": "class GraphModule(torch.nn.Module): ..."}}
    assert "ddp_split" not in _one(AttemptLog(texts={"dynamo": (SIN, 1)})).meta


def test_a_guard_trees_tied_sources_are_read_once_per_text(monkeypatch):
    # every step compiled again logs an equal tree: its identity checks are read once, each attempt
    # getting its own set of the same Sources
    import sys

    asm = sys.modules["tracer.trace_log.assemble"]  # the package's ``assemble`` is the function

    tree = ("TREE_GUARD_MANAGER:\n+- RootGuardManager\n| +- GuardManager: source=L['a']\n"
            "| | +- OBJECT_ALIASING: L['a']._parameters['w'] is L['b']._parameters['w']\n"
            "| | +- ID_MATCH: ___check_obj_id(L['x'], 7)\n")
    first = asm._tied(None, tree)
    assert first == {"L['a']._parameters['w']", "L['b']._parameters['w']"}
    first.add("changed by its caller")

    def no_scan(*_a):
        raise AssertionError("the tree was read again")

    monkeypatch.setattr(asm, "lines_with", no_scan)
    again = asm._tied(None, "".join(list(tree)))  # an equal text, another string object
    assert again == {"L['a']._parameters['w']", "L['b']._parameters['w']"}
