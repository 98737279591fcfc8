"""The credential and pull-request ports over the bus, against a fake bus with ``runtime.bus``'s
``request`` signature. Replies go through the wire codec both ways, as on the real bus."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

import contracts.credential_subjects as subjects
from contracts.base import Accepted, Actor, ErrorReply, Ok
from contracts.credentials import (
    GitCredential,
    LookupPullRequests,
    PullRequestFact,
    ResolveGitInvocation,
)
from contracts.credentials import GitInvocation as InvocationReply
from contracts.credentials import PullRequestFacts as FactsReply
from eventstore import Cause, acting
from natsbus.codec import decode, decode_reply, encode
from natsbus.errors import error_reply
from workspace_realizer.adapters.auth_failure import describe_auth_failure
from workspace_realizer.adapters.credentials_bus import (
    LOOKUP_TIMEOUT,
    RESOLVE_TIMEOUT,
    BusCredentials,
    BusPullRequests,
)
from workspace_realizer.adapters.ports import GitInvocation

TOKEN = "glpat-" + "Q" * 20
COMPANY = "c0ffee00-0000-4000-8000-000000000001"
REMOTE = "https://gitlab.corp.example:8443/g/app.git"

Reply = Ok | ErrorReply | Accepted


@dataclass
class FakeBus:
    """Answers each request with ``answer(subject, message)``; keeps what was sent (decoded back
    from the wire) and the timeouts."""

    answer: Callable[[str, Any], Reply | Exception]
    sent: list[tuple[str, Any, float]] = field(default_factory=list)

    async def request(
        self,
        subject: str,
        message: Any,
        *,
        timeout: float = 110.0,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        wire = encode(message)
        self.sent.append((subject, decode(wire, type(message)), timeout))
        reply = self.answer(subject, message)
        if isinstance(reply, Exception):
            raise reply
        return decode_reply(encode(reply))


def answering(reply: Reply | Exception) -> FakeBus:
    return FakeBus(lambda subject, message: reply)


def credential_reply() -> InvocationReply:
    return InvocationReply(
        provider="gitlab",
        credential=GitCredential(
            config_args=["-c", "credential.helper=", "-c", "credential.https://h.helper=!f"],
            env={"CLIPYARD_GIT_TOKEN": TOKEN, "GIT_TERMINAL_PROMPT": "0"},
            secret_name="GITLAB_TOKEN",
            source="company_secret",
            provider_label="GitLab",
        ),
    )


async def test_a_resolved_credential_maps_to_the_realizers_invocation() -> None:
    bus = answering(Ok(result=credential_reply()))

    invocation = await BusCredentials(bus).invocation_for(
        remote_url=REMOTE, company_id=COMPANY, run_id="run-1", operation_id="op-1"
    )

    assert invocation == GitInvocation(
        config_args=("-c", "credential.helper=", "-c", "credential.https://h.helper=!f"),
        env={"CLIPYARD_GIT_TOKEN": TOKEN, "GIT_TERMINAL_PROMPT": "0"},
        secret_name="GITLAB_TOKEN",
        source="company_secret",
        provider="gitlab",
        provider_label="GitLab",
    )
    assert invocation.has_credential
    assert TOKEN not in repr(invocation)
    [(subject, request, timeout)] = bus.sent
    assert subject == subjects.GIT_INVOCATION
    assert timeout == RESOLVE_TIMEOUT
    assert isinstance(request, ResolveGitInvocation)
    assert (request.company_id, request.remote_url) == (COMPANY, REMOTE)
    assert (request.run_id, request.operation_id) == ("run-1", "op-1")
    principal = request.principal
    assert (principal.actor.type, principal.actor.id) == ("system", "workspace-realizer")
    assert (principal.company_id, principal.run_id) == (COMPANY, "run-1")


async def test_a_known_provider_without_a_credential_is_still_named() -> None:
    bus = answering(Ok(result=InvocationReply(provider="github", credential=None)))

    invocation = await BusCredentials(bus).invocation_for(
        remote_url="https://github.com/acme/app.git", company_id=COMPANY, run_id=None,
        operation_id="op-2",
    )  # fmt: skip

    assert invocation == GitInvocation(provider="github", provider_label="GitHub")
    assert not invocation.has_credential
    assert (invocation.config_args, dict(invocation.env)) == ((), {})


async def test_a_remote_that_never_gets_a_credential_is_none() -> None:
    bus = answering(Ok(result=InvocationReply(provider=None, credential=None)))
    assert (
        await BusCredentials(bus).invocation_for(
            remote_url="https://bitbucket.org/a/b.git", company_id=COMPANY, run_id=None,
            operation_id=None,
        )
        is None
    )  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            error_reply("timeout", "git-credentials did not answer within 15 s", status=504),
            "no answer within 15 s",
        ),
        (
            error_reply("service_unavailable", "git-credentials is not answering", status=503),
            "it is not running or cannot be reached",
        ),
        (
            error_reply("forbidden", "only the realizer may ask", status=403),
            "forbidden: only the realizer may ask",
        ),
        (Accepted(operation_id="op-9"), "it answered with an operation instead of a result"),
        (Ok(result={"provider": 7}), "its answer did not decode"),
        (ConnectionResetError("bus gone"), "the request failed (ConnectionResetError)"),
    ],
)
async def test_no_answer_goes_on_without_a_credential_and_remembers_why(
    reply: Reply | Exception, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    secret_url = "https://alice:pa55word@github.com/acme/app.git?token=qq99"
    caplog.set_level(logging.WARNING, logger="workspace_realizer.adapters.credentials_bus")

    invocation = await BusCredentials(answering(reply)).invocation_for(
        remote_url=secret_url, company_id=COMPANY, run_id="run-1", operation_id=None
    )

    assert invocation == GitInvocation(unanswered=reason)
    assert not invocation.has_credential
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    logged = record.getMessage()
    assert reason in logged
    assert "pa55word" not in logged
    assert "qq99" not in logged
    # An authentication failure is then explained by the missing answer, not a missing secret.
    description = describe_auth_failure(
        "fatal: could not read Username for 'https://github.com': terminal prompts disabled",
        invocation,
        secret_url,
    )
    assert description is not None
    assert f"the git-credentials service did not answer ({reason})" in description
    assert "company secret" not in description


def fact(url: str, state: str, head_ref: str | None = None, sha: str | None = None) -> Any:
    return PullRequestFact(url=url, state=state, head_ref=head_ref, head_sha=sha)  # type: ignore[arg-type]


PR = "https://github.com/acme/app/pull/"


async def test_pull_request_facts_map_in_the_order_asked() -> None:
    answer = FactsReply(
        facts=[fact(f"{PR}2", "open", "feat", "b" * 40), fact(f"{PR}1/", "merged", "fix", "a" * 40)]
    )
    bus = answering(Ok(result=answer))

    with acting(Cause(actor=Actor(type="agent", id="agent-1"), run_id="run-7")):
        facts = await BusPullRequests(bus).facts(
            company_id=COMPANY,
            repo_url="https://github.com/acme/app.git",
            references=[f"{PR}1", f"{PR}2", f"{PR}3"],
        )

    assert [(f.url, f.state, f.head_ref, f.head_sha) for f in facts] == [
        (f"{PR}1", "merged", "fix", "a" * 40),
        (f"{PR}2", "open", "feat", "b" * 40),
        (f"{PR}3", "unknown", None, None),
    ]
    [(subject, request, timeout)] = bus.sent
    assert (subject, timeout) == (subjects.PULL_REQUEST_FACTS, LOOKUP_TIMEOUT)
    assert isinstance(request, LookupPullRequests)
    assert request.references == [f"{PR}1", f"{PR}2", f"{PR}3"]
    assert (request.company_id, request.repo_url) == (COMPANY, "https://github.com/acme/app.git")
    assert (request.run_id, request.principal.run_id) == ("run-7", "run-7")
    assert request.principal.actor.id == "workspace-realizer"


@pytest.mark.parametrize(
    "reply",
    [
        error_reply("timeout", "git-credentials did not answer", status=504),
        ValueError("boom"),
        Ok(result={"facts": "nope"}),
    ],
)
async def test_pull_requests_are_unknown_when_git_credentials_does_not_answer(
    reply: Reply | Exception, caplog: pytest.LogCaptureFixture
) -> None:
    facts = await BusPullRequests(answering(reply)).facts(
        company_id=COMPANY, repo_url="https://github.com/acme/app.git", references=[f"{PR}1"]
    )
    assert [(f.url, f.state) for f in facts] == [(f"{PR}1", "unknown")]
    assert any("did not answer" in r.getMessage() for r in caplog.records)


async def test_no_references_asks_nothing() -> None:
    bus = answering(Ok(result=FactsReply(facts=[])))
    assert await BusPullRequests(bus).facts(company_id=COMPANY, repo_url="x", references=[]) == []
    assert bus.sent == []


def test_the_wire_answer_keeps_the_token_out_of_repr() -> None:
    """The contract hides ``env`` too; our mapping keeps it hidden (``repr=False``)."""
    mapped = GitInvocation(env={"CLIPYARD_GIT_TOKEN": TOKEN}, source="server_env")
    assert TOKEN not in repr(credential_reply())
    assert TOKEN not in repr(mapped)
