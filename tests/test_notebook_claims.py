"""The tutorial notebooks' claims about torch's values and behaviour hold for the installed torch.

``test_notebook_prose`` checks that every name the prose cites exists; this test checks what the
prose *says* about some of them, where a sentence can be read mechanically:

- a default: "`torch._dynamo.config.X` (default `V`)", "`torch._functorch.config.X`, default `V`",
  "`torch._dynamo.config.X` on (the default)": compared with the config entry's declared default;
- a class attribute: "`SomeVariable.attr` is `V`": compared with the attribute of torch's class;
- a HOP's behaviour on a graph break in its body: the HOPs listed under "**fall back**" must have
  a Dynamo handler whose ``_ALLOW_FALLBACK_TO_EAGER`` is true, those under "**raise**" false;
- phrasings a reader of torch 2.13 showed to be wrong or misleading (``WRONG``): each rule names
  what torch really does, and rejects the phrasing unless the paragraph says it.

Each notebook also asserts the behaviour live, so nbval fails if torch changes it; this test fails
when the *prose* drifts from torch, which no output comparison sees.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest
from test_notebook_prose import REPO, SOURCES, TORCH, TORCH_TEXT_ROOTS, about_a_later_release, paragraphs

NOTEBOOKS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))

_CONFIG = r"`(torch(?:\.\w+)*\.config)\.(\w+)`"
_CONFIG_DEFAULT = re.compile(_CONFIG + r"\)?,?\s*\(?default `([^`]+)`")
_CONFIG_ON = re.compile(_CONFIG + r" (on|off) \(the default\)")
_ATTR_IS = re.compile(r"`([A-Z]\w*)\.(\w+)` is `([^`]+)`")
_FALL_BACK = re.compile(r"\*\*fall back\*\*(.*?)(?=- \*\*raise\*\*|$)")
_RAISE = re.compile(r"\*\*raise\*\*(.*?)(?=- \*\*fall back\*\*|$)")
_TICKED = re.compile(r"`([^`\n]+)`")

# (what the prose matches, what the paragraph must then also say (None: never acceptable), why)
WRONG: list[tuple[str, str | None, str]] = [
    (r"`BACKEND_MATCH`", r"cache (?:entry|lookup)",
     "in torch 2.13 the backend is compared on the cache entry, not by a guard: say so where BACKEND_MATCH is named"),
    (r"\*\*fall back\*\*", r"\bdefault\b",
     "falling back is the default (TorchHigherOrderOperatorVariable._ALLOW_FALLBACK_TO_EAGER is True): say so"),
    (r"`_compile`[^.]*restart|restart[^.]*`_compile`", None,
     "the loop that catches RestartAnalysis and traces the frame again is compile_frame, not _compile"),
    (r"(?:`invoke_subgraph`|nested_compile_region).*root graph|root graph.*`invoke_subgraph`", r"inlin",
     "with config.inline_single_use_invoke_subgraph (default True) a single-use region is inlined: say so"),
    (r"less in all", None, "a difference of summed nbytes is not memory held: compare activation_bytes"),
    (r"\b\d+ KiB\b", r"`activation_bytes`|`saved_bytes`|`nbytes`", "a byte figure must say what it counts"),
    (r"(?:stays?|kept|keeps?) in the graph[^.]*does not require grad|does not require grad[^.]*(?:stays?|kept) in the graph",
     r"metadata", "_check_if_mutation_can_be_in_graph also requires the input's metadata to be unmutated"),
    (r"(?:guards|checks) with no source", r"SHAPE_ENV",
     "not every guard without a source is global state: SHAPE_ENV guards relations between input sizes"),
    (r"`%`(?![^.]*divisib)", None, "a % on a size adds a divisibility guard; it does not make the size a constant"),
    (r"Dynamo (?:has no idea|does not know|doesn't know|does not consult)[^.]*other ranks", r"enable_compiler_collectives",
     "torch 2.13 has the opt-in enable_compiler_collectives: name it"),
    (r"fits? in one bucket", None,
     "a graph over the bucket cap can stay one bucket: DDPOptimizer opens a new one only when another node follows"),
    (r"\b1 MB\b", None, "bucket_cap_mb counts MiB (1,048,576 bytes)"),
]


def _class(name: str) -> type:
    """torch's class ``name``, from the module (under the roots the notebooks cite) that defines it."""
    for root in TORCH_TEXT_ROOTS:
        p = TORCH / root
        for f in [p] if p.is_file() else sorted(p.rglob("*.py")):
            if re.search(rf"^class {name}\b", f.read_text(errors="replace"), re.M):
                mod = ".".join(("torch",) + f.relative_to(TORCH).with_suffix("").parts)
                return getattr(importlib.import_module(mod), name)
    raise LookupError(f"no torch class {name}")


def _config_default(module: str, name: str):
    return importlib.import_module(module)._config[name].default


def _hop_handlers() -> dict[str, list[type]]:
    """HOP name as a notebook writes it (``cond``, ``wrap``, ``checkpoint``, ``map``) or handler class
    name -> the Dynamo handler classes (those with a ``_HOP_NAME``)."""
    from torch._dynamo.variables import higher_order_ops

    mods = [higher_order_ops]
    try:  # torch 2.12 moved InvokeSubgraphHigherOrderVariable into its own module; 2.11 has it in higher_order_ops
        from torch._dynamo.variables import invoke_subgraph

        mods.append(invoke_subgraph)
    except ImportError:
        pass
    out: dict[str, list[type]] = {}
    for mod in mods:
        for cls in vars(mod).values():
            if isinstance(cls, type) and cls.__module__ == mod.__name__ and "_ALLOW_FALLBACK_TO_EAGER" in dir(cls):
                hop = getattr(cls, "_HOP_NAME", None)
                out.setdefault(cls.__name__, []).append(cls)
                if isinstance(hop, str):
                    out.setdefault(hop.rsplit(".", 1)[-1].removesuffix("_impl"), []).append(cls)
    return out


def claim_problems(src: Path) -> list[str]:
    bad: list[str] = []
    where = src.relative_to(src.parents[2]) if len(src.parents) > 2 else src.name
    handlers = None
    for start, para in paragraphs(src):
        if about_a_later_release(para):
            continue
        for m in _CONFIG_DEFAULT.finditer(para):
            claimed, real = ast.literal_eval(m.group(3)), _config_default(m.group(1), m.group(2))
            if claimed != real:
                bad.append(f"{where}:{start}: {m.group(1)}.{m.group(2)} defaults to {real!r}, not {claimed!r}")
        for m in _CONFIG_ON.finditer(para):
            real = _config_default(m.group(1), m.group(2))
            if bool(real) != (m.group(3) == "on"):
                bad.append(f"{where}:{start}: {m.group(1)}.{m.group(2)} defaults to {real!r}, not {m.group(3)}")
        for m in _ATTR_IS.finditer(para):
            try:
                real = getattr(_class(m.group(1)), m.group(2))
            except (LookupError, AttributeError) as e:
                bad.append(f"{where}:{start}: `{m.group(1)}.{m.group(2)}`: {e}")
                continue
            if real != ast.literal_eval(m.group(3)):
                bad.append(f"{where}:{start}: {m.group(1)}.{m.group(2)} is {real!r}, not {m.group(3)}")
        for pattern, unless, why in WRONG:
            m = re.search(pattern, para)
            if m and (unless is None or not re.search(unless, para)):
                bad.append(f"{where}:{start}: {m.group(0)!r}: {why}")
        for rx, falls_back in ((_FALL_BACK, True), (_RAISE, False)):
            for m in rx.finditer(para):
                handlers = handlers or _hop_handlers()
                named = [t.removeprefix("torch.") for t in _TICKED.findall(m.group(1))]
                named = [t for t in named if t in handlers]
                if len(named) < 3:
                    bad.append(f"{where}:{start}: a '{'fall back' if falls_back else 'raise'}' list names fewer than 3 HOPs")
                for t in named:
                    wrong = [c.__name__ for c in handlers[t] if bool(c._ALLOW_FALLBACK_TO_EAGER) != falls_back]
                    if wrong:
                        bad.append(f"{where}:{start}: `{t}` is listed under {'fall back' if falls_back else 'raise'},"
                                   f" but {wrong} has _ALLOW_FALLBACK_TO_EAGER = {not falls_back}")
    return bad


def output_problems(nb_path: Path) -> list[str]:
    """A stored output that lists ``BACKEND_MATCH`` (as a guard kind, in a guard list) must sit next to
    prose saying it is the cache entry's backend check, not a guard Dynamo installed."""
    cells = json.loads(nb_path.read_text())["cells"]
    bad = []
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        texts = [o.get("text", "") for o in cell.get("outputs", [])]
        texts += [o.get("data", {}).get("text/plain", "") for o in cell.get("outputs", [])]
        if not any("BACKEND_MATCH" in ("".join(t) if isinstance(t, list) else t) for t in texts):
            continue
        near = [c for c in cells[max(0, i - 1) : i + 2] if c["cell_type"] == "markdown"]
        if not any(re.search(r"cache (?:entry|lookup)", "".join(c["source"])) for c in near):
            bad.append(f"{nb_path.name} cell {i}: prints BACKEND_MATCH with no prose beside it saying it is"
                       " compared on the cache entry, not by a guard")
    return bad


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_outputs_are_explained(nb):
    bad = output_problems(nb)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("src", SOURCES, ids=[s.stem for s in SOURCES])
def test_claims_hold_for_the_installed_torch(src):
    bad = claim_problems(src)
    assert not bad, "prose says what the installed torch does not do:\n" + "\n".join(bad)


def test_the_restart_loop_is_compile_frame():
    """The fact behind the `_compile` rule: compile_frame catches RestartAnalysis, _compile does not."""
    from torch._dynamo import convert_frame

    assert "except exc.RestartAnalysis" in inspect.getsource(convert_frame.compile_frame)
    assert "except exc.RestartAnalysis" not in inspect.getsource(convert_frame._compile)


def test_fall_back_is_the_default():
    """The fact behind the `_ALLOW_FALLBACK_TO_EAGER` rule, and the exceptions the cannot-be-a-graph notebook names."""
    h = _hop_handlers()
    assert _class("TorchHigherOrderOperatorVariable")._ALLOW_FALLBACK_TO_EAGER is True
    assert all(c._ALLOW_FALLBACK_TO_EAGER is False for c in h["cond"] + h["invoke_subgraph"] + h["while_loop"])


def test_the_check_catches_the_old_phrasings(tmp_path):
    """Each wrong sentence the notebooks once held, and a wrong default or attribute, fails."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    src = tmp_path / "a" / "b" / "99_old.py"
    old = [
        "The backend is checked by a `BACKEND_MATCH` guard.",
        "The loop in `_compile` collects restart reasons.",
        "The root graph calls `invoke_subgraph` and reads the body's extra output.",
        "A multiplication instead of 8 KiB kept alive, and 24 KiB less in all.",
        "A data mutation stays in the graph when that input does not require grad.",
        "The guards with no source protect global state.",
        "An `if` on the size, a `%` on it, makes the symbol a constant.",
        "Dynamo has no idea the other ranks exist.",
        "Rank 1's graphs each fit in one bucket.",
        "The job uses 1 MB buckets.",
        "From torch 2.13 on, with `torch._dynamo.config.inline_single_use_invoke_subgraph` (default `False`) it is kept.",
        "With `torch._dynamo.config.optimize_ddp` off (the default) nothing is split.",
        "`WrapHigherOrderVariable.allow_side_effects` is `True`.",
        "- **fall back** (`True`): `wrap`, `torch.cond`, `flex_attention`.\n# - **raise**: `scan`, `map`, `checkpoint`.",
    ]
    src.write_text("# %% [markdown]\n# # Title\n" + "".join(f"#\n# {s}\n" for s in old) + "\n# %%\nx = 1\n")
    bad = claim_problems(src)
    import torch._dynamo.config

    since_2_13 = ("inline_single_use", "defaults to True, not False") if hasattr(
        torch._dynamo.config, "inline_single_use_invoke_subgraph") else ()
    for needle in (*since_2_13, "BACKEND_MATCH", "default (", "compile_frame", "less in all", "KiB",
                   "metadata", "SHAPE_ENV", "divisibility", "enable_compiler_collectives", "one bucket", "MiB",
                   "defaults to True, not off", "allow_side_effects is False",
                   "`cond` is listed under fall back", "`checkpoint` is listed under raise"):
        assert any(needle in b for b in bad), (needle, bad)
    ok = [
        "From torch 2.13 on, `torch._dynamo.config.inline_single_use_invoke_subgraph` (default `True`) inlines it.",
        "`TorchHigherOrderOperatorVariable._ALLOW_FALLBACK_TO_EAGER` is `True`.",
        "- **fall back** is the default: `wrap`, `flex_attention`, `out_dtype`.\n# - **raise**: `torch.cond`, `scan`, `invoke_subgraph`.",
    ]
    src.write_text("# %% [markdown]\n# # Title\n" + "".join(f"#\n# {s}\n" for s in ok) + "\n# %%\nx = 1\n")
    assert claim_problems(src) == []


def test_an_unexplained_backend_match_output_fails(tmp_path):
    def nb(prose: str) -> Path:
        cells = [
            {"cell_type": "markdown", "source": prose, "metadata": {}},
            {"cell_type": "code", "source": "print(kinds)", "metadata": {}, "execution_count": 1,
             "outputs": [{"output_type": "stream", "name": "stdout", "text": "['BACKEND_MATCH', 'GRAD_MODE']\n"}]},
        ]
        path = tmp_path / "99_x.ipynb"
        path.write_text(json.dumps({"cells": cells}))
        return path

    assert output_problems(nb("Dynamo records **guards**, checks run on every call."))
    assert output_problems(nb("BACKEND_MATCH is compared on the cache entry, not a guard.")) == []

