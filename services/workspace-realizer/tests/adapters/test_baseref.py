"""Base ref resolution (reference §5.4; cases 49, 51)."""

from __future__ import annotations

from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, commit, git, push_to_origin

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import GitInvocation

pytestmark = pytest.mark.integration


async def test_case49_local_branch_prefers_refreshed_origin(
    host: HostGit, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app", bare_origin=True)
    commit(repo, {"unpushed.txt": "local only\n"}, "unpushed")
    upstream = push_to_origin(repo, {"upstream.txt": "new\n"})
    assert git(repo, "rev-parse", "origin/main") != upstream  # not fetched yet

    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)

    assert base.ref == "origin/main"
    assert base.sha == upstream
    assert base.warnings == ()
    fetch = [s for s in steps.steps if s.command.startswith("git fetch")]
    assert len(fetch) == 1
    assert fetch[0].phase == "worktree_prepare"
    assert "+refs/heads/main:refs/remotes/origin/main" in fetch[0].command


async def test_case49_local_branch_without_origin_counterpart_warns(
    host: HostGit, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app", bare_origin=True)
    git(repo, "checkout", "-q", "-b", "feature-base")
    local = commit(repo, {"f.txt": "x\n"})

    base = await host.resolve_base_ref(
        repo_root=repo, configured="feature-base", auth=None, sink=steps
    )

    assert base.ref == "feature-base"
    assert base.sha == local
    assert len(base.warnings) == 1
    assert "no matching origin/feature-base" in base.warnings[0]
    assert "unpushed commits" in base.warnings[0]


async def test_local_only_repository_uses_local_branch_silently(
    host: HostGit, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    assert base.ref == "main"
    assert base.sha == git(repo, "rev-parse", "main")
    assert base.warnings == ()
    assert steps.steps == []


@pytest.mark.parametrize("configured", [None, "", "HEAD", "origin/HEAD"])
async def test_default_branch_detection(
    host: HostGit, make_repo, steps: StepRecorder, configured: str | None
) -> None:
    repo = make_repo("app", bare_origin=True)
    upstream = push_to_origin(repo, {"up.txt": "1\n"})
    base = await host.resolve_base_ref(repo_root=repo, configured=configured, auth=None, sink=steps)
    assert base.ref == "origin/main"
    assert base.sha == upstream
    assert base.warnings == ()


async def test_remote_tracking_and_sha_used_verbatim(
    host: HostGit, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app", bare_origin=True)
    first = git(repo, "rev-parse", "HEAD")
    tracking = await host.resolve_base_ref(
        repo_root=repo, configured="refs/remotes/origin/main", auth=None, sink=steps
    )
    pinned = await host.resolve_base_ref(repo_root=repo, configured=first, auth=None, sink=steps)
    assert tracking.ref == "refs/remotes/origin/main"
    assert tracking.sha == first
    assert pinned.ref == first
    assert pinned.sha == first


async def test_case51_fetch_failure_is_a_masked_warning(
    host: HostGit, make_repo, steps: StepRecorder
) -> None:
    repo = make_repo("app", bare_origin=True)
    stale = git(repo, "rev-parse", "origin/main")
    git(repo, "remote", "set-url", "origin",
        "https://bob:pa55wordsecret@127.0.0.1:1/org/app.git?token=qtok99")  # fmt: skip
    auth = GitInvocation(env={"CLIPYARD_GIT_TOKEN": "ghp_tokenvalue123"}, secret_name="GH_TOKEN",
                         source="company_secret")  # fmt: skip

    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=auth, sink=steps)

    assert base.ref == "origin/main"
    assert base.sha == stale
    assert base.warnings[0].startswith(
        "Could not refresh base ref origin/main before preparing the execution workspace: "
    )
    assert "127.0.0.1" in base.warnings[0]
    # A refused connection is not an authentication failure: the credential is not blamed.
    assert len(base.warnings) == 1
    assert "credential" not in base.warnings[0]
    everything = " ".join(base.warnings) + steps.text()
    for secret in ("pa55wordsecret", "qtok99", "ghp_tokenvalue123"):
        assert secret not in everything
    assert steps.steps[-1].status == "failed"


async def test_unresolvable_base_is_reported(host: HostGit, make_repo, steps: StepRecorder) -> None:
    repo = make_repo("app")
    base = await host.resolve_base_ref(repo_root=repo, configured="v9.9", auth=None, sink=steps)
    assert base.sha is None
    assert "does not resolve" in base.warnings[0]
    assert isinstance(repo, Path)
