"""The credential and pull-request ports over the bus: both ask git-credentials (ARCHITECTURE §4.5).

:class:`BusCredentials` requests ``credential.git_invocation`` and maps the answer to the
realizer's :class:`~workspace_realizer.adapters.ports.GitInvocation`: the credential's ``-c``
options and environment (the token lives only there), or, without a credential, the remote's
provider alone. When git-credentials does not answer (timeout, not running, an error reply), the
git process goes on without a credential and the invocation says why, so that an authentication
failure is not blamed on a missing secret.

:class:`BusPullRequests` requests ``credential.pull_request_facts``; what it cannot learn is
``unknown``. Neither ever logs a secret: only the scrubbed remote URL and the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final, Protocol, TypeVar

import msgspec

import contracts.credential_subjects as subjects
import contracts.credentials as wire
from contracts.base import Accepted, Actor, ErrorReply, Ok, Principal
from contracts.errors import ErrorCode
from eventstore import current_cause
from telemetry import scrub_url_secrets
from workspace_realizer.adapters.ports import GitInvocation, PullRequestFacts

__all__ = [
    "LOOKUP_TIMEOUT",
    "RESOLVE_TIMEOUT",
    "BusCredentials",
    "BusPullRequests",
    "RequestBus",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

ACTOR_ID: Final = "workspace-realizer"
RESOLVE_TIMEOUT: Final = 15.0
"""Seconds to wait for a git invocation (git-credentials reads its vault and store only)."""
LOOKUP_TIMEOUT: Final = 30.0
"""Seconds to wait for pull-request facts (git-credentials calls the provider's API)."""

_LABELS: Final = {"github": "GitHub", "gitlab": "GitLab"}
_MAX_REASON = 300


class RequestBus(Protocol):
    """The part of ``runtime.bus`` (:class:`natsbus.BusClient`) these adapters use."""

    async def request(
        self,
        subject: str,
        message: Any,
        *,
        timeout: float = ...,
        headers: Mapping[str, str] | None = None,
    ) -> Ok | ErrorReply | Accepted: ...


class _Unanswered(Exception):
    """git-credentials gave no usable answer; the message says why (never a secret)."""


def _principal(company_id: str, run_id: str | None) -> Principal:
    return Principal(company_id=company_id, actor=Actor(type="system", id=ACTOR_ID), run_id=run_id)


def _why(reply: ErrorReply, timeout: float) -> str:
    if reply.code == ErrorCode.TIMEOUT:
        return f"no answer within {timeout:g} s"
    if reply.code == ErrorCode.SERVICE_UNAVAILABLE:
        return "it is not running or cannot be reached"
    return str(scrub_url_secrets(f"{reply.code}: {reply.message}"))[:_MAX_REASON]


async def _ask(
    bus: RequestBus, subject: str, message: Any, result_type: type[T], timeout: float
) -> T:
    """Send one request; the ``ok`` result decoded as ``result_type``.

    Raises:
        _Unanswered: No answer, an error or ``accepted`` reply, or a result that does not decode.
    """
    try:
        reply = await bus.request(subject, message, timeout=timeout)
    except Exception as exc:  # the request could not even be sent: never fail the git work
        raise _Unanswered(f"the request failed ({type(exc).__name__})") from None
    if isinstance(reply, ErrorReply):
        raise _Unanswered(_why(reply, timeout))
    if not isinstance(reply, Ok):
        raise _Unanswered("it answered with an operation instead of a result")
    try:
        return msgspec.convert(reply.result, result_type)
    except msgspec.ValidationError:  # its text may quote a value: never shown
        raise _Unanswered("its answer did not decode") from None


def _invocation(answer: wire.GitInvocation) -> GitInvocation | None:
    credential = answer.credential
    if credential is None:
        if answer.provider is None:
            return None
        return GitInvocation(
            env=dict(answer.env), provider=answer.provider, provider_label=_LABELS[answer.provider]
        )
    return GitInvocation(
        config_args=tuple(credential.config_args),
        env={**answer.env, **credential.env},
        secret_name=credential.secret_name,
        source=credential.source,
        provider=answer.provider,
        provider_label=credential.provider_label,
    )


class BusCredentials:
    """The :class:`~workspace_realizer.adapters.ports.CredentialPort` that asks git-credentials.

    Args:
        bus: ``runtime.bus`` (or anything with its ``request`` method).
        timeout: Seconds to wait for an answer.
    """

    def __init__(self, bus: RequestBus, *, timeout: float = RESOLVE_TIMEOUT) -> None:
        self._bus = bus
        self._timeout = timeout

    async def invocation_for(
        self, *, remote_url: str, company_id: str, run_id: str | None, operation_id: str | None
    ) -> GitInvocation | None:
        """How to authenticate git for ``remote_url`` in this run or operation.

        Args:
            remote_url: The remote.
            company_id: Whose secrets apply.
            run_id: The heartbeat run (one resolution per run and provider).
            operation_id: The operation, when no run is involved.

        Returns:
            The invocation (a credential, or the provider alone), None for a remote that never
            gets one; without an answer, an invocation without a credential that says why.
        """
        request = wire.ResolveGitInvocation(
            principal=_principal(company_id, run_id),
            company_id=company_id,
            remote_url=remote_url,
            run_id=run_id,
            operation_id=operation_id,
        )
        try:
            answer = await _ask(
                self._bus, subjects.GIT_INVOCATION, request, wire.GitInvocation, self._timeout
            )
        except _Unanswered as exc:
            log.warning(
                "git-credentials did not answer for %s (%s); running git without a credential",
                scrub_url_secrets(remote_url),
                exc,
            )
            return GitInvocation(unanswered=str(exc))
        return _invocation(answer)


class BusPullRequests:
    """The :class:`~workspace_realizer.adapters.ports.PullRequestPort` that asks git-credentials.

    Args:
        bus: ``runtime.bus`` (or anything with its ``request`` method).
        timeout: Seconds to wait for an answer.
    """

    def __init__(self, bus: RequestBus, *, timeout: float = LOOKUP_TIMEOUT) -> None:
        self._bus = bus
        self._timeout = timeout

    async def facts(
        self, *, company_id: str, repo_url: str, references: list[str]
    ) -> list[PullRequestFacts]:
        """The facts of ``references`` (canonical pull-request URLs), in the order asked.

        Args:
            company_id: Whose token is used.
            repo_url: The repository the pull requests belong to.
            references: The pull-request URLs.

        Returns:
            One fact per reference; ``unknown`` for those git-credentials did not tell (all of
            them when it did not answer).
        """
        if not references:
            return []
        cause = current_cause()
        run_id = cause.run_id if cause is not None else None
        request = wire.LookupPullRequests(
            principal=_principal(company_id, run_id),
            company_id=company_id,
            repo_url=repo_url,
            references=list(references),
            run_id=run_id,
        )
        try:
            answer = await _ask(
                self._bus,
                subjects.PULL_REQUEST_FACTS,
                request,
                wire.PullRequestFacts,
                self._timeout,
            )
        except _Unanswered as exc:
            log.warning(
                "git-credentials did not answer about the pull requests of %s (%s)",
                scrub_url_secrets(repo_url),
                exc,
            )
            return [_unknown(ref) for ref in references]
        return _in_order(references, answer)


def _unknown(reference: str) -> PullRequestFacts:
    return PullRequestFacts(url=reference, state="unknown", head_ref=None, head_sha=None)


def _key(url: str) -> str:
    return url.strip().rstrip("/").lower()


def _in_order(references: list[str], answer: wire.PullRequestFacts) -> list[PullRequestFacts]:
    """One fact per reference, matched by URL (case and a trailing slash aside); ``unknown`` for
    a reference the answer does not name (never another reference's fact)."""
    by_url = {_key(fact.url): fact for fact in reversed(answer.facts)}
    found: list[PullRequestFacts] = []
    for ref in references:
        fact = by_url.get(_key(ref))
        found.append(
            _unknown(ref)
            if fact is None
            else PullRequestFacts(
                url=ref, state=fact.state, head_ref=fact.head_ref, head_sha=fact.head_sha
            )
        )
    return found
