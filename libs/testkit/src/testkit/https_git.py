"""Real git repositories over HTTPS with Basic auth, for the end-to-end credential tests.

:class:`HttpsGitServer` runs ``git http-backend`` as CGI (:mod:`testkit.git_cgi`) behind a small
TLS server on ``127.0.0.1:<free port>``. Its certificate comes from a throwaway CA
(:mod:`testkit.certs`; ``.ca_path``, for ``GIT_SSL_CAINFO``). Every request must carry Basic auth
with an allowed username and the current token, else 401 with
``WWW-Authenticate: Basic realm="clipyard-test"`` so git asks its credential helpers.
``.request_log`` records each request without its password. Repositories are made and committed
to with real git (:mod:`testkit.git_repos`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import secrets
import socket
import ssl
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from testkit.certs import write_tls_files
from testkit.git_cgi import http_backend_path, read_request_body, run_http_backend
from testkit.git_repos import BareRepositoryHost, isolated_git_env

__all__ = [
    "DEFAULT_USERNAMES",
    "REALM",
    "HttpsGitServer",
    "RequestRecord",
    "isolated_git_env",
]

DEFAULT_USERNAMES = frozenset({"x-access-token", "oauth2"})
"""Usernames accepted by default (GitHub's and GitLab's token usernames)."""
REALM = "clipyard-test"
"""The Basic auth realm of the 401 answers."""
_QUIET_ERRORS = (ssl.SSLError, ConnectionError, TimeoutError)


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it (never its password).

    Attributes:
        method: ``GET`` or ``POST``.
        path: The request target, query included (``/r.git/info/refs?service=git-upload-pack``).
        username: The Basic auth username, or None when no (readable) credentials came.
        auth_ok: True when the username is allowed and the password is the current token.
        status: The HTTP status answered.
        chunked: The request body came with ``Transfer-Encoding: chunked``.
        content_encoding: The request's ``Content-Encoding`` (``gzip``) or None.
    """

    method: str
    path: str
    username: str | None
    auth_ok: bool
    status: int
    chunked: bool = False
    content_encoding: str | None = None


def _shutdown(connection: ssl.SSLSocket) -> None:
    """Shut the TCP connection down (unblocking any thread reading it), TLS layer untouched."""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(connection, socket.SHUT_RDWR)


class _TlsGitHttpServer(ThreadingHTTPServer):
    """Accepts plain TCP and does the TLS handshake in each connection's own thread."""

    daemon_threads = True
    owner: HttpsGitServer

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(30)
        tls = self.owner._tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        try:
            with self.owner._lock:  # registered before any I/O, so stop() can always unblock it
                if self.owner._stopping:
                    return
                self.owner._connections.add(tls)
            tls.do_handshake()
            _GitHandler(tls, client_address, self)
        finally:
            with self.owner._lock:
                self.owner._connections.discard(tls)
            _shutdown(tls)
            tls.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, _QUIET_ERRORS):  # a client going away is not a server bug
            self.owner.errors.append(f"{type(error).__name__}: {error}")


class _GitHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _TlsGitHttpServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        owner = self.server.owner
        username, auth_ok = owner._check_auth(self.headers.get("Authorization"))
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        encoding = self.headers.get("Content-Encoding")
        with tempfile.TemporaryFile() as body:
            read_request_body(self, body, chunked=chunked)
            if auth_ok:
                hook = owner.on_authenticated
                if hook is not None:
                    hook(self.path)  # the client is alive and waiting: tests look at it now
                body.seek(0)
                status = owner._run_backend(self, body, username or "")
            else:
                status = 401
                message = b"Authentication required\n"
                self.send_response(401)
                self.send_header("WWW-Authenticate", f'Basic realm="{REALM}"')
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                self.wfile.write(message)
        owner._record(
            RequestRecord(self.command, self.path, username, auth_ok, status, chunked, encoding)
        )


class HttpsGitServer(BareRepositoryHost):
    """``git http-backend`` over TLS with Basic auth on ``127.0.0.1:<free port>``.

    Use :meth:`start` (or ``with``) and :meth:`stop`. Repositories live under
    ``project_root``; :meth:`create_repo` returns their clone URL, :meth:`commit` adds commits.

    Args:
        root: A folder for the repositories, the TLS files and git's ``HOME``
            (None: a temporary folder removed by :meth:`stop`).
        token: The password every request must carry (None: a random one, see ``token``).
        usernames: The accepted Basic auth usernames.
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        token: str | None = None,
        usernames: Iterable[str] = DEFAULT_USERNAMES,
    ) -> None:
        self._tempdir: tempfile.TemporaryDirectory[str] | None = None
        if root is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="https-git-")
            root = Path(self._tempdir.name)
        super().__init__(root)
        self._token = token or "ghp_" + secrets.token_hex(18)
        self.usernames = frozenset(usernames)
        self.errors: list[str] = []
        """Server faults (handler exceptions, 5xx from the backend); the fixture fails on any."""
        self.backend_log: list[str] = []
        """``git http-backend``'s stderr, one entry per request that wrote some."""
        self.on_authenticated: Callable[[str], None] | None = None
        """Called with the request path (in the server's thread) after a request authenticated
        and before it is answered, while the git client waits: a test can inspect it then."""
        self._log: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._connections: set[ssl.SSLSocket] = set()
        self._stopping = False
        self._backend = http_backend_path()
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._httpd: _TlsGitHttpServer | None = None
        self._thread: threading.Thread | None = None
        self.ca_path = self.root / "tls" / "ca.pem"

    def __repr__(self) -> str:
        return f"HttpsGitServer({self.url if self._httpd else 'stopped'})"

    def start(self) -> Self:
        """Write the TLS files, bind a free port and serve in a background thread.

        Returns:
            The server itself.
        """
        (self.root / "home").mkdir(parents=True, exist_ok=True)
        self.project_root.mkdir(parents=True, exist_ok=True)
        tls_files = write_tls_files(self.root / "tls")
        self.ca_path = tls_files.ca_path
        self._tls.minimum_version = ssl.TLSVersion.TLSv1_2
        self._tls.load_cert_chain(tls_files.cert_path, tls_files.key_path)
        self._stopping = False
        httpd = _TlsGitHttpServer(("127.0.0.1", 0), _GitHandler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="https-git"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open connections, join every thread, remove a temporary root."""
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            with self._lock:
                self._stopping = True
                connections = list(self._connections)
            for connection in connections:
                _shutdown(connection)
            httpd.server_close()  # joins the connection threads
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._tempdir is not None:
            self._tempdir.cleanup()
            self._tempdir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The TCP port (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("the HTTPS git server is not running")
        return int(self._httpd.server_address[1])

    @property
    def host_port(self) -> str:
        """``127.0.0.1:<port>``."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """``https://127.0.0.1:<port>`` (no trailing slash)."""
        return f"https://{self.host_port}"

    @property
    def token(self) -> str:
        """The password the server accepts now."""
        return self._token

    def set_token(self, token: str) -> None:
        """Accept ``token`` from now on (and no longer the previous one).

        Args:
            token: The new password.
        """
        with self._lock:
            self._token = token

    @property
    def request_log(self) -> list[RequestRecord]:
        """A copy of the requests seen so far, oldest first."""
        with self._lock:
            return list(self._log)

    def clear_log(self) -> None:
        """Forget the requests seen so far."""
        with self._lock:
            self._log.clear()

    def _check_auth(self, header: str | None) -> tuple[str | None, bool]:
        scheme, _, encoded = (header or "").partition(" ")
        if scheme.lower() != "basic":
            return None, False
        try:
            decoded = base64.b64decode(encoded.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None, False
        username, _, password = decoded.partition(":")
        with self._lock:
            token = self._token
        ok = hmac.compare_digest(password.encode(), token.encode())
        return username, ok and username in self.usernames

    def _run_backend(self, handler: _GitHandler, body: IO[bytes], username: str) -> int:
        run = run_http_backend(
            handler,
            body,
            backend=self._backend,
            project_root=self.project_root,
            env=self._git_env,
            username=username,
        )
        request = f"{handler.command} {handler.path}"
        if run.stderr:
            self.backend_log.append(f"{request} (exit {run.exit_code}): {run.stderr}")
        if run.status >= 500:
            self.errors.append(f"http-backend answered {run.status} to {request}")
        return run.status

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._log.append(record)
