"""What a service process leaves out when it imports its libraries: the command-line parts of
libraries it uses only as libraries.

``import httpx`` also imports httpx's own command-line client when its optional dependencies are
installed, and they are (litestar and uvicorn bring ``click`` and ``rich``): ``click``, ``rich``
and ``pygments``, 0.4 s of a 2 s start on a 2-core machine, in every service that makes HTTP
requests. A ``None`` in :data:`sys.modules` makes that one import fail, and httpx then goes on
without its command-line entry point, which no service runs.
"""

from __future__ import annotations

import sys

__all__ = ["leave_out_cli_modules"]

CLI_MODULES = ("httpx._main",)
"""Modules a service never uses that its libraries would import on their own."""


def leave_out_cli_modules() -> None:
    """Keep :data:`CLI_MODULES` from being imported in this process (call it first, in
    ``__main__``; a module already imported stays as it is)."""
    for name in CLI_MODULES:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
