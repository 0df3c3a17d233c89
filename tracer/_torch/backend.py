"""The recording backend and the per-capture Recorder that turns Dynamo's events into Frames.

Invariant: all mutable state of one capture lives on its Recorder; the backend records the
graph Dynamo hands it and then returns what the AOT stage returns (aot_eager-equivalent), so
the compiled function computes exactly what the user's function computes.
"""

from __future__ import annotations

import contextlib
import os
import types
import warnings
from typing import Any, Iterator, Optional

from tracer._no_gc import no_cyclic_gc
from tracer._torch.beyond import Beyond
from tracer._torch.breaks import BreakRecord, SkipRecorder, install_graph_break_hook
from tracer._torch.graph_passes import PassRecorder
from tracer._torch.guards import backend_match_guards, guards_from_set
from tracer._torch.isolation import CodeTracker, code_location
from tracer._torch.patching import Patches
from tracer._torch.releases import install_or_note
from tracer._torch.since_2_13 import isolate_recompiles
from tracer._torch.structured import GRAPH_TEXTS, StructuredTraceHandler
from tracer._torch.subgraphs import convert_tree
from tracer._torch.subtracer import SpecRecord, compile_key, install_speculation_hooks
from tracer._torch.trace_filter import install_payload_filter
from tracer._torch.unknowns import recording_into, take_loose
from tracer.diffing import attach_recompile_diffs
from tracer.model import Capture, Frame, GraphBreak, GraphPiece, Speculation
from tracer.model.attempts import (
    AttemptInfo,
    FrameCodes,
    format_id,
    local_ids,
    location,
    recompile,
    settle_status,
)

__all__ = ["Recorder"]

Key = tuple[int, int]  # (frame_id, frame_compile_id): one compile
AttemptKey = tuple[int, int, int]  # (frame_id, frame_compile_id, attempt): one Frame


# Note [Capture-local compile ids]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Dynamo's compile ids ("frame_id/frame_compile_id") count per process: the 5th capture in a
# notebook would start at "12/0". A Capture numbers frames by their first compile *in this
# capture* and compiles per frame in order, so the first frame is always "0/0" and a recompile
# of it "0/1", like a fresh process; attempts keep torch's number ("0/0_1"). Torch's own id is
# ``Frame.dynamo_id``. See Note [Compile ids and attempts] in tracer/model/frame.py.
class Recorder:
    """Everything one capture observes; ``hooks()`` installs the recording for one compile run."""

    def __init__(self, *, partitioner: str = "min_cut", fresh_codes: Optional[list[types.CodeType]] = None,
                 backend: str = "aot_eager", mode: Optional[str] = None, dynamic: Optional[bool] = None) -> None:
        self.partitioner = partitioner
        self.beyond = Beyond(backend, mode, dynamic)  # Inductor, bytecode, shapes (issue #18)
        self.specs: list[SpecRecord] = []
        self.breaks: list[BreakRecord] = []
        self.recompile_reasons: dict[Key, list[list[str]]] = {}  # one list per recompile_reasons artifact
        self.order: list[AttemptKey] = []  # attempts in the order they ran
        self.frames: dict[AttemptKey, list[Frame]] = {}  # graphs the backend received per attempt
        self.guards: dict[AttemptKey, list] = {}
        self.info: dict[Key, AttemptInfo] = {}  # per compile: metrics, skip reason, breaks per attempt
        self.codes = CodeTracker(fresh_codes or [])
        self.region: Optional[int] = None  # isolate_recompiles id of the compiled wrapper
        self.errors: list[str] = []
        self.where: dict[Key, tuple[str, str]] = {}  # compile key -> (code location, file) of the frame
        self._last_ended: Optional[Key] = None  # the compile whose metrics were logged last
        self.interrupted: Optional[BaseException] = None  # what ended the capture early, if anything
        self.start_stacks: dict[Key, list[Any]] = {}  # dynamo_start's user stack per compile (Note [Stack at dynamo_start])
        self._handler: Optional[StructuredTraceHandler] = None
        self.passes = PassRecorder()  # Dynamo passes between its graph log point and this backend

    # -- events ----------------------------------------------------------------------------
    def _seen(self, key: Optional[Key], attempt: int = 0) -> None:
        if key is None:
            return
        akey = (key[0], key[1], attempt)
        if akey not in self.order:
            self.order.append(akey)
        if key not in self.where:
            code = _current_code()
            if code is not None:
                self.where[key] = (code_location(code), code.co_filename)

    def on_attempt(self, akey: AttemptKey) -> None:
        self._seen(akey[:2], akey[2])

    def on_start(self, key: Key, stack: list[Any]) -> None:
        self._seen(key)
        self.start_stacks[key] = list(stack)

    def on_recompile(self, key: Key, reasons: list[str]) -> None:
        self._seen(key)
        self.recompile_reasons.setdefault(key, []).append(list(reasons))

    def on_metrics(self, akey: AttemptKey, metrics: dict[str, Any]) -> None:
        key = akey[:2]
        info = self.info.setdefault(key, AttemptInfo())
        info.metrics, info.final_attempt = metrics, akey[2]
        self._last_ended = key
        if key not in self.where and metrics.get("co_filename"):
            self.where[key] = (location(metrics["co_filename"], metrics.get("co_firstlineno"), metrics.get("co_name", "")),
                               metrics["co_filename"])

    def on_skip(self, code: Any, reason: str) -> None:
        """Note [Why a frame has no graph]: the skip reason of the compile that just ended."""
        key = self._last_ended
        info = self.info.get(key) if key is not None else None
        m = info.metrics if info is not None else None
        if m is None or code is None:
            return
        if (code.co_name, code.co_filename, code.co_firstlineno) == (m.get("co_name"), m.get("co_filename"), m.get("co_firstlineno")):
            info.skip_reason = info.skip_reason or reason
        self._last_ended = None

    def on_skip_signal(self, key: Optional[Key], reason: str) -> None:
        """Note [Skip reasons before torch 2.13]: the reason of the compile ``key``, said while it runs."""
        if key is not None:
            info = self.info.setdefault(key, AttemptInfo())
            info.skip_reason = info.skip_reason or reason

    def on_speculation(self, rec: SpecRecord) -> None:
        self._seen(rec.key, rec.attempt)
        self.specs.append(rec)

    def on_graph_break(self, rec: BreakRecord) -> None:
        self._seen(rec.key, rec.attempt)
        self.breaks.append(rec)
        if rec.key is not None:
            self.info.setdefault(rec.key, AttemptInfo()).break_reasons.setdefault(rec.attempt, []).append(rec.reason)
        if rec.problem:
            self.errors.append(rec.problem)

    def guard_export_fn(self, guards: Any) -> None:
        key, attempt = compile_key()
        if key is None:
            return
        self._seen(key, attempt)
        try:
            with no_cyclic_gc(young_first=True):  # Note [What a capture records is not the heap's growth] in tracer/_no_gc.py
                self.guards[(key[0], key[1], attempt)] = guards_from_set(guards)
        except Exception as e:  # except: records a problem
            self.errors.append(f"guards of {format_id(key[0], key[1], attempt)} not read: {type(e).__name__}: {e}")

    # -- the backend -----------------------------------------------------------------------
    def backend(self, gm: Any, example_inputs: list[Any]) -> Any:
        """Dynamo backend: record the graph as a Frame, then compile it with the AOT stage."""
        key, attempt = compile_key()
        self._seen(key, attempt)
        frame = self._record_frame(gm, key, attempt)
        if self.beyond.inductor:
            return self.beyond.compile(gm, example_inputs, frame)
        from tracer._torch import aot

        return aot.compile_aot(gm, example_inputs, frame=frame, partitioner=self.partitioner)

    def _record_frame(self, gm: Any, key: Optional[Key], attempt: int) -> Frame:
        code = _current_code()
        frame = Frame(compile_id="", code=code_location(code) if code is not None else "")
        frame.dynamo_id = format_id(key[0], key[1], attempt) if key else ""
        if code is not None:
            frame.meta["filename"] = code.co_filename
        specs = [s for s in self.specs if s.key == key and s.attempt == attempt]
        try:
            with recording_into(frame.problems), no_cyclic_gc(young_first=True):  # Note [What a capture records is not the heap's growth]
                frame.graph, frame.subgraphs, names = convert_tree(gm, specs, code, frame.problems)
        except Exception as e:  # except: records a problem (never break the user's compile because recording failed)
            frame.problems.append(f"graph not recorded: {type(e).__name__}: {e}")
            names = {}
        frame.meta["_graph_names"] = names  # dropped in finish(); id(SpecRecord) -> qualified body name
        frame.passes = self.passes.take(gm)
        if key is not None:
            self.frames.setdefault((key[0], key[1], attempt), []).append(frame)
        else:
            self.errors.append("the backend was called outside a Dynamo compile: its graph is not recorded")
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
                **isolate_recompiles(),  # Note [Recompile regions before torch 2.13]
            )(target)
        self.region = getattr(compiled, "_isolate_recompiles_id", None)
        return compiled

    # Note [Dynamo keeps every backend]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # ``torch._dynamo.optimize`` puts its backend in the process-wide ``eval_frame.cached_backends``
    # (keyed by id, for the BACKEND_MATCH guard) and only ``torch._dynamo.reset()`` empties it. Our
    # backend is this recorder's bound method, so every capture's Recorder, and with it every Frame and
    # graph it recorded, would stay alive for the whole process (seen: a BERT capture's graphs were not
    # freed by ``del cap``). The capture's cache entries are reset when it ends, so nothing can match
    # against this backend afterwards: ``forget`` drops it.
    def forget(self) -> None:
        """Drop this recorder from Dynamo's backend table (Note [Dynamo keeps every backend])."""
        from torch._dynamo import eval_frame

        table = eval_frame.cached_backends
        for key in [k for k, v in table.items() if v == self.backend]:
            del table[key]

    # -- hooks -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def hooks(self) -> Iterator[None]:
        """Install every recording hook; all are removed on exit, also on error. A hook whose hook point
        this torch lacks is left out and listed as a problem (Note [Releases nobody checked])."""
        with contextlib.ExitStack() as stack:
            patches = stack.enter_context(Patches())
            errors = self.errors
            install_or_note(errors, "HOP body speculations", install_speculation_hooks, patches, self.on_speculation)
            install_or_note(errors, "graph breaks", install_graph_break_hook, patches, self.on_graph_break)
            install_or_note(errors, "why a frame has no graph", SkipRecorder, patches, self.on_skip, self.on_skip_signal)
            texts = GRAPH_TEXTS[:1] if self.beyond.inductor else GRAPH_TEXTS  # Inductor: no AOT graphs recorded
            self._handler = install_or_note(errors, "compile order and recompile reasons", stack.enter_context,
                                            StructuredTraceHandler(self.on_start, self.on_recompile, self.on_attempt,
                                                                   self.on_metrics, texts))
            stack.enter_context(self.codes)
            stack.enter_context(self.passes)
            errors.extend(self.passes.problems)
            install_or_note(errors, "Inductor, bytecode and shape records", stack.enter_context,
                            self.beyond.hooks(patches))
            readers = [r for r in (self._handler, self.beyond.events) if r is not None]
            install_or_note(errors, "less formatting while capturing", install_payload_filter, patches, readers)
            stack.enter_context(recording_into(self.errors))  # Note [No silent fallback]
            yield

    # -- the Capture -------------------------------------------------------------------------
    def finish(self, cap: Capture) -> Capture:
        """Fill ``cap`` from what was recorded; drops every torch object the Recorder held."""
        with no_cyclic_gc(young_first=True):  # Note [What a capture records is not the heap's growth] in tracer/_no_gc.py
            return self._finish(cap)

    def _finish(self, cap: Capture) -> Capture:
        from tracer._torch.aot import PENDING_BACKWARD

        # conversions left for the end: Note [The backward converted once] in tracer/_torch/aot.py
        for late in [f.meta.pop(PENDING_BACKWARD, None) for fs in self.frames.values() for f in fs]:
            if late is not None:
                late()
        local = local_ids(self.order)
        backend_guards = backend_match_guards(self.codes.codes(), self.region)
        codes = FrameCodes()  # Note [Code object from the frame id]
        for akey in self.order:
            for frame in self._frames_of(akey):
                codes.settle(frame, akey)
                self._fill(frame, akey, local, backend_guards)
                cap.frames.append(frame)
        for b in self.breaks:
            akey = (b.key[0], b.key[1], b.attempt) if b.key else None
            cap.graph_breaks.append(GraphBreak(reason=b.reason, location=b.location, user_stack=b.user_stack,
                                               compile_id=local.get(akey, "") if akey else "", code_line=b.code_line))
        for akey in self.order:
            if akey[2] == 0:
                for reasons in self.recompile_reasons.get(akey[:2], []):  # Note [One record per recompile]
                    cap.recompiles.append(recompile(local[akey], reasons, local))
        if self.interrupted is not None:
            cap.meta["error"] = _describe(self.interrupted)  # what the call raised (Note [Interrupted compiles])
        handler_errors = self._handler.errors if self._handler is not None else []
        cap.problems.extend([*self.errors, *handler_errors, *self.beyond.finish(), *take_loose()])
        self.specs.clear()
        return attach_recompile_diffs(cap)

    def _frames_of(self, akey: AttemptKey) -> list[Frame]:
        """The Frame of one attempt: the graph(s) the backend got, or one graph-less Frame."""
        frames = self.frames.get(akey, [])
        if len(frames) > 1:
            return [_split_frame(frames)]
        if frames:
            return frames
        code, filename = self.where.get(akey[:2], ("", ""))
        frame = Frame(compile_id="", code=code)
        frame.dynamo_id = format_id(*akey)
        if filename:
            frame.meta["filename"] = filename
        return [frame]

    def _fill(self, frame: Frame, akey: AttemptKey, local: dict[AttemptKey, str], backend_guards: dict) -> None:
        frame.compile_id = local[akey]
        names = frame.meta.pop("_graph_names", {})
        frame.speculations = [_speculation(s, names) for s in self.specs if (s.key, s.attempt) == (akey[:2], akey[2])]
        frame.guards = list(self.guards.get(akey, []))
        info = self.info.get(akey[:2], AttemptInfo())
        restarted = len([a for a in self.order if a[:2] == akey[:2] and info.final_attempt is not None and a[2] < info.final_attempt])
        last = akey == self.order[-1]
        # Note [Interrupted compiles]: an Exception through _compile sets fail_type; one torch logged no
        # failure for was raised after the attempt finished (the user's code): the call's error, not this attempt's
        cut = last and self.interrupted is not None and not isinstance(self.interrupted, Exception)
        interrupted = _describe(self.interrupted) if cut else ""
        settle_status(frame, akey[2], info, restarted, interrupted)
        self.beyond.fill(frame, akey)
        stack = _user_stack(self.start_stacks.get(akey[:2], []))
        if stack:
            frame.meta["stack"] = stack
        if frame.status in ("compiled", "no_graph"):
            bm = backend_guards.get(f"{akey[0]}/{akey[1]}")
            if bm is not None:
                frame.guards.append(bm)


# Note [Split graphs]
# ~~~~~~~~~~~~~~~~~~~
# A backend wrapper may split Dynamo's graph and call the real backend once per piece.
# DDPOptimizer does (torch/_dynamo/backends/distributed.py, ``DDPOptimizer.compile_fn``): under
# ``DistributedDataParallel`` with ``torch._dynamo.config.optimize_ddp`` on, convert_frame.py swaps
# it in around our backend; it cuts the graph at DDP bucket boundaries with ``split_module`` and
# ``SubmodCompiler`` compiles ``submod_0``, ``submod_1``, ... with our backend, so each bucket's
# allreduce can start while the rest of the backward runs. The split belongs to the compile
# attempt, not to separate frames: the attempt stays one Frame whose ``pieces`` are the graphs the
# backend got, in call order, each with its own AOTAutograd record (``graph``/``aot`` are piece 0's,
# what views show first).
def _split_frame(frames: list[Frame]) -> Frame:
    """One Frame for an attempt whose graph the backend received in pieces. See Note [Split graphs]."""
    first = frames[0]
    first.pieces = [GraphPiece(graph=f.graph, aot=f.aot) for f in frames]
    for i, f in enumerate(frames[1:], start=1):
        first.problems.extend(f"piece {i}: {p}" for p in f.problems)
        first.passes.extend(f.passes)
    return first


# Note [Stack at dynamo_start]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``log_dynamo_start`` (convert_frame.py) logs the Python stack that led to the frame Dynamo starts
# compiling; tlparse builds its stack trie from it, and so does the overview (``Frame.meta["stack"]``,
# "file.py:LINE in fn", outermost first, as tracer.load_trace reads it from a log). File names are
# interned numbers (torch/_logging/structured.py). The stack starts at the line that called
# ``tracer.capture`` (what ran before it — a notebook kernel's event loop, pytest — is the caller's
# context, not the program being compiled), and frames in dynascope's own files are dropped: they are
# how the capture called the user's function.


def _user_stack(frames: list[Any]) -> list[str]:
    if not frames:
        return []
    from tracer._torch.trace_events import interned_strings

    names = interned_strings()
    rows = []
    for f in frames:
        if not isinstance(f, dict):
            continue
        name = names.get(f.get("filename"), "") if isinstance(f.get("filename"), int) else str(f.get("filename") or "")
        rows.append((name.startswith(_OWN), f"{os.path.basename(name) or '?'}:{f.get('line')} in {f.get('name')}"))
    first_own = next((i for i, (own, _) in enumerate(rows) if own), None)
    start = max(first_own - 1, 0) if first_own is not None else 0  # from the line that called tracer.capture
    return [text for own, text in rows[start:] if not own]


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_OWN = (os.path.join(_ROOT, "tracer") + os.sep, os.path.join(_ROOT, "viz") + os.sep)


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip().rstrip(":")


def _speculation(s: SpecRecord, names: dict[int, str]) -> Speculation:
    sub = names.get(id(s))
    return Speculation(hop=s.hop, description=s.description, depth=s.depth, ok=bool(s.ok), reason=s.reason,
                       subgraph=sub, lifted=list(s.lifted_names))


def _current_code() -> Optional[types.CodeType]:
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        return tx.f_code if tx is not None else None
    except AttributeError:  # no translator on this thread (its thread-local is unset): the code object
        return None  # then comes from compilation_metrics, or _fill says torch did not say which it was
