"""tracer/trace_log/fx_code.py reads every graph text the tests' logs hold as graph_text.py's ``ast`` reader does.

The logs are real TORCH_TRACE files written by torch in child processes: the oracle cases (HOP bodies,
graph breaks, export-like signatures), the AOT training and tied-parameter compiles (joint, forward,
backward graphs), Inductor's graphs (post-grad, with provenance) and the wrap/recompile child. Each
graph text's ParsedModule is compared whole, field by field, nested bodies included; and the fast
reader must answer for the texts torch writes (a hand-over there would keep the ``ast`` cost).
"""

from __future__ import annotations

import glob

import pytest
from test_trace_log import logs  # noqa: F401 (the oracle cases' logs, a fixture)
from test_trace_log_inductor import _log
from test_trace_log_modules import LOGS, run

from tracer.trace_log import reader
from tracer.trace_log.fx_code import parse_fast
from tracer.trace_log.fx_code import parse_readable as parse_readable_fast
from tracer.trace_log.graph_text import ParsedModule, parse_readable


def fields(p: ParsedModule) -> tuple:
    """Everything a ParsedModule holds, nested bodies included, as plain comparable data."""
    nodes = [(n.name, n.op, n.target, n.args, n.kwargs, n.inputs, n.users, n.role, n.calls, n.meta)
             for n in p.graph.nodes]
    return (p.graph.name, p.graph.code, nodes, p.errors, {k: fields(c) for k, c in p.children.items()})


def graph_texts(path: str) -> set[str]:
    """The distinct graph texts (``print_readable`` payloads) of one log."""
    with open(path) as fh:
        return {r.payload for r in reader.Reader(fh) if r.payload and r.payload.lstrip("\n").startswith("class ")}


@pytest.fixture(scope="module")
def corpus(logs, child_trace_dir, tmp_path_factory) -> dict[str, set[str]]:  # noqa: F811 (logs: the fixture)
    paths = dict(logs)
    paths["child"], = glob.glob(str(child_trace_dir / "*.log"))
    out = tmp_path_factory.mktemp("fx_code")
    for name in ("transformer12", "tied_reused", "lines"):
        run(name, out)
        paths[name] = LOGS[name]
    paths["inductor"] = _log(tmp_path_factory, "fx_code_inductor", {"INDUCTOR_PROVENANCE": "1"})
    return {name: graph_texts(p) for name, p in paths.items()}


def test_the_logs_hold_every_kind_of_graph(corpus):
    texts = {t for ts in corpus.values() for t in ts}
    assert len(texts) > 50
    assert any("torch.ops.higher_order." in t for t in texts)  # HOP bodies: nested classes
    assert any("tangents_1" in t for t in texts)  # AOT backward/joint graphs
    assert any("# File: " in t for t in texts)


@pytest.mark.parametrize("name", ["", "forward"])
def test_fast_reading_equals_ast_on_every_logged_graph(corpus, name):
    handed_over = []
    for case, texts in sorted(corpus.items()):
        for text in sorted(texts):
            want = fields(parse_readable(text, name))
            assert fields(parse_readable_fast(text, name)) == want, (case, text)
            fast = parse_fast(text, name)
            if fast is None:
                handed_over.append((case, text.partition("\n")[2][:200]))
            else:
                assert fields(fast) == want, (case, text)
    # the fast reader answers for the texts torch writes; what it hands over (a dict display of a flex
    # attention score_mod's options, ...) is read by ast, equal by construction
    assert len(handed_over) * 20 < sum(map(len, corpus.values())), handed_over
