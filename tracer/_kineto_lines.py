"""Kineto's progress lines kept out of the user's stderr while ``tracer.profile`` starts and stops ``torch.profiler``.

Invariant: around the one call it wraps, file descriptor 2 goes to a temporary file and is put back
after, also when the call raises; every line written meanwhile comes back out on fd 2, in order,
except kineto's own progress lines (``USDT``/``STAGE``/``INFO``/``VERBOSE`` severity) and its failed
GPU probe on a machine without one, so any other warning or error is never lost.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from contextlib import contextmanager
from typing import Iterator

__all__ = ["kineto_progress_kept_out", "is_kineto_progress"]

# Note [Kineto's progress lines]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torch.profiler's CPU backend is kineto, and kineto logs from C++ straight to fd 2, with a
# timestamp, the pid and its own file:line: on every start and stop of a profile it writes
# ``USDT:<date> <time> <pid>:<tid> SyncActivityProfilerHandler.cpp:NN] profiler_start`` (and
# ``..._stop``; torch 2.13, 2.14 and 2.15 all do), plus ``STAGE:`` lines at a lower log level
# (kineto's ``Logger.cpp``; the severities are ``LoggerOutputType`` in ``kineto/ILoggerObserver.h``).
# The one off switch is the environment variable ``KINETO_LOG_LEVEL`` (6 silences them), which kineto
# reads once, when ``import torch`` initialises it: too late for a library, and it would silence
# kineto's errors as well. Jupyter's kernel forwards what a process writes to fd 2 into the cell's
# output, so each profiled cell would show lines that change every run and name kineto's source lines.
# So ``tracer.profile`` runs the profiler's start and its stop (not the user's steps between them)
# with fd 2 sent to a temporary file, then writes back every line that is not one of these progress
# lines: warnings and errors (``WARNING:``/``ERROR:``) and anything else still reach stderr. One error
# is also kept out: a CUDA build of torch on a machine with no usable GPU driver has kineto write
# ``ERROR:... DeviceProperties.cpp:NN] gpuGetDeviceCount failed with code 35`` at the first profile
# (torch 2.14, 2.15), its probe of GPUs for device properties; ``tracer.profile`` asks for CPU
# activities only, so it says nothing about this profile. fd 2 is the process's, so a line another
# thread writes in that moment comes out a little late, never lost.

_PREFIX = rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ "
_PROGRESS = re.compile(rb"^(?:(?:USDT|STAGE|INFO|VERBOSE):" + _PREFIX + rb"[\w.]+:\d+\] "
                       rb"|ERROR:" + _PREFIX + rb"DeviceProperties\.cpp:\d+\] gpuGetDeviceCount failed with code \d+$)")


def is_kineto_progress(line: bytes) -> bool:
    """Whether ``line`` is one of kineto's progress lines (Note [Kineto's progress lines])."""
    return _PROGRESS.match(line) is not None


@contextmanager
def kineto_progress_kept_out() -> Iterator[None]:
    """Run the body with fd 2 in a temporary file; then write back to fd 2 every line but kineto's progress lines."""
    try:
        sys.stderr.flush()  # what Python wrote before goes out before, not into the file
    except (AttributeError, ValueError, OSError):
        pass
    with tempfile.TemporaryFile() as held:
        saved = os.dup(2)
        try:
            os.dup2(held.fileno(), 2)
            try:
                yield
            finally:
                try:
                    sys.stderr.flush()
                except (AttributeError, ValueError, OSError):
                    pass
                os.dup2(saved, 2)
        finally:
            os.close(saved)
            held.seek(0)
            kept = b"".join(ln for ln in held.read().splitlines(keepends=True) if not is_kineto_progress(ln))
            while kept:
                kept = kept[os.write(2, kept):]
