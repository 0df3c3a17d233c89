"""The only place dynascope touches private torch modules.

Every private symbol used is listed in ``PRIVATE_SYMBOLS`` (see ``tracer/_torch/_symbols.py``) and
checked by ``tests/test_torch_compat.py``, so a torch upgrade fails loudly in one place; on a torch
nobody checked, ``releases.py`` warns once and a missing hook point becomes a problem on the capture.
Invariant: every hook here is installed for one capture and removed after it, also on error.

Where the capture core hooks into Dynamo (one module each):

==================  ==================================================================  ====================
module              hook point                                                          records
==================  ==================================================================  ====================
``backend.py``      the Dynamo backend + ``guard_export_fn`` of ``torch._dynamo.optimize``  Frame graphs, guards
``subtracer.py``    ``higher_order_ops.speculate_subgraph`` and                         Speculations, operand
                    ``speculate_subgraph_with_auto_output_flattening`` (module attrs)    vs lifted inputs
``breaks.py``       ``InstructionTranslatorBase.log_graph_break`` (class attr)          GraphBreaks
``structured.py``   a handler on the ``torch.__trace`` logger                           compile order,
                                                                                        Recompile reasons
``trace_filter.py`` ``trace_structured`` (in every module that bound it), while only    (less formatting)
                    the capture's readers listen
``guards.py``       ``CacheEntry.backend`` of the entries the capture made             BACKEND_MATCH
``isolation.py``    ``convert_frame.register_bytecode_hook``, ``reset_code``,           fresh code, clean
                    ``pgo.get_code_state``, ``torch._dynamo.config.patch``              caches, configs
``subgraphs.py``    (reads the GraphModule only) for ``tracer/hop_tree.py``             the HOP body tree
``fx_graph.py``     (reads fx graphs only)                                              Graph / Node.meta
``unknowns.py``     (no hook) what a read of a torch object could not give, said once     Frame/Capture.problems
``aot.py``          AOTAutograd compilers and partitioner (AOT stage)                   Frame.aot
``pause*.py``       comptime pause (tracer.trace)                                       PausedState
``beyond.py``       holds the three below for one capture (symbols by ``shape_events``)  Frame.inductor/bytecode/
``trace_events.py`` a second handler on ``torch.__trace`` (Inductor, ShapeEnv events)    symbols/specializations
``bytecode.py``     ``register_bytecode_hook``, ``ContinueExecutionCache.lookup``         Frame.bytecode (depyf)
``inductor.py``     registered "inductor" backend, provenance + cache configs (patch)   Frame.inductor
``inductor_backward.py`` ``compile_fx.compile_fx_forward`` / ``compile_fx_backward``    backward kernels'
                    (module attrs)                                                      Dynamo nodes
==================  ==================================================================  ====================

All attribute patches go through ``patching.Patches``, whose ``ACTIVE`` list is empty whenever
no capture runs (``tests/test_hooks_removed.py``).
"""
