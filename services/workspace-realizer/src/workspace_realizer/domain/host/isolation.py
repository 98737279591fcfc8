"""Low-trust containment (DECISIONS 11): an untrusted agent's run needs an isolated worktree.

``RealizeWorkspace.requireIsolation`` asks the realizer to refuse, before any git or command
work, a realization that would not give the issue its own git worktree: the shared primary
checkout (``shared_workspace``), the operator's branch in that checkout (``operator_branch``), a
workspace an adapter or sandbox manages, or a pinned (``reuse_existing``) workspace that is one of
those. Pure functions over the realization's plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from workspace_realizer.domain.errors import LowTrustViolationError

if TYPE_CHECKING:
    from workspace_realizer.usecases.host.planning import RealizePlan

__all__ = ["FIX", "check_isolation", "isolation_problem"]

ISOLATED_MODE: Final = "isolated_workspace"

FIX: Final = (
    "Set the project's executionWorkspacePolicy.defaultMode (or the issue's "
    "executionWorkspaceSettings.mode) to isolated_workspace, or mark the agent trusted."
)
"""How to fix a refusal; every refusal's message ends with it."""


def isolation_problem(plan: RealizePlan) -> str | None:
    """Why ``plan`` would not give the issue an isolated worktree, or None when it would.

    A new workspace is isolated when the resolved mode is ``isolated_workspace`` with a
    ``git_worktree`` strategy; a reused one (the issue's current workspace, or a pin) when it is
    an ``isolated_workspace`` git worktree.
    """
    if plan.reuse is not None:
        reused = plan.reuse
        if reused.mode == ISOLATED_MODE and reused.is_worktree:
            return None
        which = "the pinned" if plan.resolution.mode == "reuse_existing" else "its current"
        return (
            f"The issue would reuse {which} execution workspace {reused.id}, which is "
            f"{reused.mode} ({reused.provider_type}), not an isolated git worktree."
        )
    mode, strategy = plan.resolution.mode, plan.resolution.strategy.type
    if mode != ISOLATED_MODE:
        return f"The issue's workspace mode resolves to {mode}, which is not an isolated worktree."
    if strategy != "git_worktree":
        return (
            f"The issue's workspace mode is isolated_workspace, but its workspace strategy is "
            f"{strategy}, which makes no git worktree; use the git_worktree strategy type."
        )
    return None


def check_isolation(plan: RealizePlan) -> None:
    """Refuse a realization for an untrusted agent's run that is not an isolated worktree.

    Raises:
        LowTrustViolationError: 422 ``low_trust_violation``, details ``issueId`` and
            ``resolvedMode``, the message saying how to fix it.
    """
    problem = isolation_problem(plan)
    if problem is None:
        return
    raise LowTrustViolationError(
        f"Issue {plan.identifier} is worked on by an untrusted agent, whose runs may only use an "
        f"isolated worktree (low-trust containment). {problem} {FIX}",
        issueId=plan.issue_id,
        resolvedMode=plan.resolution.mode,
    )
