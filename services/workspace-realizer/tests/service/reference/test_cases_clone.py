"""Reference cases 25-27, 29-31 (31 as changed by DECISIONS 14) and 33 through the realizer's
managed checkouts of repo-only project workspaces (``ensure_checkout`` and ``realize``) on real git
repositories. The host adapter's own tests are in ``tests/adapters/test_clone.py``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from servicekit.access import Access
from workspace_realizer.domain.errors import CheckoutFailedError
from workspace_realizer.orchestration.clone import ensure_checkout
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize

pytestmark = pytest.mark.integration

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace",
            "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip


def source(scene: Any, path: Path, files: dict[str, str]) -> Path:
    """A plain local repository on ``main`` (the remote a managed checkout clones)."""
    path.mkdir(parents=True)
    scene.git(path, "init", "-q", "-b", "main")
    scene.commit(path, files, "initial")
    return path


def repo_only(real: Realizer, board: Access, project: str, url: str, **fields: Any) -> str:
    values = {"name": Path(url).name, "repo_url": url} | fields
    return str(real.app.create_project_workspace(board, project, values, None).id)


def leftovers(parent: Path) -> list[str]:
    return (
        sorted(p.name for p in parent.iterdir() if ".clone-" in p.name) if parent.exists() else []
    )


def clone_ops(real: Realizer, pw: str) -> list[Any]:
    return [
        o
        for o in real.app.operations.values()
        if o.project_workspace_id == pw and o.phase == "managed_clone"
    ]


async def test_case25_27_a_repo_only_workspace_is_cloned_without_a_credential(
    real: Realizer, scene: Any, world: Any, credentials: Any, tmp_path: Path
) -> None:
    url = str(source(scene, tmp_path / "remote" / "app", {"app.py": "print('hi')\n"}))
    board = world.company()
    project = world.project(board, ISOLATED)
    pw = repo_only(real, board, project, url)
    issue = world.issue(board, project, title="First task")

    done = await realize(real, board, RealizeRequest(issue))

    checkout = real.app.project_workspaces[pw]
    target = real.home / "checkouts" / project / pw / "app"
    assert (checkout.checkout_state, checkout.checkout_path, checkout.checkout_error) == (
        "ready",
        str(target),
        None,
    )
    assert (target / ".git").is_dir()
    assert (target / "app.py").read_text() == "print('hi')\n"
    assert scene.git(target, "remote", "get-url", "origin") == url
    # Case 27: the credential port was asked with the repository URL, answered none, and the
    # clone went on as a plain one.
    assert set(credentials.asked) == {url}
    assert [o.status for o in clone_ops(real, pw)] == ["succeeded"]
    assert done.warnings == []
    assert leftovers(target.parent) == []
    # The worktree branches from the managed checkout.
    ws = real.app.workspaces[done.workspace_id]
    assert (ws.repo_url, ws.base_ref) == (url, "origin/main")
    assert scene.git(Path(ws.cwd or ""), "symbolic-ref", "--short", "HEAD") == ws.branch_name
    assert str(ws.cwd) in scene.git(target, "worktree", "list")


async def test_case26_the_configured_ref_is_checked_out_and_the_base(
    real: Realizer, scene: Any, world: Any, tmp_path: Path
) -> None:
    remote = source(scene, tmp_path / "remote" / "app", {"which.txt": "main\n"})
    scene.git(remote, "checkout", "-q", "-b", "develop")
    develop = scene.commit(remote, {"which.txt": "develop\n"})
    scene.git(remote, "checkout", "-q", "main")
    board = world.company()
    project = world.project(board, ISOLATED)
    pw = repo_only(real, board, project, str(remote), repo_ref="develop")
    issue = world.issue(board, project, title="On develop")

    done = await realize(real, board, RealizeRequest(issue))

    target = Path(real.app.project_workspaces[pw].checkout_path or "")
    assert scene.git(target, "symbolic-ref", "--short", "HEAD") == "develop"
    assert (target / "which.txt").read_text() == "develop\n"
    ws = real.app.workspaces[done.workspace_id]
    assert (ws.base_ref, ws.base_ref_sha) == ("origin/develop", develop)
    assert (Path(ws.cwd or "") / "which.txt").read_text() == "develop\n"


async def test_case29_concurrent_materializations_share_one_checkout(
    real: Realizer, scene: Any, world: Any, tmp_path: Path
) -> None:
    url = str(source(scene, tmp_path / "remote" / "app", {"a.txt": "a\n"}))
    board = world.company()
    project = world.project(board, ISOLATED)
    pw = repo_only(real, board, project, url)

    first, second = await asyncio.gather(
        ensure_checkout(real, pw, None), ensure_checkout(real, pw, None)
    )

    assert first == second == real.home / "checkouts" / project / pw / "app"
    assert (first / ".git").is_dir()
    assert len(clone_ops(real, pw)) == 1
    assert leftovers(first.parent) == []
    assert sorted(p.name for p in first.parent.iterdir()) == ["app"]


async def test_case30_a_failed_clone_leaves_nothing_and_says_so(
    real: Realizer, scene: Any, world: Any, tmp_path: Path
) -> None:
    board = world.company()
    project = world.project(board, ISOLATED)
    pw = repo_only(real, board, project, str(tmp_path / "remote" / "missing"))

    with pytest.raises(CheckoutFailedError) as failed:
        await ensure_checkout(real, pw, None)

    assert (failed.value.status, failed.value.code) == (422, "managed_checkout_failed")
    assert "Failed to prepare managed checkout" in str(failed.value)
    target = real.home / "checkouts" / project / pw / "missing"
    assert not target.exists()
    assert leftovers(target.parent) == []
    checkout = real.app.project_workspaces[pw]
    assert checkout.checkout_state == "failed"
    assert "Failed to prepare managed checkout" in (checkout.checkout_error or "")
    assert [o.status for o in clone_ops(real, pw)] == ["failed"]


async def test_case31_a_non_empty_non_git_directory_is_refused_untouched(
    real: Realizer, scene: Any, world: Any, tmp_path: Path
) -> None:
    url = str(source(scene, tmp_path / "remote" / "app", {"a.txt": "a\n"}))
    board = world.company()
    project = world.project(board, ISOLATED)
    pw = repo_only(real, board, project, url)
    target = real.home / "checkouts" / project / pw / "app"
    target.mkdir(parents=True)
    (target / "notes.txt").write_text("mine\n")

    with pytest.raises(CheckoutFailedError) as refused:
        await ensure_checkout(real, pw, None)

    # DECISIONS 14 (Paperclip #2977): refused with a clear error, not used as-is.
    assert refused.value.status == 422
    assert "already exists and is not a git checkout; refusing to use it" in str(refused.value)
    assert refused.value.details["reason"] == "managed_path_not_a_checkout"
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    assert (target / "notes.txt").read_text() == "mine\n"
    assert real.app.project_workspaces[pw].checkout_state == "failed"
    assert clone_ops(real, pw) == []


async def test_case33_same_named_repositories_get_distinct_directories(
    real: Realizer, scene: Any, world: Any, tmp_path: Path
) -> None:
    one = str(source(scene, tmp_path / "one" / "app", {"who.txt": "one\n"}))
    two = str(source(scene, tmp_path / "two" / "app", {"who.txt": "two\n"}))
    board = world.company()
    project = world.project(board, ISOLATED)
    pw_one = repo_only(real, board, project, one)
    pw_two = repo_only(real, board, project, two)

    a, b = await asyncio.gather(ensure_checkout(real, pw_one, None),
                                ensure_checkout(real, pw_two, None))  # fmt: skip

    assert a != b
    assert (a.name, b.name) == ("app", "app")
    assert scene.git(a, "remote", "get-url", "origin") == one
    assert scene.git(b, "remote", "get-url", "origin") == two
    assert (a / "who.txt").read_text() == "one\n"
    assert (b / "who.txt").read_text() == "two\n"
    assert leftovers(a.parent) == leftovers(b.parent) == []
