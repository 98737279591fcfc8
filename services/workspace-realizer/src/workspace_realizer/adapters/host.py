"""The host ports the orchestrators use, and defaults without a bus: no git credentials (ambient
git behaviour) and a pull-request port that honestly answers ``unknown``. The running service
asks git-credentials instead (``app.bus_ports``); these defaults serve tests and tools."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from workspace_realizer.adapters.commands import ShellCommandRunner
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import (
    CommandRunner,
    CredentialPort,
    GitInvocation,
    GitPort,
    PullRequestFacts,
    PullRequestPort,
)

__all__ = ["HostPorts", "NoCredentials", "UnknownPullRequests", "default_ports"]


@dataclass(frozen=True)
class HostPorts:
    """Everything the realizer does on the host or asks of providers."""

    git: GitPort
    commands: CommandRunner
    credentials: CredentialPort
    pull_requests: PullRequestPort


class NoCredentials:
    """No credential for any remote: git runs with its ambient behaviour (prompts disabled)."""

    async def invocation_for(
        self, *, remote_url: str, company_id: str, run_id: str | None, operation_id: str | None
    ) -> GitInvocation | None:
        """Always None."""
        return None


class UnknownPullRequests:
    """Answers ``unknown`` for every pull request: without a token nothing can be known."""

    async def facts(
        self, *, company_id: str, repo_url: str, references: list[str]
    ) -> list[PullRequestFacts]:
        """One ``unknown`` fact per reference."""
        return [
            PullRequestFacts(url=ref, state="unknown", head_ref=None, head_sha=None)
            for ref in references
        ]


def default_ports(
    home: Path,
    base_env: Mapping[str, str] | None = None,
    *,
    pool_size: int = 0,
    pool_refresh: float = 60.0,
    pool_min_free_bytes: int = 0,
) -> HostPorts:
    """The host's git (with a worktree pool of ``pool_size`` per project workspace, see
    :class:`~workspace_realizer.adapters.hostgit.HostGit`) and shell adapters, no credentials,
    unknown pull requests."""
    git = HostGit(
        home=home,
        base_env=base_env,
        pool_size=pool_size,
        pool_refresh=pool_refresh,
        pool_min_free_bytes=pool_min_free_bytes,
    )
    return HostPorts(
        git=git,
        commands=ShellCommandRunner(base_env=base_env),
        credentials=NoCredentials(),
        pull_requests=UnknownPullRequests(),
    )
