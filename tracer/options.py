"""CaptureOptions: how ``capture``, ``trace`` and a Session compile, validated once.

Invariant: a CaptureOptions that exists is valid (``__post_init__`` checks every field and names the
valid choices), it is frozen, and :meth:`CaptureOptions.to_meta` is its JSON-friendly record in
``cap.meta["options"]``. This module imports no torch (see Note [Lazy torch import] in tracer/session.py).

>>> CaptureOptions(partitioner="default").to_meta()["partitioner"]
'default'
>>> CaptureOptions(partitioner="fast")
Traceback (most recent call last):
...
ValueError: unknown partitioner 'fast' (must be one of ['min_cut', 'default'])
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

__all__ = ["BACKENDS", "CUDAGRAPH_MODES", "MODES", "OPTION_NAMES", "PARTITIONERS", "CaptureOptions", "split_options"]

PARTITIONERS = ("min_cut", "default")  # the AOTAutograd partitioners of aot_eager (min_cut is its default)
BACKENDS = ("aot_eager", "inductor")  # aot_eager: AOT graphs recorded (Frame.aot); inductor: Frame.inductor
# torch.compile's modes (``torch._inductor.list_mode_options``): Inductor config presets, so backend="inductor" only
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")  # the modes that turn on triton.cudagraphs


@dataclass(frozen=True)
class CaptureOptions:
    """The options of one capture; see ``tracer.capture`` for what each one does."""

    fullgraph: bool = False  # as for torch.compile: a graph break is an error
    dynamic: Optional[bool] = None  # as for torch.compile: None lets Dynamo decide (automatic dynamic)
    more_calls: tuple[tuple, ...] = ()  # argument tuples to call the same compiled function with afterwards
    partitioner: str = "min_cut"  # one of PARTITIONERS
    backward: Optional[bool] = None  # run .backward() on the outputs; None: when an input requires grad
    capture_scalar_outputs: Optional[bool] = None  # torch._dynamo.config.capture_scalar_outputs, None: unchanged
    dynamo_config: dict[str, Any] = field(default_factory=dict)  # other torch._dynamo.config values
    backend: str = "aot_eager"  # one of BACKENDS: what compiles the Dynamo graph after it is recorded
    mode: Optional[str] = None  # as for torch.compile, one of MODES (backend="inductor" only); None: Inductor's config

    def __post_init__(self) -> None:
        if self.partitioner not in PARTITIONERS:
            raise ValueError(f"unknown partitioner {self.partitioner!r} (must be one of {list(PARTITIONERS)})")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r} (must be one of {list(BACKENDS)})")
        if self.mode is not None and self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r} (must be one of {list(MODES)}, as for torch.compile)")
        if self.mode is not None and self.backend != "inductor":
            raise ValueError(f"mode={self.mode!r} selects Inductor options: pass backend=\"inductor\" too")
        for name, choices in (("fullgraph", (True, False)), ("dynamic", (None, True, False)),
                              ("backward", (None, True, False)), ("capture_scalar_outputs", (None, True, False))):
            value = getattr(self, name)
            if not any(value is c for c in choices):
                raise TypeError(f"{name} must be one of {list(choices)}, got {value!r}")
        calls = []
        for c in self.more_calls or ():
            if not isinstance(c, (tuple, list)):
                raise TypeError(f"more_calls must be a list of argument tuples, e.g. [(x2,)], "
                                f"got an item {type(c).__name__}")
            calls.append(tuple(c))
        object.__setattr__(self, "more_calls", tuple(calls))
        config = self.dynamo_config if self.dynamo_config is not None else {}
        if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
            raise TypeError(f"dynamo_config must be a dict of torch._dynamo.config names to values, got {config!r}")
        object.__setattr__(self, "dynamo_config", dict(config))

    def config(self) -> dict[str, Any]:
        """The ``torch._dynamo.config`` values patched for the capture (dynamo_config + capture_scalar_outputs)."""
        config = dict(self.dynamo_config)
        if self.capture_scalar_outputs is not None:
            config["capture_scalar_outputs"] = self.capture_scalar_outputs
        return config

    def to_meta(self) -> dict[str, Any]:
        """The options as data for ``cap.meta["options"]``: ``more_calls`` as a count, config values as repr."""
        return {"fullgraph": self.fullgraph, "dynamic": self.dynamic, "partitioner": self.partitioner,
                "backward": self.backward, "backend": self.backend, "more_calls": len(self.more_calls),
                "dynamo_config": {k: repr(v) for k, v in self.config().items()},
                **({"mode": self.mode} if self.mode is not None else {})}


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(CaptureOptions))


def split_options(kwargs: dict[str, Any], options: Optional[CaptureOptions] = None
                  ) -> tuple[CaptureOptions, dict[str, Any]]:
    """(the CaptureOptions, the function's own kwargs) from ``capture``/``trace`` keyword arguments.

    Option names among ``kwargs`` configure the capture; the rest are the traced function's. Passing
    both ``options=`` and one of its fields by name is an error (which one would win is not obvious).
    """
    named = {k: v for k, v in kwargs.items() if k in OPTION_NAMES}
    rest = {k: v for k, v in kwargs.items() if k not in OPTION_NAMES}
    if options is None:
        return CaptureOptions(**named), rest
    if not isinstance(options, CaptureOptions):
        raise TypeError(f"options must be a tracer.CaptureOptions, got {type(options).__name__}")
    if named:
        raise TypeError(f"pass either options= or the option keywords {sorted(named)}, not both")
    return options, rest
