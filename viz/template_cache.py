"""Compiled templates kept between runs, as Python keeps compiled modules in ``__pycache__``.

Invariant: a kept template is exactly what compiling its source gives (used only for the same source
checksum and the same Jinja2 and Python), so every page is the same byte for
byte with or without it; a cache that cannot be read or written only means compiling again. Nothing
is kept when Python is told not to write bytecode (``PYTHONDONTWRITEBYTECODE``, ``-B``).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import types
from typing import Optional

import jinja2
from jinja2.bccache import Bucket

__all__ = ["template_cache"]

# Note [Compiled templates kept]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Jinja2 compiles a template to Python source and that to a code object on its first use in a
# process: the report's templates cost about 0.15 s of every ``dynascope report``, more than
# tlparse needs for a small log. This cache keeps each code object (``marshal``, as ``.pyc`` files
# do) in a directory the user owns, ``$XDG_CACHE_HOME/dynascope/templates`` (``~/.cache`` by
# default), one file per template path, headed by Jinja2's and Python's versions and the checksum of
# the template's source: a file whose head differs is not used. Not Jinja2's own
# ``FileSystemBytecodeCache``: its files store the checksum with pickle, and no file read here is
# ever unpickled. A damaged or unwritable cache is no error (the template is compiled as without a
# cache), and ``sys.dont_write_bytecode`` keeps nothing, as for Python's own cache.
_MAGIC = f"dynascope template {jinja2.__version__} {sys.implementation.cache_tag}\n".encode()


class _Kept(jinja2.BytecodeCache):
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _file(self, bucket: Bucket) -> str:
        return os.path.join(self.directory, f"{bucket.key}.code")

    def _head(self, bucket: Bucket) -> bytes:
        return _MAGIC + bucket.checksum.encode("ascii") + b"\n"

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            with open(self._file(bucket), "rb") as fh:
                data = fh.read()
        except OSError:  # except: none kept (or unreadable): compiled
            return
        head = self._head(bucket)
        if not data.startswith(head):
            return
        try:
            code = marshal.loads(data[len(head):])
        except (EOFError, ValueError, TypeError):  # except: a damaged file: compiled
            return
        if isinstance(code, types.CodeType):
            bucket.code = code

    def dump_bytecode(self, bucket: Bucket) -> None:
        name = self._file(bucket)
        tmp = f"{name}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as fh:
                fh.write(self._head(bucket) + marshal.dumps(bucket.code))
            os.replace(tmp, name)  # whole or not at all, for a process reading it meanwhile
        except OSError:  # except: nothing kept (read-only or full disk); compiled again next time
            with contextlib.suppress(OSError):
                os.remove(tmp)


def template_cache() -> Optional[jinja2.BytecodeCache]:
    """The cache of Note [Compiled templates kept], or None (bytecode not to be written, no directory)."""
    if sys.dont_write_bytecode:
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "dynascope", "templates")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:  # except: no cache (compiled every time)
        return None
    return _Kept(path)
