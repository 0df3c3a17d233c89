"""What ``tracer.export`` checks before torch.export runs: the type of each argument, and that ``args``,
``kwargs`` and ``dynamic_shapes`` fit the module's ``forward``, by torch.export's own checks.

Invariant: a bad argument is one ``TypeError`` or ``ValueError`` naming it and what is valid, raised before
anything is installed or traced; whether ``dynamic_shapes`` fits the inputs is judged by torch.export's own
check (``_combine_args`` and ``_check_dynamic_shapes`` in torch/export/dynamic_shapes.py, the two calls
torch.export makes first), never by a copy of it. See Note [Bad input or failed export].
"""

from __future__ import annotations

from typing import Any, Optional

import torch

__all__ = ["check_export_inputs"]

# Note [Bad input or failed export]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``tracer.export`` records a failed export instead of raising (Note [Exported programs as frames] in
# tracer/model/export.py). A call that cannot be an export at all is not such a failure: an object that is
# not a module, ``args`` that is not a tuple (``tuple(x)`` of a tensor would silently export its rows),
# inputs that do not bind to ``forward``, a ``dynamic_shapes`` torch's own check rejects, a flag that is not
# a bool (torch reads ``strict="no"`` as true). Each raises here, before any hook is installed, with
# torch's own message where torch's check found it. What torch's check lets through and torch then
# rejects while tracing (a dimension index past a tensor's rank, for one) is the export's failure
# record, as any other error torch raises while exporting.


def _forward_name(mod: torch.nn.Module) -> str:
    return f"{type(mod).__qualname__}.forward"


def check_export_inputs(mod: Any, args: Any, kwargs: Optional[Any], dynamic_shapes: Any, flags: dict[str, Any]) -> None:
    """Raise ``TypeError`` / ``ValueError`` for a call of ``tracer.export`` that cannot be an export
    (Note [Bad input or failed export]); ``flags`` maps each boolean keyword's name to its value."""
    if not isinstance(mod, torch.nn.Module):
        raise TypeError(f"tracer.export() exports a torch.nn.Module (as torch.export.export does), got "
                        f"{type(mod).__name__}; to export a function, call it from a Module's forward")
    if not isinstance(args, tuple):
        raise TypeError(f"tracer.export(): args must be a tuple of example positional inputs, e.g. (x,), "
                        f"got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"tracer.export(): kwargs must be a dict of example keyword inputs or None, "
                        f"got {type(kwargs).__name__}")
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"tracer.export(): {name} must be True or False, got {value!r}")
    if dynamic_shapes is not None and not isinstance(dynamic_shapes, (dict, tuple, list)):
        raise TypeError("tracer.export(): dynamic_shapes must be None, a dict (by forward's argument names), "
                        f"a tuple or a list (by position), got {type(dynamic_shapes).__name__}")
    from torch.export.dynamic_shapes import _check_dynamic_shapes, _combine_args

    try:
        combined = _combine_args(mod, args, kwargs or {})
    except TypeError as e:  # except: re-raises (as one TypeError naming forward)
        raise TypeError(f"tracer.export(): args and kwargs do not fit {_forward_name(mod)}: {e}") from e
    if dynamic_shapes is None:
        return
    try:
        _check_dynamic_shapes(combined, dynamic_shapes)
    except Exception as e:  # except: re-raises (as one ValueError with torch's own message)
        raise ValueError(f"tracer.export(): dynamic_shapes do not fit the inputs of {_forward_name(mod)} "
                         f"({type(e).__name__}: {e})") from e
