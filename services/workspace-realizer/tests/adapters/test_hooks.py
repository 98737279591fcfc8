"""Hooks never run during Clipyard's git work (ARCHITECTURE §6; library notes: hooks in
``.git/hooks`` run on the server's next ``git worktree add`` otherwise)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from realizer_git_helpers import StepRecorder, git

from workspace_realizer.adapters.hostgit import HostGit

pytestmark = pytest.mark.integration

HOOKS = ("post-checkout", "post-commit", "reference-transaction", "pre-commit", "post-index-change")


def plant(hooks_dir: Path, marker: Path) -> None:
    hooks_dir.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        hook = hooks_dir / name
        hook.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
        hook.chmod(0o755)


async def test_planted_hooks_never_run(
    host: HostGit, make_repo, home: Path, steps: StepRecorder, tmp_path: Path
) -> None:
    marker = tmp_path / "hook-ran.txt"
    repo = make_repo("app", {"a.txt": "a\n"})
    plant(repo / ".git" / "hooks", marker)
    # Also through repository config, and through a template a clone would copy.
    evil = tmp_path / "evil-hooks"
    plant(evil, marker)
    git(repo, "config", "core.hooksPath", str(evil))
    template = tmp_path / "template"
    plant(template / "hooks", marker)
    global_config = Path(os.environ["GIT_CONFIG_GLOBAL"])
    global_config.write_text(global_config.read_text() + f"[init]\n\ttemplateDir = {template}\n")
    # Rebuild the host: the runner reads its base environment when it starts.
    host = HostGit(home=home)

    clone = await host.managed_clone(
        repo_url=str(repo),
        repo_ref=None,
        target=tmp_path / "managed" / "app",
        auth=None,
        sink=steps,
    )
    assert (clone.path / ".git" / "hooks" / "post-checkout").exists()  # the template was copied
    base = await host.resolve_base_ref(repo_root=repo, configured="main", auth=None, sink=steps)
    path = home / "worktrees" / "pw" / "b1"
    await host.ensure_worktree(repo_root=repo, path=path, branch="b1", base=base, sink=steps)
    (path / "dirty.txt").write_text("x\n")
    rescue = await host.write_rescue_ref(
        repo_root=repo, path=path, ref="refs/clipyard/rescue/w/1", message="m", sink=steps
    )
    await host.inspect(repo_root=repo, path=path, branch="b1", base_ref="main")
    assert await host.remove_worktree(repo_root=repo, path=path, sink=steps)
    await host.restore_worktree(
        repo_root=repo, path=path, branch="b1", base=base, rescue=rescue, sink=steps
    )
    await host.reconcile_branch(
        repo_root=repo, path=path, recorded_branch="b1", mode="quarantine_restore",
        rescue_ref="refs/clipyard/rescue/w/2", sink=steps,
    )  # fmt: skip
    assert await host.remove_worktree(repo_root=repo, path=path, sink=steps)
    assert await host.delete_branch(
        repo_root=repo, branch="b1", expected_sha=base.sha or "", sink=steps
    )

    assert not marker.exists(), marker.read_text()
    # The hooks are real: plain git runs them.
    git(repo, "worktree", "add", "-q", str(tmp_path / "plain"), "-b", "plain")
    assert "post-checkout" in marker.read_text()
