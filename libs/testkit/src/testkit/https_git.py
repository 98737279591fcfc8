"""Real git repositories over HTTPS with Basic auth, for the end-to-end credential tests.

:class:`HttpsGitServer` runs ``git http-backend`` as CGI behind a small TLS server on
``127.0.0.1:<free port>``. Its certificate comes from a throwaway CA (``.ca_path``, for
``GIT_SSL_CAINFO``). Every request must carry Basic auth with an allowed username and the current
token, else 401 with ``WWW-Authenticate: Basic realm="clipyard-test"`` so git asks its credential
helpers. ``.request_log`` records each request without its password.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime
import hmac
import ipaddress
import os
import secrets
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

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
_AMBIENT = ("SSL_CERT_FILE", "SSL_CERT_DIR", "CURL_CA_BUNDLE", "GCM_INTERACTIVE")
_PROXIES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
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


def isolated_git_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for git subprocesses that nothing ambient answers for.

    The process environment without ``GIT_*``, proxy and CA-bundle variables, plus ``HOME=home``,
    ``GIT_CONFIG_NOSYSTEM=1``, ``GIT_TERMINAL_PROMPT=0`` and ``extra``.

    Args:
        home: An empty folder used as ``HOME`` (no ``~/.gitconfig``, no stored credentials).
        extra: Variables added last (e.g. ``GIT_SSL_CAINFO``).

    Returns:
        The environment mapping.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GIT_") and key not in _AMBIENT and key.lower() not in _PROXIES
    }
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "Clipyard Test",
        "GIT_AUTHOR_EMAIL": "test@clipyard.invalid",
        "GIT_COMMITTER_NAME": "Clipyard Test",
        "GIT_COMMITTER_EMAIL": "test@clipyard.invalid",
    }
    return env | dict(extra or {})


def _write_tls_files(folder: Path) -> tuple[Path, Path, Path]:
    """Make a throwaway CA and a server certificate for 127.0.0.1 and localhost."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Clipyard test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    ca_path, cert_path, key_path = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_path, cert_path, key_path


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


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
            self._read_body(body, chunked)
            if auth_ok:
                body.seek(0)
                status = self._run_backend(body, username or "")
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

    def _read_body(self, sink: IO[bytes], chunked: bool) -> None:
        if not chunked:
            remaining = int(self.headers.get("Content-Length") or 0)
            while remaining > 0:
                data = self.rfile.read(min(remaining, 1 << 16))
                if not data:
                    raise ConnectionError("request body ended early")
                sink.write(data)
                remaining -= len(data)
            return
        while True:
            size = int(self.rfile.readline(1024).split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return
            data = self.rfile.read(size)
            if len(data) != size:
                raise ConnectionError("chunked request body ended early")
            sink.write(data)
            self.rfile.readline(1024)  # the CRLF after the chunk

    def _run_backend(self, body: IO[bytes], username: str) -> int:
        owner = self.server.owner
        target = urllib.parse.urlsplit(self.path)
        length = body.seek(0, os.SEEK_END)
        body.seek(0)
        env = owner._git_env | {
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "GIT_PROJECT_ROOT": str(owner.project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": urllib.parse.unquote(target.path),
            "QUERY_STRING": target.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "REMOTE_USER": username,
            "REMOTE_ADDR": self.client_address[0],
        }
        if self.command == "POST":
            env["CONTENT_LENGTH"] = str(length)
        for header in ("Content-Encoding", "Git-Protocol"):
            if value := self.headers.get(header):
                env["HTTP_" + header.upper().replace("-", "_")] = value
        with (
            tempfile.TemporaryFile() as stderr,
            subprocess.Popen(
                [owner._backend], stdin=body, stdout=subprocess.PIPE, stderr=stderr, env=env
            ) as process,
        ):
            assert process.stdout is not None
            status = self._relay(process.stdout)
            process.stdout.close()
            code = process.wait()
            stderr.seek(0)
            if text := stderr.read().decode(errors="replace").strip():
                owner.backend_log.append(f"{self.command} {self.path} (exit {code}): {text}")
            if status >= 500:
                owner.errors.append(f"http-backend answered {status} to {self.command} {self.path}")
        return status

    def _relay(self, output: IO[bytes]) -> int:
        status, reason, headers = 200, None, []
        while (line := output.readline()).strip():
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "status":
                code, _, reason = value.strip().partition(" ")
                status = int(code)
            else:
                headers.append((name.strip(), value.strip()))
        sized = any(name.lower() == "content-length" for name, _ in headers)
        self.send_response(status, reason or None)
        for name, value in headers:
            self.send_header(name, value)
        if not sized:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        while data := output.read1(1 << 16):  # type: ignore[attr-defined]
            self.wfile.write(data if sized else b"%x\r\n%s\r\n" % (len(data), data))
        if not sized:
            self.wfile.write(b"0\r\n\r\n")
        return status


class HttpsGitServer:
    """``git http-backend`` over TLS with Basic auth on ``127.0.0.1:<free port>``.

    Use :meth:`start` (or ``with``) and :meth:`stop`. Repositories live under
    ``project_root``; :meth:`create_repo` returns their clone URL.

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
        self.root = root
        self.project_root = self.root / "repos"
        self._token = token or "ghp_" + secrets.token_hex(18)
        self.usernames = frozenset(usernames)
        self.errors: list[str] = []
        """Server faults (handler exceptions, 5xx from the backend); the fixture fails on any."""
        self.backend_log: list[str] = []
        """``git http-backend``'s stderr, one entry per request that wrote some."""
        self._log: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._connections: set[ssl.SSLSocket] = set()
        self._stopping = False
        self._backend = str(Path(_git("--exec-path", env=None).strip()) / "git-http-backend")
        self._git_env = isolated_git_env(self.root / "home")
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
        self.ca_path, cert_path, key_path = _write_tls_files(self.root / "tls")
        self._tls.minimum_version = ssl.TLSVersion.TLSv1_2
        self._tls.load_cert_chain(cert_path, key_path)
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

    def repo_path(self, name: str) -> Path:
        """The bare repository folder of ``name`` (``<project_root>/<name>.git``).

        Args:
            name: The repository name, slashes allowed (``org/repo``).

        Returns:
            The folder.
        """
        parts = Path(name.removesuffix(".git")).parts
        if not parts or Path(name).is_absolute() or ".." in parts:
            raise ValueError(f"bad repository name {name!r}")
        return self.project_root.joinpath(*parts[:-1], parts[-1] + ".git")

    def repo_url(self, name: str) -> str:
        """The clone URL of ``name``: ``https://127.0.0.1:<port>/<name>.git``.

        Args:
            name: The repository name.

        Returns:
            The URL (no credentials in it).
        """
        return f"{self.url}/{self.repo_path(name).relative_to(self.project_root).as_posix()}"

    def create_repo(
        self,
        name: str,
        files: Mapping[str, str | bytes] | None = None,
        *,
        branches: Mapping[str, Mapping[str, str | bytes]] | Iterable[str] = (),
        default_branch: str = "main",
        message: str = "initial commit",
    ) -> str:
        """Make a bare repository whose default branch holds one real commit of ``files``.

        Args:
            name: The repository name (``repo`` or ``org/repo``).
            files: Path → content of the first commit (default: a README).
            branches: More branches: names (at the first commit), or name → files committed on
                top of the first commit.
            default_branch: The branch ``HEAD`` points at.
            message: The first commit's message.

        Returns:
            The clone URL.
        """
        bare = self.repo_path(name)
        if bare.exists():
            raise FileExistsError(bare)
        _git("init", "--quiet", "--bare", "-b", default_branch, str(bare), env=self._git_env)
        self.commit(
            name, files or {"README.md": f"# {name}\n"}, branch=default_branch, message=message
        )
        extra: Iterable[tuple[str, Mapping[str, str | bytes]]] = (
            branches.items() if isinstance(branches, Mapping) else ((b, {}) for b in branches)
        )
        for branch, branch_files in extra:
            _git("--git-dir", str(bare), "branch", branch, default_branch, env=self._git_env)
            if branch_files:
                self.commit(name, branch_files, branch=branch, message=f"work on {branch}")
        return self.repo_url(name)

    def commit(
        self,
        name: str,
        files: Mapping[str, str | bytes | None],
        *,
        branch: str = "main",
        message: str = "update",
    ) -> str:
        """Commit ``files`` on ``branch`` of the server's repository (None deletes a path).

        Args:
            name: The repository name.
            files: Path → new content, or None to delete the path.
            branch: The branch to move (created when missing).
            message: The commit message.

        Returns:
            The new commit's sha.
        """
        bare = self.repo_path(name)
        with tempfile.TemporaryDirectory(prefix="commit-", dir=self.root) as scratch:
            work = Path(scratch) / "tree"
            env = self._git_env | {
                "GIT_DIR": str(bare),
                "GIT_WORK_TREE": str(work),
                "GIT_INDEX_FILE": str(Path(scratch) / "index"),
            }
            ref = f"refs/heads/{branch}"
            parent = _git("rev-parse", "--verify", "--quiet", ref, env=env, check=False).strip()
            if parent:
                _git("read-tree", parent, env=env)
            for path, content in files.items():
                target = work / path
                if content is None:
                    _git("rm", "--cached", "--quiet", "--", path, env=env)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode() if isinstance(content, str) else content)
                _git("add", "--", path, env=env)
            tree = _git("write-tree", env=env).strip()
            sha = _git(
                "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message, env=env
            )
            _git("update-ref", ref, sha.strip(), parent or "", env=env)
        return sha.strip()

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

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._log.append(record)


def _git(*args: str, env: Mapping[str, str] | None, check: bool = True) -> str:
    result = subprocess.run(
        ["git", *args], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout
