"""Where the browser tests find Chromium, and how they launch it (Debian's chromium, driven by Playwright)."""

from __future__ import annotations

import os
import shutil

__all__ = ["CHROMIUM", "CHROMIUM_ARGS"]

CHROMIUM = os.environ.get("DYNASCOPE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
