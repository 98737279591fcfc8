"""A ``remote_http`` adapter: the run's context POSTed as JSON to the agent's URL with its
headers and timeout. A 2xx JSON answer is the result (its ``usage`` and ``result`` fields when
it has them); anything else ends ``exited`` with an error. The context and headers hold the run
token: they are never logged, and an error names only the status or the kind of failure.
"""

from __future__ import annotations

from typing import Any

import httpx

from runtime_supervisor.adapters.slots.adapter import AdapterOutcome, adapter_report
from runtime_supervisor.domain import EXCERPT_BYTES

__all__ = ["post_context"]


async def post_context(
    url: str, headers: dict[str, str], context: dict[str, Any], timeout: float
) -> AdapterOutcome:
    """POST ``context`` to ``url``; the outcome (never raises for HTTP or network failures)."""
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            response = await client.post(url, json=context, headers=headers)
    except httpx.TimeoutException:
        return AdapterOutcome(
            end="timed_out", error=f"the agent's URL did not answer within {timeout:g}s"
        )
    except httpx.HTTPError as exc:
        return AdapterOutcome(
            end="exited", exit_code=1, error=f"the agent's URL failed: {type(exc).__name__}"
        )
    body = response.content[-EXCERPT_BYTES:].decode("utf-8", errors="replace")
    if not response.is_success:
        return AdapterOutcome(
            end="exited",
            exit_code=1,
            stdout_excerpt=body,
            log_bytes=len(response.content),
            error=f"the agent's URL answered HTTP {response.status_code}",
        )
    try:
        value = response.json()
    except ValueError:
        return AdapterOutcome(
            end="exited",
            exit_code=1,
            stdout_excerpt=body,
            log_bytes=len(response.content),
            error="the agent's URL answered something other than JSON",
        )
    report = adapter_report(value)
    return AdapterOutcome(
        end="exited",
        exit_code=0,
        usage=report.usage if report else None,
        result=report.result if report else value,
        stdout_excerpt=body,
        log_bytes=len(response.content),
    )
