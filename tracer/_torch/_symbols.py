"""Every private torch name dynascope uses, with the part of the record it feeds and the releases it exists in.

Invariant: any ``torch._*`` attribute used under ``tracer/_torch/``, and every attribute read on an
internal torch object there (Note [Private attributes we read]), is listed here, each with the checked
torch releases that have it, so ``tests/test_torch_compat.py`` names the name and the release after a
torch upgrade, and a capture on a release nobody checked names what it cannot record
(``tracer/_torch/releases.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CHECKED_RELEASES", "Private", "SYMBOLS", "ATTRIBUTES", "WRAPPERS", "PRIVATE_SYMBOLS",
           "PRIVATE_ATTRIBUTES", "WRAPPER_ATTRIBUTES"]

# The torch releases the whole suite passed on (README "Torch releases"), oldest first.
CHECKED_RELEASES: tuple[str, ...] = ("2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0")
_ALL = CHECKED_RELEASES
# Names a release brought: where an older checked release lacks one, an adapter named after the
# release reads the same fact another way (since_2_12.py, since_2_13.py), or torch there does not
# take the step the name belongs to (graph_passes.py).
_SINCE_2_12 = _ALL[1:]
_SINCE_2_13 = _ALL[2:]
_BEFORE_2_12 = _ALL[:1]


@dataclass(frozen=True)
class Private:
    name: str  # "module:attr" (attr may be dotted); for an instance attribute "module:Class"
    feeds: str  # the part of the record that needs it: what a capture cannot record without it
    releases: tuple[str, ...] = _ALL  # the checked torch releases that have it
    attribute: str = ""  # an attribute read on instances of the class ``name`` (Note [Private attributes we read])

    def __str__(self) -> str:
        return f"{self.name}.{self.attribute}" if self.attribute else self.name


def _names(feeds: str, *names: str, releases: tuple[str, ...] = _ALL) -> list[Private]:
    return [Private(n, feeds, releases) for n in names]


def _attrs(owner: str, feeds: str, *attrs: str, releases: tuple[str, ...] = _ALL) -> list[Private]:
    return [Private(owner, feeds, releases, a) for a in attrs]


_HOP = "torch._dynamo.variables.higher_order_ops"
_AOT_DESC = "torch._functorch._aot_autograd.descriptors"
_PAUSE = "the pause of tracer.trace (PausedState)"
_AOT = "the AOTAutograd record (Frame.aot)"
_DRAFT = "what draft_export worked around after a failed export (Export.draft)"

SYMBOLS: list[Private] = [
    # inductor.py: compile_caches_off; inductor_backward.py too
    *_names("caches off for one capture (every compile is recorded)", "torch._inductor.config:fx_graph_cache",
            "torch._functorch.config:enable_autograd_cache"),
    # fx_graph.py, subgraphs.py: targets as strings, HOP calls
    *_names("node targets and HOP calls (Graph nodes)", "torch._ops:OpOverload", "torch._ops:OpOverloadPacket",
            "torch._ops:HigherOrderOperator"),
    # fx_graph.py: symbolic sizes as expressions ("s0", "u0")
    *_names("symbolic sizes of nodes (Node.shape)", "torch.fx.experimental.sym_node:SymNode.maybe_as_int",
            "torch.fx.experimental.sym_node:SymNode.expr"),
    # subtracer.py: Note [Speculation hook point]
    *_names("HOP body speculations, operands vs lifted inputs (Frame.speculations, Subgraph inputs)",
            f"{_HOP}:speculate_subgraph", f"{_HOP}:speculate_subgraph_with_auto_output_flattening",
            "torch._dynamo.variables.lazy:LazyVariableTracker",
            "torch._dynamo.variables.base:VariableTracker.maybe_fx_node",
            "torch._dynamo.output_graph:OutputGraph.subtracer"),  # pushes onto tx.output.tracers (depth)
    # subtracer.py, subgraphs.py: Note [Operands through the pytree] and Note [Operand or lifted]
    *_names("operand sources of HOP bodies (Subgraph inputs)", "torch._dynamo.variables.dicts:ConstDictVariable",
            "torch._dynamo.variables.lists:BaseListVariable", "torch._dynamo.source:AttrSource",
            "torch._dynamo.source:CellContentsSource", "torch._dynamo.source:DictGetItemSource",
            "torch._dynamo.source:GetItemSource", "torch._guards:ChainedSource"),
    *_names("compile ids of every record (Frame.compile_id)", "torch._guards:CompileContext.current_trace_id"),
    # breaks.py: Note [Graph break hook point]
    *_names("graph breaks (Capture.graph_breaks)",
            "torch._dynamo.symbolic_convert:InstructionTranslatorBase.log_graph_break",
            "torch._guards:TracingContext.extract_stack"),
    # breaks.py: Note [Why a frame has no graph]
    *_names("why a frame has no graph (Frame.status_reason)",
            "torch._dynamo.convert_frame:CatchErrorsWrapper._handle_skip", releases=_SINCE_2_13),
    # since_2_13.py: Note [Skip reasons before torch 2.13] (read only on a release without _handle_skip)
    *_names("why a frame has no graph (Frame.status_reason)", "torch._dynamo.convert_frame:log"),
    # backend.py: the code object being compiled
    *_names("the code of each frame (Frame.code)",
            "torch._dynamo.symbolic_convert:InstructionTranslator.current_tx"),
    # structured.py: Note [What we read from the structured trace]
    *_names("compile order, recompile reasons, graph text (Capture.recompiles)", "torch._logging._internal:trace_log"),
    # trace_filter.py: Note [Formatting only what we read] (and every module that bound the name)
    *_names("less formatting while capturing (speed only)", "torch._logging._internal:trace_structured",
            "torch._logging:trace_structured"),
    # trace_events.py: file names interned in logged stacks
    # also export_failure.py: Note [File names draft_export did not see]
    *_names("file names of logged stacks (Frame.meta['stack'], Export.draft's user lines)",
            "torch._logging.structured:INTERN_TABLE"),
    # inductor.py: Note [What Inductor tells us]; the registered backend and its provenance config
    *_names("Inductor graphs and kernels (Frame.inductor)", "torch._dynamo.backends.registry:lookup_backend",
            "torch._inductor.config:trace.provenance_tracking_level",
            # inductor_backward.py: Note [Backward kernels and their Dynamo nodes]
            "torch._inductor.compile_fx:compile_fx_forward", "torch._inductor.compile_fx:compile_fx_backward",
            "torch._inductor.debug:reset_provenance_globals", "torch._inductor.config:patch"),
    # inductor.py compile_inductor: torch.compile's mode= as Inductor config patches (CaptureOptions.mode)
    *_names("Inductor compiled with torch.compile's mode (CaptureOptions.mode)", "torch._inductor:list_mode_options"),
    # backend.py: Note [Dynamo keeps every backend]
    *_names("a capture freed when dropped (Recorder.forget)", "torch._dynamo.eval_frame:cached_backends"),
    # fx_marks.py: Note [Profiler time per FX node]
    *_names("time per node (tracer.profile)", "torch.fx.experimental._config:enrich_profiler_metadata",
            "torch.fx.experimental._config:patch"),
    # kernel_marks.py: Note [Profiler time per Inductor kernel]
    *_names("time per Inductor kernel (tracer.profile)", "torch._inductor.config:cpp.enable_kernel_profile"),
    # bytecode.py: resume functions Dynamo creates
    *_names("bytecode and resume functions (Frame.bytecode)",
            "torch._dynamo.resume_execution:ContinueExecutionCache.lookup"),
    # capture.py: the compile entry point with guard_export_fn and isolate_recompiles
    *_names("every capture (the compile entry point and its config)", "torch._dynamo:optimize",
            "torch._dynamo.config:patch", "torch._dynamo.config:capture_scalar_outputs"),
    # isolation.py / guards.py: Note [Which cache entries a capture removes], Note [BACKEND_MATCH in torch 2.13]
    *_names("fresh code for each capture, the BACKEND_MATCH guard (Frame.guards)",
            "torch._dynamo.convert_frame:register_bytecode_hook", "torch._C._dynamo.eval_frame:reset_code",
            "torch._C._dynamo.eval_frame:_debug_get_cache_entry_list", "torch._guards:Guard.create_fn_name",
            "torch._dynamo.eval_frame:_optimize"),  # since_2_13.py: does it take isolate_recompiles?
    # since_2_13.py: Note [Recompile regions before torch 2.13]
    *_names("fresh code for each capture, the BACKEND_MATCH guard (Frame.guards)",
            "torch._C._dynamo.eval_frame:_get_total_cache_entry_count",
            "torch._C._dynamo.eval_frame:_get_cache_entries_for_region", releases=_SINCE_2_13),
    # isolation.py: Note [Compile what torch.compile compiles]
    *_names("which callable is compiled (Capture.fn)", "torch._dynamo.external_utils:wrap_inline",
            "torch._dynamo.eval_frame:_set_in_optimized_module"),
    # isolation.py: a lazy module initializes eagerly first, as torch does
    *_names("lazy modules (nn.LazyLinear, ...) captured", "torch.nn.modules.lazy:LazyModuleMixin._infer_parameters"),
    # graph_passes.py: Note [Dynamo passes after the output graph is logged]
    *_names("Dynamo passes after the graph log point (Frame.passes)",
            "torch._higher_order_ops.passes.inline_invoke_subgraph:inline_invoke_subgraph", releases=_SINCE_2_12),
    *_names("Dynamo passes after the graph log point (Frame.passes)",
            "torch._higher_order_ops.passes.inline_invoke_subgraph:inline_single_use_invoke_subgraph",
            releases=_SINCE_2_13),
    # export_failure.py: Note [Where an export failure points]; draft_export's report after a failed export
    *_names(_DRAFT, "torch.export._draft_export:DraftExportReport", "torch.export._draft_export:FailureReport.print"),
    # export_inputs.py: Note [Bad input or failed export] (torch.export's own first checks, run before exporting)
    *_names("tracer.export's errors for inputs that do not fit forward or dynamic_shapes",
            "torch.export.dynamic_shapes:_combine_args", "torch.export.dynamic_shapes:_check_dynamic_shapes"),
    # export_dynamo.py: Note [Strict export's Dynamo frame] (read from 2.13 on: Note [Strict export's guards
    # before torch 2.13] in since_2_13.py; the names exist on 2.11 too)
    *_names("strict export's Dynamo guards (Frame.guards of an export)",
            "torch._dynamo.convert_frame:GraphCaptureOutput.build_guards"),
    # isolation.py: Note [Automatic-dynamic state is per capture]
    *_names("automatic-dynamic state per capture (recompiles)", "torch._dynamo.pgo:get_code_state"),
    # bench_support.py: Note [TORCH_TRACE without the environment variable]; the wrap HOP for bench models
    *_names("bench/ only", "torch._logging._internal:LazyTraceHandler", "torch._logging._internal:TorchLogsFormatter",
            "torch._higher_order_ops.wrap:wrap", "torch._dynamo.config:recompile_limit",
            "torch._dynamo.config:accumulated_recompile_limit"),
    # pause.py / pause_snapshot.py: the Session's hooks (Note [comptime callbacks] in tracer/session_worker.py)
    *_names(_PAUSE, "torch._dynamo.comptime:comptime",
            "torch._dynamo.comptime:ComptimeContext._i_will_not_complain_if_bc_breaks_InstructionTranslator",
            "torch._dynamo.symbolic_convert:InstructionTranslatorBase.step",
            "torch._dynamo.output_graph:OutputGraph.current_tracer", "torch._dynamo.output_graph:SubgraphTracer",
            "torch._dynamo.variables:CellVariable", "torch._dynamo.variables.lazy:LazyVariableTracker.is_realized",
            "torch._dynamo.variables.lazy:LazyVariableTracker.peek_value",
            "torch._dynamo.variables.lazy:LazyVariableTracker.unwrap", "torch._dynamo.side_effects:SideEffects"),
    # aot.py, aot_meta.py, aot_provenance.py: the AOTAutograd stage (Note [Observing the outer metadata])
    *_names(_AOT, "torch._dynamo.backends.common:aot_autograd", "torch._dynamo.backends.debugging:boxed_nop",
            "torch._functorch.partitioners:default_partition",
            "torch._functorch.partitioners:min_cut_rematerialization_partition",
            "torch._functorch.aot_autograd:run_functionalized_fw_and_collect_metadata",
            "torch._functorch.config:unlift_effect_tokens", "torch._functorch.config:saved_tensors_hooks_filtering_mode",
            "torch._functorch._aot_autograd.schemas:MutationType",
            "torch._functorch._aot_autograd.schemas:ViewAndMutationMeta",
            "torch._functorch._aot_autograd.utils:top_saved_tensors_hooks",
            "torch._functorch._aot_autograd.utils:saved_tensors_hooks_are_inlineable",
            *(f"{_AOT_DESC}:{c}" for c in (
                "PlainAOTInput", "ParamAOTInput", "BufferAOTInput", "SyntheticBaseAOTInput", "ViewBaseAOTInput",
                "TangentAOTInput", "BackwardTokenAOTInput", "SavedForBackwardsAOTOutput",
                "AOTInput")),  # aot_meta.py: Note [Origin of a saved value]
            "torch._dynamo.source:UnspecializedParamBufferSource", "torch._guards:TracingContext.try_get"),
    # since_2_12.py: Note [Size hints before torch 2.12]
    *_names(_AOT, "torch.fx.experimental.symbolic_shapes:optimization_hint", releases=_SINCE_2_12),
    *_names(_AOT, "torch.fx.experimental.symbolic_shapes:size_hint", releases=_BEFORE_2_12),
    # since_2_12.py: Note [A compile on a worker thread, before torch 2.12] (called on 2.11 only)
    *_names(_PAUSE, "torch._C:_ensureCUDADeviceGuardSet"),
]

# Note [Private attributes we read]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Besides module-level names, the fence reads attributes of Dynamo's internal objects, which a torch
# upgrade may rename without any import failing. Each is listed with its class: ``tests/test_torch_compat.py``
# checks it on the class (a class attribute or property, a dataclass or NamedTuple field, an annotation,
# or ``self.attribute =`` in the class's source) and, for the tracing state, on the real instances a
# tiny compile hands to a comptime callback.
_TX = "torch._dynamo.symbolic_convert:InstructionTranslatorBase"
# Not listed (no class to check it on): ``partial_fx_graph``, which torch sets on whatever exception
# escapes a trace (torch/fx/_symbolic_trace.py ``Tracer.trace``, torch/_dynamo/symbolic_convert.py) and
# torch/export/_trace.py prints; export_failure.py reads it with getattr and a default (ExportFailure.partial_graph,
# "" without it), and tests/test_export_failures.py checks it equals torch's on every release the suite runs on.
ATTRIBUTES: list[Private] = [
    *_attrs("torch.export._draft_export:DraftExportReport", _DRAFT, "failures", "str_to_filename"),
    *_attrs("torch.export._draft_export:FailureReport", _DRAFT, "failure_type", "data"),
    *_attrs("torch._dynamo.convert_frame:GraphCaptureOutput", "strict export's Dynamo guards (Frame.guards of an export)",
            "output_graph"),
    *_attrs("torch._dynamo.exc:Unsupported", "strict export's graph break (Capture.graph_breaks)", "msg"),
    *_attrs("torch.utils._sympy.value_ranges:ValueRanges", "range constraints (ExportProgram.range_constraints)",
            "lower", "upper"),
    # pause.py / pause_snapshot.py: the paused InstructionTranslator, its OutputGraph and tracers
    *_attrs(_TX, _PAUSE, "instruction_pointer", "instructions", "output", "f_code", "lineno", "parent",
            "symbolic_locals", "current_instruction"),
    *_attrs("torch._dynamo.output_graph:OutputGraph", _PAUSE, "tracers", "side_effects", "guards"),
    *_attrs("torch._dynamo.output_graph:SubgraphTracer", _PAUSE, "parent", "source_target", "description",
            "debug_level", "graph", "lifted_freevars"),
    *_attrs("torch._dynamo.side_effects:SideEffects", _PAUSE, "store_attr_mutations"),
    *_attrs("torch._dynamo.variables:CellVariable", _PAUSE, "pre_existing_contents"),
    *_attrs("torch._guards:TraceId", "compile ids of every record (Frame.compile_id)", "compile_id", "attempt"),
    *_attrs("torch._guards:CompileId", "compile ids of every record (Frame.compile_id)", "frame_id",
            "frame_compile_id", "compiled_autograd_id"),
    *_attrs("torch._dynamo.bytecode_transformation:Instruction", _PAUSE, "starts_line", "offset", "opname",
            "argrepr", "argval"),
    # guards.py / pause_snapshot.py: a Guard's source name, stack and code
    *_attrs("torch._guards:Guard", "guards (Frame.guards)", "name", "user_stack", "code_list"),
    # breaks.py: a graph break's exception (Note [Graph break hook point])
    *_attrs("torch._dynamo.exc:Unsupported", "graph breaks (Capture.graph_breaks)", "logged", "real_stack"),
    # breaks.py: Note [Why a frame has no graph]
    *_attrs("torch._dynamo.types:ConvertFrameReturn", "why a frame has no graph (Frame.status_reason)",
            "guarded_code"),
    *_attrs("torch._dynamo.types:ConvertFrameReturn", "why a frame has no graph (Frame.status_reason)",
            "skip_reason", releases=_SINCE_2_13),
    # isolation.py: unwrapping what the user passed, and the config module's table
    *_attrs("torch._dynamo.eval_frame:OptimizedModule", "which callable is compiled (Capture.fn)", "_orig_mod",
            "_forward"),
    *_attrs("torch.nn.modules.lazy:LazyModuleMixin", "lazy modules (nn.LazyLinear, ...) captured", "_initialize_hook"),
    *_attrs("torch.utils._config_module:ConfigModule", "every capture (the compile entry point and its config)",
            "_config"),
]

# Attributes torch sets on the functions it wraps (no class to look at): checked on real wrappers.
#   _torchdynamo_orig_callable, _isolate_recompiles_id: on torch._dynamo.optimize(...)(fn) (backend.py, isolation.py)
#   _torchdynamo_disable: on torch._dynamo.disable(fn) (isolation.py)
WRAPPERS: list[Private] = [
    *_names("which callable is compiled (Capture.fn)", "_torchdynamo_orig_callable", "_torchdynamo_disable"),
    *_names("fresh code for each capture, the BACKEND_MATCH guard (Frame.guards)", "_isolate_recompiles_id",
            releases=_SINCE_2_13),  # Note [Recompile regions before torch 2.13]
]

# The plain views the compatibility test parametrizes over.
PRIVATE_SYMBOLS: list[str] = [s.name for s in SYMBOLS]
PRIVATE_ATTRIBUTES: list[tuple[str, str]] = [(a.name, a.attribute) for a in ATTRIBUTES]
WRAPPER_ATTRIBUTES: list[str] = [w.name for w in WRAPPERS]
