"""Rescue refs, removal, compare-and-delete and reopen (DECISIONS 3, 4, 12; case 59 as changed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, commit, git

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import BaseRef, HostOperationError, WorktreeOutcome

pytestmark = pytest.mark.integration


async def setup(
    host: HostGit, repo: Path, home: Path, branch: str = "PAP-9-work"
) -> tuple[BaseRef, WorktreeOutcome]:
    steps = StepRecorder()
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    outcome = await host.ensure_worktree(
        repo_root=repo, path=home / "worktrees" / "pw" / branch, branch=branch, base=base,
        sink=steps,
    )  # fmt: skip
    return base, outcome


def status(path: Path) -> str:
    return git(path, "status", "--porcelain=v1", "--untracked-files=all")


async def test_rescue_holds_changes_without_touching_the_worktree(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app", {"a.txt": "a\n", "gone.txt": "g\n", ".gitignore": "*.log\n"})
    _, wt = await setup(host, repo, home)
    head = commit(wt.path, {"feature.txt": "undelivered\n"}, "undelivered commit")
    (wt.path / "a.txt").write_text("modified\n")
    git(wt.path, "add", "a.txt")  # one staged change
    (wt.path / "gone.txt").unlink()
    (wt.path / "notes" / "todo.txt").parent.mkdir()
    (wt.path / "notes" / "todo.txt").write_text("untracked\n")
    (wt.path / "debug.log").write_text("ignored\n")
    before_status = status(wt.path)
    index = Path(git(wt.path, "rev-parse", "--path-format=absolute", "--git-path", "index"))
    index_bytes = index.read_bytes()

    rescue = await host.write_rescue_ref(
        repo_root=repo, path=wt.path, ref="refs/clipyard/rescue/ws1/1", message="Archive ws1",
        sink=steps,
    )  # fmt: skip

    assert rescue is not None
    assert rescue.ref == "refs/clipyard/rescue/ws1/1"
    assert git(repo, "rev-parse", rescue.ref) == rescue.sha
    assert git(repo, "rev-parse", f"{rescue.sha}^") == head
    assert rescue.file_count == 3
    assert git(repo, "show", f"{rescue.sha}:notes/todo.txt") == "untracked"
    assert git(repo, "show", f"{rescue.sha}:a.txt") == "modified"
    assert git(repo, "ls-tree", "--name-only", rescue.sha, "gone.txt") == ""
    assert git(repo, "ls-tree", "--name-only", rescue.sha, "debug.log") == ""
    assert "Clipyard-Rescue-Of: " + head in git(repo, "log", "-1", "--format=%B", rescue.sha)
    # The worktree, its index and its branch are as they were.
    assert status(wt.path) == before_status
    assert git(wt.path, "rev-parse", "HEAD") == head
    assert git(repo, "rev-parse", "refs/heads/PAP-9-work") == head
    assert index.read_bytes() == index_bytes
    assert {s.phase for s in steps.steps} == {"workspace_rescue"}


async def test_clean_tree_with_undelivered_commits_rescues_head_itself(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    _, wt = await setup(host, repo, home)
    head = commit(wt.path, {"f.txt": "f\n"})
    rescue = await host.write_rescue_ref(
        repo_root=repo, path=wt.path, ref="refs/clipyard/rescue/ws1/1", message="m", sink=steps
    )
    assert rescue is not None
    assert rescue.sha == head
    assert rescue.file_count == 0


async def test_rescue_ref_name_is_checked(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    _, wt = await setup(host, repo, home)
    for bad in ("refs/heads/PAP-9-work", "rescue", "refs/clipyard/bad..name"):
        with pytest.raises(HostOperationError):
            await host.write_rescue_ref(
                repo_root=repo, path=wt.path, ref=bad, message="m", sink=steps
            )


async def test_archive_then_reopen_brings_back_the_file_and_the_commit(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app", {"a.txt": "a\n", "gone.txt": "g\n"})
    base, wt = await setup(host, repo, home)
    head = commit(wt.path, {"feature.txt": "undelivered\n"}, "undelivered commit")
    (wt.path / "a.txt").write_text("modified\n")
    (wt.path / "gone.txt").unlink()
    (wt.path / "untracked.txt").write_text("precious\n")
    before = status(wt.path)
    rescue = await host.write_rescue_ref(
        repo_root=repo, path=wt.path, ref="refs/clipyard/rescue/ws1/1", message="Archive",
        sink=steps,
    )  # fmt: skip
    assert rescue is not None

    assert await host.remove_worktree(repo_root=repo, path=wt.path, sink=steps) is True
    # The branch is undelivered: the application keeps it (no delete_branch call).
    restored = await host.restore_worktree(
        repo_root=repo, path=wt.path, branch="PAP-9-work", base=base, rescue=rescue, sink=steps
    )

    assert restored.created is True
    assert restored.reused_existing_branch is True
    assert restored.warnings == ()
    assert restored.head_sha == head
    assert (wt.path / "untracked.txt").read_text() == "precious\n"
    assert (wt.path / "a.txt").read_text() == "modified\n"
    assert not (wt.path / "gone.txt").exists()
    assert (wt.path / "feature.txt").read_text() == "undelivered\n"
    assert status(wt.path) == before
    assert git(wt.path, "diff", "--cached", "--name-only") == ""
    assert any(s.phase == "workspace_restore" for s in steps.steps)


async def test_reopen_recreates_a_deleted_branch_from_the_rescue(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    base, wt = await setup(host, repo, home)
    head = commit(wt.path, {"feature.txt": "work\n"})
    (wt.path / "untracked.txt").write_text("precious\n")
    rescue = await host.write_rescue_ref(
        repo_root=repo, path=wt.path, ref="refs/clipyard/rescue/ws1/1", message="m", sink=steps
    )
    assert await host.remove_worktree(repo_root=repo, path=wt.path, sink=steps)
    git(repo, "branch", "-D", "PAP-9-work")

    restored = await host.restore_worktree(
        repo_root=repo, path=wt.path, branch="PAP-9-work", base=base, rescue=rescue, sink=steps
    )

    assert restored.reused_existing_branch is False
    assert restored.head_sha == head
    assert git(wt.path, "symbolic-ref", "--short", "HEAD") == "PAP-9-work"
    assert (wt.path / "untracked.txt").read_text() == "precious\n"
    assert status(wt.path) == "?? untracked.txt"
    assert any("recreated" in w for w in restored.warnings)


async def test_reopen_without_rescue_uses_the_branch(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    base, wt = await setup(host, repo, home)
    head = commit(wt.path, {"feature.txt": "work\n"})
    assert await host.remove_worktree(repo_root=repo, path=wt.path, sink=steps)
    restored = await host.restore_worktree(
        repo_root=repo, path=wt.path, branch="PAP-9-work", base=base, rescue=None, sink=steps
    )
    assert restored.head_sha == head
    assert status(wt.path) == ""


async def test_case59_compare_and_delete(
    host: HostGit, make_repo, home: Path, steps: StepRecorder
) -> None:
    repo = make_repo("app")
    _, wt = await setup(host, repo, home)
    checked = commit(wt.path, {"f.txt": "1\n"})

    # Never while the worktree exists.
    assert (
        await host.delete_branch(
            repo_root=repo, branch="PAP-9-work", expected_sha=checked, sink=steps
        )
        is False
    )
    assert steps.steps[-1].status == "skipped"
    assert git(repo, "rev-parse", "refs/heads/PAP-9-work") == checked

    moved = commit(wt.path, {"f.txt": "2\n"})
    assert await host.remove_worktree(repo_root=repo, path=wt.path, sink=steps)

    # The branch moved since it was checked: kept.
    assert (
        await host.delete_branch(
            repo_root=repo, branch="PAP-9-work", expected_sha=checked, sink=steps
        )
        is False
    )
    assert git(repo, "rev-parse", "refs/heads/PAP-9-work") == moved
    assert steps.steps[-1].status == "failed"
    assert steps.steps[-1].command.startswith("git update-ref")

    # At the checked commit: deleted.
    assert (
        await host.delete_branch(
            repo_root=repo, branch="PAP-9-work", expected_sha=moved, sink=steps
        )
        is True
    )
    assert git(repo, "show-ref", "--verify", "refs/heads/PAP-9-work", check=False) == ""


async def test_a_rescue_ref_is_dropped_only_where_it_was_written(
    host: HostGit, make_repo, home: Path
) -> None:
    # Compare-and-delete: a rescue ref that moved meanwhile is kept; one still at its commit goes.
    repo = make_repo("app", {"a.txt": "a\n"})
    steps = StepRecorder()
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    wt = await host.ensure_worktree(
        repo_root=repo, path=home / "wt" / "d1", branch="d1", base=base, sink=steps
    )
    (wt.path / "notes.txt").write_text("n\n")
    ref = "refs/clipyard/rescue/ws-drop/1"
    rescued = await host.write_rescue_ref(
        repo_root=repo, path=wt.path, ref=ref, message="rescue", sink=steps
    )
    assert rescued is not None
    assert rescued.sha != wt.head_sha
    assert not await host.drop_rescue_ref(
        repo_root=repo, ref=ref, expected_sha=wt.head_sha, sink=steps
    )
    assert git(repo, "rev-parse", ref) == rescued.sha
    assert await host.drop_rescue_ref(repo_root=repo, ref=ref, expected_sha=rescued.sha, sink=steps)
    assert git(repo, "for-each-ref", "refs/clipyard/") == ""
