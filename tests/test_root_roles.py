"""Root placeholder roles: the one policy (tracer/root_roles.py) and how a log feeds it the Sources it names
(Note [Root roles from a log] in tracer/trace_log/assemble.py). Hand-written graphs and log records."""

from __future__ import annotations

import pytest

from tracer.model import Graph, Node
from tracer.root_roles import placeholder_name, root_role
from tracer.trace_log.assemble import _graph_input_sources, _root_roles
from tracer.trace_log.events import AttemptLog, LogState

ARGS = {"x", "xs", "self", "n"}


@pytest.mark.parametrize("source, parameter, symbolic, live, log", [
    ("L['x']", False, False, "operand", "unknown"),
    ("L['n']", False, True, "operand", "unknown"),  # an int argument made a SymInt is still the user's
    ("L['xs'][0]", False, False, "operand", "unknown"),
    ("L['y']", False, False, "lifted_freevar", "unknown"),  # a closure variable: not an argument
    ("L['x'].size()[0]", False, True, "lifted_symbol", "lifted_symbol"),
    ("G['w']", False, False, "lifted_freevar", "lifted_freevar"),
    ("L['self'].scale", False, False, "lifted_freevar", "lifted_freevar"),  # a module attribute
    ("L['self']._modules['lin']._parameters['weight']", False, False, "param", "param"),
    ("L['self']._buffers['running_mean']", False, False, "param", "param"),
    ("G['p']", True, False, "param", "param"),  # a Parameter read from a global
])
def test_one_policy_live_and_log(source, parameter, symbolic, live, log):
    assert root_role(source, parameter=parameter, symbolic=symbolic, arg_names=ARGS) == live
    assert root_role(source, parameter=parameter, symbolic=symbolic, arg_names=None) == log


def test_placeholder_name_is_dynamos():
    assert placeholder_name("L['x']") == "L_x_"
    assert placeholder_name("L['self']._modules['lin']._parameters['weight']") == "L_self_modules_lin_parameters_weight_"
    assert placeholder_name("G['w']") == "G_w_"


def _ph(target: str, kind: str = "tensor") -> Node:
    return Node(target.lower(), "placeholder", target, meta={"kind": kind})


def test_a_log_reads_sources_from_described_tensors_and_created_symbols():
    st = LogState({})
    a = AttemptLog(sources=["L['x']", "L['self']._modules['lin']._parameters['weight']", "G['w']", "G['p']"],
                   shape_events=[("create_symbol", {"symbol": "s77", "source": "L['x'].size()[0]"}, None),
                                 ("create_symbol", {"symbol": "s5", "source": "L['n']"}, None)])
    st.param_sources.add("G['p']")
    sources = _graph_input_sources(a, st)
    g = Graph(nodes=[_ph("s77", "symint"), _ph("L_x_"), _ph("L_n_", "symint"), _ph("G_w_"), _ph("G_p_"),
                     _ph("L_self_modules_lin_parameters_weight_"), _ph("L_z_")])
    _root_roles(g, sources, set())  # no tied sources in this log
    assert [(n.target, n.role, n.meta.get("graph_arg_source")) for n in g.nodes] == [
        ("s77", "lifted_symbol", "L['x'].size()[0]"),
        ("L_x_", "unknown", "L['x']"),
        ("L_n_", "unknown", "L['n']"),
        ("G_w_", "lifted_freevar", "G['w']"),
        ("G_p_", "param", "G['p']"),  # describe_tensor said it is a Parameter
        ("L_self_modules_lin_parameters_weight_", "param", "L['self']._modules['lin']._parameters['weight']"),
        ("L_z_", "unknown", None),  # the log names no Source for it
    ]


def test_a_name_two_sources_would_give_is_unknown():
    """L['a_b'] and L['a']['b'] both make L_a_b_: the log cannot tell which one the placeholder read."""
    a = AttemptLog(sources=["L['a_b']", "G['a_b']", "L['a']['b']"])
    sources = _graph_input_sources(a, LogState({}))
    assert "L_a_b_" not in sources and sources["G_a_b_"] == ("G['a_b']", False)
    g = Graph(nodes=[_ph("L_a_b_"), _ph("G_a_b_")])
    _root_roles(g, sources, set())  # no tied sources in this log
    assert [n.role for n in g.nodes] == ["unknown", "lifted_freevar"]


def test_a_log_knows_a_parameter_from_its_describe_tensor_record():
    from tracer.trace_log.events import apply
    from tracer.trace_log.reader import Record

    st = LogState({})
    ids = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}
    for meta, line in [
        ({"describe_tensor": {"id": 3, "describer_id": 1, "is_parameter": True}, **ids}, 1),
        ({"describe_source": {"id": 3, "describer_id": 1, "source": "G['p']"}, **ids}, 2),
        ({"describe_tensor": {"id": 4, "describer_id": 1}, **ids}, 3),  # as_json leaves is_parameter=False out
        ({"describe_source": {"id": 4, "describer_id": 1, "source": "L['x']"}, **ids}, 4),
        ({"describe_source": {"id": 5, "describer_id": 1}, **ids}, 5),  # damaged: no source
    ]:
        apply(Record(meta, None, line), st)
    assert st.param_sources == {"G['p']"}
    assert st.attempts[(0, 0, 0)].sources == ["G['p']", "L['x']"]
    assert st.problems == ["line 5: describe_source not read (ValueError: describe_source has no source)"]
