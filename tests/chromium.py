"""Where the browser tests find Chromium, how they launch it (Debian's chromium, driven by Playwright), and
how a test opens a page on it: every page a test opens collects the page's uncaught errors (``pageerror``),
and a test fails on any."""

from __future__ import annotations

import contextlib
import os
import shutil
from typing import Any, Iterator, Optional

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "checked_page", "new_page"]

CHROMIUM = os.environ.get("DYNASCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def new_page(browser: Any, width: Optional[int] = 1440, height: int = 900) -> tuple[Any, list[str]]:
    """A new page of ``browser`` (``width`` x ``height``; Playwright's default viewport where ``width`` is
    None), and the list its uncaught errors (``pageerror``) are appended to as they come. The caller closes
    the page and asserts the list is empty; :func:`checked_page` does both."""
    page = browser.new_page(**({} if width is None else {"viewport": {"width": width, "height": height}}))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, errors


@contextlib.contextmanager
def checked_page(browser: Any, width: Optional[int] = 1440, height: int = 900) -> Iterator[tuple[Any, list[str]]]:
    """:func:`new_page`'s (page, errors) for a ``with`` block: when the block ends without an exception, the
    page has thrown no error (else AssertionError listing them); the page is closed however the block ends."""
    page, errors = new_page(browser, width, height)
    try:
        yield page, errors
        assert not errors, errors
    finally:
        page.close()
