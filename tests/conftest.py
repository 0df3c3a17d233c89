"""Shared fixtures: one capture per example case per test session (compiling is the slow part)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # so tests can `import cases`

from cases import CASES  # noqa: E402


@pytest.fixture(scope="session")
def captured():
    """``captured(name)`` -> the Capture of ``CASES[name]`` (made once per session)."""
    import tracer

    done: dict[str, object] = {}

    def get(name: str):
        if name not in done:
            fn, args, kwargs = CASES[name]()
            done[name] = tracer.capture(fn, *args, **kwargs)
        return done[name]

    return get
