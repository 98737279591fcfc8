"""Run tokens (``Principal.runBound``): the agent reaches only its run's issue, that issue's
workspaces and the workspace its run holds; agent keys keep every issue assigned to the agent."""

from __future__ import annotations

from typing import Any

import pytest
from eventsourcing.persistence import Tracking

from contracts.base import Actor, Principal
from contracts.run_events import RunWorkspaceLeased
from eventstore import acting, system_cause
from servicekit.access import Access, AccessDeniedError, ActorKind
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.realize import RealizeRequest, realize

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace",
            "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip
AGENT = "agent-1"


def token(issue_id: str, run_id: str = "run-1") -> Access:
    """The access of a run token of ``AGENT`` for ``issue_id``."""
    return Access.of(
        Principal(
            company_id="c-acme",
            actor=Actor(type="agent", id=AGENT),
            run_id=run_id,
            issue_id=issue_id,
            run_bound=True,
        )
    )


KEY = Access(kind=ActorKind.AGENT_KEY, company_id="c-acme", actor_id=AGENT)


@pytest.fixture
async def two(realizer: Realizer, app: WorkspaceRealizerApplication, world: Any) -> Any:
    """Two issues assigned to the agent, each with its realized workspace, and one that is not."""
    board = world.company()
    project = world.project(board, ISOLATED)
    world.checkout(board, project)
    mine = world.issue(board, project, title="One", assignee_agent_id=AGENT)
    other = world.issue(board, project, title="Two", assignee_agent_id=AGENT)
    foreign = world.issue(board, project, title="Three", assignee_agent_id="agent-2")
    spaces = {}
    for issue in (mine, other, foreign):
        spaces[issue] = (await realize(realizer, board, RealizeRequest(issue))).workspace_id
    return board, project, mine, other, foreign, spaces


def test_the_principal_flag_reaches_access() -> None:
    assert token("i-1").is_run_token
    assert (token("i-1").run_id, token("i-1").issue_id) == ("run-1", "i-1")
    assert not KEY.is_run_token


async def test_a_run_token_reads_and_updates_only_its_run_issue(
    app: WorkspaceRealizerApplication, two: Any
) -> None:
    _, _, mine, other, foreign, _ = two
    run = token(mine)
    assert str(app.issue_of(run, mine).id) == mine
    app.update_issue(run, mine, {"status": "in_progress", "comment": "on it"})
    for issue in (other, foreign):
        with pytest.raises(AccessDeniedError) as caught:
            app.issue_of(run, issue)
        assert caught.value.details == {"issueId": issue, "runIssueId": mine}
        with pytest.raises(AccessDeniedError):
            app.update_issue(run, issue, {"status": "in_progress"})
        with pytest.raises(AccessDeniedError):
            app.add_work_product(run, issue, {"type": "branch", "url": "x"})
    rows, total = app.list_issues(run, "c-acme")
    assert ([str(i.id) for i in rows], total) == ([mine], 1)


async def test_a_run_token_without_an_issue_reaches_no_issue(
    app: WorkspaceRealizerApplication, two: Any
) -> None:
    _, _, mine, *_ = two
    run = Access(kind=ActorKind.RUN_TOKEN, company_id="c-acme", actor_id=AGENT, run_id="run-1")
    with pytest.raises(AccessDeniedError):
        app.issue_of(run, mine)
    assert app.list_issues(run, "c-acme") == ([], 0)
    assert app.list_workspaces(run, "c-acme") == ([], 0)


async def test_an_agent_key_keeps_every_issue_assigned_to_the_agent(
    app: WorkspaceRealizerApplication, two: Any
) -> None:
    _, _, mine, other, foreign, spaces = two
    for issue in (mine, other):
        app.issue_of(KEY, issue)
        app.workspace_of(KEY, spaces[issue])
    with pytest.raises(AccessDeniedError):
        app.issue_of(KEY, foreign)
    rows, _ = app.list_issues(KEY, "c-acme")
    assert {str(i.id) for i in rows} == {mine, other}
    rows, _ = app.list_workspaces(KEY, "c-acme")
    assert {str(w.id) for w in rows} == {spaces[mine], spaces[other]}


async def test_a_run_token_reads_only_its_issue_workspaces_and_the_one_it_holds(
    app: WorkspaceRealizerApplication, two: Any
) -> None:
    _, _, mine, other, foreign, spaces = two
    run = token(mine)
    assert str(app.workspace_of(run, spaces[mine]).id) == spaces[mine]
    for issue in (other, foreign):
        with pytest.raises(AccessDeniedError):
            app.workspace_of(run, spaces[issue])
    rows, _ = app.list_workspaces(run, "c-acme")
    assert [str(w.id) for w in rows] == [spaces[mine]]
    # The controller leased it another issue's workspace (a board's pin): the run sees that one,
    # another run of the same agent does not.
    leased = RunWorkspaceLeased(
        event_id="e-1", aggregate="run", aggregate_id="run-1", aggregate_version=2,
        company_id="c-acme", occurred_at=app.now(), actor=Actor(type="system", id="controller"),
        agent_id=AGENT, issue_id=mine, workspace_id=spaces[other],
    )  # fmt: skip
    with acting(system_cause("workspace-realizer")):
        app.note_run_event(leased, Tracking("controller", 1))
    assert str(app.workspace_of(run, spaces[other]).id) == spaces[other]
    with pytest.raises(AccessDeniedError):
        app.workspace_of(token(mine, "run-2"), spaces[other])
    rows, _ = app.list_workspaces(run, "c-acme")
    assert {str(w.id) for w in rows} == {spaces[mine], spaces[other]}
    # Holding the workspace is not the issue: the other issue stays out of reach.
    with pytest.raises(AccessDeniedError):
        app.issue_of(run, other)


async def test_a_run_token_realizes_only_its_run_issue(realizer: Realizer, two: Any) -> None:
    _, _, mine, other, _, spaces = two
    done = await realize(realizer, token(mine), RealizeRequest(mine, require_isolation=True))
    assert done.workspace_id == spaces[mine]
    with pytest.raises(AccessDeniedError):
        await realize(realizer, token(mine), RealizeRequest(other))
