"""The recording backend and the per-capture Recorder that turns Dynamo's events into Frames.

Invariant: all mutable state of one capture lives on its Recorder; the backend records the
graph Dynamo hands it and then returns what the AOT stage returns (aot_eager-equivalent), so
the compiled function computes exactly what the user's function computes.
"""

from __future__ import annotations

import contextlib
import re
import types
import warnings
from typing import Any, Iterator, Optional

from tracer._torch.breaks import BreakRecord, install_graph_break_hook
from tracer._torch.graph_passes import PassRecorder
from tracer._torch.guards import backend_match_guards, guards_from_set
from tracer._torch.isolation import CodeTracker, code_location
from tracer._torch.patching import Patches
from tracer._torch.structured import StructuredTraceHandler
from tracer._torch.subgraphs import convert_tree
from tracer._torch.subtracer import SpecRecord, compile_key, install_speculation_hooks
from tracer.model import Capture, Frame, Graph, GraphBreak, Recompile, Speculation

__all__ = ["Recorder"]

Key = tuple[int, int]


# Note [Capture-local compile ids]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo's compile ids ("frame_id/frame_compile_id") count per process: the 5th capture in a
# notebook would start at "12/0". A Capture numbers frames by their first compile *in this
# capture* and compiles per frame in order, so the first frame is always "0/0" and a recompile
# of it "0/1", like a fresh process. Dynamo's own id is kept in ``Frame.meta["dynamo_compile_id"]``.
class Recorder:
    """Everything one capture observes; ``hooks()`` installs the recording for one compile run."""

    def __init__(self, *, partitioner: str = "min_cut", fresh_codes: Optional[list[types.CodeType]] = None) -> None:
        self.partitioner = partitioner
        self.specs: list[SpecRecord] = []
        self.breaks: list[BreakRecord] = []
        self.recompile_reasons: dict[Key, list[str]] = {}
        self.order: list[Key] = []  # compile keys in the order compiles started
        self.frames: dict[Key, list[Frame]] = {}  # usually one per compile; a split compile may call us twice
        self.guards: dict[Key, list] = {}
        self.codes = CodeTracker(fresh_codes or [])
        self.region: Optional[int] = None  # isolate_recompiles id of the compiled wrapper
        self.errors: list[str] = []
        self.where: dict[Key, tuple[str, str]] = {}  # compile key -> (code location, file) of the frame
        self.passes = PassRecorder()  # Dynamo passes between its graph log point and this backend

    # -- events ----------------------------------------------------------------------------
    def _seen(self, key: Optional[Key]) -> None:
        if key is not None and key not in self.order:
            self.order.append(key)
        if key is not None and key not in self.where:
            code = _current_code()
            if code is not None:
                self.where[key] = (code_location(code), code.co_filename)

    def on_start(self, key: Key) -> None:
        self._seen(key)

    def on_recompile(self, key: Key, reasons: list[str]) -> None:
        self._seen(key)
        self.recompile_reasons.setdefault(key, []).extend(reasons)

    def on_speculation(self, rec: SpecRecord) -> None:
        self._seen(rec.key)
        self.specs.append(rec)

    def on_graph_break(self, rec: BreakRecord) -> None:
        self._seen(rec.key)
        self.breaks.append(rec)

    def guard_export_fn(self, guards: Any) -> None:
        key, _ = compile_key()
        if key is None:
            return
        self._seen(key)
        try:
            self.guards[key] = guards_from_set(guards)
        except Exception as e:
            self.errors.append(f"guards: {type(e).__name__}: {e}")

    # -- the backend -----------------------------------------------------------------------
    def backend(self, gm: Any, example_inputs: list[Any]) -> Any:
        """Dynamo backend: record the graph as a Frame, then compile it with the AOT stage."""
        key, attempt = compile_key()
        self._seen(key)
        frame = self._record_frame(gm, key, attempt)
        from tracer._torch import aot

        return aot.compile_aot(gm, example_inputs, frame=frame, partitioner=self.partitioner)

    def _record_frame(self, gm: Any, key: Optional[Key], attempt: int) -> Frame:
        code = _current_code()
        frame = Frame(compile_id="", code=code_location(code) if code is not None else "?")
        frame.meta["dynamo_compile_id"] = f"{key[0]}/{key[1]}" if key else ""
        frame.meta["attempt"] = attempt
        if code is not None:
            frame.meta["filename"] = code.co_filename
        specs = [s for s in self.specs if s.key == key and (s.attempt == attempt or not s.ok)]
        try:
            frame.graph, frame.subgraphs, names = convert_tree(gm, specs, code)
        except Exception as e:  # never break the user's compile because recording failed
            self.errors.append(f"frame {frame.meta['dynamo_compile_id']}: {type(e).__name__}: {e}")
            names = {}
        frame.meta["_graph_names"] = names  # dropped in finish(); id(SpecRecord) -> qualified body name
        frame.passes = self.passes.take(gm)
        if key is not None:
            self.frames.setdefault(key, []).append(frame)
        return frame

    def compile(self, target: Any, *, fullgraph: bool, dynamic: Optional[bool]) -> Any:
        """``torch.compile``-equivalent with this recorder as backend and guard exporter.

        ``torch._dynamo.optimize`` is torch.compile's own entry point and the one that takes
        ``guard_export_fn``; ``isolate_recompiles`` gives the capture its own recompile count.
        """
        import torch._dynamo

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = torch._dynamo.optimize(
                self.backend,
                nopython=fullgraph,
                dynamic=dynamic,
                guard_export_fn=self.guard_export_fn,
                isolate_recompiles=True,
            )(target)
        self.region = getattr(compiled, "_isolate_recompiles_id", None)
        return compiled

    # -- hooks -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        """Install every recording hook; all are removed on exit, also on error."""
        with contextlib.ExitStack() as stack:
            patches = stack.enter_context(Patches())
            install_speculation_hooks(patches, self.on_speculation)
            install_graph_break_hook(patches, self.on_graph_break)
            stack.enter_context(StructuredTraceHandler(self.on_start, self.on_recompile))
            stack.enter_context(self.codes)
            stack.enter_context(self.passes)
            yield

    # -- the Capture -------------------------------------------------------------------------
    def finish(self, cap: Capture) -> Capture:
        """Fill ``cap`` from what was recorded; drops every torch object the Recorder held."""
        local = self._local_ids()
        backend_guards = backend_match_guards(self.codes.codes(), self.region)
        for key in self.order:
            frames = self.frames.get(key, [])
            specs = [s for s in self.specs if s.key == key]
            if not frames:
                if key not in self.guards and not specs:
                    continue
                code, filename = self.where.get(key, ("?", ""))
                frame = Frame(compile_id="", code=code, graph=Graph())
                frame.meta["dynamo_compile_id"] = f"{key[0]}/{key[1]}"
                if filename:
                    frame.meta["filename"] = filename
                frame.meta["no_graph"] = True
                frames = [frame]
            for frame in frames:
                self._fill(frame, key, local, specs, backend_guards)
                cap.frames.append(frame)
        seen_breaks = set()
        for b in self.breaks:
            ident = (b.key, b.location, b.reason)
            if ident in seen_breaks:
                continue
            seen_breaks.add(ident)
            cap.graph_breaks.append(GraphBreak(reason=b.reason, location=b.location, user_stack=b.user_stack,
                                               compile_id=local.get(b.key, "") if b.key else "", code_line=b.code_line))
        for key in self.order:
            for r in self.recompile_reasons.get(key, []):
                cap.recompiles.append(Recompile(compile_id=local[key], reason=_local_reason(r, local)))
        if self.errors:
            cap.meta["recording_errors"] = list(self.errors)
        self.specs.clear()
        return cap

    def _fill(self, frame: Frame, key: Key, local: dict[Key, str], specs: list[SpecRecord], backend_guards: dict) -> None:
        frame.compile_id = local[key]
        names = frame.meta.pop("_graph_names", {})
        attempt = frame.meta.get("attempt")
        frame.speculations = [
            _speculation(s, names) for s in specs if attempt is None or s.attempt == attempt or not s.ok
        ]
        frame.guards = list(self.guards.get(key, []))
        bm = backend_guards.get(f"{key[0]}/{key[1]}")
        if bm is not None:
            frame.guards.append(bm)

    def _local_ids(self) -> dict[Key, str]:
        frames: dict[int, int] = {}
        per_frame: dict[int, int] = {}
        out: dict[Key, str] = {}
        for key in self.order:
            fid = key[0]
            if fid not in frames:
                frames[fid] = len(frames)
                per_frame[fid] = 0
            out[key] = f"{frames[fid]}/{per_frame[fid]}"
            per_frame[fid] += 1
        return out


_ENTRY_PREFIX = re.compile(r"^(?P<frame>\d+)/(?P<compile>\d+): ")


def _local_reason(reason: str, local: dict[Key, str]) -> str:
    """Dynamo prefixes a failed guard with the compile id of the cache entry it belongs to
    ("2/0: tensor 'x' size mismatch ..."); rewrite that id to the capture-local one."""
    m = _ENTRY_PREFIX.match(reason)
    if m is None:
        return reason
    key = (int(m.group("frame")), int(m.group("compile")))
    return f"{local[key]}: {reason[m.end():]}" if key in local else reason


def _speculation(s: SpecRecord, names: dict[int, str]) -> Speculation:
    sub = names.get(id(s))
    return Speculation(hop=s.hop, description=s.description, depth=s.depth, ok=bool(s.ok), reason=s.reason,
                       subgraph=sub, lifted=list(s.lifted_names))


def _current_code() -> Optional[types.CodeType]:
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        return tx.f_code if tx is not None else None
    except Exception:
        return None
