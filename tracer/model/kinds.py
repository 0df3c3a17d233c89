"""The closed sets of kinds every "kind" field of the model takes its values from.

Like fx's ``_legal_ops``: a view can style every value and :func:`tracer.model.validate` can
notice a new one. See Note [Closed sets of kinds].
"""

from __future__ import annotations

__all__ = [
    "ALIAS_KINDS",
    "AOT_MODES",
    "FRAME_STATUSES",
    "INPUT_KINDS",
    "NODE_OPS",
    "NODE_ROLES",
    "SAVED_KINDS",
    "SAVED_ORIGINS",
    "TIME_PHASES",
]

# Note [Closed sets of kinds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Each "kind" field takes its values from a closed set, so a view can style every value and a
# test can notice a new one. ``validate()`` enforces them.
#
# NODE_OPS    fx's own opcodes.
# NODE_ROLES  what a node *is* for a reader of the graph:
#   "operand"         a placeholder fed by a value the user passed (to the frame or to the HOP)
#   "lifted_freevar"  a placeholder a SubgraphTracer added for a free variable (closure, global,
#                     module attribute, a value created in an enclosing body)
#   "lifted_symbol"   a placeholder for a free symbol (s0, u0) bound because a lifted or operand
#                     tensor mentions it (torch/_dynamo/output_graph.py SubgraphTracer.track_produced_symints,
#                     Note [Auto lift basic free symbols when create_graph_input])
#   "hop_supplied"    a body placeholder whose value the HOP itself makes when it runs the body
#                     (flex_attention's score and indices, a scan/map slice, a while_loop carry,
#                     the incoming gradient of an autograd.Function backward): no parent node feeds it
#   "param"           a parameter or buffer (get_attr, or a placeholder Dynamo made for one)
#   "hop"             a call of a higher-order operator; ``Node.calls`` names its bodies
#   "output"          the output node
#   "op"              everything else
#   "unknown"         a placeholder whose kind the record cannot tell (a body input of a loaded
#                     TORCH_TRACE log: operand or lifted free variable needs the speculation record)
# INPUT_KINDS     the kind of a SubgraphInput (one per body placeholder).
# FRAME_STATUSES  what became of one compile attempt (see Frame.status):
#   "compiled"   the attempt produced a graph the backend compiled
#   "restarted"  Dynamo stopped this attempt and traced the frame again (a graph break restarts
#                analysis: the next attempt compiles the partial graph), see Frame.status_reason
#   "no_graph"   the attempt succeeded but produced no graph (python-only code, e.g. a resume
#                function without tensor ops): nothing was handed to the backend
#   "failed"     the compile raised; Dynamo either ran the frame eagerly (skipped it) or the
#                exception reached the caller (fullgraph, an error in the backend)
# TIME_PHASES     keys of Frame.times, seconds from torch's own compilation metrics
#                 (torch/_dynamo/utils.py CompilationMetrics): "total" (entire_frame_compile_time_s),
#                 "backend" (backend_compile_time_s, AOTAutograd included for this backend),
#                 "aot_autograd" (aot_autograd_cumulative_compile_time_us), "dynamo" (total minus
#                 backend: bytecode tracing, guards, graph passes), "before_restart"
#                 (dynamo_time_before_restart_s: spent in attempts that restarted).
NODE_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")
NODE_ROLES = ("operand", "lifted_freevar", "lifted_symbol", "hop_supplied", "param", "hop", "output", "op", "unknown")
INPUT_KINDS = ("operand", "lifted_freevar", "lifted_symbol", "hop_supplied", "unknown")
FRAME_STATUSES = ("compiled", "restarted", "no_graph", "failed")
TIME_PHASES = ("total", "dynamo", "aot_autograd", "backend", "before_restart")
SAVED_KINDS = ("tensor", "symint", "symfloat", "symbool", "opaque")  # what a saved-for-backward value is
# Where a saved value comes from: a parameter or buffer of the module (it lives anyway, saving
# it costs no memory), a graph input the user passed, an activation (an intermediate the forward
# made, which the backward keeps alive), or unknown when AOTAutograd's metadata did not say.
SAVED_ORIGINS = ("activation", "parameter", "buffer", "input", "unknown")
AOT_MODES = ("training", "inference")
ALIAS_KINDS = (
    "none",
    "alias_of_input",
    "is_input",
    "alias_of_intermediate",
    "alias_of_intermediate_save_as_output",
    "alias_of_intermediate_base_is_user_output",
    "custom_function_view",
    "unsafe_view_alias",
)
