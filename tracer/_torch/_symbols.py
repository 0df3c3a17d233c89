"""Every private torch symbol dynascope uses, as "module:attr" strings (attr may be dotted).

Invariant: any ``torch._*`` attribute used under ``tracer/_torch/``, and every attribute read on an
internal torch object there (Note [Private attributes we read]), is listed here, so
``tests/test_torch_compat.py`` names the missing one after a torch upgrade.
"""

PRIVATE_SYMBOLS: list[str] = [
    # inductor.py: compile_caches_off
    "torch._inductor.config:fx_graph_cache",
    "torch._functorch.config:enable_autograd_cache",
    # fx_graph.py, subgraphs.py: targets as strings, HOP calls
    "torch._ops:OpOverload",
    "torch._ops:OpOverloadPacket",
    "torch._ops:HigherOrderOperator",
    # fx_graph.py: symbolic sizes as expressions ("s0", "u0")
    "torch.fx.experimental.sym_node:SymNode.maybe_as_int",
    "torch.fx.experimental.sym_node:SymNode.expr",
    # subtracer.py: Note [Speculation hook point]
    "torch._dynamo.variables.higher_order_ops:speculate_subgraph",
    "torch._dynamo.variables.higher_order_ops:speculate_subgraph_with_auto_output_flattening",
    "torch._dynamo.variables.lazy:LazyVariableTracker",
    "torch._dynamo.variables.base:VariableTracker.maybe_fx_node",
    "torch._dynamo.output_graph:OutputGraph.subtracer",  # pushes onto tx.output.tracers (depth)
    # subtracer.py, subgraphs.py: Note [Operands through the pytree] (SideEffects.store_attr_mutations,
    # ChainedSource.base are instance fields) and Note [Operand or lifted]
    "torch._dynamo.variables.dicts:ConstDictVariable",
    "torch._dynamo.variables.lists:BaseListVariable",
    "torch._dynamo.source:AttrSource",
    "torch._dynamo.source:CellContentsSource",
    "torch._dynamo.source:DictGetItemSource",
    "torch._dynamo.source:GetItemSource",
    "torch._guards:ChainedSource",
    "torch._guards:CompileContext.current_trace_id",
    # breaks.py: Note [Graph break hook point]
    "torch._dynamo.symbolic_convert:InstructionTranslatorBase.log_graph_break",
    "torch._guards:TracingContext.extract_stack",
    # backend.py: the code object being compiled
    "torch._dynamo.symbolic_convert:InstructionTranslator.current_tx",
    # structured.py: Note [What we read from the structured trace]
    "torch._logging._internal:trace_log",
    # trace_filter.py: Note [Formatting only what we read] (and every module that bound the name)
    "torch._logging._internal:trace_structured",
    "torch._logging:trace_structured",
    # trace_events.py: file names interned in logged stacks
    "torch._logging.structured:INTERN_TABLE",
    # inductor.py: Note [What Inductor tells us]; the registered backend and its provenance config
    "torch._dynamo.backends.registry:lookup_backend",
    "torch._inductor.config:trace.provenance_tracking_level",
    # inductor_backward.py: Note [Backward kernels and their Dynamo nodes]
    "torch._inductor.compile_fx:compile_fx_forward",
    "torch._inductor.compile_fx:compile_fx_backward",
    "torch._inductor.debug:reset_provenance_globals",
    "torch._inductor.config:patch",
    "torch._inductor.config:fx_graph_cache",
    "torch._functorch.config:enable_autograd_cache",
    # bytecode.py: resume functions Dynamo creates
    "torch._dynamo.resume_execution:ContinueExecutionCache.lookup",
    # capture.py: the compile entry point with guard_export_fn and isolate_recompiles
    "torch._dynamo:optimize",
    "torch._dynamo.config:patch",
    "torch._dynamo.config:capture_scalar_outputs",
    # isolation.py / guards.py: Note [Which cache entries a capture removes], Note [BACKEND_MATCH in torch 2.13]
    "torch._dynamo.convert_frame:register_bytecode_hook",
    "torch._C._dynamo.eval_frame:reset_code",
    "torch._C._dynamo.eval_frame:_get_total_cache_entry_count",
    "torch._C._dynamo.eval_frame:_debug_get_cache_entry_list",
    "torch._C._dynamo.eval_frame:_get_cache_entries_for_region",
    "torch._guards:Guard.create_fn_name",
    # isolation.py: Note [Compile what torch.compile compiles]
    "torch._dynamo.external_utils:wrap_inline",
    "torch._dynamo.eval_frame:_set_in_optimized_module",
    # graph_passes.py: Note [Dynamo passes after the output graph is logged]
    "torch._higher_order_ops.passes.inline_invoke_subgraph:inline_invoke_subgraph",
    "torch._higher_order_ops.passes.inline_invoke_subgraph:inline_single_use_invoke_subgraph",
    # isolation.py: Note [Automatic-dynamic state is per capture]
    "torch._dynamo.pgo:get_code_state",
    # bench_support.py: Note [TORCH_TRACE without the environment variable]; the wrap HOP for bench models
    "torch._logging._internal:LazyTraceHandler",
    "torch._logging._internal:TorchLogsFormatter",
    "torch._higher_order_ops.wrap:wrap",
    # pause.py / pause_snapshot.py: the Session's hooks (Note [comptime callbacks] in tracer/session_worker.py)
    "torch._dynamo.comptime:comptime",
    "torch._dynamo.comptime:ComptimeContext._i_will_not_complain_if_bc_breaks_InstructionTranslator",
    "torch._dynamo.symbolic_convert:InstructionTranslatorBase.step",
    "torch._dynamo.output_graph:OutputGraph.current_tracer",
    "torch._dynamo.output_graph:SubgraphTracer",
    "torch._dynamo.variables:CellVariable",
    "torch._dynamo.variables.lazy:LazyVariableTracker.is_realized",
    "torch._dynamo.variables.lazy:LazyVariableTracker.peek_value",
    "torch._dynamo.variables.lazy:LazyVariableTracker.unwrap",
    "torch._dynamo.side_effects:SideEffects",
    # aot.py, aot_meta.py, aot_provenance.py: the AOTAutograd stage (Note [Observing the outer metadata])
    "torch._dynamo.backends.common:aot_autograd",
    "torch._dynamo.backends.debugging:boxed_nop",
    "torch._functorch.partitioners:default_partition",
    "torch._functorch.partitioners:min_cut_rematerialization_partition",
    "torch._functorch.aot_autograd:run_functionalized_fw_and_collect_metadata",
    "torch._functorch.config:unlift_effect_tokens",
    "torch._functorch.config:saved_tensors_hooks_filtering_mode",
    "torch._functorch._aot_autograd.schemas:MutationType",
    "torch._functorch._aot_autograd.schemas:ViewAndMutationMeta",
    "torch._functorch._aot_autograd.utils:top_saved_tensors_hooks",
    "torch._functorch._aot_autograd.utils:saved_tensors_hooks_are_inlineable",
    "torch._functorch._aot_autograd.descriptors:PlainAOTInput",
    "torch._functorch._aot_autograd.descriptors:ParamAOTInput",
    "torch._functorch._aot_autograd.descriptors:BufferAOTInput",
    "torch._functorch._aot_autograd.descriptors:SyntheticBaseAOTInput",
    "torch._functorch._aot_autograd.descriptors:ViewBaseAOTInput",
    "torch._functorch._aot_autograd.descriptors:TangentAOTInput",
    "torch._functorch._aot_autograd.descriptors:BackwardTokenAOTInput",
    "torch._functorch._aot_autograd.descriptors:SavedForBackwardsAOTOutput",
    "torch._functorch._aot_autograd.descriptors:AOTInput",  # aot_meta.py: Note [Origin of a saved value]
    "torch._dynamo.source:DictGetItemSource",
    "torch._dynamo.source:UnspecializedParamBufferSource",
    "torch._guards:TracingContext.try_get",
    "torch.fx.experimental.symbolic_shapes:optimization_hint",
]

# Note [Private attributes we read]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Besides module-level names, the fence reads attributes of Dynamo's internal objects, which a torch
# upgrade may rename without any import failing. Each is listed as ("module:Class", "attribute"):
# ``tests/test_torch_compat.py`` checks it on the class (a class attribute or property, a dataclass or
# NamedTuple field, an annotation, or ``self.attribute =`` in the class's source) and, for the
# tracing state, on the real instances a tiny compile hands to a comptime callback.
PRIVATE_ATTRIBUTES: list[tuple[str, str]] = [
    # pause.py / pause_snapshot.py: the paused InstructionTranslator, its OutputGraph and tracers
    *[("torch._dynamo.symbolic_convert:InstructionTranslatorBase", a) for a in (
        "instruction_pointer", "instructions", "output", "f_code", "lineno", "parent", "symbolic_locals",
        "current_instruction")],
    *[("torch._dynamo.output_graph:OutputGraph", a) for a in ("tracers", "current_tracer", "side_effects", "guards")],
    *[("torch._dynamo.output_graph:SubgraphTracer", a) for a in (
        "parent", "source_target", "description", "debug_level", "graph", "lifted_freevars")],
    ("torch._dynamo.side_effects:SideEffects", "store_attr_mutations"),
    ("torch._dynamo.variables:CellVariable", "pre_existing_contents"),
    ("torch._guards:TraceId", "compile_id"),
    ("torch._guards:TraceId", "attempt"),
    *[("torch._dynamo.bytecode_transformation:Instruction", a) for a in (
        "starts_line", "offset", "opname", "argrepr", "argval")],
    # guards.py / pause_snapshot.py: a Guard's source name, stack and code
    *[("torch._guards:Guard", a) for a in ("name", "user_stack", "code_list")],
    # breaks.py: a graph break's exception (Note [Graph break hook point])
    ("torch._dynamo.exc:Unsupported", "logged"),
    ("torch._dynamo.exc:Unsupported", "real_stack"),
    # isolation.py: unwrapping what the user passed, and the config module's table
    ("torch._dynamo.eval_frame:OptimizedModule", "_orig_mod"),
    ("torch.utils._config_module:ConfigModule", "_config"),
]

# Attributes torch sets on the functions it wraps (no class to look at): checked on real wrappers.
#   _torchdynamo_orig_callable, _isolate_recompiles_id: on torch._dynamo.optimize(...)(fn) (backend.py, isolation.py)
#   _torchdynamo_disable: on torch._dynamo.disable(fn) (isolation.py)
WRAPPER_ATTRIBUTES: list[str] = ["_torchdynamo_orig_callable", "_isolate_recompiles_id", "_torchdynamo_disable"]
