"""Who asks the credential port, with what, and where its answer goes: the managed clone, the
base-ref fetch of a realize and of a reopen (reference §8: every server-side clone and base-ref
refresh), with fake host ports."""

from __future__ import annotations

from typing import Any

from contracts.base import Actor
from eventstore import Cause, acting
from workspace_realizer.adapters.ports import GitInvocation
from workspace_realizer.orchestration.archive import archive
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize
from workspace_realizer.orchestration.reopen import reopen

POLICY = {"enabled": True, "defaultMode": "isolated_workspace",
          "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip
REPO = "https://github.com/acme/api.git"
ANSWER = GitInvocation(
    config_args=("-c", "credential.helper="),
    env={"CLIPYARD_GIT_TOKEN": "ghp_" + "x" * 36},
    secret_name="GITHUB_TOKEN",
    source="company_secret",
    provider="github",
    provider_label="GitHub",
)


def auths(git: Any, name: str) -> list[Any]:
    return [kwargs["auth"] for op, kwargs in git.calls if op == name]


async def test_a_run_asks_once_per_git_step_and_hands_the_answer_to_git(
    realizer: Realizer, world: Any, git: Any, credentials: Any
) -> None:
    credentials.answer = ANSWER
    board = world.company()
    project = world.project(board, POLICY)
    realizer.app.create_project_workspace(board, project, {"name": "api", "repo_url": REPO}, None)
    issue = world.issue(board, project)

    with acting(Cause(actor=Actor(type="agent", id="agent-1"), run_id="run-1")):
        await realize(realizer, board, RealizeRequest(issue), operation_id="op-1")

    assert (
        credentials.requests
        == [
            {"remote_url": REPO, "company_id": "c-acme", "run_id": "run-1", "operation_id": "op-1"},
        ]
        * 2
    )  # the managed clone, then the base-ref fetch
    assert auths(git, "managed_clone") == [ANSWER]
    assert auths(git, "resolve_base_ref") == [ANSWER]


async def test_a_reopen_fetches_its_base_ref_with_the_credential_too(
    realizer: Realizer, world: Any, git: Any, credentials: Any
) -> None:
    board = world.company()
    project = world.project(board, POLICY)
    world.checkout(board, project, repo_url=REPO)  # a local checkout with its remote's URL
    issue = world.issue(board, project)
    done = await realize(realizer, board, RealizeRequest(issue))
    realizer.app.update_issue(board, issue, {"status": "done"})
    await archive(realizer, board, done.workspace_id)
    credentials.answer = ANSWER
    credentials.requests.clear()

    await reopen(realizer, board, done.workspace_id, operation_id="op-7")

    assert realizer.app.workspaces[done.workspace_id].status == "active"
    assert credentials.requests == [
        {"remote_url": REPO, "company_id": "c-acme", "run_id": None, "operation_id": "op-7"}
    ]
    assert auths(git, "resolve_base_ref")[-1] == ANSWER


async def test_without_a_repository_url_nothing_is_asked(
    realizer: Realizer, world: Any, git: Any, credentials: Any
) -> None:
    board = world.company()
    project = world.project(board, POLICY)
    world.checkout(board, project)
    issue = world.issue(board, project)

    await realize(realizer, board, RealizeRequest(issue))

    assert credentials.requests == []
    assert auths(git, "resolve_base_ref") == [None]
