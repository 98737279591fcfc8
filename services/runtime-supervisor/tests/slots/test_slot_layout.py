"""The pieces of containment on real git repositories and real processes, without a
supervisor: the git layout verified against trusted facts, the hand-over of only what a commit
on the workspace's branch writes, the chown that never follows a link, killing every process of
a slot user, and no containment at all (not a weaker one) without bwrap."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from slot_world import Repo

from runtime_supervisor.adapters.containment.cgroups import Cgroups, Limits
from runtime_supervisor.adapters.containment.launcher import Launcher
from runtime_supervisor.adapters.slots.layout import LayoutError, trusted_layout
from runtime_supervisor.adapters.slots.ownership import chown_tree, hand_back, hand_over

pytestmark = pytest.mark.integration


def _slot_user() -> tuple[int, int]:
    """An unprivileged uid no one else uses (below every stack's range)."""
    return 1_199_999, 1_199_999


def test_the_layout_comes_from_trusted_facts_and_every_pointer_must_agree(
    repo: Repo, tmp_path: Path
) -> None:
    layout = trusted_layout(repo.worktree, repo.root, "agent-work")
    assert layout.common_dir == repo.root / ".git"
    assert layout.git_dir == repo.root / ".git" / "worktrees" / "agent-work"

    # Another repository (another company's) the agent would like us to chown.
    victim = tmp_path / "victim"
    subprocess.run(["git", "init", "-q", str(victim)], check=True)
    dot_git = repo.worktree / ".git"
    original = dot_git.read_text()
    for forged in (f"gitdir: {victim / '.git'}\n",
                   f"gitdir: {repo.root / '.git' / 'worktrees' / 'sibling'}\n",
                   "gitdir: ../../repo/.git/worktrees/agent-work\n"):  # fmt: skip
        dot_git.write_text(forged)
        with pytest.raises(LayoutError):
            trusted_layout(repo.worktree, repo.root, "agent-work")
    dot_git.write_text(original)

    commondir = layout.git_dir / "commondir"
    commondir.write_text(f"{victim / '.git'}\n")
    with pytest.raises(LayoutError, match="commondir"):
        trusted_layout(repo.worktree, repo.root, "agent-work")
    commondir.write_text("../..\n")

    gitdir = layout.git_dir / "gitdir"
    gitdir.write_text(f"{repo.sibling / '.git'}\n")
    with pytest.raises(LayoutError, match="point back"):
        trusted_layout(repo.worktree, repo.root, "agent-work")
    gitdir.unlink()
    gitdir.symlink_to(repo.root / ".git" / "worktrees" / "sibling" / "gitdir")
    with pytest.raises(LayoutError):
        trusted_layout(repo.worktree, repo.root, "agent-work")
    gitdir.unlink()
    gitdir.write_text(f"{dot_git}\n")

    linked = tmp_path / "linked"
    linked.symlink_to(repo.worktree.parent)
    with pytest.raises(LayoutError, match="symbolic link"):
        trusted_layout(linked / "agent-work", repo.root, "agent-work")
    with pytest.raises(LayoutError, match="branch"):
        trusted_layout(repo.worktree, repo.root, "../../config")
    assert trusted_layout(repo.worktree, repo.root, "agent-work") == layout


def test_hand_over_shares_only_the_branch_and_the_fanout_and_hand_back_undoes_it(
    repo: Repo,
) -> None:
    uid, gid = _slot_user()
    repo.git("repack", "-adq")
    repo.git("pack-refs", "--all")  # every branch packed: none has a loose ref any more
    common = repo.root / ".git"
    assert not (common / "refs" / "heads" / "main").exists()
    layout = trusted_layout(repo.worktree, repo.root, "agent-work")
    hand_over(layout, uid, gid)

    def owner(path: Path) -> int:
        return os.lstat(path).st_uid

    assert owner(repo.worktree) == owner(repo.worktree / "README") == uid
    assert owner(layout.git_dir) == owner(layout.git_dir / "HEAD") == uid
    for pointer in layout.pointers:  # config.worktree created
        info = os.lstat(pointer)
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.getuid(), 0o644), pointer
    heads = common / "refs" / "heads"
    assert stat.S_IMODE(os.lstat(heads).st_mode) & 0o1020 == 0o1020  # group-writable sticky
    assert owner(heads / "agent-work") == uid
    assert owner(common / "logs" / "refs" / "heads" / "agent-work") == uid
    # Packed siblings got a loose copy of ours: no loose ref of the agent can shadow them.
    assert owner(heads / "main") == os.getuid()
    assert (heads / "main").read_text().strip() == repo.git("rev-parse", "main")
    for closed in ("objects", "objects/pack", "objects/info", "refs", "logs", "packed-refs",
                   "hooks", "."):  # fmt: skip
        info = os.lstat(common / closed)
        assert info.st_uid == os.getuid(), closed
        assert not stat.S_IMODE(info.st_mode) & 0o022, closed
    fanout = os.lstat(common / "objects" / "ab")
    assert (fanout.st_gid, stat.S_IMODE(fanout.st_mode) & 0o1020) == (gid, 0o1020)

    hand_back(repo.worktree, layout, uid, gid)
    assert owner(repo.worktree / "README") == uid  # the worktree stays the identity's
    assert owner(layout.git_dir / "HEAD") == os.getuid()
    assert owner(heads / "agent-work") == os.getuid()


def test_chown_tree_never_follows_a_link(tmp_path: Path) -> None:
    uid, gid = _slot_user()
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "secret").write_text("x")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "file-link").symlink_to(outside / "secret")
    (tree / "dir-link").symlink_to(outside)
    chown_tree(tree, uid, gid)
    assert os.lstat(tree / "dir-link").st_uid == uid
    for path in (outside, outside / "inner", outside / "secret"):
        assert os.lstat(path).st_uid == os.getuid(), path
    with pytest.raises(OSError):
        chown_tree(tree / "dir-link", uid, gid)  # the top itself must be no link


def test_every_process_of_a_unit_is_killed_even_out_of_its_group_and_session(
    tmp_path: Path,
) -> None:
    uid, gid = _slot_user()
    groups = Cgroups.probe(f"test-{os.getpid()}")
    unit = groups.create(f"escape-{tmp_path.name}", Limits(pids=64))
    escaper = "(setsid sleep 300 &) ; (setsid sh -c 'sleep 300 & wait' &) ; sleep 300"
    started = subprocess.Popen(
        ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "/bin/sh",
         "-c", escaper], start_new_session=True, preexec_fn=unit.join,
    )  # fmt: skip
    deadline = time.monotonic() + 5
    while len(unit.members()) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(unit.members()) >= 4
    assert unit.kill() == []
    assert unit.members() == []
    started.wait(5)
    unit.remove()
    assert not any(folder.exists() for folder in unit.folders)


def test_without_bwrap_nothing_a_company_runs_gets_a_weaker_mode(tmp_path: Path) -> None:
    launcher = Launcher.start(tmp_path / "home", dirs=(str(tmp_path / "empty"),))
    assert not launcher.available
    assert "install them" in launcher.detail
    assert "./dev" in launcher.detail
