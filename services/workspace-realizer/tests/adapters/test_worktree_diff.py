"""A worktree's diff against its base, on real git: commits ahead of the merge base, changed files
(committed, staged and not) with status and line counts, untracked files, one file's unified diff
on request, and the caps."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest
from realizer_git_helpers import commit, git

import workspace_realizer.adapters.worktree_diff as worktree_diff_module
from workspace_realizer.adapters.hostgit import HostGit
from workspace_realizer.adapters.untracked_file import UnreadableFileError, read_untracked
from workspace_realizer.adapters.worktree_diff import NotAChangedFileError, worktree_diff

pytestmark = pytest.mark.integration


def _worktree(repo: Path, home: Path, branch: str) -> Path:
    path = home / "wt" / branch
    git(repo, "worktree", "add", "-q", "-b", branch, str(path), "main")
    return path


async def test_commits_files_and_untracked_against_the_merge_base(
    host: HostGit, make_repo, home: Path
) -> None:
    repo = make_repo("app", {"a.txt": "one\ntwo\n", "old.txt": "keep me\n" * 5, "gone.txt": "x\n"})
    wt = _worktree(repo, home, "feature")
    commit(wt, {"b.txt": "b1\nb2\nb3\n"}, message="Add b")
    git(wt, "mv", "old.txt", "new.txt")
    git(wt, "rm", "-q", "gone.txt")
    git(wt, "commit", "-q", "-m", "Rename old, drop gone")
    commit(repo, {"main-only.txt": "m\n"}, message="On main after the branch")
    (wt / "a.txt").write_text("one\nTWO\nthree\n")  # not committed
    (wt / "logo.bin").write_bytes(bytes(range(256)))
    git(wt, "add", "logo.bin")  # staged only
    (wt / "notes.md").write_text("draft\n")  # untracked

    diff = await worktree_diff(host.git, workspace_id="w1", path=wt, base_ref="main", file=None)

    assert diff.available
    assert diff.merge_base == git(repo, "merge-base", "main", "feature")
    assert diff.head_sha == git(wt, "rev-parse", "HEAD")
    assert [c.subject for c in diff.commits] == ["Rename old, drop gone", "Add b"]
    assert (diff.commits_total, diff.commits_truncated) == (2, False)
    by_path = {f.path: f for f in diff.files}
    assert sorted(by_path) == ["a.txt", "b.txt", "gone.txt", "logo.bin", "new.txt"]
    assert (by_path["a.txt"].status, by_path["a.txt"].additions, by_path["a.txt"].deletions) == (
        "modified", 2, 1,
    )  # fmt: skip
    assert (by_path["b.txt"].status, by_path["b.txt"].additions) == ("added", 3)
    assert by_path["gone.txt"].status == "deleted"
    assert (by_path["new.txt"].status, by_path["new.txt"].old_path) == ("renamed", "old.txt")
    assert by_path["logo.bin"].binary
    assert by_path["logo.bin"].additions is None
    assert (diff.additions, diff.deletions) == (5, 2)
    assert "main-only.txt" not in by_path  # the base's own changes are not the workspace's
    assert diff.untracked == ["notes.md"]
    assert diff.patch is None


async def test_one_files_unified_diff_and_an_untracked_files(
    host: HostGit, make_repo, home: Path
) -> None:
    repo = make_repo("app", {"a.txt": "one\ntwo\n"})
    wt = _worktree(repo, home, "feature")
    (wt / "a.txt").write_text("one\nTWO\n")
    (wt / "notes.md").write_text("draft\n")

    changed = await worktree_diff(
        host.git, workspace_id="w1", path=wt, base_ref="main", file="a.txt"
    )
    assert changed.patch is not None
    assert "-two\n+TWO\n" in changed.patch.text
    assert not changed.patch.truncated
    untracked = await worktree_diff(
        host.git, workspace_id="w1", path=wt, base_ref="main", file="notes.md"
    )
    assert untracked.patch is not None
    assert "+draft\n" in untracked.patch.text
    # A path the lists do not hold never reaches git: not outside, not ignored, not unchanged.
    for asked in ("../../etc/passwd", "/etc/passwd", ":(top)a.txt", "README.md"):
        with pytest.raises(NotAChangedFileError):
            await worktree_diff(host.git, workspace_id="w1", path=wt, base_ref="main", file=asked)


async def test_a_large_file_diff_and_long_lists_are_cut_and_say_so(
    host: HostGit, make_repo, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo("app")
    wt = _worktree(repo, home, "big")
    commit(wt, {"c1.txt": "1\n"})
    commit(wt, {"c2.txt": "2\n"})
    commit(wt, {"c3.txt": "3\n"})
    (wt / "big.txt").write_text("line of text\n" * 40_000)  # ~520 KB, untracked
    for i in range(5):
        (wt / f"u{i}.txt").write_text("u\n")
    monkeypatch.setattr(worktree_diff_module, "MAX_DIFF_FILES", 3)
    monkeypatch.setattr(worktree_diff_module, "MAX_DIFF_COMMITS", 2)

    diff = await worktree_diff(host.git, workspace_id="w1", path=wt, base_ref="main", file="u0.txt")

    assert (len(diff.commits), diff.commits_total, diff.commits_truncated) == (2, 3, True)
    assert (len(diff.files), diff.files_total, diff.files_truncated) == (3, 3, False)
    assert (len(diff.untracked), diff.untracked_total, diff.untracked_truncated) == (3, 6, True)
    big = await worktree_diff(host.git, workspace_id="w1", path=wt, base_ref="main", file="big.txt")
    assert big.patch is not None
    assert big.patch.truncated
    assert big.patch.total_bytes > 500_000
    assert len(big.patch.text.encode()) < 256 * 1024 + 200
    assert big.patch.text.endswith("bytes, 262144 shown\n")


async def test_no_base_lists_the_changes_since_head(host: HostGit, make_repo, home: Path) -> None:
    repo = make_repo("app", {"a.txt": "a\n"})
    (repo / "a.txt").write_text("b\n")
    diff = await worktree_diff(host.git, workspace_id="w1", path=repo, base_ref=None, file=None)
    assert diff.merge_base is None
    assert diff.commits == []
    assert [(f.path, f.status) for f in diff.files] == [("a.txt", "modified")]
    unknown = await worktree_diff(
        host.git, workspace_id="w1", path=repo, base_ref="no-such-branch", file=None
    )
    assert unknown.merge_base is None
    assert [f.path for f in unknown.files] == ["a.txt"]


async def test_an_untracked_file_is_read_without_following_links(
    host: HostGit, make_repo, home: Path, tmp_path: Path
) -> None:
    repo = make_repo("app")
    wt = _worktree(repo, home, "links")
    secret = tmp_path / "other-company" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("not yours\n")
    (wt / "pointer").symlink_to(secret)
    diff = await worktree_diff(
        host.git, workspace_id="w1", path=wt, base_ref="main", file="pointer"
    )
    assert diff.patch is not None
    assert f"+{secret}" in diff.patch.text  # the link's target, as git shows a link
    assert "not yours" not in diff.patch.text
    # A folder swapped for a link after the listing (the agent's race): refused, not followed.
    (wt / "folder").mkdir()
    (wt / "folder" / "secret.txt").write_text("mine\n")
    with pytest.raises(UnreadableFileError):
        read_untracked(wt, "folder/../pointer", 1000)
    (wt / "folder" / "secret.txt").unlink()
    (wt / "folder").rmdir()
    (wt / "folder").symlink_to(secret.parent)
    with pytest.raises(UnreadableFileError, match="symbolic link"):
        read_untracked(wt, "folder/secret.txt", 1000)


async def test_names_that_are_not_utf8_are_shown_replaced_and_can_be_asked_for(
    host: HostGit, make_repo, home: Path
) -> None:
    repo = make_repo("app")
    wt = _worktree(repo, home, "bytes")
    raw = b"caf\xe9.txt"
    with open(os.path.join(os.fsencode(wt), raw), "wb") as out:
        out.write(b"latin-1 \xe9\n")
    diff = await worktree_diff(host.git, workspace_id="w1", path=wt, base_ref="main", file=None)
    assert diff.untracked == ["caf\ufffd.txt"]
    msgspec.json.encode(diff)  # the bus can carry it
    asked = await worktree_diff(
        host.git, workspace_id="w1", path=wt, base_ref="main", file="caf\ufffd.txt"
    )
    assert asked.patch is not None
    assert "+latin-1 \ufffd" in asked.patch.text


async def test_git_failing_is_said_not_shown_as_no_changes(
    host: HostGit, make_repo, home: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /nowhere/at/all\n")
    diff = await worktree_diff(host.git, workspace_id="w1", path=broken, base_ref="main", file=None)
    assert not diff.available
    assert diff.reason is not None
    assert diff.reason.startswith("git could not read the worktree:")


async def test_an_answer_too_large_for_the_bus_is_cut_and_says_so(
    host: HostGit, make_repo, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo("app")
    wt = _worktree(repo, home, "many")
    for i in range(400):
        (wt / f"untracked-file-with-a-long-name-{i:04}.txt").write_text("x\n")
    monkeypatch.setattr(worktree_diff_module, "MAX_REPLY_BYTES", 8 * 1024)
    diff = await worktree_diff(host.git, workspace_id="w1", path=wt, base_ref="main", file=None)
    assert len(msgspec.json.encode(diff)) <= 8 * 1024
    assert diff.untracked_truncated
    assert diff.untracked_total == 400
    assert 0 < len(diff.untracked) < 400
