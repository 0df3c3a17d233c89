"""tracer/trace_log/fx_code.py on damaged and mutated graph texts: ``parse_fast`` answers the ``ast`` reading
(graph_text.py's ``parse_readable``) or hands over (None), never a different answer and never an exception;
fx_code's ``parse_readable`` answers exactly what the ``ast`` one answers, its exception type included.

Seeds: the hand-written texts of tests/test_trace_log_graph_text.py and of this file (every form fx writes:
multi-line signatures and returns, HOP bodies, keyword arguments, operators, comments) and the graph texts of
a real TORCH_TRACE log (tests/trace_log_child.py). Mutations: hypothesis edits (insert, delete, replace a
character or a line piece) drawn from the characters that matter to a tokenizer, and a seeded loop over the
real texts (edits at random places, lines swapped, duplicated or re-indented).
"""

from __future__ import annotations

import glob
import random
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trace_log_graph_text import DYNAMO, JOINT

from tracer.trace_log import fx_lines, reader
from tracer.trace_log.fx_code import parse_fast
from tracer.trace_log.fx_code import parse_readable as parse_readable_fast
from tracer.trace_log.graph_text import ParsedModule, parse_readable

FORMS = '''class GraphModule(torch.nn.Module):
    def forward(
        self,
        primals_1: "f32[2, 3][3, 1]cpu",  # PlainAOTInput(idx=0)
        tangents_1: "f32[2, 3][3, 1]cpu",  # TangentAOTInput(output=PlainAOTOutput(idx=0))
    ):
        # File: /a/b.py:5 in f, code: y = x.sin()
        sin: "f32[2, 3][3, 1]cpu" = torch.ops.aten.sin.default(primals_1);  primals_1 = None
        view: "f32[6][1]cpu" = torch.ops.aten.view.default(sin, [6]);  sin = None
        full: "f32[2][1]cpu" = torch.ops.aten.full.default([2], -inf, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
        mul: "f32[6][1]cpu" = view * -0.5
        pow_1 = view ** 2
        neg = -view
        eq = view == 1e-05
        getitem: "f32[3][1]cpu" = view[(slice(None, None, None), 0)]
        size = view.size(0)
        w = self.layer.weight
         # Backward of forward node: File: /a/b.py:6 in f, code: z = y.cos()
        cat: "f32[12][1]cpu" = torch.ops.aten.cat.default([view,
            mul]);  view = None
        # No stacktrace found for following nodes
        wrap_body_0 = self.wrap_body_0
        wrap = torch.ops.higher_order.wrap(wrap_body_0, cat);  wrap_body_0 = None
        return (
            cat,
            tangents_1,
            None,
        )

    class wrap_body_0(torch.nn.Module):
        def forward(self, cat: "f32[12][1]cpu"):
            # File: /a/b.py:7 in g, code: return c.exp()
            exp: "f32[12][1]cpu" = torch.ops.aten.exp.default(cat);  cat = None
            return (exp,)
'''

CHARS = " \n#()[],.:;=-+*/%~<>!'\"\\\t0123456789eExyz_aA"


def fields(p: ParsedModule) -> tuple:
    """Everything a ParsedModule holds, nested bodies included, as plain comparable data."""
    nodes = [(n.name, n.op, n.target, n.args, n.kwargs, n.inputs, n.users, n.role, n.calls, n.meta)
             for n in p.graph.nodes]
    return (p.graph.name, p.graph.code, nodes, p.errors, [(k, fields(c)) for k, c in p.children.items()])


def check(text: str) -> bool:
    """The property; True when the fast reader answered (did not hand over)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # ast.parse on a damaged text: "invalid decimal literal"
            want: object = fields(parse_readable(text, "g"))
    except Exception as e:  # except: the ast reader's exception is the answer to match
        want = type(e)
    fast = parse_fast(text, "g")  # raises nothing
    if fast is not None:
        assert fields(fast) == want
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            got: object = fields(parse_readable_fast(text, "g"))
    except Exception as e:  # except: compared with the ast reader's
        got = type(e)
    assert got == want
    return fast is not None


def test_the_seeds_are_read_by_the_fast_reader():
    for text in (FORMS, DYNAMO, JOINT):
        assert check(text)
    assert [n.name for n in parse_fast(FORMS, "g").graph.nodes][-3:] == ["wrap_body_0", "wrap", "output"]


def test_a_mutation_that_python_reads_differently_is_handed_over():
    """Texts that look like fx's but are not what the fast reader knows: it hands over, ast decides."""
    head = 'class G(torch.nn.Module):\n    def forward(self, x):\n        '
    for stmt in ["y = -x ** 2", "y = x + x * 2", "y = (x)", "y = f(a=x, x)", "y = f(x, x=1, x=2)", "y = 01",
                 "y = 1_0", "y = 'a' 'b'", "y = b'x'", "y = x if x else x", "y = not x == x", "y = x < x < x",
                 "y = {'a': x}", "y = f(*x)", "y = lambda: x", "y = x.None", "y: 'a' = b = c", "x += 1",
                 "y = x;; z = x", "y = x z = x", "y = '\\n'", "y = f(x for x in x)",
                 # lines the one-regex path (Note [One regex for the common node line]) must refuse too
                 "y = f(if)", "None = f(x)", "y = f(x.None)", "y = f(None = 1)", "y = f(a = 1, a = 2)",
                 "y = f(a = 1, x)", "y = f(01)", "y = f(x);  None = None", "y = f(x);  in = None",
                 "y = f.if(x)"]:
        text = head + stmt + "\n        return y\n"
        assert parse_fast(text, "g") is None, stmt
        check(text)
    assert check(head + 'y: "f32[2]" = f([x, [x]], k = (x,))\n        return y\n')  # not one-regex, still read


def test_an_equal_line_is_read_once_and_its_statements_stay_as_read():
    """Note [Each distinct line read once] (fx_lines.py): an equal line, in another text or at another index,
    gets the same statements back, with its own Line; building graphs from them changes none of them, so a
    text read again (both graphs sharing statements) reads as ``ast`` reads it."""
    line = '        add: "f32[3]" = torch.ops.aten.add.Tensor(x, [1, -2], alpha = 2);  x = None'
    a, b = fx_lines.read_line(line, 8, 3), fx_lines.read_line(line[:8] + line[8:], 8, 7)  # an equal other string
    assert a is not None and b is not None and a[1] is b[1] and (a[0].last, b[0].last) == (3, 7)
    texts = [FORMS, DYNAMO, JOINT, FORMS.replace("tangents_1", "t")]  # the last: equal lines, other nodes
    for text in texts + texts:
        assert check(text)
    assert all(fx_lines._seen[k] == fx_lines._statements(*k) for k in fx_lines._seen)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([FORMS, DYNAMO, JOINT]),
       st.lists(st.tuples(st.floats(0, 1), st.sampled_from(["insert", "delete", "replace"]),
                          st.text(CHARS, min_size=1, max_size=3), st.integers(1, 8)), min_size=1, max_size=4))
def test_mutated_texts(seed, edits):
    text = seed
    for where, how, chars, width in edits:
        i = int(where * len(text))
        if how == "insert":
            text = text[:i] + chars + text[i:]
        elif how == "delete":
            text = text[:i] + text[i + width:]
        else:
            text = text[:i] + chars + text[i + len(chars):]
    check(text)


@pytest.fixture(scope="module")
def real_texts(child_trace_dir) -> list[str]:
    (path,) = glob.glob(str(child_trace_dir / "*.log"))
    with open(path) as fh:
        texts = {r.payload for r in reader.Reader(fh) if r.payload and r.payload.lstrip("\n").startswith("class ")}
    assert texts
    return sorted(texts)


def _mutate(text: str, rnd: random.Random) -> str:
    lines = text.split("\n")
    how = rnd.choice(["chars", "swap", "duplicate", "indent", "cut"])
    k = rnd.randrange(len(lines))
    if how == "chars":
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(text) + 1)
            text = text[:i] + "".join(rnd.choice(CHARS) for _ in range(rnd.randint(0, 3))) + text[i + rnd.randint(0, 3):]
        return text
    if how == "swap":
        j = rnd.randrange(len(lines))
        lines[k], lines[j] = lines[j], lines[k]
    elif how == "duplicate":
        lines.insert(k, lines[k])
    elif how == "indent":
        lines[k] = " " * rnd.choice([1, 2, 4, 8]) + lines[k] if rnd.random() < 0.5 else lines[k][rnd.randint(1, 4):]
    else:
        lines = lines[:k]
    return "\n".join(lines)


def test_real_graph_texts_mutated(real_texts):
    rnd = random.Random(25)
    read = 0
    for text in real_texts:
        assert check(text)  # a real text is read by the fast reader
        for _ in range(60):
            read += check(_mutate(text, rnd))
    assert read  # some mutations are still fx code the fast reader reads (equal to ast's, checked above)


def test_what_follows_a_block_at_or_left_of_its_header():
    """Note [One indentation walk]: a block ends at a line at or left of its header's indentation; what
    follows the top class is no parent's statement, so it is handed over (ast reads the class alone, or
    fails on what follows). The walks of class and forward bodies once had two rule sets: the class one
    handed over at a column-0 line, the forward one ended the block there. One walk with the forward rule
    alone would read these texts and answer where ast raises."""
    body = ('class G(torch.nn.Module):\n    def forward(self, x):\n        y = f(x)\n        return (y,)\n\n'
            '    class sub(torch.nn.Module):\n        def forward(self, x):\n            return (x,)\n')
    assert check(body)
    for after in ["x = = 1\n", ")\n", "y = f(x)\n", "class H(torch.nn.Module):\n    def forward(self, x):\n"
                  "        return (x,)\n", "  # a comment\nz\n"]:
        for text in (body + after, body.replace("\n\n    class sub", "\nz = (\n    class sub", 1)):
            assert parse_fast(text, "g") is None, text
            check(text)
    # a nested class ends at its parent's level, the forward body at its def's: read, not handed over
    nested = body.replace("    class sub", "    # ...\n    class sub") + "    # the end\n"
    assert check(nested)
    assert check(body.replace("        return (y,)\n\n", "        return (y,)\n    # a comment\n\n"))
