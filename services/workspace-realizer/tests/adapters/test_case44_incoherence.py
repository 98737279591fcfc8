"""Reference case 44's evidence at the adapter: a worktree on another branch than the recorded one
fails validation with the ancestry verdict of the two tips, and nothing is repaired."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, commit, git

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import HostOperationError

pytestmark = pytest.mark.integration

NO_REPAIR = {"eligible": False, "attempted": False, "succeeded": False}


async def incoherence(
    host: HostGit, repo: Path, path: Path, steps: StepRecorder
) -> dict[str, object]:
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    with pytest.raises(HostOperationError) as caught:
        await host.ensure_worktree(repo_root=repo, path=path, branch="b1", base=base, sink=steps)
    assert caught.value.code == "workspace_validation_failed"
    assert caught.value.details["reason"] == "git_worktree_branch_incoherence"
    return caught.value.details


@pytest.mark.parametrize("live", ["diverged", "ancestor", "detached"])
async def test_case44_the_ancestry_of_the_recorded_and_live_tips(
    host: HostGit, make_repo: Callable[..., Path], steps: StepRecorder, home: Path, live: str
) -> None:
    repo = make_repo("app")
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    path = home / "wt" / "b1"
    await host.ensure_worktree(repo_root=repo, path=path, branch="b1", base=base, sink=steps)
    recorded = commit(path, {"recorded.txt": "r\n"})
    if live == "diverged":
        git(path, "checkout", "-q", "-b", "other", "main")
    elif live == "ancestor":
        git(path, "checkout", "-q", "-b", "other")
    else:
        git(path, "checkout", "-q", "--detach")
    head = commit(path, {"live.txt": "l\n"})

    details = await incoherence(host, repo, path, steps)

    expected = {"diverged": "diverged", "ancestor": "ancestor", "detached": "ancestor"}[live]
    assert details["ancestry"] == expected
    assert (details["expectedHeadSha"], details["actualHeadSha"]) == (recorded, head)
    assert details["actualBranch"] == (None if live == "detached" else "other")
    assert details["safeRepair"] == NO_REPAIR
    # Nothing was repaired.
    assert git(path, "rev-parse", "HEAD") == head
    assert git(repo, "rev-parse", "refs/heads/b1") == recorded


async def test_case44_a_recorded_branch_that_is_gone_has_unknown_ancestry(
    host: HostGit, make_repo: Callable[..., Path], steps: StepRecorder, home: Path
) -> None:
    repo = make_repo("app")
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    path = home / "wt" / "b1"
    await host.ensure_worktree(repo_root=repo, path=path, branch="b1", base=base, sink=steps)
    git(path, "checkout", "-q", "-b", "other")
    git(repo, "branch", "-D", "b1")

    details = await incoherence(host, repo, path, steps)

    assert (details["ancestry"], details["expectedHeadSha"]) == ("unknown", None)
    assert details["safeRepair"] == NO_REPAIR
