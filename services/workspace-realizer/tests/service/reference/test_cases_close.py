"""Reference cases 40, 41, 58-61 (reference §10, as changed by DECISIONS 14: 40 and 59 by DECISIONS 3)
through the realizer's close readiness, archive and reopen on real git repositories; the
pull-request port is a fake (its real lookup needs a token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from servicekit.access import Access
from workspace_realizer.adapters.ports import PullRequestFacts
from workspace_realizer.domain.errors import CloseBlockedError, ReopenPendingError
from workspace_realizer.domain.host.readiness import Readiness
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.facts import Delivery, assess, gather, inspect
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.reopen import reopen

pytestmark = pytest.mark.integration

GITHUB = "https://github.com/acme/web.git"
PR = "https://github.com/acme/web/pull/7"


def policy(**strategy: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "defaultMode": "isolated_workspace",
        "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"} | strategy,
    }


async def readiness(real: Realizer, board: Access, workspace_id: str) -> tuple[Readiness, Delivery]:
    facts = await real.store(gather, real.app, board, workspace_id)
    verdict, delivery, _ = await assess(real, facts)
    return verdict, delivery


async def delivery(real: Realizer, board: Access, workspace_id: str) -> tuple[str, int | None]:
    found = await inspect(real, await real.store(gather, real.app, board, workspace_id))
    return found.state, found.commits_ahead


def last_event(real: Realizer, workspace_id: str) -> Any:
    return list(real.app.events.get(UUID(workspace_id)))[-1]


async def realized(
    real: Realizer, scene: Any, world: Any, title: str, *, strategy: dict[str, Any] | None = None,
    **checkout: Any,
) -> dict[str, Any]:  # fmt: skip
    repo = scene.repo()
    board = world.company()
    project = scene.project(board, policy(**(strategy or {})), repo, **checkout)
    issue = world.issue(board, project, title=title, status="in_progress")
    done = await realize(real, board, RealizeRequest(issue))
    ws = real.app.workspaces[done.workspace_id]
    return {"repo": repo, "board": board, "project": project, "issue": issue,
            "id": done.workspace_id, "path": Path(ws.cwd or ""), "branch": ws.branch_name}  # fmt: skip


async def test_case40_an_open_issue_blocks_and_a_dirty_tree_alone_does_not(
    real: Realizer, scene: Any, world: Any, supervisor: Any
) -> None:
    r = await realized(real, scene, world, "Dirty work")
    (r["path"] / "notes.txt").write_text("untracked thoughts\n")

    verdict, _ = await readiness(real, r["board"], r["id"])
    assert verdict.state == "blocked"
    # The reason is the open issue only; the untracked file is a warning (DECISIONS 3).
    assert verdict.blocking_reasons == [
        "This workspace is still linked to 1 open issue(s): ACME-1."
    ]
    assert any("1 untracked file(s)" in w for w in verdict.warnings)
    before = real.app.last_notification_id()
    with pytest.raises(CloseBlockedError) as blocked:
        await archive(real, r["board"], r["id"])
    assert (blocked.value.status, blocked.value.code) == (409, "close_blocked")
    assert str(blocked.value) == "This workspace is still linked to 1 open issue(s): ACME-1."
    # No archive, no cleanup: nothing recorded, nothing asked of the supervisor, nothing on disk.
    assert real.app.last_notification_id() == before
    assert supervisor.calls == []
    assert (r["path"] / "notes.txt").read_text() == "untracked thoughts\n"
    assert scene.git(r["repo"], "branch", "--list", r["branch"]) != ""

    # Once the issue is done, the dirty tree alone does not block: archive keeps it in a rescue.
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})
    verdict, _ = await readiness(real, r["board"], r["id"])
    assert (verdict.state, verdict.blocking_reasons) == ("ready_with_warnings", [])
    await archive(real, r["board"], r["id"])
    ws = real.app.workspaces[r["id"]]
    assert ws.status == "archived"
    assert not r["path"].exists()
    (rescue,) = ws.rescue_refs
    assert scene.git(r["repo"], "show", f"{rescue['ref']}:notes.txt") == "untracked thoughts"


async def test_case41_archive_under_the_reopen_fence_stops_before_any_teardown(
    real: Realizer, scene: Any, world: Any, supervisor: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "teardown.log"
    r = await realized(
        real, scene, world, "Reopened", strategy={"teardownCommand": f"echo ran >> {marker}"}
    )
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})
    await archive(real, r["board"], r["id"])
    assert marker.read_text() == "ran\n"
    await reopen(real, r["board"], r["id"])
    assert real.app.workspaces[r["id"]].status == "active"
    assert r["path"].is_dir()
    stops, version = list(supervisor.calls), real.app.workspaces[r["id"]].version
    ops = len(real.app.operations_by_workspace[r["id"]])

    with pytest.raises(ReopenPendingError) as fenced:
        await archive(real, r["board"], r["id"])

    assert (fenced.value.status, fenced.value.code) == (409, "reopen_pending")
    # No service stop, no teardown, no cleanup, no git step, no change to the record.
    assert supervisor.calls == stops
    assert marker.read_text() == "ran\n"
    assert r["path"].is_dir()
    assert scene.git(r["path"], "symbolic-ref", "--short", "HEAD") == r["branch"]
    assert len(real.app.operations_by_workspace[r["id"]]) == ops
    assert real.app.workspaces[r["id"]].version == version


async def test_case58_a_worktree_holding_a_project_checkout_is_never_removed(
    real: Realizer, scene: Any, world: Any
) -> None:
    r = await realized(real, scene, world, "Vendored")
    inner = r["path"] / "vendored"
    scene.git(r["path"], "clone", "-q", str(r["repo"]), str(inner))
    real.app.create_project_workspace(r["board"], r["project"], {"name": "v", "cwd": str(inner)},
                                      None)  # fmt: skip
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})

    await archive(real, r["board"], r["id"])

    ws = real.app.workspaces[r["id"]]
    assert ws.status == "cleanup_failed"
    assert "Refusing to remove path" in (ws.cleanup_reason or "")
    assert (inner / ".git").is_dir()
    assert (inner / "README.md").is_file()
    assert str(r["path"]) in scene.git(r["repo"], "worktree", "list")
    assert scene.git(r["repo"], "branch", "--list", r["branch"]) != ""


async def test_case59_a_branch_that_moved_after_the_check_is_kept_with_a_warning(
    real: Realizer, scene: Any, world: Any
) -> None:
    # The teardown command commits on the branch after close readiness checked it: the
    # compare-and-delete against the checked commit refuses, and the archive still succeeds.
    r = await realized(
        real, scene, world, "Late commit",
        strategy={"teardownCommand": "git commit -q --allow-empty -m 'late commit'"},
    )  # fmt: skip
    checked = scene.git(r["path"], "rev-parse", "HEAD")
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})

    await archive(real, r["board"], r["id"])

    ws = real.app.workspaces[r["id"]]
    assert ws.status == "archived"
    assert not r["path"].exists()
    tip = scene.git(r["repo"], "rev-parse", f"refs/heads/{r['branch']}")
    assert tip != checked
    assert scene.git(r["repo"], "log", "-1", "--format=%s", tip) == "late commit"
    assert f"Skipped deleting branch {r['branch']}" in (ws.cleanup_reason or "")
    event = last_event(real, r["id"])
    assert (event.branch_deleted, event.worktree_removed) == (False, True)
    ops = [real.app.operations[i] for i in real.app.operations_by_workspace[r["id"]]]
    deletes = [
        o for o in ops if o.command.startswith("git update-ref") and " -d refs/heads/" in o.command
    ]
    assert [(o.status, o.command.split()[-1]) for o in deletes] == [("failed", checked)]
    assert not any(o.command.startswith("git branch -d") for o in ops)


async def test_case59_a_delivered_branch_is_deleted_by_compare_and_delete(
    real: Realizer, scene: Any, world: Any
) -> None:
    r = await realized(real, scene, world, "Merged")
    head = scene.commit(r["path"], {"feature.txt": "f\n"})
    scene.git(r["repo"], "merge", "-q", "--ff-only", r["branch"])
    scene.git(r["repo"], "push", "-q", "origin", "main")
    assert await delivery(real, r["board"], r["id"]) == ("merged_by_ancestry", 0)
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})

    await archive(real, r["board"], r["id"])

    assert real.app.workspaces[r["id"]].status == "archived"
    assert scene.git(r["repo"], "branch", "--list", r["branch"]) == ""
    ops = [real.app.operations[i] for i in real.app.operations_by_workspace[r["id"]]]
    (delete,) = [
        o for o in ops if o.command.startswith("git update-ref") and " -d refs/heads/" in o.command
    ]
    assert delete.status == "succeeded"
    assert delete.command.endswith(f"refs/heads/{r['branch']} {head}")


async def test_case60_the_delivery_truth_table(
    real: Realizer, scene: Any, world: Any, prs: Any, credentials: Any
) -> None:
    r = await realized(real, scene, world, "Via a PR", repo_url=GITHUB)
    first = scene.commit(r["path"], {"feature.py": "f = 1\n"}, "first")
    head = scene.commit(r["path"], {"feature.py": "f = 2\n"}, "second")
    real.app.add_work_product(r["board"], r["issue"], {"type": "pull_request", "url": PR})
    merged = PullRequestFacts(url=PR, state="merged", head_ref=r["branch"], head_sha=head)

    # Open issue: a merged PR does not count yet (the port is not even asked); not an ancestor.
    prs.facts_by_url[PR] = merged
    assert await delivery(real, r["board"], r["id"]) == ("unmerged", 2)
    assert prs.asked == []
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})
    # Terminal issue + merged PR matching the branch and HEAD.
    assert await delivery(real, r["board"], r["id"]) == ("merged_via_pr", 2)
    assert prs.asked[-1] == [PR]
    # A merged PR whose head SHA differs from the workspace HEAD does not count.
    prs.facts_by_url[PR] = PullRequestFacts(
        url=PR, state="merged", head_ref=r["branch"], head_sha=first
    )
    assert await delivery(real, r["board"], r["id"]) == ("unmerged", 2)
    prs.facts_by_url[PR] = PullRequestFacts(url=PR, state="merged", head_ref="other", head_sha=head)
    assert await delivery(real, r["board"], r["id"]) == ("unmerged", 2)
    # PR state unknown: unknown.
    prs.facts_by_url[PR] = PullRequestFacts(url=PR, state="unknown", head_ref=None, head_sha=None)
    assert await delivery(real, r["board"], r["id"]) == ("unknown", 2)
    # HEAD becomes an ancestor of the base: merged by ancestry.
    prs.facts_by_url[PR] = PullRequestFacts(url=PR, state="open", head_ref=r["branch"],
                                            head_sha=head)  # fmt: skip
    scene.git(r["repo"], "merge", "-q", "--ff-only", r["branch"])
    scene.git(r["repo"], "push", "-q", "origin", "main")
    assert await delivery(real, r["board"], r["id"]) == ("merged_by_ancestry", 0)
    # Git unavailable (the worktree cannot be read): unknown.
    (r["path"] / ".git").write_text("gitdir: /nowhere/at/all\n")
    assert (await delivery(real, r["board"], r["id"]))[0] == "unknown"
    # The credential port was asked about the project's remote (and answered none).
    assert set(credentials.asked) == {GITHUB}


async def test_case60_merged_via_pr_lets_archive_delete_the_branch(
    real: Realizer, scene: Any, world: Any, prs: Any
) -> None:
    r = await realized(real, scene, world, "Shipped", repo_url=GITHUB)
    head = scene.commit(r["path"], {"feature.py": "f = 1\n"})
    real.app.add_work_product(r["board"], r["issue"], {"type": "pull_request", "url": PR})
    prs.facts_by_url[PR] = PullRequestFacts(url=PR, state="merged", head_ref=r["branch"],
                                            head_sha=head)  # fmt: skip
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})

    await archive(real, r["board"], r["id"])

    ws = real.app.workspaces[r["id"]]
    assert (ws.status, ws.rescue_refs) == ("archived", [])
    assert scene.git(r["repo"], "branch", "--list", r["branch"]) == ""
    assert last_event(real, r["id"]).branch_deleted is True


async def test_case61_close_readiness_table(
    real: Realizer, scene: Any, world: Any, prs: Any
) -> None:
    # An isolated workspace with an open linked issue: blocked.
    r = await realized(real, scene, world, "Ahead", repo_url=GITHUB)
    verdict, _ = await readiness(real, r["board"], r["id"])
    assert verdict.state == "blocked"
    # Ahead but unmerged: a warning, suppressed when the work is merged via a PR.
    scene.commit(r["path"], {"a.py": "a = 1\n"})
    scene.commit(r["path"], {"a.py": "a = 2\n"})
    head = scene.git(r["path"], "rev-parse", "HEAD")
    real.app.add_work_product(r["board"], r["issue"], {"type": "pull_request", "url": PR})
    real.app.update_issue(r["board"], r["issue"], {"status": "done"})
    prs.facts_by_url[PR] = PullRequestFacts(url=PR, state="closed", head_ref=r["branch"],
                                            head_sha=head)  # fmt: skip
    verdict, found = await readiness(real, r["board"], r["id"])
    assert (found.state, verdict.state) == ("unmerged", "ready_with_warnings")
    not_merged = f"Branch {r['branch']} is 2 commit(s) ahead of origin/main and is not merged"
    assert any(not_merged in w for w in verdict.warnings)
    prs.facts_by_url[PR] = PullRequestFacts(url=PR, state="merged", head_ref=r["branch"],
                                            head_sha=head)  # fmt: skip
    verdict, found = await readiness(real, r["board"], r["id"])
    assert found.state == "merged_via_pr"
    assert not any("not merged" in w for w in verdict.warnings)
    assert verdict.state == "ready"
    # Git status that cannot be read: blocked, and archive removes nothing.
    (r["path"] / ".git").write_text("gitdir: /nowhere/at/all\n")
    verdict, _ = await readiness(real, r["board"], r["id"])
    assert verdict.state == "blocked"
    assert verdict.blocking_reasons[0].startswith("Git status could not be verified")
    with pytest.raises(CloseBlockedError):
        await archive(real, r["board"], r["id"])
    assert r["path"].is_dir()
    assert scene.git(r["repo"], "rev-parse", f"refs/heads/{r['branch']}") == head


async def test_case61_a_shared_workspace_with_open_issues_only_warns(
    real: Realizer, scene: Any, world: Any
) -> None:
    repo = scene.repo()
    board = world.company()
    project = scene.project(board, {"enabled": True, "defaultMode": "shared_workspace"}, repo)
    issue = world.issue(board, project, title="Shared", status="in_progress")
    done = await realize(real, board, RealizeRequest(issue))
    (repo / "local-edit.txt").write_text("the user's own work\n")

    verdict, _ = await readiness(real, board, done.workspace_id)

    assert (verdict.state, verdict.blocking_reasons) == ("ready_with_warnings", [])
    assert "1 open issue(s) will be detached from it." in verdict.warnings
    await archive(real, board, done.workspace_id)
    assert real.app.workspaces[done.workspace_id].status == "archived"
    assert real.app.issues[issue].execution_workspace_id is None
    assert (repo / "local-edit.txt").read_text() == "the user's own work\n"
    assert scene.git(repo, "symbolic-ref", "--short", "HEAD") == "main"
