"""Base ref resolution and refresh (reference §5.4).

``origin/<branch>`` is preferred after ``git fetch --prune origin +refs/heads/<b>:refs/remotes/origin/<b>``
so unpushed local commits never leak into a task branch; a fetch failure is a warning, never an
abort; an empty or ``HEAD`` base means the detected default branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workspace_realizer.adapters.auth_failure import describe_auth_failure
from workspace_realizer.adapters.gitcli import GitRunner
from workspace_realizer.adapters.ports import BaseRef, GitInvocation, StepSink
from workspace_realizer.adapters.probes import (
    current_branch,
    ref_exists,
    remote_has_url,
    remotes,
    rev_parse,
)

__all__ = ["FETCH_TIMEOUT", "RemoteTracking", "remote_tracking", "resolve_base_ref"]

FETCH_TIMEOUT = 300.0


@dataclass(frozen=True, kw_only=True)
class RemoteTracking:
    """A ref in the ``<remote>/<branch>`` form."""

    remote: str
    branch: str


def remote_tracking(ref: str, remote_names: list[str]) -> RemoteTracking | None:
    """Read ``ref`` as a remote-tracking ref (``refs/remotes/<r>/<b>`` or ``<r>/<b>`` with ``<r>``
    a configured remote), else None."""
    name = ref.removeprefix("refs/remotes/")
    remote, sep, branch = name.partition("/")
    if not sep or not branch:
        return None
    if ref.startswith("refs/remotes/") or remote in remote_names:
        return RemoteTracking(remote=remote, branch=branch)
    return None


async def _provider_url(git: GitRunner, repo_root: Path, remote: str) -> str | None:
    """The remote's URL, only to tell its provider (it may hold userinfo: never shown)."""
    result = await git.run(["remote", "get-url", "--", remote], cwd=repo_root)
    return result.out if result.ok else None


async def _refresh(
    git: GitRunner,
    repo_root: Path,
    tracking: RemoteTracking,
    display_ref: str,
    auth: GitInvocation | None,
    sink: StepSink,
    *,
    missing_is_silent: bool,
) -> list[str]:
    """Fetch one remote-tracking branch; return the warnings (a failure never raises)."""
    if not await remote_has_url(git, repo_root, tracking.remote):
        return []
    refspec = f"+refs/heads/{tracking.branch}:refs/remotes/{tracking.remote}/{tracking.branch}"
    result = await git.run(
        ["fetch", "--prune", "--", tracking.remote, refspec],
        cwd=repo_root,
        phase="worktree_prepare",
        sink=sink,
        auth=auth,
        timeout=FETCH_TIMEOUT,
        metadata={"repoRoot": str(repo_root), "baseRef": display_ref, "refresh": True},
    )
    if result.ok:
        return []
    if missing_is_silent and "couldn't find remote ref" in result.stderr:
        return []
    warning = (
        f"Could not refresh base ref {display_ref} before preparing the execution workspace: "
        f"{result.message()}"
    )
    hint = describe_auth_failure(
        result.stderr, auth, await _provider_url(git, repo_root, tracking.remote)
    )
    return [f"{warning} {hint}" if hint else warning]


async def _default_branch(git: GitRunner, repo_root: Path) -> str:
    """``origin/HEAD`` → ``origin/main|master`` → the current branch → ``HEAD``."""
    result = await git.run(["symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"], cwd=repo_root)
    if result.ok and result.out.startswith("refs/remotes/"):
        return result.out.removeprefix("refs/remotes/")
    for candidate in ("main", "master"):
        if await ref_exists(git, repo_root, f"refs/remotes/origin/{candidate}"):
            return f"origin/{candidate}"
    return await current_branch(git, repo_root) or "HEAD"


async def resolve_base_ref(
    git: GitRunner,
    *,
    repo_root: Path,
    configured: str | None,
    auth: GitInvocation | None,
    sink: StepSink,
) -> BaseRef:
    """Resolve (and refresh) the base a worktree starts from. The caller holds the repo lock.

    Args:
        git: The runner.
        repo_root: The project checkout.
        configured: The strategy's ``baseRef`` or the workspace's ``repoRef`` (None/empty/``HEAD``:
            the default branch).
        auth: The credential for the fetch, if any.
        sink: Receives the fetch step.

    Returns:
        The ref to base on, its commit (None when it does not resolve) and warnings.
    """
    warnings: list[str] = []
    wanted = (configured or "").strip()
    if not wanted or wanted == "HEAD":
        wanted = await _default_branch(git, repo_root)
    remote_names = await remotes(git, repo_root)
    ref = wanted
    tracking = remote_tracking(wanted, remote_names)
    local_name = wanted.removeprefix("refs/heads/")
    if tracking is not None and tracking.branch == "HEAD":
        sym = await git.run(
            ["symbolic-ref", "--quiet", f"refs/remotes/{tracking.remote}/HEAD"], cwd=repo_root
        )
        if sym.ok and sym.out.startswith("refs/remotes/"):
            ref = sym.out.removeprefix("refs/remotes/")
            tracking = remote_tracking(sym.out, remote_names)
    if tracking is not None:
        warnings += await _refresh(
            git, repo_root, tracking, ref, auth, sink, missing_is_silent=False
        )
    elif await ref_exists(git, repo_root, f"refs/heads/{local_name}"):
        if "origin" in remote_names:
            origin = RemoteTracking(remote="origin", branch=local_name)
            warnings += await _refresh(
                git, repo_root, origin, f"origin/{local_name}", auth, sink, missing_is_silent=True
            )
            if await ref_exists(git, repo_root, f"refs/remotes/origin/{local_name}"):
                ref = f"origin/{local_name}"
            else:
                ref = local_name
                warnings.append(
                    f'Configured base ref "{local_name}" is a local branch with no matching '
                    f"origin/{local_name}; basing the execution workspace on the local ref, which "
                    "may include unpushed commits."
                )
        else:
            ref = local_name
    sha = await rev_parse(git, repo_root, ref)
    if sha is None:
        warnings.append(f'Base ref "{ref}" does not resolve to a commit in {repo_root}.')
    return BaseRef(ref=ref, sha=sha, warnings=tuple(warnings))
