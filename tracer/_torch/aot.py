"""AOTAutograd stage: run the real ``aot_eager`` pipeline on one Dynamo graph and record it as ``Frame.aot``.

Invariant: recording never changes what torch compiles. The compilers return ``boxed_nop``'s
result for the very graph they received and the partition function returns the real
partitioner's result unchanged; the one temporary patch (Note [Observing the outer metadata]) is
removed before ``compile_aot`` returns or raises.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
import warnings
from typing import Any, Callable, Iterator, Optional

import torch
import torch.fx

from tracer._no_gc import no_cyclic_gc
from tracer._torch.aot_graphs import body_attrs, fx_node, roles, tag_partition
from tracer._torch.aot_hooks import HookSnapshot, mark_hook_nodes, saved_tensor_hooks, snapshot
from tracer._torch.aot_meta import (
    inputs_from_meta,
    outputs_from_meta,
    return_kinds,
    saved_origins,
    saved_values,
    synthetic_base_groups,
)
from tracer._torch.aot_provenance import DynamoIndex, annotate_from, seq_nr_origins
from tracer._torch.fx_graph import ReadOnce, graph_from_fx
from tracer._torch.fx_marks import note_graph
from tracer._torch.patching import Patches
from tracer._torch.structured import logged_graph_code
from tracer._torch.unknowns import recording_into, unknown
from tracer.model import Aot, Frame, Graph

__all__ = ["PARTITIONERS", "PENDING_BACKWARD", "compile_aot"]

PARTITIONERS = ("min_cut", "default")

# The structured-trace artifact under which AOTAutograd logs each graph we convert.
_LOGGED_AS = {"joint": "aot_joint_graph", "forward": "aot_forward_graph", "backward": "aot_backward_graph",
              "inference": "aot_inference_graph"}


_LOGGED = object()  # _convert's default: the graph's text is read from torch's log now

# Note [The backward converted once]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The partitioner's backward (``bw_module``) is what torch compiles lazily, on the first
# ``.backward()``: it hands the backward compiler ``copy.deepcopy(bw_module)``
# (torch/_functorch/_aot_autograd/runtime_wrappers.py, ``get_or_compile``; eagerly, with symbolic
# sizes saved, ``_aot_stage2b_bw_compile``). Both were converted, the first at forward time so that a
# capture whose backward never runs still records it; when the backward ran, the second replaced the
# first, which was work thrown away (~1/5 of the AOT conversions, ~1 % of a compile). Now the forward
# leaves ``frame.meta[PENDING_BACKWARD]``: a conversion of ``bw_module`` with the backward text torch
# logged (read then: it is found by the running compile's id). The backward compiler converts what it
# received and drops it; the Recorder's ``finish`` runs what is left, before anything reads the frame.
# torch keeps ``bw_module`` for its lazy backward and does not change it (the backward compiler gets a
# copy), so the graph converted at the end is the one that existed at forward time; tests compare the
# two ways on a real capture (tests/test_aot_backward_once.py).
PENDING_BACKWARD = "_pending_backward"


def _real_partitioner(name: str) -> Callable[..., Any]:
    from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

    return min_cut_rematerialization_partition if name == "min_cut" else default_partition


def compile_aot(
    gm: torch.fx.GraphModule, example_inputs: list[Any], *, frame: Frame, partitioner: str = "min_cut"
):
    """Run AOTAutograd like ``backend="aot_eager"`` on a Dynamo graph, recording into ``frame.aot``.

    Called by the capture core's recording backend once per Dynamo graph; returns the compiled
    callable Dynamo installs. ``partitioner`` is ``"min_cut"`` (aot_eager's
    ``min_cut_rematerialization_partition``) or ``"default"`` (``default_partition``).
    The backward graph is compiled lazily by torch, on the first ``.backward()``; the recording
    backward compiler then fills ``frame.aot.backward`` and sets ``frame.aot.backward_ran``.
    """
    if partitioner not in PARTITIONERS:
        raise ValueError(f"unknown partitioner {partitioner!r} (must be one of {list(PARTITIONERS)})")
    from torch._dynamo.backends.common import aot_autograd

    rec = _AotRecorder(frame, gm, example_inputs, partitioner)
    backend = aot_autograd(
        fw_compiler=rec.fw_compiler,
        bw_compiler=rec.bw_compiler,
        inference_compiler=rec.inference_compiler,
        partition_fn=rec.partition,
        keep_inference_input_mutations=True,  # as aot_eager
    )
    with _observe_outer_metadata(rec.outer_meta):
        return backend(gm, example_inputs)


# Note [Observing the outer metadata]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The ViewAndMutationMeta a compiler sees (``TracingContext.fw_metadata``) describes the graph's
# calling convention *after* the dedupe and synthetic-base wrappers, so after a synthetic base
# it has one entry for several user inputs. The per-user-input facts (which input was mutated)
# live in the metadata ``run_functionalized_fw_and_collect_metadata`` returns first. We wrap that
# one function in ``torch._functorch.aot_autograd`` for the duration of one ``compile_aot`` call
# and keep its return value; the value torch uses is the same object, untouched.
@contextlib.contextmanager
def _observe_outer_metadata(sink: list[Any]) -> Iterator[None]:
    mod = importlib.import_module("torch._functorch.aot_autograd")
    name = "run_functionalized_fw_and_collect_metadata"
    real = getattr(mod, name, None)
    if real is None:  # torch moved it: fall back to the compilers' metadata
        yield
        return

    me = threading.get_ident()

    def observing(*args: Any, **kwargs: Any) -> Any:
        run = real(*args, **kwargs)

        def observed(*a: Any, **k: Any) -> Any:
            meta = run(*a, **k)
            if threading.get_ident() == me:  # another thread's compile is not ours to record
                sink.append(meta)
            return meta

        return observed

    with Patches() as patches:
        patches.set(mod, name, observing)
        yield


def _fw_metadata() -> Any:
    from torch._guards import TracingContext

    ctx = TracingContext.try_get()
    return getattr(ctx, "fw_metadata", None) if ctx is not None else None


def _tokens_in_outputs() -> bool:
    from torch._functorch import config

    return not bool(getattr(config, "unlift_effect_tokens", False))


class _AotRecorder:
    """The recording partition function and compilers for one ``compile_aot`` call."""

    def __init__(self, frame: Frame, gm: torch.fx.GraphModule, example_inputs: list[Any], partitioner: str):
        self.frame = frame
        self.partitioner = partitioner
        self.index = DynamoIndex(gm)
        self.params, self.buffers = _params_and_buffers(gm)
        self.example_inputs = list(example_inputs)
        self.outer_meta: list[Any] = []
        self.by_seq_nr: dict[int, dict[str, Any]] = {}
        self.joint: Optional[Graph] = None
        self.bw_module: Optional[torch.fx.GraphModule] = None
        self.hooks_snapshot: Optional[HookSnapshot] = None  # Note [Recording inlined saved-tensor hooks]
        self.joint_bodies: dict[str, Graph] = {}
        self.aot: Optional[Aot] = None
        # fake tensors read once for the joint, forward and backward (Note [Values read once per
        # conversion] in tracer/_torch/fx_values.py); dropped once the backward is converted
        self.seen: Optional[ReadOnce] = ReadOnce()

    # -- errors ------------------------------------------------------------------------------
    def _failed(self, stage: str, e: BaseException) -> None:
        """Recording is best effort per stage: a failure never breaks the user's compile, but it is
        never silent either (a warning, ``frame.meta["aot_errors"]`` and a problem of the frame)."""
        text = f"{stage}: {type(e).__name__}: {e}"[:500]
        self.frame.meta.setdefault("aot_errors", []).append(text)
        self.frame.problems.append(f"AOT {stage} not recorded: {type(e).__name__}: {e}"[:500])
        warnings.warn(
            f"dynascope could not record the AOT {text} (frame {self.frame.compile_id})", stacklevel=2
        )

    # -- conversion --------------------------------------------------------------------------
    def _convert(
        self, gm: torch.fx.GraphModule, name: str, *, saved_from: Optional[Graph] = None, body: bool = False,
        code: Any = _LOGGED,
    ) -> tuple[Graph, dict[str, Graph]]:
        """One AOT graph (and, recursively, the HOP bodies it calls) with roles and provenance.

        ``saved_from``: the forward graph, whose nodes give a backward's saved-value
        placeholders their origin. ``body``: a HOP body, see Note [AOT provenance]. ``code``: the text
        torch logged for it, when read earlier (else read now).
        """
        with no_cyclic_gc(young_first=True):  # Note [What a capture records is not the heap's growth] in tracer/_no_gc.py
            return self._convert_graph(gm, name, saved_from, body, code)

    def _convert_graph(self, gm: torch.fx.GraphModule, name: str, saved_from: Optional[Graph],
                       body: bool, code: Any = _LOGGED) -> tuple[Graph, dict[str, Graph]]:
        node_roles = roles(gm)
        if code is _LOGGED:
            code = None if body else logged_graph_code(_LOGGED_AS[name])  # Note [Graph text torch already rendered]
        g = graph_from_fx(gm, name, role_of=lambda n: node_roles.get(n.name), code=code, seen=self.seen)
        by_seq: dict[int, dict[str, Any]] = {}
        if not body:
            by_seq = dict(self.by_seq_nr)
            if name != "joint":  # the joint's own were read by ``partition`` just before (self.by_seq_nr)
                for seq, origin in seq_nr_origins(gm.graph, self.index).items():
                    by_seq.setdefault(seq, origin)
        origins = None
        if saved_from is not None:
            origins = {n.name: n.meta["from"] for n in saved_from.nodes if "from" in n.meta}
        annotate_from(gm.graph, {n.name: n.meta for n in g.nodes}, self.index, by_seq, origins)
        for p in g.placeholders:
            # A primal fed by a Dynamo placeholder that is an nn.Parameter is a parameter here too.
            origin = p.meta.get("from") or {}
            dyn = self.index.root_nodes.get(origin.get("node", "")) if origin.get("graph") == "" else None
            if dyn is not None and dyn.op == "placeholder" and _is_param_placeholder(dyn):
                p.role = "param"
        bodies: dict[str, Graph] = {}
        for n in g.nodes:
            if n.role == "hop":
                for attr in body_attrs(gm, fx_node(gm, n.name)):
                    qual = f"{name}.{attr}"
                    n.calls.append(qual)
                    if qual not in bodies:
                        sub_graph, sub_bodies = self._convert(gm.get_submodule(attr), qual, body=True)
                        bodies.update(sub_bodies)
                        bodies[qual] = sub_graph
        return g, bodies

    def _names_and_params(self, meta: Any, outer: bool) -> tuple[list[str], set[int]]:
        dyn = [n.name for n in self.index.placeholders]
        n_info = len(getattr(meta, "input_info", []) or [])
        lifted = self.params + self.buffers
        if outer and lifted and n_info == len(lifted) + len(dyn):
            # aot_module_simplified passes the graph module's own parameters and buffers first.
            names = lifted + dyn
            params = set(range(len(self.params)))
        else:
            names = dyn if outer else self._inner_names(n_info)
            params = set()
        for i, name in enumerate(names):
            node = self.index.root_nodes.get(name)
            if node is not None and _is_param_placeholder(node):
                params.add(i)
        return names, params

    def _inner_names(self, n_info: int) -> list[str]:
        return [
            self.index.placeholders[i].name if i < len(self.index.placeholders) else f"input_{i}"
            for i in range(n_info)
        ]

    def _user_output_names(self) -> list[str]:
        return [o.name if isinstance(o, torch.fx.Node) else repr(o) for o in self.index.outputs]

    def _new_aot(self, mode: str, inner_meta: Any, placeholders: list[torch.fx.Node]) -> Aot:
        outer = self.outer_meta[0] if self.outer_meta else None
        meta = outer if outer is not None else inner_meta
        names, params = self._names_and_params(meta, outer is not None)
        aot = Aot(mode=mode, partitioner=self.partitioner, joint=self.joint)
        aot.inputs = inputs_from_meta(meta, names, params)
        aot.outputs = outputs_from_meta(meta, self._user_output_names())
        aot.synthetic_bases = synthetic_base_groups(placeholders, self.example_inputs)
        tokens = getattr(inner_meta, "tokens", None)
        aot.effect_tokens = len(tokens) if tokens else 0
        return aot

    # -- the recording partition function ------------------------------------------------------
    # Note [Partitioning HOP bodies]
    # ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    # AOTAutograd partitions each invoke_subgraph body's joint with this same partition function
    # (``run_joint_graph_passes_on_hops``, called with no joint inputs) *before* the frame's
    # joint. Those calls are passed straight through: the bodies reach us afterwards, already
    # partitioned, as the HOP bodies of the frame's joint/forward/backward graphs.
    def partition(self, joint: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
        """Record the joint graph, then return the real partitioner's result unchanged."""
        real = _real_partitioner(self.partitioner)
        if isinstance(joint_inputs, (list, tuple)) and len(joint_inputs) == 0:
            return real(joint, joint_inputs, **kwargs)  # a HOP body: Note [Partitioning HOP bodies]
        bodies: dict[str, Graph] = {}
        try:
            with recording_into(self.frame.problems):
                self.by_seq_nr = seq_nr_origins(joint.graph, self.index)
                self.joint, bodies = self._convert(joint, "joint")
        except Exception as e:  # except: records a problem
            self._failed("joint", e)
        fw_module, bw_module = real(joint, joint_inputs, **kwargs)
        try:
            self.bw_module = bw_module
            self.joint_bodies = bodies
            if self.joint is not None:
                tag_partition(self.joint, fw_module, bw_module)
            self.hooks_snapshot = snapshot(fw_module, bw_module, kwargs.get("num_fwd_outputs"))
        except Exception as e:  # except: records a problem
            self._failed("partition", e)
        return fw_module, bw_module

    # -- the recording compilers -------------------------------------------------------------
    def fw_compiler(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        from torch._dynamo.backends.debugging import boxed_nop

        try:
            with recording_into(self.frame.problems):
                self._record_forward(gm)
        except Exception as e:  # except: records a problem
            self._failed("forward", e)
        note_graph(gm, self.frame, "forward")
        return boxed_nop(gm, example_inputs)

    def _record_forward(self, gm: torch.fx.GraphModule) -> None:
        meta = _fw_metadata()
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        aot = self._new_aot("training", meta, placeholders)
        self.aot = self.frame.aot = aot  # AOT ran: a partial record beats none if a step below fails
        aot.forward, bodies = self._convert(gm, "forward")
        aot.subgraphs.update(self.joint_bodies)
        aot.subgraphs.update(bodies)
        aot.saved, _ = saved_values(gm, meta, tokens_in_outputs=_tokens_in_outputs())
        self.frame.problems.extend(saved_origins(gm, aot.saved, self.index.placeholders))
        _set_returns(aot.forward, return_kinds(gm, meta, tokens_in_outputs=_tokens_in_outputs()))
        aot.saved_tensor_hooks = saved_tensor_hooks(aot, self.hooks_snapshot)
        if self.bw_module is not None:  # Note [The backward converted once]
            code = logged_graph_code(_LOGGED_AS["backward"])  # only readable while this compile runs
            self.frame.meta[PENDING_BACKWARD] = functools.partial(self._late_backward, self.bw_module, code)

    def _record_backward(self, gm: torch.fx.GraphModule, code: Optional[str]) -> None:
        aot = self.aot
        if aot is None:
            return
        with recording_into(self.frame.problems):
            aot.backward, bodies = self._convert(gm, "backward", saved_from=aot.forward, code=code)
        self.seen = None  # the last graph of this compile that shares the joint's tensors
        aot.subgraphs.update(bodies)
        if aot.saved_tensor_hooks is not None and self.hooks_snapshot is not None:
            mark_hook_nodes(aot.backward, self.hooks_snapshot.backward, "unpack")

    def _late_backward(self, gm: torch.fx.GraphModule, code: Optional[str]) -> None:
        """The partitioner's backward, converted when the capture ends (Note [The backward converted once])."""
        try:
            self._record_backward(gm, code)
        except Exception as e:  # except: records a problem
            self._failed("backward", e)

    def bw_compiler(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        from torch._dynamo.backends.debugging import boxed_nop

        try:
            if self.aot is not None:
                self._record_backward(gm, logged_graph_code(_LOGGED_AS["backward"]))
                self.frame.meta.pop(PENDING_BACKWARD, None)  # converted from what torch compiled instead
                self.aot.backward_ran = True
        except Exception as e:  # except: records a problem (the partitioner's backward is still converted at the end)
            self._failed("backward", e)
        note_graph(gm, self.frame, "backward")
        return boxed_nop(gm, example_inputs)

    def inference_compiler(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        from torch._dynamo.backends.debugging import boxed_nop

        try:
            meta = _fw_metadata()
            placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
            aot = self._new_aot("inference", meta, placeholders)
            self.aot = self.frame.aot = aot
            with recording_into(self.frame.problems):
                aot.inference, aot.subgraphs = self._convert(gm, "inference")
            aot.forward = aot.inference  # the graph that runs forward, in either mode
            _set_returns(aot.inference, return_kinds(gm, meta, tokens_in_outputs=_tokens_in_outputs()))
        except Exception as e:  # except: records a problem
            self._failed("inference", e)
        note_graph(gm, self.frame, "inference")
        return boxed_nop(gm, example_inputs)


def _set_returns(g: Graph, returns: Optional[list[list[str]]]) -> None:
    """``meta["returns"]`` on the output node: what each returned value is for."""
    out = g.output
    if out is not None and returns is not None:
        out.meta["returns"] = returns


def _params_and_buffers(gm: torch.fx.GraphModule) -> tuple[list[str], list[str]]:
    """FQNs of the parameters and buffers ``aot_module_simplified`` passes before the graph inputs."""
    try:
        return (
            [k for k, _ in gm.named_parameters(remove_duplicate=False)],
            [k for k, _ in gm.named_buffers(remove_duplicate=False)],
        )
    except Exception as e:  # except: records a problem (AOT inputs then named by their placeholders)
        unknown("the parameter and buffer names AOTAutograd passes first", e)
        return [], []


def _is_param_placeholder(node: torch.fx.Node) -> bool:
    """A Dynamo placeholder standing for an ``nn.Parameter`` (inlined nn modules lift them).

    Its example value is a fake ``Parameter``; a buffer's is a plain fake tensor (both are
    marked static inputs, so that mark cannot tell them apart).
    """
    return isinstance(node.meta.get("example_value"), torch.nn.Parameter)
