"""Every broad ``except`` in tracer/ and viz/ re-raises, records a problem, or only changes display text,
says which on its own line, and does what it says (Note [No silent fallback] in tracer/_torch/unknowns.py).

A broad handler is a bare ``except:``, ``except Exception``, ``except BaseException`` (alone or in a
tuple). Its line carries ``except: re-raises``, ``except: records a problem`` or ``except: display text
only``, and the handler body is checked against the tag:

- re-raises: a ``raise`` in the handler;
- records a problem: a call that records it (``unknown(...)``, ``_unread(...)``, ``self._failed(...)``,
  ``<...problems or ...errors>.append/extend(...)``, a ``problem=`` keyword), or the exception stored
  in a name or attribute called ``*error*`` that the caller reports;
- display text only: no item store (``meta["shape"] = ...``), no attribute store other than a
  widget's ``.value``, no ``append``/``extend``/``add``/``update``/``setdefault`` call.
"""

from __future__ import annotations

import ast
import io
import pathlib
import re
import tokenize

import pytest
import torch

from tracer._torch.unknowns import recording_into, take_loose, unknown

ROOT = pathlib.Path(__file__).resolve().parent.parent
TAG = re.compile(r"except: (re-raises|records a problem|display text only)\b")
BROAD = {"Exception", "BaseException"}
RECORDERS = {"unknown", "_unread", "_failed"}
MUTATORS = {"append", "extend", "add", "update", "setdefault", "insert"}


def _name(e: ast.AST) -> str:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        return e.attr
    return ""


def _is_broad(h: ast.ExceptHandler) -> bool:
    if h.type is None:
        return True
    types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return any(_name(t) in BROAD for t in types)


def _body_nodes(h: ast.ExceptHandler) -> list[ast.AST]:
    """Every node of the handler's body, not entering nested functions or classes."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(h.body)
    while todo:
        n = todo.pop()
        out.append(n)
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))
    return out


def _reraises(nodes: list[ast.AST]) -> bool:
    return any(isinstance(n, ast.Raise) for n in nodes)


def _records(nodes: list[ast.AST], exc: str | None) -> bool:
    for n in nodes:
        if isinstance(n, ast.Call):
            f = n.func
            if _name(f) in RECORDERS:
                return True
            if isinstance(f, ast.Attribute) and f.attr in ("append", "extend") and \
                    re.search(r"problem|error", _name(f.value)):
                return True
            if any(k.arg == "problem" for k in n.keywords):
                return True
        if isinstance(n, ast.Assign) and exc is not None and isinstance(n.value, ast.Name) and n.value.id == exc:
            if any("error" in _name(t) for t in n.targets):
                return True
    return False


def _display_only(nodes: list[ast.AST]) -> bool:
    for n in nodes:
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for x in ast.walk(t):
                    if isinstance(x, ast.Subscript):
                        return False
                    if isinstance(x, ast.Attribute) and isinstance(x.ctx, ast.Store) and x.attr != "value":
                        return False
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in MUTATORS:
            return False
    return not _reraises(nodes)


def check(source: str, where: str = "<source>") -> list[str]:
    """What is wrong with the broad handlers of ``source``: one line each; [] when all is well."""
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT}
    errors = []
    for h in ast.walk(ast.parse(source)):
        if not isinstance(h, ast.ExceptHandler) or not _is_broad(h):
            continue
        m = TAG.search(comments.get(h.lineno, ""))
        at = f"{where}:{h.lineno}"
        if m is None:
            errors.append(f"{at}: a broad except without '# except: re-raises|records a problem|display text only'")
            continue
        nodes = _body_nodes(h)
        tag = m.group(1)
        if tag == "re-raises":
            ok = _reraises(nodes)
        elif tag == "records a problem":
            ok = _records(nodes, h.name) or _reraises(nodes)
        else:
            ok = _display_only(nodes)
        if not ok:
            errors.append(f"{at}: tagged {tag!r} but its body does not")
    return errors


def _modules() -> list[pathlib.Path]:
    return sorted(p for d in ("tracer", "viz") for p in (ROOT / d).rglob("*.py"))


def test_every_broad_except_says_what_it_does_and_does_it():
    errors = [e for p in _modules() for e in check(p.read_text(), str(p.relative_to(ROOT)))]
    assert errors == []


def test_the_lint_sees_the_handlers():
    """Not vacuous: the handlers are found, with each kind of tag in use."""
    tags = [m.group(1) for p in _modules() for line in p.read_text().splitlines() if (m := TAG.search(line))]
    assert len(tags) >= 40 and set(tags) == {"re-raises", "records a problem", "display text only"}


@pytest.mark.parametrize("code, wrong", [
    ("try:\n    f()\nexcept Exception:\n    pass\n", "without"),
    ("try:\n    f()\nexcept:  # except: re-raises\n    g()\n", "re-raises"),
    ("try:\n    f()\nexcept (ValueError, BaseException) as e:  # except: records a problem\n    x = 0\n", "records"),
    ("try:\n    f()\nexcept Exception:  # except: display text only\n    meta['shape'] = []\n", "display"),
    ("try:\n    f()\nexcept Exception:  # except: display text only\n    out.append(0)\n", "display"),
    ("try:\n    f()\nexcept Exception:  # except: display text only\n    self.in_graph = False\n", "display"),
    ("try:\n    f()\nexcept Exception:  # records a problem\n    problems.append(1)\n", "without"),
])
def test_the_lint_catches_a_handler_that_does_not_do_what_it_says(code, wrong):
    (error,) = check(code)
    assert wrong in error


@pytest.mark.parametrize("code", [
    "try:\n    f()\nexcept Exception as e:  # except: re-raises\n    undo()\n    raise\n",
    "try:\n    f()\nexcept Exception as e:  # except: records a problem\n    unknown('the shape', e)\n",
    "try:\n    f()\nexcept Exception as e:  # except: records a problem\n    frame.problems.append(str(e))\n",
    "try:\n    f()\nexcept BaseException as e:  # except: records a problem\n    error = e\n",
    "try:\n    f()\nexcept Exception:  # except: display text only\n    text = '<?>'\n",
    "try:\n    f()\nexcept Exception:  # except: display text only\n    self.message.value = 'x'\n",
    "try:\n    f()\nexcept ValueError:\n    pass\n",  # a narrow except is not linted
])
def test_the_lint_accepts_a_handler_that_does_what_it_says(code):
    assert check(code) == []


def test_unknown_lands_in_the_innermost_recording_and_else_is_kept_for_the_capture():
    take_loose()
    outer: list[str] = []
    inner: list[str] = []
    with recording_into(outer):
        with recording_into(inner):
            unknown("the shape of x", ValueError("no"))
        unknown("the device of x", RuntimeError("gone"))
    unknown("the kind of a guard", KeyError("k"))
    assert inner == ["the shape of x: unknown (ValueError: no)"]
    assert outer == ["the device of x: unknown (RuntimeError: gone)"]
    assert take_loose() == ["the kind of a guard: unknown (KeyError: 'k')"] and take_loose() == []


class _NoShape(torch.Tensor):
    @property
    def shape(self):
        raise RuntimeError("this tensor hides its shape")


def test_a_shape_torch_does_not_give_is_left_out_and_said_not_read_as_0d():
    from tracer._torch.fx_graph import meta_of

    t = torch.randn(2, 3).as_subclass(_NoShape)
    problems: list[str] = []
    with recording_into(problems):
        meta = meta_of(t)
    assert "shape" not in meta and meta["dtype"] == "float32"
    assert problems == ["the shape of a _NoShape: unknown (RuntimeError: this tensor hides its shape)"]
