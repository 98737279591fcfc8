"""A local HTTP server that answers like GitHub's REST API for pull requests.

``GET /repos/{owner}/{repo}/pulls/{number}`` answers the registered pull request with GitHub's
field names (``state``, ``merged``, ``merged_at``, ``head.ref``, ``head.sha``, ...); owner and
repository match case-insensitively. Like GitHub:

* a private repository's pull requests are ``404 Not Found`` without a credential;
* a wrong credential (``Authorization: Bearer <other>`` or ``token <other>``) is
  ``401 Bad credentials``, for public repositories too;
* anything else unknown is ``404 Not Found``.

Failures can be queued for the next requests (``fail_next``, ``rate_limit_next``,
``garble_next``, ``delay_next``). Every request is logged as method, path, whether its
``Authorization`` matched the token, and the non-secret headers; the token itself is never kept in
the log. ``.url`` goes into ``CLIPYARD_GITHUB_API_URL``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal

from testkit.github_records import AuthorizationSeen, FakePullRequest, RecordedRequest

__all__ = [
    "AuthorizationSeen",
    "FakeGitHubApi",
    "FakePullRequest",
    "RecordedRequest",
    "start_github_api",
]

_PULL = re.compile(r"^/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)/pulls/(?P<number>[0-9]+)/?$")
_DOCS = "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"


@dataclass(frozen=True)
class _Injected:
    status: int | None = None
    garbage: bool = False
    delay: float = 0.0


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handlers
    block_on_close = True
    api: FakeGitHubApi

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (a timeout test) is not an error worth printing."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 5.0  # a silent client cannot hold a handler (and so the shutdown) forever

    def do_GET(self) -> None:
        self.server.api._answer(self)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read :attr:`FakeGitHubApi.requests` instead."""

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body).encode()
        self.send_text(status, payload, "application/json; charset=utf-8", headers)

    def send_text(
        self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("X-GitHub-Api-Version-Selected", "2022-11-28")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True  # the client is gone (it timed out)


class FakeGitHubApi:
    """The fake REST API; start it with :func:`start_github_api` (or the ``github_api`` fixture).

    Args:
        token: The token that private repositories require (default: a random ``ghp_`` one).
    """

    def __init__(self, *, token: str | None = None) -> None:
        self.token = token or f"ghp_{secrets.token_hex(18)}"
        self._lock = threading.Lock()
        self._pulls: dict[tuple[str, str, int], FakePullRequest] = {}
        self._injected: deque[_Injected] = deque()
        self._requests: list[RecordedRequest] = []
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # Set-up.

    def add_pull_request(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        state: Literal["open", "closed"] = "open",
        merged: bool = False,
        head_ref: str = "feature",
        head_sha: str | None = None,
        private: bool = False,
        include_merged_flag: bool = True,
    ) -> FakePullRequest:
        """Register (or replace) a pull request.

        Args:
            owner: The repository's owner.
            repo: The repository's name.
            number: The pull request's number.
            state: ``open`` or ``closed`` (a merged pull request is closed).
            merged: Whether it was merged (sets ``merged`` and ``merged_at``).
            head_ref: The head branch.
            head_sha: The head commit (default: derived from owner, repo and number).
            private: Whether the repository is private (404 without the token).
            include_merged_flag: False leaves ``merged`` out (only ``merged_at`` tells).

        Returns:
            The registered pull request.
        """
        if merged and state != "closed":
            msg = "a merged pull request is closed"
            raise ValueError(msg)
        sha = head_sha or hashlib.sha1(f"{owner}/{repo}#{number}".encode()).hexdigest()
        pull = FakePullRequest(
            owner=owner,
            repo=repo,
            number=number,
            state=state,
            merged=merged,
            head_ref=head_ref,
            head_sha=sha,
            private=private,
            include_merged_flag=include_merged_flag,
        )
        with self._lock:
            self._pulls[(owner.lower(), repo.lower(), number)] = pull
        return pull

    def fail_next(self, status: int = 500, *, count: int = 1) -> None:
        """Answer the next ``count`` requests with ``status`` (403/429 shaped as a rate limit)."""
        self._inject(_Injected(status=status), count)

    def rate_limit_next(self, *, count: int = 1) -> None:
        """Answer the next ``count`` requests as GitHub does when the rate limit is exhausted."""
        self.fail_next(403, count=count)

    def garble_next(self, *, count: int = 1) -> None:
        """Answer the next ``count`` requests with ``200`` and a body that is not JSON."""
        self._inject(_Injected(garbage=True), count)

    def delay_next(self, seconds: float, *, count: int = 1) -> None:
        """Wait ``seconds`` before answering each of the next ``count`` requests normally."""
        self._inject(_Injected(delay=seconds), count)

    # Observation.

    @property
    def url(self) -> str:
        """The API root, e.g. ``http://127.0.0.1:PORT`` (for ``CLIPYARD_GITHUB_API_URL``)."""
        if self._server is None:
            msg = "the fake GitHub API is not running"
            raise RuntimeError(msg)
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """The requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        """Forget the requests received so far."""
        with self._lock:
            self._requests.clear()

    # Lifecycle.

    def start(self) -> FakeGitHubApi:
        """Listen on a free port of 127.0.0.1 and serve in a background thread."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.api = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-github-api",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (waiting answers end now) and close the socket."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeGitHubApi:
        return self if self._server is not None else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # Serving (handler threads).

    def _inject(self, injected: _Injected, count: int) -> None:
        with self._lock:
            self._injected.extend([injected] * count)

    def _authorization(self, header: str | None) -> AuthorizationSeen:
        if not header:
            return "none"
        scheme, _, credential = header.strip().partition(" ")
        if scheme.lower() not in ("bearer", "token"):
            return "invalid"
        matched = hmac.compare_digest(credential.strip().encode(), self.token.encode())
        return "valid" if matched else "invalid"

    def _answer(self, handler: _Handler) -> None:
        auth = self._authorization(handler.headers.get("Authorization"))
        with self._lock:
            self._requests.append(
                RecordedRequest(
                    method=handler.command,
                    path=handler.path,
                    authorization=auth,
                    accept=handler.headers.get("Accept"),
                    api_version=handler.headers.get("X-GitHub-Api-Version"),
                    user_agent=handler.headers.get("User-Agent"),
                )
            )
            injected = self._injected.popleft() if self._injected else _Injected()
        if injected.delay and self._stopping.wait(injected.delay):
            return
        if injected.garbage:
            handler.send_text(200, b"<html>not json", "text/html; charset=utf-8", None)
        elif injected.status in (403, 429):
            handler.send_json(
                injected.status,
                {"message": "API rate limit exceeded", "documentation_url": _DOCS},
                {"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "0", "Retry-After": "60"},
            )
        elif injected.status is not None:
            handler.send_json(injected.status, {"message": "Server Error"})
        elif auth == "invalid":
            handler.send_json(401, {"message": "Bad credentials", "documentation_url": _DOCS})
        else:
            self._answer_pull(handler, authorized=auth == "valid")

    def _answer_pull(self, handler: _Handler, *, authorized: bool) -> None:
        match = _PULL.match(handler.path.partition("?")[0])
        with self._lock:
            pull = (
                self._pulls.get(
                    (match["owner"].lower(), match["repo"].lower(), int(match["number"]))
                )
                if match
                else None
            )
        if pull is None or (pull.private and not authorized):
            handler.send_json(404, {"message": "Not Found", "documentation_url": _DOCS})
            return
        host, port = handler.server.server_address[:2]
        handler.send_json(200, pull.body(f"http://{host!s}:{port}"))


def start_github_api(*, token: str | None = None) -> FakeGitHubApi:
    """Start a fake GitHub REST API on 127.0.0.1; call ``.stop()`` when done.

    Args:
        token: The token private repositories require (default: a random one, ``.token``).

    Returns:
        The running server.
    """
    return FakeGitHubApi(token=token).start()
