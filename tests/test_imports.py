"""The import graph of ``tracer`` and ``viz`` has no circle, and ``tracer`` never imports ``viz``.

Built with ``ast`` over the files: module-level and function-level imports both count, since a
function-level import that closes a circle is still a circle (it only moves the failure to run time).
``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``; a package's
``__init__`` is not implied by importing one of its submodules; imports under ``if TYPE_CHECKING:``
never run and do not count.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("tracer", "viz")


def modules() -> dict[str, pathlib.Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                       and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                       for stmt in block.body for n in ast.walk(stmt)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != mod:
                    graph[mod].add(t)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle as [a, b, ..., a], or [] when there is none."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str]:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return []

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return []


def test_the_graph_is_read():
    graph = import_graph()
    assert "tracer.active_session" in graph["tracer.capturing"]
    assert "tracer.capturing" in graph["tracer.session_worker"]  # a function-level or top-level edge
    assert "tracer._torch.pause_snapshot" in graph["tracer._torch.pause"]


# Circles that existed when this test was written, in modules owned elsewhere; each edge named here
# is ignored so any *other* circle still fails. Remove an entry when its circle is broken
# (test_known_circles_still_exist says when).


def test_no_import_circle():
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle == [], "import circle: " + " -> ".join(cycle)


def test_tracer_never_imports_viz():
    graph = import_graph()
    offenders = sorted(f"{m} -> {n}" for m, deps in graph.items() if m.split(".")[0] == "tracer"
                       for n in deps if n.split(".")[0] == "viz")
    assert offenders == []  # rendering goes through tracer/display.py's registry


def _fresh(code: str) -> str:
    """The last line ``code`` prints in a new interpreter with this tree first on the path."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()[-1]


def test_import_tracer_and_viz_import_no_public_names_module_until_one_is_used():
    """Note [tracer's names loaded when used] and Note [Views registered by name]: ``import viz`` (so
    ``import tracer``) loads neither the live capture, the session, jobs nor the model; a public name
    or a submodule named after a bare ``import tracer`` is imported then."""
    code = ("import sys, viz, tracer; before = sorted(m for m in sys.modules if m.startswith('tracer.')); "
            "ok = (tracer.Capture is sys.modules['tracer.model.capture'].Capture, tracer.model.format_meta is not None, "
            "set(tracer.__all__) <= set(dir(tracer))); print(before, ok)")
    assert _fresh(code) == "['tracer.display'] (True, True, True)"
    import tracer

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        tracer.nothing_here  # noqa: B018


def test_views_registered_by_name_name_real_classes():
    """A renamed or moved class would lose its view silently: each name viz registers is a class there."""
    import viz  # noqa: F401  (registers the views)
    from tracer import display

    assert display._BY_NAME
    for module, name in display._BY_NAME:
        cls = getattr(importlib.import_module(module), name)
        assert (cls.__module__, cls.__qualname__) == (module, name)
