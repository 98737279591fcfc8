"""A real git server over HTTP that requires Basic auth, for the realizer's credential tests.

``git http-backend`` serves bare repositories under ``root`` as CGI behind a small threaded HTTP
server on ``127.0.0.1``. A request without the current token as its password gets 401 with
``WWW-Authenticate: Basic`` (so git asks its credential helpers, then reports ``Authentication
failed``, or ``terminal prompts disabled`` when it has none). Each request's username and whether
it was allowed are kept (never the password).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["AuthGitServer", "helper_config", "serve_git"]


def helper_config(username: str = "x-access-token") -> tuple[str, ...]:
    """``-c`` options giving git a credential helper that answers ``get`` with ``username`` and
    the password read from ``CLIPYARD_GIT_TOKEN`` (the token itself is never in argv)."""
    helper = (
        '!f() { test "$1" = get || exit 0; '
        f'echo username={username}; echo "password=$CLIPYARD_GIT_TOKEN"; }}; f'
    )
    return ("-c", "credential.helper=", "-c", f"credential.helper={helper}")


class AuthGitServer(ThreadingHTTPServer):
    """Serves ``root/<name>.git`` to requests whose Basic-auth password is ``token``."""

    daemon_threads = True

    def __init__(self, root: Path, token: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.token = token
        self.seen: list[tuple[str | None, bool]] = []
        self._lock = threading.Lock()

    def url(self, name: str) -> str:
        """The clone URL of repository ``name``."""
        return f"http://127.0.0.1:{self.server_address[1]}/{name}.git"

    def create_repo(self, name: str, files: dict[str, str]) -> Path:
        """A bare repository ``<name>.git`` on ``main`` with one commit of ``files``."""
        work = self.root / f"{name}-work"
        work.mkdir(parents=True)
        _git(work, "init", "-q", "-b", "main")
        for path, text in files.items():
            (work / path).write_text(text)
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", "initial")
        bare = self.root / f"{name}.git"
        _git(self.root, "clone", "-q", "--bare", str(work), str(bare))
        return bare

    def allowed(self, header: str | None) -> tuple[str | None, bool]:
        """The request's username and whether its password is the token (recorded)."""
        username, password = None, None
        if header and header.startswith("Basic "):
            try:
                decoded = base64.b64decode(header[6:], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                decoded = ""
            username, _, password = decoded.partition(":")
        ok = password is not None and hmac.compare_digest(password.encode(), self.token.encode())
        with self._lock:
            self.seen.append((username, ok))
        return username, ok


class _Handler(BaseHTTPRequestHandler):
    server: AuthGitServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        username, ok = self.server.allowed(self.headers.get("Authorization"))
        if not ok:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="realizer-test"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.server.root),
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": username or "",
            "REMOTE_ADDR": "127.0.0.1",
        }
        if encoding := self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = encoding
        if protocol := self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = protocol
        out = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        ).stdout
        separator = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
        head, _, payload = out.partition(separator)
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@contextmanager
def serve_git(root: Path, token: str) -> Iterator[AuthGitServer]:
    """Run an :class:`AuthGitServer` in a thread for the block."""
    root.mkdir(parents=True, exist_ok=True)
    server = AuthGitServer(root, token)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
