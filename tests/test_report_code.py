"""The static report's Code tab (``viz.export_html``, ``dynascope report``; frames read from the decoded payloads, viz.report_file.expand): original vs transformed code,
resume functions, guard function, shapes; every string from user code escaped."""

from __future__ import annotations

import html
import inspect
import re

import pytest
import torch

import tracer
import viz
from viz import code_view
from viz.report_file import expand


def tricky(x):
    y = torch.sin(x)
    print("</details><script>alert('x')</script>")  # a graph break, and text that must stay text
    return torch.cos(y) + 1


@pytest.fixture(scope="module")
def cap():
    return tracer.capture(tricky, torch.randn(4))


def _code_tabs(page: str) -> list[str]:
    parts = page.split('<details class="ds-code-tab">')[1:]
    return [p.split("</section>")[0] for p in parts]


def test_report_has_a_code_tab_per_compiled_frame(cap, tmp_path):
    page = expand(viz.export_html(cap, tmp_path / "r.html").read_text(encoding="utf-8"))
    compiled = [f for f in cap.frames if f.bytecode is not None]
    assert len(compiled) == 2  # tricky's first graph, then the resume function's
    tabs = _code_tabs(page)
    assert len(tabs) == len(cap.frames)  # every attempt has one (the restarted one says no code was installed)
    first = next(f for f in compiled if f.bytecode.original.name == "tricky")
    tab = tabs[cap.frames.index(first)]
    assert "transformed (installed by Dynamo)" in tab
    (resume,) = first.bytecode.resume_functions
    assert "Resume functions (1)" in tab and resume.name in tab
    assert "Graph breaks and the resume functions they created" in tab
    assert "Guard function" in tab and "TREE_GUARD_MANAGER" in tab
    # the original source, highlighted by Pygments, reads back as the function's text once tags are removed
    text = html.unescape(re.sub(r"<[^>]*>", "", tab))
    assert inspect.getsource(tricky).strip().splitlines()[1].strip() in text


def test_user_text_in_the_code_tab_is_escaped(cap, tmp_path):
    page = expand(viz.export_html(cap, tmp_path / "r.html").read_text(encoding="utf-8"))
    assert "<script>alert(" not in page and "</details><script>" not in page
    assert "alert(" in page  # it is there, as text


def test_the_notebook_html_has_no_code_tab(cap):
    """The text/html mimebundle entry stays free of run-to-run names (compiled_fn ids, guard latency)."""
    assert 'class="ds-code-tab"' not in viz.capture_html(cap)
    assert 'class="ds-code-tab"' in viz.capture_html(cap, code=True)


def test_loaded_capture_renders_the_same_code_tab(cap, tmp_path):
    path = tmp_path / "cap.json"
    cap.save(str(path))
    loaded = tracer.Capture.load(str(path))
    for a, b in zip(cap.frames, loaded.frames, strict=True):
        assert code_view.frame_code_html(cap, a) == code_view.frame_code_html(loaded, b)


@pytest.mark.slow
def test_report_code_tab_has_inductor_output_code_and_kernels(tmp_path):
    def f(x):
        return torch.relu(torch.sin(x) * 2)

    cap = tracer.capture(f, torch.randn(8), backend="inductor")
    (g,) = cap.frames[0].inductor
    (tab,) = _code_tabs(expand(viz.export_html(cap, tmp_path / "r.html").read_text(encoding="utf-8")))
    assert f"Inductor {g.aot_id}: {len(g.kernels)} kernel(s)" in tab and "post-grad graph (coloured by kernel)" in tab
    text = html.unescape(re.sub(r"<[^>]*>", "", tab))
    for k in g.kernels:
        assert k.name in text and all(n in text for n in k.post_grad_nodes)
    assert "def call(" in text  # the wrapper of the output code


def test_the_kernel_chooser_escapes_names_from_logs(cap, tmp_path):
    """Kernel names and node names reach the report's kernel chooser (Note [One kernel chooser] in
    viz/report.js) as text: a name written to end the attribute or the element stays inside it."""
    from tracer.model import InductorGraph, Kernel

    path = tmp_path / "cap.json"
    cap.save(str(path))
    loaded = tracer.Capture.load(str(path))
    frame = next(f for f in loaded.frames if f.has_graph)
    node = frame.graph.nodes[1].name
    evil = '"><script>alert(1)</script>'
    frame.inductor = [InductorGraph(aot_id="0_inference", kernels=[Kernel(name=f"k{evil}", handle=1, dynamo_nodes=[node]),
                                                                    Kernel(name="k2", handle=2, dynamo_nodes=[evil])])]
    page = expand(viz.export_html(loaded, tmp_path / "r.html").read_text(encoding="utf-8"))
    (picker,) = re.findall(r'<select class="ds-kernel-choice"[^>]*>.*?</select>', page)
    assert "<script>" not in picker and picker.count("<option") == 3
    options = re.findall(r'<option value="\d+" data-nodes="([^"]*)">([^<]*)</option>', picker)
    assert [(html.unescape(n), html.unescape(lb)) for n, lb in options] == [
        (node, f"k{evil} (0_inference)"), (evil, "k2 (0_inference)")]
