"""Bus endpoints that spend a token: git invocations and pull-request lookups (realizer only).

Both go through one :class:`CredentialResolver` (one memo: a run or an operation causes at most
one resolution and one ``credential.resolved`` event per provider) whose secrets are read on the
store's thread and whose audit events are saved there, with the run as the event's cause.
NATS lets only the workspace-realizer ask (``deploy/nats``); the endpoints also refuse any
principal but a system one (403), and a company other than the principal's (404).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from contracts import credential_subjects as subjects
from contracts.base import Principal
from contracts.credentials import (
    GitInvocation,
    LookupPullRequests,
    PullRequestFacts,
    ResolveGitInvocation,
)
from servicekit.access import Access, AccessDeniedError, ActorKind
from servicekit.routes import BusEndpoints, Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from git_credentials.adapters.github import GitHubPullRequests
    from git_credentials.usecases.resolver import CredentialResolver
    from natsbus import RequestContext

__all__ = ["CredentialEndpoints", "api_host"]


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


def api_host(api_url: str) -> str:
    """The host a GitHub API token is resolved for (``api.github.com`` by default)."""
    parts = urlsplit(api_url)
    return (parts.netloc.rpartition("@")[2] or "api.github.com").lower()


class CredentialEndpoints(BusEndpoints):
    """The git-invocation and pull-request endpoints.

    Args:
        resolver: Resolves and audits the tokens (its memo forgets a company's tokens when one of
            its secrets is deleted).
        github: GitHub's pull requests.
        github_api_url: The GitHub API the pull requests are asked of (its host is the token's).
    """

    def __init__(
        self, resolver: CredentialResolver, github: GitHubPullRequests, github_api_url: str
    ) -> None:
        self.resolver = resolver
        self._github = github
        self._api_host = api_host(github_api_url)

    async def git_invocation(self, c: ResolveGitInvocation, ctx: RequestContext) -> GitInvocation:
        """How one git process authenticates for ``c.remote_url``."""
        _check_caller(c.principal, c.company_id)
        return await self.resolver.invocation(
            company_id=c.company_id,
            remote_url=c.remote_url,
            run_id=c.run_id,
            operation_id=c.operation_id,
        )

    async def pull_request_facts(
        self, c: LookupPullRequests, ctx: RequestContext
    ) -> PullRequestFacts:
        """The facts of the pull requests ``c.references`` names (a token resolved only when
        GitHub is asked)."""
        _check_caller(c.principal, c.company_id)
        facts = await self._github.facts(
            company_id=c.company_id,
            repo_url=c.repo_url,
            references=c.references,
            token=partial(self._github_token, c),
        )
        return PullRequestFacts(facts=facts)

    async def _github_token(self, c: LookupPullRequests) -> str | None:
        resolved = await self.resolver.token_for(
            company_id=c.company_id,
            provider="github",
            remote_host=self._api_host,
            run_id=c.run_id,
            operation_id=c.operation_id,
        )
        return resolved.token if resolved is not None else None

    def routes(self) -> Sequence[Route]:
        """The git-invocation and pull-request endpoints."""
        return (
            Route(
                "git_invocation",
                subjects.GIT_INVOCATION,
                self.git_invocation,
                ResolveGitInvocation,
            ),
            Route(
                "pull_request_facts",
                subjects.PULL_REQUEST_FACTS,
                self.pull_request_facts,
                LookupPullRequests,
            ),
        )
