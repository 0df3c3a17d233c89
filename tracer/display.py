"""The one display hook between the data and its views: a renderer registry keyed by type.

Invariant: ``tracer`` never imports ``viz``. A data class's ``_repr_mimebundle_`` asks
:func:`mimebundle`, which uses the renderer registered for the object's type (or a base type);
``viz`` registers its renderers when it is imported. See Note [Display through a registry].
"""

from __future__ import annotations

import importlib
from collections.abc import Container
from typing import Any, Callable

__all__ = ["DEFAULT_VIEWS", "mimebundle", "register", "register_by_name", "renderer_for"]

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
_BY_NAME: dict[tuple[str, str], Renderer] = {}  # (module, qualified name) -> renderer; See Note [Views registered by name]
_tried_defaults = False

# Note [Views registered by name]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# ``import viz`` registers its renderers, and every ``import viz.<module>`` runs that first: the
# ``dynascope`` command too. Registering by type would import the classes' modules (the live
# session's ``tracer.session``, ``tracer.paused``, the profile and job models) in a command that
# only reads a log. So, as with IPython's ``formatter.for_type_by_name``, a view can be registered
# for a class named by its module and qualified name, matched against each class of an object's MRO
# when it is displayed; nothing is imported to register it. A renderer registered by type wins
# over one registered by name for the same class.


def register(cls: type, renderer: Renderer) -> None:
    """Render instances of ``cls`` (and subclasses) with ``renderer(obj, include=, exclude=)``."""
    _RENDERERS[cls] = renderer


def register_by_name(module: str, qualname: str, renderer: Renderer) -> None:
    """Render instances of the class ``module.qualname`` (and subclasses) with ``renderer``, without
    importing ``module`` (Note [Views registered by name])."""
    _BY_NAME[(module, qualname)] = renderer


def renderer_for(obj: Any) -> Renderer | None:
    """The renderer registered for ``type(obj)`` or its nearest base; loads DEFAULT_VIEWS once."""
    global _tried_defaults
    for _ in range(2):
        for cls in type(obj).__mro__:
            if cls in _RENDERERS:
                return _RENDERERS[cls]
            named = _BY_NAME.get((cls.__module__, cls.__qualname__))
            if named is not None:
                return named
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
