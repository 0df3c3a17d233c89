"""tracer.trace_log.graph_text and .deferred on hand-written ``print_readable`` texts.

The texts are written as torch 2.13's fx prints them in a TORCH_TRACE log (torch/fx/graph.py
``_gen_python_code`` / graph_module.py ``_print_readable``; compared with the dynamo_output_graph,
aot_joint_graph and aot_backward_graph records of a log of tests/trace_log_child.py): "# File:" and
"# No stacktrace found" comments before the nodes they describe, "; a = b = None" frees on a node's
line, HOP bodies as nested classes, AOT graphs with a pytree-flattened signature.
"""

from __future__ import annotations

import ast

import pytest

from tracer.model import Frame, Graph
from tracer.model.lazy import peek
from tracer.trace_log.deferred import deferred_graph, has_bodies, parse_logged, problems_wait_for_graphs
from tracer.trace_log.graph_text import meta_of_annotation, parse_readable

T23 = {"kind": "tensor", "dtype": "float32", "shape": [2, 3], "stride": [3, 1], "device": "cpu"}
T33 = {"kind": "tensor", "dtype": "float32", "shape": [3, 3], "stride": [3, 1], "device": "cpu"}


def _nodes(g: Graph) -> list[tuple]:
    return [(n.name, n.op, n.target, n.args, n.kwargs, n.inputs, n.users, n.role) for n in g.nodes]


@pytest.mark.parametrize("ann, meta", [
    ("f32[2, 3][3, 1]cpu", T23),
    ("f32[2, s0][s0, 1]cpu", {"kind": "tensor", "dtype": "float32", "shape": [2, "s0"], "stride": ["s0", 1], "device": "cpu"}),
    ("i64[][]cpu", {"kind": "tensor", "dtype": "int64", "shape": [], "stride": [], "device": "cpu"}),
    ("bf16[4][1]cuda:0", {"kind": "tensor", "dtype": "bfloat16", "shape": [4], "stride": [1], "device": "cuda:0"}),
    ("b8[ 5 ,-1 ]", {"kind": "tensor", "dtype": "bool", "shape": [5, -1]}),
    ("u8[3]meta", {"kind": "tensor", "dtype": "uint8", "shape": [3], "device": "meta"}),
    ("f8e4m3fn[2][1]", {"kind": "tensor", "dtype": "float8_e4m3fn", "shape": [2], "stride": [1]}),
    ("c64[u0, 2*s1]", {"kind": "tensor", "dtype": "complex64", "shape": ["u0", "2*s1"]}),
    ("Sym(s77)", {"kind": "symint", "value": "s77"}),
    ("Sym(s0 + 1)", {"kind": "symint", "value": "s0 + 1"}),
    ("Sym(s0", {"kind": "opaque", "type": "Sym(s0"}),
    ("x32[2]cpu", {"kind": "opaque", "type": "x32[2]cpu"}),
    ("f32", {"kind": "opaque", "type": "f32"}),
    ("int", {"kind": "opaque", "type": "int"}),
    ("", {}),
])
def test_meta_of_annotation(ann, meta):
    assert meta_of_annotation(ann) == meta


@pytest.mark.parametrize("abbr, dtype", [("f32", "float32"), ("f64", "float64"), ("f16", "float16"), ("bf16", "bfloat16"),
                                         ("i64", "int64"), ("i32", "int32"), ("i16", "int16"), ("i8", "int8"),
                                         ("u8", "uint8"), ("b8", "bool"), ("c64", "complex64"), ("c128", "complex128"),
                                         ("f8e4m3fn", "float8_e4m3fn"), ("f8e5m2", "float8_e5m2")])
def test_every_dtype_abbreviation_fx_prints(abbr, dtype):
    assert meta_of_annotation(f"{abbr}[1]")["dtype"] == dtype  # torch/fx/graph.py dtype_abbrs


# A Dynamo output graph with a wrap body, as in the log (file path shortened).
DYNAMO = '''class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 3][3, 1]cpu", L_w_: "f32[3, 3][3, 1]cpu"):
        l_x_ = L_x_
        l_w_ = L_w_

        # File: /home/u/train.py:12 in hop_and_break, code: y = wrap(lambda a: (a @ w).sin(), x)
        wrap_body_0 = self.wrap_body_0
        wrap = torch.ops.higher_order.wrap(wrap_body_0, l_x_, l_w_);  wrap_body_0 = l_x_ = l_w_ = None
        y: "f32[2, 3][3, 1]cpu" = wrap[0];  wrap = None
        return (y,)

    class wrap_body_0(torch.nn.Module):
        def forward(self, l_x_: "f32[2, 3][3, 1]cpu", l_w_: "f32[3, 3][3, 1]cpu"):
            # File: /home/u/train.py:12 in <lambda>, code: y = wrap(lambda a: (a @ w).sin(), x)
            matmul: "f32[2, 3][3, 1]cpu" = l_x_ @ l_w_;  l_x_ = l_w_ = None
            sin: "f32[2, 3][3, 1]cpu" = matmul.sin();  matmul = None
            return (sin,)
'''
SRC = {"file": "/home/u/train.py", "line": 12, "fn": "hop_and_break", "code": "y = wrap(lambda a: (a @ w).sin(), x)"}


def test_dynamo_graph_with_a_hop_body():
    p = parse_readable("\n\n" + DYNAMO, "")
    assert _nodes(p.graph) == [
        ("l_x_", "placeholder", "L_x_", [], {}, [], ["wrap"], "operand"),
        ("l_w_", "placeholder", "L_w_", [], {}, [], ["wrap"], "operand"),
        ("wrap_body_0", "get_attr", "wrap_body_0", [], {}, [], ["wrap"], "param"),
        ("wrap", "call_function", "wrap", ["wrap_body_0", "l_x_", "l_w_"], {}, ["wrap_body_0", "l_x_", "l_w_"], ["y"], "op"),
        ("y", "call_function", "operator.getitem", ["wrap", "0"], {}, ["wrap"], ["output"], "op"),
        ("output", "output", "output", ["(y,)"], {}, ["y"], [], "output"),
    ]
    n = {x.name: x for x in p.graph.nodes}
    assert n["l_x_"].meta == T23 and n["l_w_"].meta == T33
    assert n["wrap_body_0"].meta == {"source": SRC} and n["wrap"].meta == {"source": SRC}
    assert n["y"].meta == {**T23, "source": SRC}
    assert n["output"].meta == {} and p.errors == [] and p.graph.name == ""
    assert list(p.children) == ["wrap_body_0"]
    body = p.children["wrap_body_0"]
    assert body.graph.name == "wrap_body_0"
    assert _nodes(body.graph) == [
        ("l_x_", "placeholder", "l_x_", [], {}, [], ["matmul"], "operand"),
        ("l_w_", "placeholder", "l_w_", [], {}, [], ["matmul"], "operand"),
        ("matmul", "call_function", "operator.matmul", ["l_x_", "l_w_"], {}, ["l_x_", "l_w_"], ["sin"], "op"),
        ("sin", "call_method", "sin", ["matmul"], {}, ["matmul"], ["output"], "op"),
        ("output", "output", "output", ["(sin,)"], {}, ["sin"], [], "output"),
    ]
    # the body's first "# File:" line follows its signature
    assert body.graph.nodes[2].meta["source"] == {**SRC, "fn": "<lambda>"}
    assert body.graph.code == (
        'class GraphModule(torch.nn.Module):\n    def forward(self, l_x_: "f32[2, 3][3, 1]cpu", l_w_: "f32[3, 3][3, 1]cpu"):\n'
        "        # File: /home/u/train.py:12 in <lambda>, code: y = wrap(lambda a: (a @ w).sin(), x)\n"
        '        matmul: "f32[2, 3][3, 1]cpu" = l_x_ @ l_w_;  l_x_ = l_w_ = None\n'
        '        sin: "f32[2, 3][3, 1]cpu" = matmul.sin();  matmul = None\n        return (sin,)\n')
    named = parse_readable(DYNAMO, "dyn")
    assert named.children["wrap_body_0"].graph.name == "dyn.wrap_body_0" and named.graph.name == "dyn"


def test_a_backward_node_reads_the_forward_line_torch_2_15_prints():
    """torch 2.15 prints an AOT backward node's stack (its forward node's, as 2.13 prints it with "# File:") as
    "# Backward of forward node: File: ..." (torch/fx/graph.py): those nodes take that line, not the one before
    (the text is 2.15's joint graph of tests/log_modules_child.py "lines", paths shortened)."""
    text = '''class inner_f(torch.nn.Module):
    def forward(self, primals_1: "f32[8][1]cpu", tangents_1: "f32[3, 4][4, 1]cpu"):
        # File: /t/child.py:52 in forward, code: return self.out(y)
        t: "f32[8, 4][1, 8]cpu" = torch.ops.aten.t.default(primals_1);  primals_1 = None

        # Backward of forward node: File: /t/child.py:51 in forward, code: y = self.scale(x).tanh()
        detach_1: "f32[3, 4][4, 1]cpu" = torch.ops.aten.detach.default(tangents_1);  tangents_1 = None
        return (t, detach_1)
'''
    g = parse_readable(text, "joint").graph
    assert g.node("t").meta["source"]["line"] == 52
    assert g.node("detach_1").meta["source"] == {"file": "/t/child.py", "line": 51, "fn": "forward",
                                                 "code": "y = self.scale(x).tanh()"}


def test_a_node_after_no_stacktrace_has_no_source():
    """fx writes "# No stacktrace found for following nodes" when the stack changes to none: those nodes have
    no source line, and must not keep the one before."""
    text = '''class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3][1]cpu"):
        # File: /a/m.py:7 in f, code: y = x.sin()
        sin: "f32[3][1]cpu" = torch.sin(x)
        # No stacktrace found for following nodes
        cos: "f32[3][1]cpu" = torch.cos(sin)
        neg = -cos
        # File: m.py:notanumber in g, code: z = a, b
        add = neg + 1
        # File: m.py:9 in h
        mul = add * 2
        return (mul,)
'''
    g = parse_readable(text).graph
    sources = {n.name: n.meta.get("source") for n in g.nodes}
    assert sources == {"x": None, "sin": {"file": "/a/m.py", "line": 7, "fn": "f", "code": "y = x.sin()"},
                       "cos": None, "neg": None,
                       "add": {"file": "m.py", "line": 0, "fn": "g", "code": "z = a, b"},
                       "mul": {"file": "m.py", "line": 9, "fn": "h", "code": ""}, "output": None}
    assert [(n.name, n.target, n.args) for n in g.nodes[1:-1]] == [
        ("sin", "torch.sin", ["x"]), ("cos", "torch.cos", ["sin"]), ("neg", "operator.neg", ["cos"]),
        ("add", "operator.add", ["neg", "1"]), ("mul", "operator.mul", ["add", "2"])]
    assert g.nodes[2].meta["source"] is None if "source" in g.nodes[2].meta else True
    sin = g.nodes[1]
    assert sin.meta["source"] is not g.nodes[1 + 3].meta.get("source")  # each node has its own copy


# The joint graph of a Linear as the log's aot_joint_graph record holds it.
JOINT = '''class inner_f(torch.nn.Module):
    def forward(
        self,
        primals,
        tangents,
    ):
        primals_1: "f32[3, 3][3, 1]cpu"  # PlainAOTInput(idx=0)
        primals_2: "f32[3][1]cpu"  # PlainAOTInput(idx=1)
        tangents_1: "f32[2, 3][3, 1]cpu"  # TangentAOTInput(output=PlainAOTOutput(idx=0))
        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        # No stacktrace found for following nodes
        t: "f32[3, 3][1, 3]cpu" = torch.ops.aten.t.default(primals_1);  primals_1 = None
        sum_1: "f32[1, 3][3, 1]cpu" = torch.ops.aten.sum.dim_IntList(tangents_1, [0], True);  tangents_1 = None
        view: "f32[3][1]cpu" = torch.ops.aten.view.default(sum_1, [3]);  sum_1 = None
        return pytree.tree_unflatten([
            t,  # PlainAOTOutput(idx=0)
            view,  # GradAOTOutput(grad_of=PlainAOTInput(idx=1))
            None,  # None
        ], self._out_spec)
'''


def test_aot_joint_graph_with_a_pytree_signature():
    p = parse_readable(JOINT, "joint")
    assert p.errors == []
    assert _nodes(p.graph) == [
        ("primals_1", "placeholder", "primals_1", [], {}, [], ["t"], "operand"),
        ("primals_2", "placeholder", "primals_2", [], {}, [], [], "operand"),
        ("tangents_1", "placeholder", "tangents_1", [], {}, [], ["sum_1"], "operand"),
        ("t", "call_function", "aten.t.default", ["primals_1"], {}, ["primals_1"], ["output"], "op"),
        ("sum_1", "call_function", "aten.sum.dim_IntList", ["tangents_1", "[0]", "True"], {}, ["tangents_1"], ["view"], "op"),
        ("view", "call_function", "aten.view.default", ["sum_1", "[3]"], {}, ["sum_1"], ["output"], "op"),
        ("output", "output", "output", [p.graph.nodes[-1].args[0]], {}, ["t", "view"], [], "output"),
    ]
    assert ast.literal_eval(p.graph.nodes[-1].args[0].replace("t", "1").replace("view", "2")) == [1, 2, None]
    assert p.graph.nodes[1].meta == {"kind": "tensor", "dtype": "float32", "shape": [3], "stride": [1], "device": "cpu"}
    assert p.graph.nodes[3].meta == {"kind": "tensor", "dtype": "float32", "shape": [3, 3], "stride": [1, 3], "device": "cpu"}


def test_backward_graph_with_a_multiline_signature():
    text = '''class GraphModule(torch.nn.Module):
    def forward(
        self,
        primals_3: "f32[2, 3][3, 1]cpu",  # PlainAOTInput(idx=2)
        tangents_1: "f32[2, 3][3, 1]cpu",  # TangentAOTInput(output=PlainAOTOutput(idx=0))
    ):
        # File: /a/b.py:5 in f, code: x
        mm: "f32[3, 3][3, 1]cpu" = torch.ops.aten.mm.default(tangents_1, primals_3);  primals_3 = None
        return (mm, tangents_1, None)
'''
    g = parse_readable(text).graph
    assert [(n.name, n.meta) for n in g.nodes[:2]] == [("primals_3", T23), ("tangents_1", T23)]
    assert g.nodes[2].meta["source"] == {"file": "/a/b.py", "line": 5, "fn": "f", "code": "x"}
    assert (g.output.inputs, g.output.args) == (["mm", "tangents_1"], ["(mm, tangents_1, None)"])


def test_every_node_form_fx_generates():
    text = '''class GraphModule(torch.nn.Module):
    def forward(self, x, s: "Sym(s0)", *, k: "f32[2]"):
        """a docstring is no node"""
        w = self.layer.weight
        sub = self.sub(x)
        lin = torch._C._nn.linear(x, w, bias = None)
        size = x.size(0)
        ga = getattr(x, "shape")
        nd = (x + w).sum(dim = 1, **extra)
        neq = x != s
        lt = x < s
        inv = ~x
        no = not x
        rs = x >> 1
        mod = x % 2
        idx = x[:, 0:2]
        same = x
        cond = torch.ops.higher_order.cond(lt, self.true_graph_0, self.false_graph_0, (x,))
        c = torch.ops.aten.add.Tensor(x, 1, alpha = 2)
        txt = torch.ops.aten.to(x, "é")
        big = torch.cat([x,
                         x])
        return None
'''
    p = parse_readable(text)
    assert p.errors == []
    got = {n.name: (n.op, n.target, n.args, n.kwargs, n.inputs) for n in p.graph.nodes}
    assert got == {
        "x": ("placeholder", "x", [], {}, []),
        "s": ("placeholder", "s", [], {}, []),
        "w": ("get_attr", "layer.weight", [], {}, []),
        "sub": ("call_module", "sub", ["x"], {}, ["x"]),
        "lin": ("call_function", "torch._C._nn.linear", ["x", "w"], {"bias": "None"}, ["x", "w"]),
        "size": ("call_method", "size", ["x", "0"], {}, ["x"]),
        "ga": ("call_function", "getattr", ["x", '"shape"'], {}, ["x"]),
        "nd": ("call_method", "sum", ["x + w"], {"dim": "1"}, ["x", "w"]),
        "neq": ("call_function", "operator.ne", ["x", "s"], {}, ["x", "s"]),
        "lt": ("call_function", "operator.lt", ["x", "s"], {}, ["x", "s"]),
        "inv": ("call_function", "operator.invert", ["x"], {}, ["x"]),
        "no": ("call_function", "operator.not_", ["x"], {}, ["x"]),
        "rs": ("call_function", "operator.rshift", ["x", "1"], {}, ["x"]),
        "mod": ("call_function", "operator.mod", ["x", "2"], {}, ["x"]),
        "idx": ("call_function", "operator.getitem", ["x", ":, 0:2"], {}, ["x"]),
        "same": ("call_function", "identity", ["x"], {}, ["x"]),
        "cond": ("call_function", "cond", ["lt", "self.true_graph_0", "self.false_graph_0", "(x,)"], {}, ["lt", "x"]),
        "c": ("call_function", "aten.add.Tensor", ["x", "1"], {"alpha": "2"}, ["x"]),
        "txt": ("call_function", "aten.to", ["x", "'é'"], {}, ["x"]),
        "big": ("call_function", "torch.cat", ["[x, x]"], {}, ["x"]),
        "output": ("output", "output", ["None"], {}, []),
    }
    assert p.graph.nodes[1].meta == {"kind": "symint", "value": "s0"}
    assert p.graph.nodes[2].meta == {}  # no "# File:" comment before it: no source
    assert p.graph.nodes[0].meta == {}  # keyword-only k is no placeholder fx writes; x has no annotation
    assert "k" not in got
    bare = parse_readable("class G(torch.nn.Module):\n    def forward(self, x):\n        return\n").graph
    assert (bare.output.args, bare.output.inputs) == ([], [])


def test_annotations_fx_would_not_write_give_no_meta():
    text = ('class G(torch.nn.Module):\n    def forward(self, a: 3, b: int, c: "f32[2]"):\n'
            "        y: 3 = torch.sin(a)\n        z: int = torch.cos(b)\n        return (y, z)\n")
    p = parse_readable(text)
    assert p.errors == []
    assert [n.meta for n in p.graph.nodes] == [{}, {}, {"kind": "tensor", "dtype": "float32", "shape": [2]}, {}, {}, {}]


def test_source_comments_are_read_in_their_own_class_only():
    """A body without a "# File:" line of its own has no source, whatever the graph before it said; a
    Windows path has a drive colon, a directory may have " in " in its name."""
    text = ('class G(torch.nn.Module):\n    def forward(self, x):\n'
            "        # File: C:\\my in dir\\m.py:7 in f, code: y = x.sin()\n"
            "        sin = torch.sin(x)\n        return (sin,)\n\n"
            "    class body_0(torch.nn.Module):\n        def forward(self, a):\n"
            "            cos = torch.cos(a)\n            neg = -cos\n            return (neg,)\n")
    p = parse_readable(text)
    assert p.graph.nodes[1].meta["source"] == {"file": "C:\\my in dir\\m.py", "line": 7, "fn": "f", "code": "y = x.sin()"}
    assert [n.meta for n in p.children["body_0"].graph.nodes] == [{}, {}, {}, {}]


def test_a_placeholder_is_renamed_only_before_it_is_read():
    """Dynamo's "l_x_ = L_x_" names placeholder l_x_ (target L_x_); once L_x_ was read, "y = L_x_" is a node."""
    text = ("class G(torch.nn.Module):\n    def forward(self, L_x_, L_y_):\n        l_x_ = L_x_\n"
            "        a = torch.sin(L_y_)\n        b = L_y_\n        c = l_x_\n        return (a, b, c)\n")
    g = parse_readable(text).graph
    assert [(n.name, n.op, n.target, n.inputs, n.users) for n in g.nodes] == [
        ("l_x_", "placeholder", "L_x_", [], ["c"]), ("L_y_", "placeholder", "L_y_", [], ["a", "b"]),
        ("a", "call_function", "torch.sin", ["L_y_"], ["output"]), ("b", "call_function", "identity", ["L_y_"], ["output"]),
        ("c", "call_function", "identity", ["l_x_"], ["output"]),
        ("output", "output", "output", ["a", "b", "c"], [])]


@pytest.mark.parametrize("stmt, error", [
    ("y = lambda: 1", "graph line 3: expression fx does not generate for a node: lambda: 1"),
    ("y = f(x)(x)", "graph line 3: call of an expression: f(x)(x)"),
    ("a, b = x", "graph line 3: assignment not of one name: a, b = x"),
    ("self.a = x", "graph line 3: assignment not of one name: self.a = x"),
    ("self.a: 'f32[2]' = x", "graph line 3: annotated assignment to something other than a name"),
    ("x = torch.sin(x)", "graph line 3: node 'x' defined twice"),
    ("if x:\n            pass", "graph line 3: unexpected statement: if x:\n    pass"),
    ("y = a < b < c", "graph line 3: expression fx does not generate for a node: a < b < c"),
    ("y = a is b", "graph line 3: expression fx does not generate for a node: a is b"),
    ("y = a and b", "graph line 3: expression fx does not generate for a node: a and b"),
    ("y = x.T", "graph line 3: expression fx does not generate for a node: x.T"),
    ("y = (" + "x + " * 30 + "x)(x)", "graph line 3: call of an expression: " + ("(" + "x + " * 30 + "x)(x)")[:80]),
    ("y = [" + "x, " * 30 + "x]", "graph line 3: expression fx does not generate for a node: " + ("[" + "x, " * 30 + "x]")[:80]),
    ("a, b = " + "x, " * 30 + "x", "graph line 3: assignment not of one name: " + ("a, b = (" + "x, " * 30 + "x)")[:80]),
    ("while " + "x and " * 20 + "x:\n            pass",
     "graph line 3: unexpected statement: " + ("while " + "x and " * 20 + "x:\n    pass")[:80]),
])
def test_a_statement_fx_would_not_write_is_an_error_and_the_rest_is_read(stmt, error):
    text = f"class G(torch.nn.Module):\n    def forward(self, x):\n        {stmt}\n        z = torch.cos(x)\n        return (z,)\n"
    p = parse_readable(text)
    assert p.errors == [error]
    assert [n.name for n in p.graph.nodes] == ["x", "z", "output"]


def test_errors_name_the_graph_and_a_missing_forward():
    p = parse_readable("class G(torch.nn.Module):\n    def forward(self, x):\n        y = lambda: 1\n        return y\n", "g")
    assert p.errors == ["g line 3: expression fx does not generate for a node: lambda: 1"]
    assert p.graph.nodes[-1].inputs == []  # y was not made: the output reads no node
    p = parse_readable("class G(torch.nn.Module):\n    def helper(self, x):\n        return x\n", "g")
    assert (p.errors, p.graph.nodes) == (["g: no forward method"], [])
    assert parse_readable("class G(torch.nn.Module):\n    x = 1\n").errors == ["graph: no forward method"]


@pytest.mark.parametrize("text", ["", "def forward(self):\n    return x\n", " class G:\n  pass",
                                  "Xclass G(torch.nn.Module):\n    pass\n", "\n\tclass G:\n  pass"])
def test_a_text_that_is_not_a_class_is_refused(text):
    with pytest.raises(ValueError, match=r"^graph text does not start with 'class <name>\(torch.nn.Module\):'$"):
        parse_readable(text)


def test_a_damaged_class_text_is_a_syntax_error():
    with pytest.raises(SyntaxError):
        parse_readable("class G(torch.nn.Module):\ndef forward(self):\n")
    with pytest.raises(SyntaxError):
        parse_readable("class G")


# -- deferred.py ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, bodies", [
    (DYNAMO, True), (JOINT, False), ("class A:\n\tclass B:\n", True), ("x\n  \t class B", True),
    ("class A:\n    y = 'class '\n", False), ("class A:\n    # a class  \n", False), ("class A:\n    xclass B", False),
    ("", False), ("class ", False), ("\nclass B", False), ("  class ", True), ("\n  class B", True),
    ("class A:\n    class B(torch.nn.Module):\n        y = 'class '\n", True), ("class A:\n\x0c    class B:", True),
    ("class A:\n  X class B", False),
])
def test_has_bodies(text, bodies):
    assert has_bodies(text) is bodies


def test_parse_logged_keeps_the_text_and_says_what_it_could_not_read():
    problems: list[str] = ["earlier"]
    text = DYNAMO.replace("return (sin,)", "sin2 = lambda: 0\n            return (sin,)")
    p = parse_logged(problems, text, 209, "")
    assert p is not None and p.graph.code == text
    assert problems == ["earlier", "line 209: wrap_body_0 line 17: expression fx does not generate for a node: lambda: 0"]
    nested = "class A(torch.nn.Module):\n    class b(torch.nn.Module):\n        class c(torch.nn.Module):\n            x = 1\n"
    problems = []
    parse_logged(problems, nested, 3, "n")
    assert problems == ["line 3: n: no forward method", "line 3: n.b: no forward method", "line 3: n.b.c: no forward method"]
    problems = []
    assert parse_logged(problems, "not a graph", 4, "") is None
    assert parse_logged(problems, "class A(torch.nn.Module):\n  def f(:\n", 5, "joint") is None
    assert problems[0] == ("line 4: output graph text not parsed (ValueError: graph text does not start with "
                           "'class <name>(torch.nn.Module):')")
    assert problems[1].startswith("line 5: joint graph text not parsed (SyntaxError: ")


def _frame() -> Frame:
    return Frame(compile_id="0/0", code="f.py:1 in f")


def test_a_deferred_graph_is_parsed_on_first_read_with_its_finish():
    f = _frame()
    seen = []
    g = deferred_graph(f, JOINT, 30, "joint", finish=lambda graph: seen.append([n.name for n in graph.nodes]))
    assert (g.code, g.name, g.parsed, seen) == (JOINT, "joint", False, [])
    assert [n.name for n in g.nodes] == ["primals_1", "primals_2", "tangents_1", "t", "sum_1", "view", "output"]
    assert seen == [["primals_1", "primals_2", "tangents_1", "t", "sum_1", "view", "output"]] and g.parsed
    assert f.problems == []
    plain = deferred_graph(f, JOINT, 30, "")
    assert len(plain.nodes) == 7


def test_a_deferred_graph_that_fails_says_so_in_its_frame():
    f = _frame()
    g = deferred_graph(f, "garbage", 12, "forward")
    assert g.nodes == []
    assert f.problems == ["line 12: forward graph text not parsed (ValueError: graph text does not start with "
                          "'class <name>(torch.nn.Module):')"]

    def boom(graph):
        raise KeyError("x")

    f2 = _frame()
    assert deferred_graph(f2, JOINT, 13, "", finish=boom).nodes == []
    assert f2.problems == ["line 13: output graph text not parsed (KeyError: 'x')"]
    f3 = _frame()
    assert deferred_graph(f3, JOINT, 14, "joint", finish=boom).nodes == []
    assert f3.problems == ["line 14: joint graph text not parsed (KeyError: 'x')"]
    f4 = _frame()
    assert [n.name for n in deferred_graph(f4, DYNAMO, 15, "").nodes][-1] == "output"
    assert f4.problems == ["line 15: output graph has bodies ['wrap_body_0'] that were not read"]
    f5 = _frame()
    deferred_graph(f5, DYNAMO, 16, "joint").nodes  # noqa: B018
    assert f5.problems == ["line 16: joint graph has bodies ['wrap_body_0'] that were not read"]

    def long(graph):
        raise KeyError("n" * 400)  # a node name from a damaged log may be that long

    f6 = _frame()
    deferred_graph(f6, JOINT, 17, "joint", finish=long).nodes  # noqa: B018
    assert f6.problems == [("line 17: joint graph text not parsed (KeyError: '" + "n" * 400)[:300]]


def test_problems_wait_for_every_graph_still_waiting():
    from tracer.model import Aot

    f = _frame()
    f.graph = deferred_graph(f, "bad root", 1, "")
    fwd = deferred_graph(f, "bad fwd", 2, "forward")
    f.aot = Aot(mode="inference", joint=None, forward=fwd, backward=None, inference=fwd)
    problems_wait_for_graphs(f)
    assert peek(f, "problems") == [] and not f.graph.parsed
    assert f.problems == ["line 1: output graph text not parsed (ValueError: graph text does not start with "
                          "'class <name>(torch.nn.Module):')",
                          "line 2: forward graph text not parsed (ValueError: graph text does not start with "
                          "'class <name>(torch.nn.Module):')"]  # the shared inference graph parsed once
    done = _frame()
    done.graph = parse_readable(JOINT).graph
    problems_wait_for_graphs(done)  # nothing waits: reading problems parses nothing
    assert done.problems == []
