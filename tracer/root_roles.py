"""The role of a root-graph placeholder, from the Source Dynamo read its value from: one policy for live and log.

Invariant: torch-free; a role is decided only from what the caller knows. A live capture knows the
frame's argument names (its code object); a TORCH_TRACE log does not, so a frame local read there
(``L['y']``: an argument, or a closure variable) is ``"unknown"`` rather than a guess
(Note [Root roles from a log]).
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["placeholder_name", "root_role"]

# A frame local, possibly indexed through a pytree (``L['xs'][0]``): never an attribute or a size.
_LOCAL = re.compile(r"^L\['(?P<name>[^']+)'\](\[[^\]]+\])*$")


def root_role(source: str, *, parameter: bool, symbolic: bool, arg_names: Optional[set[str]]) -> str:
    """Role of a root-graph placeholder (Note [Closed sets of kinds] in tracer/model/kinds.py).

    A Parameter, or a ``._parameters[...]``/``._buffers[...]`` source, is a ``param``. A frame
    argument (``L['x']``, ``L['n']`` even as a SymInt, ``L['xs'][0]``) is an ``operand``; when
    ``arg_names`` is None (not known) such a source is ``unknown``. Anything else is lifted: a
    ``lifted_symbol`` when its value is symbolic (a size ``L['x'].size()[0]``), else a
    ``lifted_freevar`` (globals, closure cells, module attributes).

    >>> root_role("L['x']", parameter=False, symbolic=False, arg_names={"x"})
    'operand'
    >>> root_role("L['y']", parameter=False, symbolic=False, arg_names={"x"})
    'lifted_freevar'
    >>> root_role("L['y']", parameter=False, symbolic=False, arg_names=None)
    'unknown'
    """
    if parameter or "._parameters[" in source or "._buffers[" in source:
        return "param"
    m = _LOCAL.match(source)
    if m:
        if arg_names is None:
            return "unknown"
        if m.group("name") in arg_names:
            return "operand"
    return "lifted_symbol" if symbolic else "lifted_freevar"


def placeholder_name(source: str) -> str:
    """The name Dynamo gives the graph input it reads from ``source`` (torch/_dynamo/variables/builder.py:
    ``re.sub(r"[^a-zA-Z0-9]+", "_", self.name)``); fx may add a suffix when two inputs share it.

    >>> placeholder_name("L['self']._modules['lin']._parameters['weight']")
    'L_self_modules_lin_parameters_weight_'
    """
    return re.sub(r"[^a-zA-Z0-9]+", "_", source)
