"""Where a log's text comes from: a file or a TORCH_TRACE directory, plain or gzip, and where it broke.

Invariant: one place decides which files of a path are logs (``load_trace`` and the ``dynascope``
command both ask :func:`log_files`); damaged gzip data ends the text where it breaks instead of
raising, and :class:`LogText` says where (``broken``, ``bytes``), so what came before it is still read.
Only the standard library is used.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from typing import Optional

__all__ = ["LOG_SUFFIXES", "LogText", "NotATrace", "DamagedTrace", "log_files", "single_log", "sniff_binary"]

LOG_SUFFIXES = (".log", ".log.gz")  # what torch's TORCH_TRACE writes (.log), and the same gzip-compressed


class NotATrace(ValueError):
    """The file is not a TORCH_TRACE structured log (or a directory holds none)."""


class DamagedTrace(ValueError):
    """The file is a damaged log (cut off, broken gzip data) and nothing could be read before the damage."""


def log_files(path: str) -> list[str]:
    """The logs at ``path``: the file itself, or every ``*.log`` / ``*.log.gz`` file of a directory, sorted.

    A path that does not exist is a ``FileNotFoundError``; a directory without logs is ``NotATrace``.
    """
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        found = [os.path.join(path, n) for n in names
                 if n.endswith(LOG_SUFFIXES) and os.path.isfile(os.path.join(path, n))]
        if not found:
            raise NotATrace(f"{path}: no TORCH_TRACE logs in this directory (expected *.log or *.log.gz files; "
                            f"found {len(names)} other entr{'y' if len(names) == 1 else 'ies'}{': ' if names else ''}"
                            f"{', '.join(names[:5])}{', ...' if len(names) > 5 else ''})")
        return found
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    return [path]


def single_log(path: str) -> str:
    """The one log ``path`` names: a file, or the only log of a directory.

    A directory with several logs (one per process or rank; torch adds one per run to the same
    ``TORCH_TRACE`` directory) is a ``ValueError`` listing them newest first: which one is meant is
    never guessed; ``tracer.load_job`` reads a job's per-rank logs together.
    """
    found = log_files(path)
    if len(found) == 1:
        return found[0]
    newest = sorted(found, key=lambda p: (-os.path.getmtime(p), p))
    shown = ", ".join(os.path.basename(p) for p in newest[:5]) + (", ..." if len(newest) > 5 else "")
    raise ValueError(f"{path}: {len(found)} TORCH_TRACE logs in this directory, load_trace reads one: pass its "
                     f"file (newest first: {shown}), or tracer.load_job(dir) for the per-rank logs of one job")


class LogText:
    """The text of one log file (UTF-8, undecodable bytes replaced), gunzipped when it starts with
    gzip's magic. Damaged gzip data ends the text: ``broken`` then says why and ``bytes`` counts the
    bytes read before it (decompressed)."""

    def __init__(self, path: str):
        self.path = path
        self.size = os.path.getsize(path)
        with open(path, "rb") as fh:
            self.gzip = fh.read(2) == b"\x1f\x8b"
        self.broken: Optional[str] = None
        self._guard: Optional[_Guard] = None
        raw: io.RawIOBase | io.BufferedIOBase = open(path, "rb")  # noqa: SIM115 -- closed by close()
        if self.gzip:
            self._guard = _Guard(raw, self)
            raw = io.BufferedReader(self._guard, buffer_size=1 << 20)
        self.text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="\n")

    @property
    def bytes(self) -> int:
        """Bytes of text read so far (decompressed for gzip)."""
        return self._guard.count if self._guard is not None else self.size

    def close(self) -> None:
        self.text.close()

    def __enter__(self) -> LogText:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Guard(io.RawIOBase):
    """A gzip stream that ends where its data is damaged, instead of raising, and says why in the LogText."""

    def __init__(self, file: io.BufferedIOBase, owner: LogText):
        self.file, self.gz, self.owner, self.count = file, gzip.GzipFile(fileobj=file), owner, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.owner.broken is not None:
            return 0
        try:
            data = self.gz.read1(len(b))
        # EOFError: the stream is cut off; zlib.error: damaged deflate data; OSError (BadGzipFile):
        # a damaged header or checksum. Recorded: the text ends here (see LogText.broken).
        except (EOFError, OSError, zlib.error) as e:
            self.owner.broken = str(e) or type(e).__name__
            return 0
        n = len(data)
        b[:n] = data
        self.count += n
        return n

    def close(self) -> None:
        if not self.closed:
            self.gz.close()
            self.file.close()  # GzipFile(fileobj=...) leaves the file it was given open
        super().close()


def sniff_binary(path: str) -> bool:
    """Whether the first 4 KB of the file's text (decompressed) are binary data: a NUL byte or bytes
    that are not UTF-8."""
    with LogText(path) as src:
        raw = src.text.buffer.read(4096)
    if b"\x00" in raw:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start < len(raw) - 3  # a character cut by the 4 KB limit is not binary data
    return False
