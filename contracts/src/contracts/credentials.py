"""Bus commands, queries and views of company secrets and git credentials (owner: git-credentials).

Secrets: a value goes in (create, rotate) and never comes out; views carry names, versions and
dates only. Every message that holds a value or a token hides it from ``repr`` (so a stray log
line or traceback cannot show it); nothing of this module is ever logged whole.

Git invocations (ARCHITECTURE §4.5, DECISIONS 9): the realizer asks how to authenticate one git
process for ``(runId or operationId, remote)``; the answer names the provider (``github``,
``gitlab`` or none: any other URL gets no credential) and, when a token resolved, the ``-c``
options and environment to give that one git process. The token is only in ``env`` (as
``CLIPYARD_GIT_TOKEN``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from contracts.base import Command, Query, Struct
from contracts.http import StrictBody

__all__ = [
    "CreateSecret",
    "CreateSecretBody",
    "CredentialSource",
    "DeleteSecret",
    "GitCredential",
    "GitInvocation",
    "GitProvider",
    "ListSecretAccessEvents",
    "ListSecrets",
    "LookupPullRequests",
    "PullRequestFact",
    "PullRequestFacts",
    "PullRequestState",
    "ResolveGitInvocation",
    "RotateSecret",
    "RotateSecretBody",
    "Secret",
    "SecretAccessEvent",
]

GitProvider = Literal["github", "gitlab"]
CredentialSource = Literal["company_secret", "server_env"]
PullRequestState = Literal["open", "closed", "merged", "unknown"]

SecretName = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$",
        description="Letters, digits and underscores, not starting with a digit (at most 128).",
    ),
]
SecretValue = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=65536,
        description="The secret's value (at most 64 KiB); stored encrypted, never returned.",
    ),
]


class _Hidden:
    """``repr`` without the fields that hold a value or a token."""

    __hidden__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={'***' if name in self.__hidden__ else repr(getattr(self, name))}"
            for name in self.__struct_fields__  # type: ignore[attr-defined]
        )
        return f"{type(self).__name__}({shown})"

    def __rich_repr__(self, /) -> list[tuple[str, Any]]:
        """What ``rich`` prints: the same fields, hidden ones as ``***``."""
        return [
            (name, "***" if name in self.__hidden__ else getattr(self, name))
            for name in self.__struct_fields__  # type: ignore[attr-defined]
        ]


# Inbound HTTP bodies (API.md "Secrets").


class CreateSecretBody(_Hidden, StrictBody, frozen=True, kw_only=True):
    """``POST /api/companies/{companyId}/secrets``."""

    __hidden__ = ("value",)

    name: SecretName
    value: SecretValue


class RotateSecretBody(_Hidden, StrictBody, frozen=True, kw_only=True):
    """``PUT /api/secrets/{secretId}``: the value of a new version."""

    __hidden__ = ("value",)

    value: SecretValue


# Views.


class Secret(Struct, frozen=True, kw_only=True):
    """``{id, companyId, name, version, createdAt, updatedAt}``: never a value."""

    id: str
    company_id: str
    name: str
    version: int
    created_at: datetime
    updated_at: datetime


class SecretAccessEvent(Struct, frozen=True, kw_only=True):
    """One credential resolution (never the value): which secret (or the server environment),
    for which run or operation, for which remote host."""

    id: str
    secret_name: str | None
    """None when the token came from the server environment."""
    source: CredentialSource
    provider: GitProvider
    run_id: str | None
    operation_id: str | None
    remote_host: str
    occurred_at: datetime


class GitCredential(_Hidden, Struct, frozen=True, kw_only=True):
    """How to authenticate one git process: ``git <configArgs> <command>`` with ``env`` added."""

    __hidden__ = ("env",)

    config_args: list[str]
    """``-c credential.helper=`` (resets ambient helpers), then one host-scoped inline helper per
    host, then (GitHub SSH remotes) ``url.https://github.com/.insteadOf`` rewrites."""
    env: dict[str, str]
    """``CLIPYARD_GIT_TOKEN`` (the only place the token lives), ``GIT_TERMINAL_PROMPT=0``, and
    ``GIT_SSL_CAINFO`` for a self-managed GitLab host when configured."""
    secret_name: str | None
    source: CredentialSource
    provider_label: str
    """``GitHub`` or ``GitLab``, for failure descriptions."""


class GitInvocation(Struct, frozen=True, kw_only=True):
    """The answer to :class:`ResolveGitInvocation`."""

    provider: GitProvider | None
    """The remote's provider; None for a URL that never gets a credential."""
    credential: GitCredential | None
    """None: run git with its ambient behaviour (prompts disabled)."""
    env: dict[str, str] = msgspec.field(default_factory=dict)
    """Environment the git process needs with or without a credential, never a token:
    ``GIT_SSL_CAINFO`` for a self-managed GitLab host when ``CLIPYARD_GITLAB_CA_CERT_PATH`` is set
    (so a host with a private CA is reachable, and a missing credential is then described as such
    rather than as a certificate error)."""


class PullRequestFact(Struct, frozen=True, kw_only=True):
    """What the provider says about one pull request (``unknown`` when it could not be read)."""

    url: str
    state: PullRequestState
    head_ref: str | None
    head_sha: str | None


class PullRequestFacts(Struct, frozen=True, kw_only=True):
    """The answer to :class:`LookupPullRequests`, in the order asked."""

    facts: list[PullRequestFact]


# Commands and queries.


class CreateSecret(_Hidden, Command, tag="secret.create.v1", frozen=True, kw_only=True):
    """Create a company secret (version 1) → ``Secret``; ``state_conflict`` (409) when the
    company has a secret of that name."""

    __hidden__ = ("value",)

    company_id: str
    name: SecretName
    value: SecretValue


class RotateSecret(_Hidden, Command, tag="secret.rotate.v1", frozen=True, kw_only=True):
    """Store a new version of a secret → ``Secret`` (the next resolution uses it)."""

    __hidden__ = ("value",)

    secret_id: str
    value: SecretValue


class DeleteSecret(Command, tag="secret.delete.v1", frozen=True, kw_only=True):
    """Delete a secret and destroy the data keys of every version → ``Deleted``."""

    secret_id: str


class ListSecrets(Query, tag="secret.list.v1", frozen=True, kw_only=True):
    """A company's secrets by name → ``Page[Secret]``."""

    company_id: str
    limit: int = 50
    offset: int = 0


class ListSecretAccessEvents(Query, tag="credential.access_events.v1", frozen=True, kw_only=True):
    """A company's credential resolutions, newest first → ``Page[SecretAccessEvent]``."""

    company_id: str
    limit: int = 50
    offset: int = 0


class ResolveGitInvocation(Command, tag="credential.git_invocation.v1", frozen=True, kw_only=True):
    """How to authenticate git for ``remoteUrl`` → ``GitInvocation``.

    Resolved once per ``(company, runId or operationId, provider)`` (memoized: one resolution
    and one ``credential.resolved`` event however many remotes); a rotation takes effect at the
    next run. Only the workspace-realizer may ask (the answer holds a token).
    """

    company_id: str
    remote_url: str
    run_id: str | None = None
    operation_id: str | None = None


class LookupPullRequests(
    Command, tag="credential.pull_request_facts.v1", frozen=True, kw_only=True
):
    """The facts of pull requests of one repository (``https://github.com/o/r/pull/N``) →
    ``PullRequestFacts``; asked with the resolved GitHub token, cached 5 minutes per
    ``company:owner/repo#number``."""

    company_id: str
    repo_url: str
    references: list[str]
    run_id: str | None = None
    operation_id: str | None = None
