"""The "Code" tab: Dynamo's original vs transformed code, resume functions, the guard function, shape
specializations, and Inductor's output code with kernels linked to the graph nodes they compute.

Invariant: the HTML functions are pure (model in, text out) and escape everything from user code
(Jinja2 autoescape; Pygments' formatter escapes what it highlights, see Note [Trusted fragments] in
viz/markup.py). The tab talks to the explorer only through its public API (``select``,
``select_node``, ``frame``, ``canvas.selected``).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from tracer.model import Capture, CodeText, Frame, GraphBreak, InductorGraph, Kernel
from viz.markup import fragment, render

__all__ = ["CodeTab", "breaks_to_resume", "bytecode_html", "code_html", "frame_code_html", "inductor_html", "kernel_choices",
           "kernel_colours", "kernel_key", "kernel_lines", "kernel_nodes",
           "pages", "shapes_html"]

PALETTE = ("#fde2e4", "#e2ece9", "#dfe7fd", "#fff1c1", "#e9d8fd", "#d3f8e2", "#ffd6a5", "#cddafd")
_RESUME_LINE = re.compile(r"_at_(\d+)$")  # torch_dynamo_resume_in_<fn>_at_<line> (torch/_dynamo/resume_execution.py)


def _highlight(text: str, lexer: str = "python", hl_lines: Optional[list[int]] = None) -> Any:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CppLexer, PythonLexer

    lex = PythonLexer() if lexer == "python" else CppLexer()
    fmt = HtmlFormatter(noclasses=True, hl_lines=hl_lines or [], style="default")
    return fragment(highlight(text, lex, fmt))  # Pygments escapes the text itself


def breaks_to_resume(frame: Frame, breaks: list[GraphBreak]) -> list[tuple[GraphBreak, list[str]]]:
    """Each graph break of ``frame``'s compile with the resume function(s) it created (named after the
    break's line). A break is logged by the attempt that restarted ("0/0"); the resume functions are
    made by the attempt that compiled ("0/0_1"), so breaks of every attempt of the compile count."""
    resumes = [r.name for r in frame.bytecode.resume_functions] if frame.bytecode else []
    out = []
    for b in breaks:
        if b.compile_id.split("_")[0] != frame.compile_id.split("_")[0]:
            continue
        line = b.location.rsplit(":", 1)[-1]
        out.append((b, [r for r in resumes if (m := _RESUME_LINE.search(r)) and m.group(1) == line]))
    return out


def _code(c: CodeText) -> dict[str, Any]:
    """What the template shows of one code object. Reading ``source`` decompiles a live capture's code
    now (Note [Decompiled when first read] in tracer/model/bytecode.py); a loaded one has its text."""
    source = c.source
    problem = c.problem or ("not decompiled: this capture kept the bytecode only, and this process has no "
                            "decompiler for it" if c.pending else "")
    return {"name": c.name, "problem": problem, "dis": c.dis, "html": _highlight(source) if source else None}


def code_html(c: CodeText) -> str:
    """One code object: its highlighted source, or why there is none and its ``dis`` listing."""
    return render("code_view.html.j2", part="code", c=_code(c))


def bytecode_html(frame: Frame, breaks: list[GraphBreak] = ()) -> str:
    """Original and transformed code side by side, resume functions, breaks -> resume functions, guards."""
    bc = frame.bytecode
    if bc is None:
        return render("code_view.html.j2", part="none", frame=frame)
    return render("code_view.html.j2", part="bytecode", frame=frame, original=_code(bc.original),
                  transformed=_code(bc.transformed), resumes=[_code(r) for r in bc.resume_functions],
                  links=breaks_to_resume(frame, list(breaks)), guard_function=bc.guard_function)


def shapes_html(frame: Frame) -> str:
    """Symbols and specializations with the user line that caused each."""
    return render("code_view.html.j2", part="shapes", frame=frame)


def kernel_colours(graph: InductorGraph) -> dict[str, str]:
    """Post-grad node name -> the background colour of the (first) kernel that computes it."""
    out: dict[str, str] = {}
    for i, k in enumerate(graph.kernels):
        for n in k.post_grad_nodes:
            out.setdefault(n, PALETTE[i % len(PALETTE)])
    return out


def _defined(line: str) -> str:
    """The node a post-grad graph line defines ("add: \\"f32[8]\\" = ..." -> "add"), or ""."""
    head = line.strip().split(":", 1)[0].split(" = ", 1)[0].strip()
    return head if head.isidentifier() and (": " in line or " = " in line) else ""


# Note [Kernel identity]
# ~~~~~~~~~~~~~~~~~~~~~~
# A kernel's name is unique only within one Inductor compile, and not even there for extern calls: a
# training step's forward calls ``extern_kernels.mm`` once and its backward twice, each a kernel of its
# own (Inductor's provenance gives each call a debug handle). A kernel is therefore chosen by
# ``kernel_key`` (the compile's AOT id and the handle), never by name; only the output-code lines are
# found by name, so every call of an extern kernel in that code is marked.
def kernel_key(graph: InductorGraph, kernel: Kernel) -> str:
    """The id of ``kernel`` among all of a frame's Inductor compiles: "<aot id>:<handle>"."""
    return f"{graph.aot_id}:{kernel.handle}"


def kernel_choices(frame: Optional[Frame]) -> list[tuple[str, str]]:
    """(label, kernel_key) of every kernel of ``frame``, each once: "name (aot id)", with "call i of n"
    where one compile calls the same kernel name several times (Note [Kernel identity])."""
    out = []
    for g in frame.inductor if frame else []:
        names = [k.name for k in g.kernels]
        for k in g.kernels:
            nth = names[: g.kernels.index(k) + 1].count(k.name)
            call = f", call {nth} of {names.count(k.name)}" if names.count(k.name) > 1 else ""
            out.append((f"{k.name} ({g.aot_id}{call})", kernel_key(g, k)))
    return out


def kernel_nodes(frame: Optional[Frame]) -> list[tuple[str, list[str]]]:
    """(label, Dynamo nodes it computes) of every kernel of ``frame``, each once, in
    :func:`kernel_choices`' order and with its labels: the report's kernel chooser (Note [One kernel
    chooser])."""
    nodes = {kernel_key(g, k): k.dynamo_nodes for g in (frame.inductor if frame else []) for k in g.kernels}
    return [(label, list(nodes[key])) for label, key in kernel_choices(frame)]


def kernel_lines(graph: InductorGraph, kernels: list[Kernel]) -> list[int]:
    """The lines (from 1) of ``graph``'s output code that the code tab marks for ``kernels``: those naming
    one of them (by name, Note [Kernel identity]); the widget's and the report's (viz/report_kernels.py)."""
    return [i + 1 for i, ln in enumerate(graph.output_code.splitlines()) if any(k.name in ln for k in kernels)]


def inductor_html(frame: Frame, *, kernel: str = "", node: str = "") -> str:
    """Each Inductor graph: its kernels (coloured), the output code with the lines of ``kernel`` (a
    :func:`kernel_key`) marked, and the post-grad graph with nodes coloured by kernel; ``node`` (a
    Dynamo node) marks its kernels."""
    graphs = []
    for g in frame.inductor:
        colours = {k.name: PALETTE[i % len(PALETTE)] for i, k in enumerate(g.kernels)}
        chosen = [k for k in g.kernels if kernel_key(g, k) == kernel or (node and node in k.dynamo_nodes)]
        marked = kernel_lines(g, chosen)
        node_colour = kernel_colours(g)
        chosen_nodes = {n for k in chosen for n in k.post_grad_nodes}
        post = [{"text": ln, "colour": node_colour.get(_defined(ln), ""), "bold": _defined(ln) in chosen_nodes}
                for ln in g.post_grad_graph.splitlines()]
        graphs.append({"g": g, "colours": colours, "chosen": [any(k is c for c in chosen) for k in g.kernels],
                       "code": _highlight(g.output_code, hl_lines=marked), "post": post})
    return render("code_view.html.j2", part="inductor", frame=frame, graphs=graphs)


def frame_code_html(cap: Capture, frame: Optional[Frame], *, kernel: str = "", node: str = "") -> str:
    """The whole tab for one frame (static HTML report and the widget share it)."""
    if frame is None:
        return ""
    parts = [bytecode_html(frame, cap.graph_breaks), shapes_html(frame)]
    if frame.inductor:
        parts.insert(0, inductor_html(frame, kernel=kernel, node=node))
    return "\n".join(parts)


class CodeTab:
    """The explorer's "Code" tab: a frame and kernel chooser over ``frame_code_html``.

    Choosing a kernel shows its frame's root graph in the explorer with every Dynamo node the kernel
    computes drawn (module boxes folding them opened) and highlighted (its first one selected) and its post-grad nodes marked in the post-grad
    graph; selecting a node on the canvas marks the kernels that compute it, and highlights all the
    nodes of those kernels.
    """

    def __init__(self, explorer: Any) -> None:
        import ipywidgets as W

        self.explorer = explorer
        cap = explorer.capture
        self.frame_choice = W.Dropdown(options=[(f"{f.compile_id}  {f.code}", f.compile_id) for f in cap.frames],
                                       description="frame")
        self.kernel_choice = W.Dropdown(options=[("", "")], description="kernel")
        self.html = W.HTML()
        self._busy = False  # choose_kernel is selecting its kernel's node: not a click (on_node)
        self.widget = W.VBox([W.HBox([self.frame_choice, self.kernel_choice]), self.html])
        if explorer.frame is not None:
            self.frame_choice.value = explorer.frame.compile_id
        self.frame_choice.observe(lambda _: self.show(), "value")
        self.kernel_choice.observe(lambda c: self.choose_kernel(c["new"]), "value")
        explorer.canvas.observe(lambda _: self.on_node(), "selected")
        self.show()

    @property
    def frame(self) -> Optional[Frame]:
        cid = self.frame_choice.value
        return self.explorer.capture.frame(cid) if cid else None

    def show(self) -> None:
        f = self.frame
        choices = kernel_choices(f)
        if list(self.kernel_choice.options)[1:] != choices:
            self.kernel_choice.options = [("", ""), *choices]
        same = self.explorer.frame is f and self.explorer.graph_name == ""
        self.html.value = frame_code_html(self.explorer.capture, f, kernel=self.kernel_choice.value or "",
                                          node=self.explorer.node if same else "")

    def kernels_of(self, node: str) -> list[Kernel]:
        """The kernels of the shown frame that compute Dynamo node ``node``."""
        f = self.frame
        return [k for g in (f.inductor if f else []) for k in g.kernels if node in k.dynamo_nodes]

    def choose_kernel(self, key: str) -> None:
        """Show the kernel ``key`` (a :func:`kernel_key`): the module boxes folding its nodes opened, its
        nodes highlighted, its first one selected."""
        f = self.frame
        kernel = next((k for g in (f.inductor if f else []) for k in g.kernels if kernel_key(g, k) == key), None)
        if kernel is not None and kernel.dynamo_nodes:
            self._busy = True
            try:
                self.explorer.select("", frame=f.compile_id)
                self.explorer.highlight(kernel.dynamo_nodes, reveal=True)
                self.explorer.select_node(kernel.dynamo_nodes[0])
            finally:
                self._busy = False
        self.show()

    def on_node(self) -> None:
        """A node selected on the canvas: highlight every node of the kernel(s) computing it, mark them."""
        ex = self.explorer
        if not self._busy and ex.frame is self.frame and ex.graph_name == "" and ex.node:
            ex.highlight(n for k in self.kernels_of(ex.node) for n in k.dynamo_nodes)
        self.show()


def pages(explorer: Any) -> list[tuple[str, Any]]:
    """The explorer's extra tab(s) from this module: ("Code", widget) when a frame has bytecode or Inductor code."""
    cap = explorer.capture
    if not any(f.bytecode is not None or f.inductor for f in cap.frames):
        return []
    explorer.code_tab = CodeTab(explorer)
    return [("Code", explorer.code_tab.widget)]
