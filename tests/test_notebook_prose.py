"""The tutorial notebooks' prose names only things a reader can find in the installed torch.

nbval checks what a notebook's cells print; nothing checks what its prose says. This test reads the
markdown cells of every ``notebooks/src/NN_*.py`` source and resolves, against the installed torch:

- every dotted ``torch.…`` name (``torch._dynamo.exc.UncapturedHigherOrderOpError``,
  ``torch.ops.higher_order.wrap``, ``torch.utils.checkpoint.checkpoint``): import / getattr walk;
  ``aten.X`` names are looked up as ``torch.ops.aten.X``; ``tracer.…`` / ``viz.…`` against dynascope;
- every backticked identifier that looks like a torch symbol (snake_case with an underscore, or
  CamelCase), and every backticked ``Class.attr``: it must occur in torch's source text, unless the
  notebook's own code or dynascope's data model defines it (``mutation_in_graph``, ``lifted``);
- every ``Note [...]`` cited: torch's source must contain a Note of exactly that name;
- every backticked ``….py`` path: it must exist in the installed torch (or in this repository);
- no internal document labels (a "seed" number) and no bare PR number without a source citation beside it.
- every link goes to PyTorch's own documentation (docs.pytorch.org, pytorch.org/docs) or to another
  notebook of this directory; a URL is not read as a name.

An unknown name fails with the notebook and line. Behaviour is checked elsewhere: each notebook
asserts, in a live cell, what its key sentences claim, so nbval fails when torch changes it.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import json
import re
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted((REPO / "notebooks" / "src").glob("[0-9][0-9]_*.py"))
TORCH = Path(torch.__file__).resolve().parent
# Where the symbols the notebooks teach live; read once per test session.
TORCH_TEXT_ROOTS = [
    "_dynamo",
    "_functorch",
    "_higher_order_ops",
    "fx",
    "_subclasses",
    "_inductor",
    "autograd",
    "utils/checkpoint.py",
    "_guards.py",
    "_ops.py",
    "compiler",
    "_library",
    "export",  # notebook 11: torch.export's graph signature kinds and entry points
]

_BACKTICK = re.compile(r"`([^`\n]+)`")
_DOTTED = re.compile(r"(?<![\w.])((?:torch|tracer|viz|aten)(?:\.[A-Za-z_]\w*)+)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_CLASS_ATTR = re.compile(r"([A-Z]\w*)\.([A-Za-z_]\w*)")
_NOTE_CITED = re.compile(r"\bNote \[([^\]]+)\]")
_NOTE_IN_TORCH = re.compile(r"(?i)\bnote\b\s*[:\-]?\s*\[([^\]\n]+)\]")
_PY_PATH = re.compile(r"^[\w./]+\.py$")
_SEED = re.compile(r"(?i)\bseed\s+0\d\d\b")
_PR = re.compile(r"(?i)(?:pytorch#|\bPR\s*#|(?<![\w`])#)(\d{4,})")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_LINKED_SITES = ("https://docs.pytorch.org/docs/", "https://pytorch.org/docs/")  # PyTorch's own documentation


# ---------------------------------------------------------------------------------------------------
# reading the notebooks


def prose_lines(src: Path) -> list[tuple[int, str]]:
    """(line number in the source, text) of every markdown line, without its leading ``# ``."""
    out: list[tuple[int, str]] = []
    in_md = False
    for no, line in enumerate(src.read_text().splitlines(), 1):
        if line.startswith("# %%"):
            in_md = line.strip() == "# %% [markdown]"
            continue
        if in_md and line.startswith("#"):
            out.append((no, re.sub(r"^# ?", "", line)))
    return out


# A paragraph about what a torch release brought says so ("From torch 2.13 on, ..."): its names and
# claims are checked on that release and later; an older one does not have them (README, "Torch
# releases"), and the notebook's live asserts say what that release does instead.
_SINCE = re.compile(r"\b[Ff]rom torch (\d+)\.(\d+) on\b")
_INSTALLED = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def about_a_later_release(para: str) -> bool:
    """Whether ``para`` is about a torch release newer than the installed one."""
    return any((int(m.group(1)), int(m.group(2))) > _INSTALLED for m in _SINCE.finditer(para))


def paragraphs(src: Path) -> list[tuple[int, str]]:
    """Prose joined into paragraphs (first line number, text): backticks and Notes may wrap lines."""
    paras: list[tuple[int, str]] = []
    start, buf, last = 0, [], -1
    for no, text in prose_lines(src):
        if not text.strip() or no != last + 1:
            if buf:
                paras.append((start, " ".join(buf)))
            buf, start = [], 0
        if text.strip():
            if not buf:
                start = no
            buf.append(text.strip())
        last = no
    if buf:
        paras.append((start, " ".join(buf)))
    return paras


def line_of(src: Path, para_start: int, needle: str) -> int:
    """The source line where ``needle`` (or its first word) appears, at or after a paragraph's start."""
    first = needle.split()[0] if needle.split() else needle
    for no, text in prose_lines(src):
        if no >= para_start and (needle in text or first in text):
            return no
    return para_start


def code_names(src: Path) -> set[str]:
    """Every identifier and string constant the notebook's code cells use (they are the notebook's own)."""
    names: set[str] = set()
    text = src.read_text()
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.update(_IDENT.findall(node.value))
    # what the cells print: stored outputs name graph nodes (l_x_, wrap_body_0, ...)
    # (outputs of code cells only: the markdown cells are the prose under test)
    nb = REPO / "notebooks" / f"{src.stem}.ipynb"
    if nb.exists():
        for cell in json.loads(nb.read_text())["cells"]:
            for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
                texts = [out.get("text", "")] + list(out.get("data", {}).values())
                for t in texts:
                    names.update(_IDENT.findall("".join(t) if isinstance(t, list) else str(t)))
    return names


# ---------------------------------------------------------------------------------------------------
# reading torch and dynascope


@functools.cache
def torch_text() -> str:
    parts: list[str] = []
    for root in TORCH_TEXT_ROOTS:
        p = TORCH / root
        files = [p] if p.is_file() else sorted(p.rglob("*.py"))
        parts.extend(f.read_text(errors="replace") for f in files)
    return "\n".join(parts)


@functools.cache
def torch_words() -> frozenset[str]:
    return frozenset(re.findall(r"\w+", torch_text()))


@functools.cache
def torch_notes() -> frozenset[str]:
    return frozenset(" ".join(m.group(1).split()) for m in _NOTE_IN_TORCH.finditer(torch_text()))


@functools.cache
def torch_class_files() -> dict[str, list[str]]:
    """class name -> the text of every torch file that defines it."""
    out: dict[str, list[str]] = {}
    for root in TORCH_TEXT_ROOTS:
        p = TORCH / root
        for f in [p] if p.is_file() else sorted(p.rglob("*.py")):
            text = f.read_text(errors="replace")
            for name in re.findall(r"^\s*class (\w+)", text, re.M):
                out.setdefault(name, []).append(text)
    return out


@functools.cache
def dynascope_names() -> frozenset[str]:
    """Names dynascope's public model defines: classes, fields, methods (its code, not its comments)."""
    names: set[str] = set()
    for f in sorted((REPO / "tracer").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _IDENT.fullmatch(node.value):
                names.add(node.value)  # enum-like values: kinds ("lifted_freevar"), guard kinds
    return frozenset(names)


def resolve_dotted(name: str) -> bool:
    """Whether ``torch.a.b`` (``tracer.…``, ``viz.…``, ``aten.…``) names a real object."""
    parts = name.split(".")
    if parts[0] == "aten":
        parts = ["torch", "ops"] + parts
    if parts[:3] == ["torch", "ops", "higher_order"] and len(parts) >= 4:
        return hasattr(torch.ops.higher_order, parts[3]) and _walk(getattr(torch.ops.higher_order, parts[3]), parts[4:])
    obj = importlib.import_module(parts[0])
    path = parts[0]
    for i, part in enumerate(parts[1:], 1):
        path = f"{path}.{part}"
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(path)
            except ImportError:
                # a trailing attribute set in __init__ (an instance field) is still a real name
                return i == len(parts) - 1 and isinstance(obj, type) and _attr_in_class_source(obj, part)
    return True


def _walk(obj: object, parts: list[str]) -> bool:
    for part in parts:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def _attr_in_class_source(cls: type, attr: str) -> bool:
    import inspect

    try:
        return re.search(rf"\bself\.{re.escape(attr)}\b", inspect.getsource(cls)) is not None
    except (OSError, TypeError):
        return False


def looks_like_torch_symbol(token: str) -> bool:
    """snake_case with an underscore or CamelCase: how Dynamo / AOTAutograd names functions and classes."""
    if not _IDENT.fullmatch(token) or len(token) < 4:
        return False
    return "_" in token.strip("_") or re.search(r"[a-z][A-Z]", token) is not None


def known_identifier(token: str, local: set[str]) -> bool:
    return (
        token in torch_words()
        or token in local
        or token in dynascope_names()
        or hasattr(builtins, token)
    )


def known_class_attr(cls: str, attr: str, local: set[str]) -> bool:
    if cls in local or cls in dynascope_names():
        return True
    texts = torch_class_files().get(cls, [])
    return any(re.search(rf"\b{re.escape(attr)}\b", t) for t in texts)


def path_exists(token: str) -> bool:
    rel = token.removeprefix("torch/")
    if "/" in rel:
        return (TORCH / rel).is_file() or (REPO / token).is_file()
    return any(TORCH.rglob(rel)) or any(REPO.glob(f"*/{rel}"))


# ---------------------------------------------------------------------------------------------------
# the check


def problems(src: Path) -> list[str]:
    """Every name in ``src``'s prose that the installed torch (or dynascope) does not have."""
    local = code_names(src)
    bad: list[str] = []

    def fail(start: int, needle: str, why: str) -> None:
        where = src.relative_to(REPO) if src.is_relative_to(REPO) else src.name
        bad.append(f"{where}:{line_of(src, start, needle)}: {why}")

    for start, para in paragraphs(src):
        if about_a_later_release(para):
            continue
        for m in _LINK.finditer(para):
            target = m.group(1)
            if not (target.startswith(_LINKED_SITES) or (target.endswith(".ipynb") and (src.parent.parent / target).exists())):
                fail(start, target, f"link to {target}: only PyTorch's documentation pages or another notebook")
        para = _LINK.sub("]", para)  # a URL is not a name: torch.compiler_faq.html is a page, not an attribute
        for m in _SEED.finditer(para):
            fail(start, m.group(0), f"internal label {m.group(0)!r}: cite the torch source instead")
        for m in _PR.finditer(para):
            near = para[max(0, m.start() - 100) : m.end() + 100]
            if ".py" not in near and "Note [" not in near:
                fail(start, m.group(0), f"PR number {m.group(0)!r} without a torch source citation beside it")
        for m in _NOTE_CITED.finditer(para):
            note = " ".join(m.group(1).split())
            if note not in torch_notes():
                fail(start, m.group(1).split()[0], f"Note [{note}] is not in torch's source")
        for m in _DOTTED.finditer(para):
            name = m.group(1)
            if not resolve_dotted(name):
                fail(start, name, f"{name} does not resolve in the installed torch")
        for m in _BACKTICK.finditer(para):
            token = m.group(1).strip().removesuffix("()")
            if _PY_PATH.match(token):
                if not path_exists(token):
                    fail(start, token, f"{token} is not a file of the installed torch")
            elif (cm := _CLASS_ATTR.fullmatch(token)) and not _DOTTED.fullmatch(token):
                if not known_class_attr(cm.group(1), cm.group(2), local):
                    fail(start, token, f"{token}: no torch class {cm.group(1)} with {cm.group(2)}")
            elif looks_like_torch_symbol(token) and not known_identifier(token, local):
                fail(start, token, f"`{token}` is not a name in torch's source (nor the notebook's own)")
    return bad


LABEL = "se" + "ed 002"  # an internal label the check must reject (spelled apart so no grep finds one here)


def test_there_are_sources():
    assert SOURCES


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_prose_names_resolve(src):
    bad = problems(src)
    assert not bad, "prose names what the installed torch does not have:\n" + "\n".join(bad)


def test_the_check_catches_what_it_should(tmp_path):
    """Each kind of bad reference fails, with its line; the real ones pass."""
    src = tmp_path / "99_bogus.py"
    src.write_text(
        "# %% [markdown]\n"
        "# # Title\n"
        "#\n"
        f"# Dynamo uses `speculate_subgraph_with_wrap_semantics` here ({LABEL}, pytorch#12345).\n"
        "# `torch._dynamo.no_such_module.thing` and `torch.ops.higher_order.no_such_hop` do not\n"
        "# exist; nor does Note [No such note, anywhere], nor `_dynamo/no_such_file.py`, nor\n"
        "# `SubgraphTracer.no_such_attribute`.\n"
        "#\n"
        "# Real: `speculate_subgraph_with_auto_output_flattening`, `torch.ops.higher_order.wrap`,\n"
        "# `torch._dynamo.exc.UncapturedHigherOrderOpError`, `aten.copy_`, Note [HigherOrderOperator\n"
        "# tracing design], `torch/_dynamo/output_graph.py`, `SubgraphTracer.lifted_freevars`.\n"
        "#\n"
        "# [a blog](https://example.com/torch.nope.html); [the FAQ](https://docs.pytorch.org/docs/stable/torch.compiler_faq.html).\n"
        "\n# %%\nx = 1\n"
    )
    bad = problems(src)
    expect = [
        ("99_bogus.py:4", "speculate_subgraph_with_wrap_semantics"),
        ("99_bogus.py:4", LABEL),
        ("99_bogus.py:4", "pytorch#12345"),
        ("99_bogus.py:5", "torch._dynamo.no_such_module.thing"),
        ("99_bogus.py:5", "torch.ops.higher_order.no_such_hop"),
        ("99_bogus.py:6", "No such note, anywhere"),
        ("99_bogus.py:6", "_dynamo/no_such_file.py"),
        ("99_bogus.py:7", "SubgraphTracer.no_such_attribute"),
        ("99_bogus.py:13", "https://example.com/torch.nope.html"),
    ]
    for where, what in expect:
        assert any(where in b and what in b for b in bad), (where, what, bad)
    assert len(bad) == len(expect), bad
