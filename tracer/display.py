"""The one display hook between the data and its views: a renderer registry keyed by type.

Invariant: ``tracer`` never imports ``viz``. A data class's ``_repr_mimebundle_`` asks
:func:`mimebundle`, which uses the renderer registered for the object's type (or a base type);
``viz`` registers its renderers when it is imported. See Note [Display through a registry].
"""

from __future__ import annotations

import importlib
from collections.abc import Container
from typing import Any, Callable

__all__ = ["DEFAULT_VIEWS", "mimebundle", "register", "renderer_for"]

Renderer = Callable[..., dict[str, Any]]  # (obj, include=..., exclude=...) -> mime bundle

# Note [Display through a registry]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# As with IPython's ``formatter.for_type``, the data class knows nothing of its renderer: viz
# calls ``register(Capture, viz.mimebundle)`` at import. So that evaluating ``cap`` in a cell shows
# the explorer even when the user imported only ``tracer``, the first display with no renderer
# imports the modules named in DEFAULT_VIEWS *by name* (an import-time edge from tracer to viz
# would be a circle); if none is installed or registers one, the object shows as text.
DEFAULT_VIEWS = ("viz",)

_RENDERERS: dict[type, Renderer] = {}
_tried_defaults = False


def register(cls: type, renderer: Renderer) -> None:
    """Render instances of ``cls`` (and subclasses) with ``renderer(obj, include=, exclude=)``."""
    _RENDERERS[cls] = renderer


def renderer_for(obj: Any) -> Renderer | None:
    """The renderer registered for ``type(obj)`` or its nearest base; loads DEFAULT_VIEWS once."""
    global _tried_defaults
    for _ in range(2):
        for cls in type(obj).__mro__:
            if cls in _RENDERERS:
                return _RENDERERS[cls]
        if _tried_defaults:
            return None
        _tried_defaults = True
        for name in DEFAULT_VIEWS:
            try:
                importlib.import_module(name)
            except ImportError:  # the views are optional: the data still shows as text
                continue
    return None


def mimebundle(obj: Any, include: Container[str] | None = None, exclude: Container[str] | None = None) -> dict[str, Any]:
    """``obj``'s mime bundle from its registered renderer, else ``{"text/plain": str(obj)}``."""
    renderer = renderer_for(obj)
    if renderer is None:
        return {"text/plain": str(obj)}
    return renderer(obj, include=include, exclude=exclude)
