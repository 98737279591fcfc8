"""Bus endpoints that spend a token: git invocations and pull-request lookups (realizer only).

Both go through one :class:`CredentialResolver` (one memo: a run or an operation causes at most
one resolution and one ``credential.resolved`` event per provider) whose secrets are read on the
store's thread and whose audit events are saved there, with the run as the event's cause.
NATS lets only the workspace-realizer ask (``deploy/nats``); the endpoints also refuse any
principal but a system one (403), and a company other than the principal's (404).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from contracts import credential_subjects as subjects
from contracts.base import Actor, Principal
from contracts.credentials import (
    GitInvocation,
    LookupPullRequests,
    PullRequestFacts,
    ResolveGitInvocation,
)
from eventstore import Cause
from git_credentials.pull_requests import GitHubPullRequests
from git_credentials.resolution import CredentialResolver, ResolutionRecord
from servicekit.access import Access, AccessDeniedError, ActorKind

if TYPE_CHECKING:
    from git_credentials.endpoints.common import Endpoints
    from natsbus import RequestContext

__all__ = ["register_credentials"]


def _check_caller(principal: Principal, company_id: str) -> None:
    """Refuse any principal but Clipyard itself (403), and a company other than its own (404,
    as another company's thing is, ARCHITECTURE §5.1)."""
    access = Access.of(principal)
    if access.kind is not ActorKind.SYSTEM:
        raise AccessDeniedError(
            "Only Clipyard's own services may ask for git credentials.",
            actorKind=access.kind.value,
        )
    access.check_company(company_id, "company", company_id)


def _api_host(api_url: str) -> str:
    parts = urlsplit(api_url)
    return (parts.netloc.rpartition("@")[2] or "api.github.com").lower()


async def register_credentials(e: Endpoints) -> CredentialResolver:
    """Add the git-invocation and pull-request endpoints; returns their resolver (whose memo
    forgets a company's tokens when one of its secrets is deleted)."""
    app = e.app
    settings = e.settings

    async def lookup(company_id: str, name: str) -> str | None:
        return await e.store(app.secret_value, company_id, name)

    async def audit(record: ResolutionRecord) -> None:
        cause = Cause(
            actor=Actor(type="system", id="git-credentials"),
            run_id=record.run_id,
            reason=f"git credential resolved for {record.remote_host}",
            company_id=record.company_id,
        )
        await e.write(cause, app.record_resolution, record)

    resolver = CredentialResolver(
        lookup=lookup,
        server_env=settings.server_env,
        gitlab_hosts=[settings.gitlab_hosts] if settings.gitlab_hosts else [],
        ca_cert_path=settings.ca_cert_path,
        on_resolved=audit,
    )
    github = GitHubPullRequests(api_url=settings.github_api_url)
    e.runtime.exit_stack.push_async_callback(github.aclose)
    api_host = _api_host(settings.github_api_url)

    async def git_invocation(c: ResolveGitInvocation, ctx: RequestContext) -> GitInvocation:
        _check_caller(c.principal, c.company_id)
        return await resolver.invocation(
            company_id=c.company_id,
            remote_url=c.remote_url,
            run_id=c.run_id,
            operation_id=c.operation_id,
        )

    async def pull_request_facts(c: LookupPullRequests, ctx: RequestContext) -> PullRequestFacts:
        _check_caller(c.principal, c.company_id)

        async def token() -> str | None:
            resolved = await resolver.token_for(
                company_id=c.company_id,
                provider="github",
                remote_host=api_host,
                run_id=c.run_id,
                operation_id=c.operation_id,
            )
            return resolved.token if resolved is not None else None

        facts = await github.facts(
            company_id=c.company_id, repo_url=c.repo_url, references=c.references, token=token
        )
        return PullRequestFacts(facts=facts)

    await e.add("git_invocation", subjects.GIT_INVOCATION, git_invocation, ResolveGitInvocation)
    await e.add(
        "pull_request_facts", subjects.PULL_REQUEST_FACTS, pull_request_facts, LookupPullRequests
    )
    return resolver
