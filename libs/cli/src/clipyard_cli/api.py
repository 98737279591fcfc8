"""The HTTP API as the user commands reach it: ``CLIPYARD_API_URL`` (default the local stack's
gateway) and ``CLIPYARD_API_KEY`` (a board or agent key, or a run token), so that they work
against a remote deployment as well as against ``clipyard up`` on this machine.

An answer that is not 2xx becomes an :class:`ApiError` carrying the API's own sentence and code
(``{"error", "code"}``); a gateway that cannot be reached is one too, saying where it looked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import httpx

__all__ = ["DEFAULT_API_URL", "ApiClient", "ApiError", "api_client"]

DEFAULT_API_URL: Final = "http://127.0.0.1:8080"
"""The gateway of ``clipyard up`` with the default ``CLIPYARD_HTTP_PORT``."""
TIMEOUT: Final = 60.0


class ApiError(Exception):
    """The API refused, or could not be reached (``status`` 0)."""

    def __init__(self, message: str, *, status: int = 0, code: str = "unreachable") -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class ApiClient:
    """A few calls of the HTTP API with one key."""

    def __init__(self, base_url: str, key: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
            timeout=TIMEOUT,
        )

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _send(self, method: str, path: str, params: Mapping[str, Any] | None) -> httpx.Response:
        wanted = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            answer = self._http.request(method, path, params=wanted)
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise ApiError(
                f"the API at {self.base_url} cannot be reached ({exc}); "
                "set CLIPYARD_API_URL to the gateway's address"
            ) from None
        if answer.is_success:
            return answer
        try:
            body = answer.json()
            message, code = str(body["error"]), str(body.get("code", "error"))
        except (ValueError, KeyError, TypeError):
            message, code = answer.text.strip()[:500] or answer.reason_phrase, "error"
        raise ApiError(f"{message} ({answer.status_code})", status=answer.status_code, code=code)

    def get(self, path: str, /, **params: Any) -> Any:
        """``GET path`` → the decoded JSON."""
        return self._send("GET", path, params).json()

    def post(self, path: str) -> Any:
        """``POST path`` (no body) → the decoded JSON."""
        return self._send("POST", path, None).json()

    def text(self, path: str, /, **params: Any) -> tuple[str, Mapping[str, str]]:
        """``GET path`` as text, with the answer's headers."""
        answer = self._send("GET", path, params)
        return answer.text, answer.headers


def api_client(env: Mapping[str, str]) -> ApiClient:
    """The client of ``CLIPYARD_API_URL`` with ``CLIPYARD_API_KEY``.

    Raises:
        ApiError: No key is set.
    """
    key = env.get("CLIPYARD_API_KEY", "").strip()
    if not key:
        raise ApiError(
            "set CLIPYARD_API_KEY to a board key (cy_board_...), an agent key or a run token; "
            "the admin creates board keys with POST /api/companies/{companyId}/api-keys"
        )
    return ApiClient(env.get("CLIPYARD_API_URL", "").strip() or DEFAULT_API_URL, key)
