"""The CGI bridge of the test git servers: one HTTP request through ``git http-backend``.

:func:`read_request_body` reads a request body (``Content-Length`` or chunked) into a file;
:func:`run_http_backend` runs ``git http-backend`` on it as a CGI/1.1 script and relays its answer
to the client (with ``Content-Length`` when the backend gave one, else chunked).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import IO

from testkit.git_repos import run_git

__all__ = ["BackendRun", "http_backend_path", "read_request_body", "run_http_backend"]


@dataclass(frozen=True)
class BackendRun:
    """How one ``git http-backend`` run went.

    Attributes:
        status: The HTTP status relayed to the client.
        exit_code: The backend's exit code.
        stderr: The backend's stderr, stripped (empty when it wrote none).
    """

    status: int
    exit_code: int
    stderr: str


def http_backend_path() -> str:
    """The ``git-http-backend`` program of the git on ``PATH`` (in ``git --exec-path``).

    Returns:
        Its absolute path.
    """
    return str(Path(run_git("--exec-path", env=None).strip()) / "git-http-backend")


def read_request_body(handler: BaseHTTPRequestHandler, sink: IO[bytes], *, chunked: bool) -> None:
    """Read the request body of ``handler`` into ``sink`` (trailers of a chunked body dropped).

    Args:
        handler: The request being served.
        sink: Where the decoded body is written.
        chunked: The body comes with ``Transfer-Encoding: chunked`` (else ``Content-Length``).

    Raises:
        ConnectionError: The body ended early.
    """
    rfile = handler.rfile
    if not chunked:
        remaining = int(handler.headers.get("Content-Length") or 0)
        while remaining > 0:
            data = rfile.read(min(remaining, 1 << 16))
            if not data:
                raise ConnectionError("request body ended early")
            sink.write(data)
            remaining -= len(data)
        return
    while True:
        size = int(rfile.readline(1024).split(b";")[0].strip(), 16)
        if size == 0:
            while rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        data = rfile.read(size)
        if len(data) != size:
            raise ConnectionError("chunked request body ended early")
        sink.write(data)
        rfile.readline(1024)  # the CRLF after the chunk


def run_http_backend(
    handler: BaseHTTPRequestHandler,
    body: IO[bytes],
    *,
    backend: str,
    project_root: Path,
    env: Mapping[str, str],
    username: str,
) -> BackendRun:
    """Answer ``handler``'s request with ``git http-backend`` run as CGI.

    Args:
        handler: The request being served (its response is written here).
        body: The decoded request body (still gzipped when ``Content-Encoding`` says so).
        backend: The ``git-http-backend`` program.
        project_root: ``GIT_PROJECT_ROOT``: the folder the request paths point into.
        env: The backend's base environment (the CGI variables are added to it).
        username: ``REMOTE_USER``: the authenticated username.

    Returns:
        The relayed status, the backend's exit code and its stderr.
    """
    target = urllib.parse.urlsplit(handler.path)
    length = body.seek(0, os.SEEK_END)
    body.seek(0)
    cgi_env = dict(env) | {
        "GATEWAY_INTERFACE": "CGI/1.1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "GIT_PROJECT_ROOT": str(project_root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "REQUEST_METHOD": handler.command,
        "PATH_INFO": urllib.parse.unquote(target.path),
        "QUERY_STRING": target.query,
        "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
        "REMOTE_USER": username,
        "REMOTE_ADDR": handler.client_address[0],
    }
    if handler.command == "POST":
        cgi_env["CONTENT_LENGTH"] = str(length)
    for header in ("Content-Encoding", "Git-Protocol"):
        if value := handler.headers.get(header):
            cgi_env["HTTP_" + header.upper().replace("-", "_")] = value
    with (
        tempfile.TemporaryFile() as stderr,
        subprocess.Popen(
            [backend], stdin=body, stdout=subprocess.PIPE, stderr=stderr, env=cgi_env
        ) as process,
    ):
        assert process.stdout is not None
        status = _relay(handler, process.stdout)
        process.stdout.close()
        code = process.wait()
        stderr.seek(0)
        text = stderr.read().decode(errors="replace").strip()
    return BackendRun(status, code, text)


def _relay(handler: BaseHTTPRequestHandler, output: IO[bytes]) -> int:
    """Send the backend's CGI answer (``Status:``, headers, body) as the HTTP response."""
    status, reason, headers = 200, None, []
    while (line := output.readline()).strip():
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "status":
            code, _, reason = value.strip().partition(" ")
            status = int(code)
        else:
            headers.append((name.strip(), value.strip()))
    sized = any(name.lower() == "content-length" for name, _ in headers)
    handler.send_response(status, reason or None)
    for name, value in headers:
        handler.send_header(name, value)
    if not sized:
        handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    while data := output.read1(1 << 16):  # type: ignore[attr-defined]
        handler.wfile.write(data if sized else b"%x\r\n%s\r\n" % (len(data), data))
    if not sized:
        handler.wfile.write(b"0\r\n\r\n")
    return status
