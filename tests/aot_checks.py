"""Shared checks of the AOTAutograd tests (tests/test_aot_*.py): every capture they make is validated,
round-tripped through JSON and checked for the saved-values invariant, plus small graph readers."""

from __future__ import annotations

import tracer
from tracer.model import Capture


def _checked(cap: Capture) -> Capture:
    """validate() + lossless JSON round trip + no recording errors, for every capture of the AOT tests."""
    tracer.validate(cap)
    assert Capture.from_json(cap.to_json()) == cap
    for f in cap.frames:
        assert "aot_errors" not in f.meta, f.meta["aot_errors"]
        a = f.aot
        if a is not None and a.mode == "training" and a.backward is not None:
            # Note [Which forward outputs are saved]: the saved values are the forward's last
            # outputs, and exactly the backward's inputs other than tangents and tokens (saved
            # symints move to the front there, hence the sort).
            outs = _outputs(a.forward)
            assert [s.name for s in a.saved] == outs[len(outs) - len(a.saved) :]
            bw_in = [
                p.name
                for p in a.backward.placeholders
                if not any(k in p.meta.get("desc", "") for k in _NOT_SAVED)
            ]
            assert sorted(bw_in) == sorted(s.name for s in a.saved)
    return cap


_NOT_SAVED = ("TangentAOTInput", "BackwardTokenAOTInput")


def _capture(fn, *args, **kwargs) -> Capture:
    return _checked(tracer.capture(fn, *args, **kwargs))


def _only_aot(cap: Capture):
    assert len(cap.frames) == 1, cap.frames
    a = cap.frames[0].aot
    assert a is not None
    return a


def _outputs(g):
    """Names a graph returns, in order, repeats kept (``Node.inputs`` de-duplicates; the
    output node's display argument "(a, b, a)" does not)."""
    out = g.output
    if out is None or not out.args:
        return []
    text = out.args[0].strip("()[]")
    return [t.strip() for t in text.split(",") if t.strip()]


def _return_kinds(g):
    returns = g.output.meta["returns"]
    assert [name for name, _ in returns] == _outputs(g)
    return [kind for _, kind in returns]


def _ops(g):
    return [n for n in g.nodes if n.op not in ("placeholder", "output")]


def _tangents(g):
    return [n for n in g.placeholders if n.meta.get("desc", "").startswith("TangentAOTInput")]
