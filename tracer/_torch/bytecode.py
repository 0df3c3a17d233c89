"""Dynamo's rewritten bytecode: each transformed code object and the resume functions Dynamo made,
decompiled to Python with depyf.

Why depyf: it is the decompiler written for exactly this job (by a PyTorch contributor, used by
PyTorch's own docs to explain Dynamo's output), it follows every CPython bytecode version torch
supports, and it decompiles the code objects Dynamo generates (``__compiled_fn_*`` calls, resume
functions with their prologue), which general decompilers (uncompyle6, decompyle3) do not support
past Python 3.8/3.9.

Invariant: hooks (``convert_frame.register_bytecode_hook`` and a wrapper of
``ContinueExecutionCache.lookup``) are installed for one capture and removed after it, also on
error; they only read. A decompilation that fails is a ``CodeText.problem`` with the ``dis``
listing kept, never an exception.
"""

from __future__ import annotations

import base64
import dis
import inspect
import marshal
import types
from typing import Any, Optional

from tracer._torch.patching import Patches
from tracer._torch.subtracer import compile_key
from tracer.model import Bytecode, CodeText
from tracer.model.bytecode import set_resolver

__all__ = ["BytecodeRecorder", "code_text", "kept_code"]

# Note [A failed decompilation is not an inexact record]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The exact record of a code object is its ``dis`` listing, which is always kept. The decompiled
# Python is a reading aid; when depyf cannot produce it (depyf 0.20 stops at some Python 3.11
# SWAP/CALL sequences Dynamo emits after a graph break) the failure is ``CodeText.problem``, shown
# where the source would be, and not a ``Frame.problems`` entry: nothing the capture records is unknown.

AttemptKey = tuple[int, int, int]
RESUME_PREFIX = "torch_dynamo_resume_in_"  # co_name of every resume function (torch/_dynamo/resume_execution.py)


class BytecodeRecorder:
    """Per attempt: the (code, transformed code) pair and the resume functions Dynamo created."""

    def __init__(self) -> None:
        self.transformed: dict[AttemptKey, tuple[types.CodeType, types.CodeType]] = {}
        self.resumes: dict[AttemptKey, list[types.CodeType]] = {}
        self.problems: list[str] = []
        self._handle: Any = None

    def install(self, patches: Patches) -> None:
        from torch._dynamo.convert_frame import register_bytecode_hook
        from torch._dynamo.resume_execution import ContinueExecutionCache

        original = ContinueExecutionCache.__dict__["lookup"].__func__
        recorder = self

        def lookup(cls: Any, *args: Any, **kwargs: Any) -> Any:
            code = original(cls, *args, **kwargs)
            recorder._on_resume(code)
            return code

        patches.set(ContinueExecutionCache, "lookup", classmethod(lookup))
        self._handle = register_bytecode_hook(self._on_bytecode)

    def remove(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _akey(self) -> Optional[AttemptKey]:
        key, attempt = compile_key()
        return (key[0], key[1], attempt) if key is not None else None

    def _on_resume(self, code: types.CodeType) -> None:
        akey = self._akey()
        if akey is not None and isinstance(code, types.CodeType):
            codes = self.resumes.setdefault(akey, [])
            if all(c is not code for c in codes):
                codes.append(code)

    def _on_bytecode(self, code: types.CodeType, new_code: types.CodeType) -> None:
        akey = self._akey()
        if akey is not None:
            self.transformed[akey] = (code, new_code)
        return None

    def record(self, akey: AttemptKey, guard_function: str) -> Optional[Bytecode]:
        """The Bytecode of one attempt (None when Dynamo installed no code for it); drops the code objects."""
        pair = self.transformed.pop(akey, None)
        resumes = self.resumes.pop(akey, [])
        if pair is None:
            return None
        code, new_code = pair
        return Bytecode(original=kept_code(code, original=True), transformed=kept_code(new_code),
                        resume_functions=[kept_code(c) for c in resumes], guard_function=guard_function)

    def clear(self) -> None:
        self.transformed.clear()
        self.resumes.clear()


# Note [Constants marshal cannot write]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The code Dynamo installs can hold constants ``marshal`` does not know: the transformed code of every
# ``transformers`` model of the zoo bench loads ``torch.device`` objects as constants (torch 2.13).
# Decompiling such a code object at once cost 4-5 % of a whole capture (bench/RESULTS.md). So a
# constant of a type in KEPT_CONSTANTS (small values that reference nothing else) is replaced, for
# marshal, by a stand-in string, and the constants themselves are kept beside the bytes on the
# CodeText (in its ``__dict__``, not a field: never written to JSON). When the text is first read the
# stand-ins are put back, so depyf and ``dis`` see the very code object Dynamo made, and the kept
# constants are dropped. Any other constant marshal refuses (it could reference anything, a tensor)
# still makes the text at once. A CodeText whose stand-ins cannot be put back (a copy that lost its
# constants) is not listed, never listed with the stand-ins.
KEPT_CONSTANTS = ("device", "dtype", "layout", "memory_format")  # torch.<name> types kept as constants
_STAND_IN = "\x00dynascope: constant kept beside the bytes #"


class _NotKept(Exception):
    """A constant marshal cannot write and the stand-ins cannot keep."""


def _kept_type(value: Any) -> bool:
    import torch

    return any(type(value) is getattr(torch, name) for name in KEPT_CONSTANTS)


def _with_stand_ins(code: types.CodeType, kept: list[Any]) -> types.CodeType:
    """``code`` (and the code objects among its constants) with each constant marshal cannot write
    replaced by a stand-in naming its index in ``kept``; raises _NotKept for a constant it cannot keep."""
    consts = []
    for value in code.co_consts:
        if isinstance(value, types.CodeType):
            value = _with_stand_ins(value, kept)
        elif isinstance(value, str) and value.startswith(_STAND_IN):
            raise _NotKept("a constant looks like a stand-in")
        else:
            try:
                marshal.dumps(value)
            except ValueError:
                if not _kept_type(value):
                    raise _NotKept(type(value).__name__) from None
                kept.append(value)
                value = f"{_STAND_IN}{len(kept) - 1}"
        consts.append(value)
    return code.replace(co_consts=tuple(consts))


def _put_back(code: types.CodeType, kept: Optional[tuple[Any, ...]]) -> types.CodeType:
    """``code`` with its stand-ins replaced by the kept constants; raises _NotKept when some cannot be."""
    consts = []
    for value in code.co_consts:
        if isinstance(value, types.CodeType):
            value = _put_back(value, kept)
        elif isinstance(value, str) and value.startswith(_STAND_IN):
            index = int(value[len(_STAND_IN):])
            if kept is None or index >= len(kept):
                raise _NotKept("the constants kept beside the bytes are gone")
            value = kept[index]
        consts.append(value)
    return code.replace(co_consts=tuple(consts))


def kept_code(code: types.CodeType, *, original: bool = False) -> CodeText:
    """``code`` kept as bytes, to be listed and decompiled when first read (Note [Decompiled when first
    read] in tracer/model/bytecode.py); the user's own source at once when ``original``. Constants
    marshal cannot write are kept beside the bytes (Note [Constants marshal cannot write]); a code
    object holding one that cannot be kept is turned into text now."""
    constants: list[Any] = []
    try:
        kept = base64.b64encode(marshal.dumps(code)).decode("ascii")
    except ValueError:
        try:
            kept = base64.b64encode(marshal.dumps(_with_stand_ins(code, constants))).decode("ascii")
        except (ValueError, _NotKept):
            return code_text(code, original=original)
    out = CodeText(name=code.co_name, code=kept)
    if constants:
        out.__dict__["_constants"] = tuple(constants)
    source = _user_source(code) if original else None
    if source is not None:
        out.source = source
    return out


def _resolve(text: CodeText) -> None:
    """Fill a pending CodeText (registered with the model at import): the listing, and the source or
    the problem unless the source is known already."""
    try:
        code = marshal.loads(base64.b64decode(text.code))
    except (ValueError, EOFError, TypeError) as e:  # not this Python's marshal format, or damaged
        text.dis = f"<not listed: the kept bytecode does not load here: {type(e).__name__}: {e}>"
        if not text.source:
            text.problem = f"{text.name}: not decompiled, the kept bytecode does not load here"
        return
    try:
        code = _put_back(code, text.__dict__.pop("_constants", None))
    except (_NotKept, ValueError) as e:  # See Note [Constants marshal cannot write]
        text.dis = f"<not listed: {e}>"
        if not text.source:
            text.problem = f"{text.name}: not decompiled, {e}"
        return
    if text.source:
        text.dis = _dis(code)
        return
    filled = code_text(code)
    text.source, text.dis, text.problem = filled.source, filled.dis, filled.problem


set_resolver(_resolve)


def _user_source(code: types.CodeType) -> Optional[str]:
    if code.co_name.startswith(RESUME_PREFIX):
        return None
    try:
        return inspect.getsource(code)
    except (OSError, TypeError):
        return None  # no source file (exec'd code): decompile it like Dynamo's own code


def code_text(code: types.CodeType, *, original: bool = False) -> CodeText:
    """``code`` as text now: the user's own source when ``original`` and it is user code, else
    depyf's decompilation; on failure the problem, with the ``dis`` listing always kept."""
    listing = _dis(code)
    source = _user_source(code) if original else None
    if source is not None:
        return CodeText(name=code.co_name, source=source, dis=listing)
    import depyf
    from depyf.decompiler import Decompiler

    counted = Decompiler.temp_count
    Decompiler.temp_count = 0  # See Note [depyf's temporary names]
    try:
        source = depyf.decompile(code)
    except Exception as e:  # except: records a problem (depyf raises many kinds on bytecode it does not know)
        return CodeText(name=code.co_name, dis=listing,
                        problem=f"depyf could not decompile {code.co_name}: {type(e).__name__}: {e}"[:400])
    finally:
        Decompiler.temp_count = counted
        # Note [depyf's decompile cache]: Decompiler.decompile is an lru_cache on the method, so every
        # Decompiler (and the code and state it holds) would live for the rest of the process; a
        # Capture must not keep anything of the compile alive (tests/test_capture_memory.py).
        Decompiler.decompile.cache_clear()
    return CodeText(name=code.co_name, source=source, dis=listing)


# Note [depyf's temporary names]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# depyf names the temporaries of a decompilation ``__temp_<n>`` from one counter on the Decompiler
# class that only grows, so the same code object decompiled later in a process reads
# ``__temp_20`` where it read ``__temp_9`` before: the text would depend on when it was first read
# (Note [Decompiled when first read] in tracer/model/bytecode.py) and on what was decompiled
# earlier. Each decompilation here counts from 0 (the counter is put back after it), so the text of
# a code object is the same whenever it is read.


def _dis(code: types.CodeType) -> str:
    try:
        return dis.Bytecode(code).dis()
    except Exception as e:  # except: display text only (the listing says why it is missing)
        return f"<dis failed: {type(e).__name__}: {e}>"
