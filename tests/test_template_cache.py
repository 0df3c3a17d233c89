"""viz/template_cache.py: compiled templates kept between runs give the very pages compiling gives.

Note [Compiled templates kept]: each case renders viz's real templates through a fresh Jinja2
environment like viz.markup's, once compiling (and keeping) and once from what was kept, and compares
the pages; a damaged or unwritable cache compiles again; ``sys.dont_write_bytecode`` keeps nothing.
"""

from __future__ import annotations

import os
import sys

import jinja2

from tracer.trace_log import load_trace
from viz import markup, template_cache
from viz.html import frame_html
from viz.markup import _ENV


def _env(cache) -> jinja2.Environment:
    env = _ENV.overlay(bytecode_cache=cache)  # viz's filters and options; its own template cache
    env.cache = {}
    return env


def _page(env: jinja2.Environment, cap) -> str:
    """Every frame's section (viz.html.frame_html, the report's templates) rendered through ``env``."""
    old = markup._ENV
    markup._ENV = env
    try:
        return "".join(frame_html(f) for f in cap.frames)
    finally:
        markup._ENV = old


def _capture(child_trace_dir):
    (path,) = [os.path.join(child_trace_dir, f) for f in os.listdir(child_trace_dir) if f.endswith(".log")]
    return load_trace(path)


def test_a_kept_template_renders_the_compiled_page(tmp_path, monkeypatch, child_trace_dir):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cap = _capture(child_trace_dir)
    fresh = _page(_env(None), cap)
    first = _page(_env(template_cache.template_cache()), cap)  # compiles, keeps
    kept = list((tmp_path / "dynascope" / "templates").iterdir())
    assert len(kept) > 5 and "ds-guards" in fresh
    calls = []
    env = _env(template_cache.template_cache())
    monkeypatch.setattr(env, "compile", lambda *a, **k: calls.append(a) or jinja2.Environment.compile(env, *a, **k))
    assert _page(env, cap) == first == fresh
    assert calls == []  # read from the cache, not compiled


def test_a_damaged_cache_compiles_again(tmp_path, monkeypatch, child_trace_dir):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cap = _capture(child_trace_dir)
    want = _page(_env(template_cache.template_cache()), cap)
    for f in (tmp_path / "dynascope" / "templates").iterdir():
        data = f.read_bytes()
        f.write_bytes(data[:data.index(b"\n", len(template_cache._MAGIC)) + 1] + b"\xffgarbage")  # head kept, code cut
    assert _page(_env(template_cache.template_cache()), cap) == want


def test_no_cache_without_a_directory_or_with_dont_write_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert template_cache.template_cache() is None and not list(tmp_path.iterdir())
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a file where the directory would go
    assert template_cache.template_cache() is None


def test_an_unwritable_cache_only_compiles(tmp_path, monkeypatch, child_trace_dir):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cache = template_cache.template_cache()
    cache.directory = str(tmp_path / "gone")  # dump_bytecode cannot create its file there
    cap = _capture(child_trace_dir)
    assert _page(_env(cache), cap) == _page(_env(None), cap)
