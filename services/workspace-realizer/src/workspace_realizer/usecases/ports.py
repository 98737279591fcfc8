"""The ports through which the company-wide part asks the host part for host work
(docs/design/service-shape.md, the realizer's two parts).

The company-wide use cases and endpoints (projects, project workspaces, issues) import nothing of
the host part: where they need the host today (checking a ``cwd`` on this host, starting a
managed clone), they are given one of these Protocols. ``application.py`` and ``app.py`` wire
them to the in-process host part now; once the control plane is replicated, they are wired to the
node over the bus instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from workspace_realizer.domain.sources import HostGrant

__all__ = ["WORKTREE_PARENT_SETTING", "HostPaths", "ManagedCheckouts", "Store"]

Store = Callable[..., Awaitable[Any]]
"""Runs a synchronous call on the store's thread (``ServiceRuntime.store``)."""

WORKTREE_PARENT_SETTING = "executionWorkspacePolicy.workspaceStrategy.worktreeParentDir"
"""The setting a project's ``worktreeParentDir`` is refused under."""


class HostPaths(Protocol):
    """The host's checks of the paths a board key saves in a project workspace or a policy."""

    def check_source(self, cwd: str | None, repo_url: str | None, grant: HostGrant) -> None:
        """Refuse a ``cwd`` or local ``repoUrl`` the company may not name or that is no
        project directory on the host.

        Raises:
            AccessDeniedError: A host path outside the company's allowed roots (403).
            InvalidInputError: Naming the field and what to give instead.
        """
        ...

    def check_worktree_parent_dir(self, value: object, grant: HostGrant, setting: str) -> None:
        """Refuse an absolute, ``~`` or ``..`` ``worktreeParentDir`` outside the company's
        allowed roots.

        Raises:
            AccessDeniedError: Naming ``setting`` (403).
        """
        ...


class ManagedCheckouts(Protocol):
    """The host's managed clones of repo-only project workspaces (reference §5.9)."""

    async def ensure(self, project_workspace_id: str, operation_id: str | None) -> None:
        """Clone the project workspace's repository, unless its checkout is ready.

        Raises:
            CheckoutFailedError: The clone failed (recorded on the project workspace).
        """
        ...
