"""A leak detector: planted tokens searched for everywhere a process could have put them.

While a flow runs, a thread samples every process's ``/proc/<pid>/cmdline``; HTTP clients made by
:meth:`Canary.client` keep every response; at the end :meth:`Canary.assert_clean` reads every
file under the given roots (stores, vault, key file, logs, spans, worktrees, repositories with
their ``.git/config``, the NATS store) and fails naming each place a token was found.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

__all__ = ["Canary"]


class Canary:
    """Tokens to look for, and where they were seen."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = [t.encode() for t in tokens if t]
        self.hits: list[str] = []
        self.samples = 0
        self._responses: list[tuple[str, bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="canary-proc", daemon=True)

    def __enter__(self) -> Canary:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _found(self, data: bytes) -> bool:
        return any(token in data for token in self.tokens)

    def _sample(self) -> None:
        while not self._stop.is_set():
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                if self._found(data):
                    shown = data.replace(b"\0", b" ")[:200]
                    self.hits.append(f"/proc/{entry.name}/cmdline: {shown!r}")
            self.samples += 1
            self._stop.wait(0.01)

    def client(self, stack: Any, key: str | None = None) -> httpx.AsyncClient:
        """An HTTP client of the stack whose every response body and headers are kept."""

        async def keep(response: httpx.Response) -> None:
            await response.aread()
            head = "".join(f"{k}: {v}\n" for k, v in response.headers.items()).encode()
            self._responses.append((str(response.request.url), head + response.content))

        client: httpx.AsyncClient = stack.client(key)
        client.event_hooks["response"].append(keep)
        return client

    def scan_files(self, roots: Iterable[Path]) -> int:
        """Read every regular file under ``roots``; returns how many were read."""
        count = 0
        for root in roots:
            for path in [root] if root.is_file() else root.rglob("*"):
                if path.is_symlink() or not path.is_file():
                    continue
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                count += 1
                if self._found(data):
                    self.hits.append(str(path))
        return count

    def assert_clean(self, roots: Iterable[Path], *, min_files: int = 1) -> None:
        """Fail naming every process, response and file where a token was seen."""
        self._stop.set()
        self._thread.join(timeout=5)
        assert self.samples > 0, "the /proc sampler never ran"
        for url, body in self._responses:
            if self._found(body):
                self.hits.append(f"HTTP response of {url}")
        assert self._responses, "no HTTP response was recorded"
        files = self.scan_files(roots)
        assert files >= min_files, f"only {files} files scanned"
        assert self.hits == [], "planted token found in:\n" + "\n".join(self.hits)
