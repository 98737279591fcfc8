"""Reference case 62: the terminal reaper on real git repositories, each skip reason and the
archive (DECISIONS 2-4: squash merges count as delivered, a dirty tree or undelivered commits are
skipped, cleanup is verified on disk and retried)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.ports import StepSink
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.reaper import reap_once
from workspace_realizer.orchestration.reopen import reopen

pytestmark = pytest.mark.integration


class BranchMovedMeanwhile(HostGit):
    """The host's git, where another process commits on ``branch`` just before Clipyard's
    compare-and-delete of it (a real race, made deterministic)."""

    def __init__(self, scene: Any, repo: Path, branch: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scene, self.repo, self.branch = scene, repo, branch

    async def delete_branch(
        self, *, repo_root: Path, branch: str, expected_sha: str, sink: StepSink
    ) -> bool:
        if branch == self.branch:
            tree = self.scene.git(self.repo, "rev-parse", f"{expected_sha}^{{tree}}")
            moved = self.scene.git(
                self.repo, "commit-tree", tree, "-p", expected_sha, "-m", "pushed meanwhile"
            )
            self.scene.git(self.repo, "update-ref", f"refs/heads/{branch}", moved)
        deleted: bool = await super().delete_branch(
            repo_root=repo_root, branch=branch, expected_sha=expected_sha, sink=sink
        )
        return deleted


class Setup:
    def __init__(self, real: Realizer, scene: Any, world: Any, teardown_log: Path) -> None:
        self.real, self.scene, self.world = real, scene, world
        self.repo = scene.repo()
        self.board = world.company()
        policy = {"enabled": True, "defaultMode": "isolated_workspace",
                  "workspaceStrategy": {"type": "git_worktree", "baseRef": "main",
                                        "teardownCommand": f"echo ran >> {teardown_log}"}}  # fmt: skip
        self.project = scene.project(self.board, policy, self.repo)

    async def workspace(self, title: str, status: str = "done") -> tuple[str, str, Path, str]:
        """Realize an issue's workspace, then move the issue to ``status``."""
        issue = self.world.issue(self.board, self.project, title=title, status="in_progress")
        done = await realize(self.real, self.board, RealizeRequest(issue))
        self.real.app.update_issue(self.board, issue, {"status": status})
        ws = self.real.app.workspaces[done.workspace_id]
        return issue, done.workspace_id, Path(ws.cwd or ""), ws.branch_name or ""

    def branch_exists(self, branch: str) -> bool:
        listed: str = self.scene.git(self.repo, "branch", "--list", branch)
        return listed != ""


async def test_case62_every_skip_reason_and_the_archive(
    real: Realizer, scene: Any, world: Any, tmp_path: Path
) -> None:
    log = tmp_path / "teardown.log"
    s = Setup(real, scene, world, log)
    real.reaper_cooldown = timedelta(0)
    _, open_ws, _, _ = await s.workspace("still open", status="in_progress")
    _, delivered, delivered_path, delivered_branch = await s.workspace("nothing of its own")
    # Squash-merged into a base that moved on meanwhile (DECISIONS 2).
    _, squashed, squashed_path, squashed_branch = await s.workspace("squashed")
    scene.commit(squashed_path, {"s.py": "s = 1\n"}, "one")
    scene.commit(squashed_path, {"s.py": "s = 2\n"}, "two")
    scene.commit(s.repo, {"other.txt": "meanwhile\n"}, "meanwhile")
    scene.git(s.repo, "merge", "-q", "--squash", squashed_branch)
    scene.git(s.repo, "commit", "-q", "-m", "squashed")
    scene.git(s.repo, "push", "-q", "origin", "main")
    _, dirty, dirty_path, _ = await s.workspace("dirty")
    (dirty_path / "scratch.txt").write_text("unsaved\n")
    _, unmerged, unmerged_path, _ = await s.workspace("unmerged")
    scene.commit(unmerged_path, {"u.py": "u = 1\n"})
    parent, with_child, _, _ = await s.workspace("parent")
    world.issue(s.board, s.project, parent_id=parent, title="open child")
    _, held, _, _ = await s.workspace("held by a run")
    real.app.run_holders[held] = {"run-1"}
    _, cooling, _, _ = await s.workspace("eligible later")
    later = real.app.now() + timedelta(hours=1)
    real.app.update_workspace(s.board, cooling, {"cleanup_eligible_at": later})
    _, reopened, reopened_path, _ = await s.workspace("reopened")
    await archive(real, s.board, reopened)
    await reopen(real, s.board, reopened)
    assert log.read_text() == "ran\n"  # the manual archive ran the teardown command
    _, protected, protected_path, _ = await s.workspace("holds a checkout")
    inner = protected_path / "vendored"
    scene.git(protected_path, "clone", "-q", str(s.repo), str(inner))
    # Ignored, so the tree is clean and delivered: only the removal itself is refused.
    (s.repo / ".git" / "info" / "exclude").write_text("vendored/\n")
    real.app.create_project_workspace(s.board, s.project, {"name": "v", "cwd": str(inner)}, None)
    _, moved, moved_path, moved_branch = await s.workspace("branch moves")
    real.ports = replace(
        real.ports, git=BranchMovedMeanwhile(scene, s.repo, moved_branch, home=real.home)
    )

    report = await reap_once(real)

    assert {key: sorted(ids) for key, ids in report.items()} == {
        "archived": sorted([delivered, squashed, moved]),
        "cleanupFailed": [protected],
        "skippedUndelivered": sorted([dirty, unmerged]),
        "skippedNonTerminalTree": [with_child],
        "skippedActiveRun": [held],
        "skippedCooldown": [cooling],
        "skippedReopened": [reopened],
    }
    assert all(open_ws not in ids for ids in report.values())
    # Archived: verified gone from disk, delivered branches deleted, the reason recorded.
    for workspace, path, branch in ((delivered, delivered_path, delivered_branch),
                                    (squashed, squashed_path, squashed_branch)):  # fmt: skip
        ws = real.app.workspaces[workspace]
        assert (ws.status, ws.cleanup_reason, ws.rescue_refs) == ("archived", "issue_terminal", [])
        assert not path.exists()
        assert str(path) not in scene.git(s.repo, "worktree", "list")
        assert not s.branch_exists(branch)
    # Cleanup warnings are recorded after the trigger; the moved branch is kept.
    ws = real.app.workspaces[moved]
    assert ws.status == "archived"
    assert ws.cleanup_reason == (
        f"issue_terminal | Skipped deleting branch {moved_branch}: the branch moved since it "
        "was checked, or git refused."
    )
    assert s.branch_exists(moved_branch)
    assert not moved_path.exists()
    # Skipped ones are untouched on disk.
    assert (dirty_path / "scratch.txt").read_text() == "unsaved\n"
    assert unmerged_path.is_dir()
    assert reopened_path.is_dir()
    # A cleanup that cannot be verified is cleanup_failed, nothing of the checkout removed.
    ws = real.app.workspaces[protected]
    assert ws.status == "cleanup_failed"
    assert "Refusing to remove path" in (ws.cleanup_reason or "")
    assert (inner / ".git").is_dir()
    # The reaper runs no cleanup or teardown command.
    assert log.read_text() == "ran\n"
    # The untouched ones wait; the failed cleanup is retried once the checkout is moved away.
    (pw,) = [p for p in real.app.project_workspaces.values() if p.cwd == str(inner)]
    real.app.delete_project_workspace(s.board, s.project, str(pw.id))
    again = await reap_once(real)
    assert again["archived"] == [protected]
    assert not protected_path.exists()
    assert real.app.workspaces[protected].status == "archived"
    archived_events = [type(e).__name__ for e in real.app.events.get(UUID(protected))]
    assert archived_events[-3:] == ["CleanupFailed", "ArchiveStarted", "Archived"]


async def test_case62_the_default_cooldown_is_seven_days(
    real: Realizer, scene: Any, world: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Setup(real, scene, world, tmp_path / "teardown.log")
    assert real.reaper_cooldown == timedelta(days=7)
    _, workspace, path, branch = await s.workspace("done just now")

    assert await reap_once(real) == {"skippedCooldown": [workspace]}
    now = real.app.now()
    monkeypatch.setattr(real.app, "now", lambda: now + timedelta(days=6, hours=23))
    assert await reap_once(real) == {"skippedCooldown": [workspace]}
    monkeypatch.setattr(real.app, "now", lambda: now + timedelta(days=7, seconds=1))
    assert await reap_once(real) == {"archived": [workspace]}

    assert real.app.workspaces[workspace].status == "archived"
    assert not path.exists()
    assert not s.branch_exists(branch)
