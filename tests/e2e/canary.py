"""A leak detector: planted tokens searched for everywhere a process could have put them.

Each token is searched for as is, URL-encoded, and base64-encoded alone and as the
``<username>:<token>`` of a Basic header (how it travels to a git server). While a flow runs, a
thread samples every process's ``/proc/<pid>/cmdline``; :meth:`Canary.sample_now` does it at a
chosen moment (the git server calls it while an authenticated git client waits for its answer),
and then also proves the token *did* travel, in the environment of the process whose command line
carries the credential helper. HTTP clients made by :meth:`Canary.client` keep every response. At
the end :meth:`Canary.assert_clean` reads every file under the given roots (stores, vault, key
file, logs, spans, worktrees, repositories with their ``.git/config``, the NATS store) and every
row of every SQLite store, or of every table of a PostgreSQL database (the services' schemas and
the key vault's), and fails naming each place a token was found.
"""

from __future__ import annotations

import base64
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

__all__ = ["Canary"]

_USERNAMES = ("x-access-token", "oauth2")


def _forms(token: str) -> list[bytes]:
    raw = token.encode()
    forms = {raw, quote(token, safe="").encode(), base64.b64encode(raw)}
    forms.update(base64.b64encode(f"{user}:{token}".encode()) for user in _USERNAMES)
    return sorted(forms)


class Canary:
    """Tokens to look for, and where they were seen."""

    def __init__(self, *tokens: str, helper_fragment: str | None = None) -> None:
        self.tokens = [t.encode() for t in tokens if t]
        self.forms = [form for t in tokens if t for form in _forms(t)]
        self.helper_fragment = helper_fragment.encode() if helper_fragment else None
        self.hits: list[str] = []
        self.samples = 0
        self.helper_processes = 0
        """Processes seen with the credential helper on their command line."""
        self.token_in_helper_env = 0
        """Of those, how many carried a planted token in their environment."""
        self._responses: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="canary-proc", daemon=True)

    def __enter__(self) -> Canary:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _found(self, data: bytes) -> bool:
        return any(form in data for form in self.forms)

    def sample_now(self, *_: object) -> None:
        """Look at every process's command line (and a helper-carrying one's environment)."""
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            with self._lock:
                if self._found(data):
                    shown = data.replace(b"\0", b" ")[:200]
                    self.hits.append(f"/proc/{entry.name}/cmdline: {shown!r}")
                if self.helper_fragment and self.helper_fragment in data:
                    self.helper_processes += 1
                    try:
                        environ = Path(f"/proc/{entry.name}/environ").read_bytes()
                    except OSError:
                        continue
                    if any(token in environ for token in self.tokens):
                        self.token_in_helper_env += 1
        with self._lock:
            self.samples += 1

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.sample_now()
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

    def scan_sqlite(self, databases: Iterable[Path]) -> int:
        """Read every row of every table of each SQLite store (values a page boundary would
        split in the raw file); returns how many rows were read."""
        rows = 0
        for database in databases:
            with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
                tables = [
                    r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
                ]
                for table in tables:
                    for row in db.execute(f'SELECT * FROM "{table}"'):
                        rows += 1
                        for value in row:
                            data = value if isinstance(value, bytes) else str(value).encode()
                            if self._found(data):
                                self.hits.append(f"{database.name}: table {table}")
            db.close()
        return rows

    def scan_postgres(self, dsn: str) -> dict[str, int]:
        """Read every row of every table of every schema of the database (but PostgreSQL's
        own); returns how many rows each schema holds."""
        import psycopg
        from psycopg import sql

        rows: dict[str, int] = {}
        with psycopg.connect(dsn) as db:
            tables = db.execute(
                "SELECT table_schema, table_name FROM information_schema.tables"
                " WHERE table_type = 'BASE TABLE'"
                " AND table_schema NOT IN ('pg_catalog', 'information_schema')"
            ).fetchall()
            for schema, table in tables:
                query = sql.SQL("SELECT * FROM {}").format(sql.Identifier(schema, table))
                rows.setdefault(schema, 0)
                for row in db.execute(query):
                    rows[schema] += 1
                    for value in row:
                        binary = isinstance(value, (bytes, memoryview))
                        data = bytes(value) if binary else str(value).encode()
                        if self._found(data):
                            self.hits.append(f"PostgreSQL: table {schema}.{table}")
        return rows

    def assert_clean(
        self,
        roots: Iterable[Path],
        *,
        stores: Iterable[Path] = (),
        postgres_dsn: str | None = None,
        min_files: int = 1,
    ) -> None:
        """Fail naming every process, response, file and stored row where a token was seen
        (``stores``: SQLite files; ``postgres_dsn``: a database whose every table is read)."""
        self._stop.set()
        self._thread.join(timeout=5)
        assert self.samples > 0, "the /proc sampler never ran"
        for url, body in self._responses:
            if self._found(body):
                self.hits.append(f"HTTP response of {url}")
        assert self._responses, "no HTTP response was recorded"
        files = self.scan_files(roots)
        assert files >= min_files, f"only {files} files scanned"
        stores = list(stores)
        if stores:
            assert self.scan_sqlite(stores) > 0, "no stored row was read"
        if postgres_dsn is not None:
            rows = self.scan_postgres(postgres_dsn)
            assert sum(rows.values()) > 0, f"no stored row was read: {rows}"
        assert self.hits == [], "planted token found in:\n" + "\n".join(self.hits)
