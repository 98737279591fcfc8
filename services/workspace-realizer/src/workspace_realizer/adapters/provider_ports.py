"""The providers' ports: how git authenticates to a remote, and what a provider says about a
pull request (both asked of git-credentials by the running realizer, ARCHITECTURE §4.5)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

__all__ = ["CredentialPort", "GitInvocation", "PullRequestFacts", "PullRequestPort"]


@dataclass(frozen=True, kw_only=True)
class GitInvocation:
    """How to authenticate one git process, as git-credentials answered for its remote.

    With a credential, ``source`` is set and ``config_args``/``env`` carry it (the token lives only
    in ``env``, hidden from ``repr``). Without one, ``config_args`` and ``env`` are empty and git
    runs with its ambient behaviour; ``provider`` still names the remote's provider and
    ``unanswered`` says why git-credentials could not be asked, so that an authentication failure
    is described truthfully (:func:`~workspace_realizer.adapters.auth_failure.describe_auth_failure`).
    """

    config_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    secret_name: str | None = None
    """The company secret the token came from (None for the server environment)."""
    source: str | None = None
    """``company_secret`` or ``server_env`` when a credential is used, else None."""
    provider: str | None = None
    """``github`` or ``gitlab`` when the remote is one of theirs (with or without a credential)."""
    provider_label: str | None = None
    """``GitHub`` or ``GitLab``, for failure descriptions."""
    unanswered: str | None = None
    """Why git-credentials did not answer (timeout, not running, error reply); None when it did."""

    @property
    def has_credential(self) -> bool:
        """True when a credential is given to the git process."""
        return self.source is not None


class CredentialPort(Protocol):
    """Resolves how to authenticate git for a remote (the real one asks git-credentials).

    None (or a :class:`GitInvocation` without a credential) means ambient git behaviour. It never
    raises for an unreachable credential service: the answer then says why in ``unanswered``.
    """

    async def invocation_for(
        self, *, remote_url: str, company_id: str, run_id: str | None, operation_id: str | None
    ) -> GitInvocation | None: ...


@dataclass(frozen=True, kw_only=True)
class PullRequestFacts:
    """What a provider says about one pull request."""

    url: str
    state: Literal["open", "closed", "merged", "unknown"]
    head_ref: str | None
    head_sha: str | None


class PullRequestPort(Protocol):
    """Pull-request lookups behind ``merged_via_pr`` (the real one asks git-credentials); one fact
    per reference, ``unknown`` for what could not be read."""

    async def facts(
        self, *, company_id: str, repo_url: str, references: list[str]
    ) -> list[PullRequestFacts]: ...
