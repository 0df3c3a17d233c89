"""trace() / Session / PausedState: the comptime-style pause. PLACEHOLDER owned by issue 5."""


class Session:  # placeholder
    pass


class PausedState:  # placeholder
    pass


class LocalVar:  # placeholder
    pass


class TracerState:  # placeholder
    pass


def trace(fn, *args, **kwargs):
    raise NotImplementedError


def pause(label: str = "") -> None:
    return None
