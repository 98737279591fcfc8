"""The access model's ``OWN`` rules in the realizer's use cases (ARCHITECTURE §5.1): an agent key
and a run token reach only their own issues, those issues' workspaces and the operations of those
workspaces (403 otherwise), and change of their issues only the status, title, description,
priority and mode, and comment (403 otherwise); another company's things are not found (404);
every id an issue's body names stays inside the issue's company (404 naming the field); the copy
of the controller's agents is rebuilt by a replay like every other read model."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest
from eventsourcing.persistence import Tracking

from contracts.base import Actor, Principal
from contracts.run_events import AgentCreated, AgentDeleted
from eventstore import acting, system_cause, verify_replay
from servicekit.access import Access, AccessDeniedError, ActorKind, NotVisibleError
from workspace_realizer.application import WorkspaceRealizerApplication
from workspace_realizer.domain.errors import NotFoundError, RequestUnansweredError
from workspace_realizer.orchestration.context import Realizer
from workspace_realizer.orchestration.facts import gather
from workspace_realizer.orchestration.realize import RealizeRequest, realize, refuse_unisolated
from workspace_realizer.usecases.references import NoAgentDirectory, check_assignee

ISOLATED = {"enabled": True, "defaultMode": "isolated_workspace",
            "workspaceStrategy": {"type": "git_worktree"}}  # fmt: skip
X, Y = "agent-x", "agent-y"
KEY_X = Access(kind=ActorKind.AGENT_KEY, company_id="c-acme", actor_id=X)


def run_token(issue_id: str, run_id: str = "run-x") -> Access:
    """The access of a run token of agent X for ``issue_id``."""
    return Access.of(
        Principal(
            company_id="c-acme",
            actor=Actor(type="agent", id=X),
            run_id=run_id,
            issue_id=issue_id,
            run_bound=True,
        )
    )


def clone_operation(company_id: str, project_workspace_id: str) -> dict[str, Any]:
    """A project workspace's own operation (a managed clone: no execution workspace, no issue)."""
    now = datetime.now(UTC)
    return {"operation_ref": str(uuid.uuid4()), "company_id": company_id,
            "execution_workspace_id": None, "project_workspace_id": project_workspace_id,
            "issue_id": None, "operation_id": None, "heartbeat_run_id": None,
            "phase": "managed_clone", "command": "git clone", "cwd": "/srv/checkouts",
            "status": "succeeded", "exit_code": 0, "started_at": now, "finished_at": now,
            "stdout_excerpt": "", "stderr_excerpt": "", "truncated": False, "stdout_bytes": 0,
            "stderr_bytes": 0, "log_dir": None, "metadata": {}}  # fmt: skip


@pytest.fixture
async def acme(realizer: Realizer, app: WorkspaceRealizerApplication, world: Any) -> Any:
    """ACME with X's issue and Y's, each realized (their operations recorded), and a project
    workspace's own operation."""
    board = world.company()
    project = world.project(board, ISOLATED)
    checkout = world.checkout(board, project)
    mine = world.issue(board, project, title="X's", assignee_agent_id=X)
    theirs = world.issue(board, project, title="Y's", assignee_agent_id=Y)
    spaces = {i: (await realize(realizer, board, RealizeRequest(i))).workspace_id
              for i in (mine, theirs)}  # fmt: skip
    ops = {i: app.operations_by_workspace[spaces[i]][0] for i in (mine, theirs)}
    clone = app.record_operation(clone_operation("c-acme", checkout))
    return board, project, checkout, mine, theirs, spaces, ops, clone


@pytest.mark.parametrize("who", ["agent key", "run token"])
async def test_agent_principals_reach_none_of_another_agents_things(
    app: WorkspaceRealizerApplication, acme: Any, who: str
) -> None:
    board, _, _, mine, theirs, spaces, ops, clone = acme
    access = KEY_X if who == "agent key" else run_token(mine)
    before = app.last_notification_id()
    refused = {
        "getIssue": lambda: app.issue_of(access, theirs),
        "updateIssue": lambda: app.update_issue(access, theirs, {"status": "in_progress"}),
        "createWorkProduct": lambda: app.add_work_product(access, theirs, {"type": "branch"}),
        "realizeIssueWorkspace": lambda: refuse_unisolated(app, access, RealizeRequest(theirs)),
        "getExecutionWorkspace": lambda: app.workspace_of(access, spaces[theirs]),
        "getCloseReadiness": lambda: gather(app, access, spaces[theirs]),
        "listWorkspaceOperations": lambda: app.list_operations(access, spaces[theirs], 50, 0),
        "getWorkspaceOperation": lambda: app.operation_of(access, ops[theirs]),
        "a project workspace's clone": lambda: app.operation_of(access, clone),
    }
    for route, attempt in refused.items():
        with pytest.raises(AccessDeniedError) as caught:
            attempt()
        assert caught.value.code == "forbidden", route
    assert app.last_notification_id() == before
    # Lists hold only X's own; its own things answer.
    assert [str(i.id) for i in app.list_issues(access, "c-acme")[0]] == [mine]
    assert [str(w.id) for w in app.list_workspaces(access, "c-acme")[0]] == [spaces[mine]]
    assert str(app.operation_of(access, ops[mine]).id) == ops[mine]
    assert gather(app, access, spaces[mine]).workspace.id == spaces[mine]
    # The board reads everything, the clone included.
    assert str(app.operation_of(board, clone).id) == clone


async def test_another_company_finds_none_of_them(
    app: WorkspaceRealizerApplication, world: Any, acme: Any
) -> None:
    _, _, _, _, theirs, spaces, ops, clone = acme
    world.company("c-evil", "EVIL")
    for evil in (
        Access(kind=ActorKind.BOARD_KEY, company_id="c-evil", actor_id="k"),
        Access(kind=ActorKind.AGENT_KEY, company_id="c-evil", actor_id=Y),
    ):
        for lookup, ident in (
            (app.issue_of, theirs),
            (app.workspace_of, spaces[theirs]),
            (app.operation_of, ops[theirs]),
            (app.operation_of, clone),
        ):
            with pytest.raises(NotVisibleError) as caught:
                lookup(evil, ident)
            assert caught.value.code == "not_found"


async def test_a_run_token_reaches_the_workspace_its_run_holds_and_its_operations(
    app: WorkspaceRealizerApplication, acme: Any
) -> None:
    from contracts.run_events import RunWorkspaceLeased

    _, _, _, mine, theirs, spaces, ops, _ = acme
    leased = RunWorkspaceLeased(
        event_id="e-1", aggregate="run", aggregate_id="run-x", aggregate_version=2,
        company_id="c-acme", occurred_at=app.now(), actor=Actor(type="system", id="controller"),
        agent_id=X, issue_id=mine, workspace_id=spaces[theirs],
    )  # fmt: skip
    with acting(system_cause("workspace-realizer")):
        app.note_run_event(leased, Tracking("controller", 1))
    assert str(app.operation_of(run_token(mine), ops[theirs]).id) == ops[theirs]
    # The agent key is not the run: Y's workspace stays out of its reach.
    with pytest.raises(AccessDeniedError):
        app.operation_of(KEY_X, ops[theirs])


@pytest.mark.parametrize("who", ["agent key", "run token"])
async def test_an_agent_changes_only_status_title_description_priority_mode_and_comments(
    app: WorkspaceRealizerApplication, world: Any, acme: Any, who: str
) -> None:
    board, project, _, mine, theirs, _, _, _ = acme
    other = world.checkout(board, project, name="api", repo_url="https://github.com/acme/api.git")
    access = KEY_X if who == "agent key" else run_token(mine)
    record = app.issues[mine].record() | {"assignee": app.issues[mine].assignee_agent_id}
    before = app.last_notification_id()
    refused = [
        (["assigneeAgentId"], {"assignee_agent_id": Y}),  # would wake Y
        (["assigneeAgentId"], {"assignee_agent_id": None}),
        (["parentId"], {"parent_id": theirs}),
        (["projectWorkspaceId"], {"project_workspace_id": other}),
        # Beside allowed fields: none of the body is saved.
        (["assigneeAgentId", "parentId"], {"status": "in_progress", "title": "Mine", "comment": "Hi",
                                           "assignee_agent_id": Y, "parent_id": theirs}),
    ]  # fmt: skip
    for fields, body in refused:
        with pytest.raises(AccessDeniedError) as caught:
            app.update_issue(access, mine, body)
        assert caught.value.code == "forbidden"
        assert caught.value.details == {"fields": fields}
        assert str(caught.value).startswith(f"An agent may not change {', '.join(fields)} ")
        assert "a board key may" in str(caught.value)
    # A field sent with the value it has changes nothing and passes (a client echoing the issue).
    app.update_issue(access, mine, {"assignee_agent_id": X, "parent_id": None,
                                    "project_workspace_id": record["project_workspace_id"]})  # fmt: skip
    assert app.last_notification_id() == before
    assert app.issues[mine].record() | {"assignee": app.issues[mine].assignee_agent_id} == record
    # What an agent changes.
    changed = app.update_issue(access, mine, {
        "status": "in_progress", "title": "Mine, renamed", "description": "Doing it",
        "priority": "high", "comment": "On it.", "settings": {"mode": "isolated_workspace"},
    })  # fmt: skip
    assert (changed.status, changed.title, changed.description, changed.priority) == (
        "in_progress", "Mine, renamed", "Doing it", "high")  # fmt: skip
    assert (changed.settings or {})["mode"] == "isolated_workspace"
    assert changed.assignee_agent_id == X
    # The board reassigns, reparents and moves it.
    moved = app.update_issue(
        board, mine, {"assignee_agent_id": Y, "parent_id": theirs, "project_workspace_id": other}
    )
    assert (moved.assignee_agent_id, moved.parent_id, moved.project_workspace_id) == (
        Y, theirs, other)  # fmt: skip


# -- references --------------------------------------------------------------------------------


async def test_each_reference_of_another_company_or_unknown_is_not_found_naming_its_field(
    app: WorkspaceRealizerApplication, world: Any, acme: Any
) -> None:
    board, project, checkout, mine, _, spaces, _, _ = acme
    evil = world.company("c-evil", "EVIL")
    evil_project = world.project(evil, ISOLATED)
    evil_issue = world.issue(evil, evil_project)
    # Evil names ACME's things (and unknown ids) in its own issues.
    unknown = str(uuid.uuid4())
    cases = {
        "projectId": [{"project_id": project}, {"project_id": unknown}],
        "parentId": [{"parent_id": mine}, {"parent_id": unknown}],
        "projectWorkspaceId": [{"project_workspace_id": checkout},
                               {"project_workspace_id": unknown}],
        "executionWorkspaceSettings.executionWorkspaceId": [
            {"settings": {"mode": "reuse_existing", "executionWorkspaceId": spaces[mine]}},
            {"settings": {"mode": "reuse_existing", "executionWorkspaceId": unknown}},
        ],
    }  # fmt: skip
    before = app.last_notification_id()
    for field, bodies in cases.items():
        for body in bodies:
            attempts = [
                partial(app.create_issue, evil, "c-evil",
                        {"project_id": evil_project, "title": "steal"} | body),
            ]  # fmt: skip
            if field != "projectId":  # an update never moves an issue to another project
                attempts.append(partial(app.update_issue, evil, evil_issue, body))
            for attempt in attempts:
                with pytest.raises(NotFoundError) as caught:
                    attempt()
                assert caught.value.code == "not_found"
                assert caught.value.details["field"] == field
                assert str(caught.value).startswith(field), str(caught.value)
    assert app.last_notification_id() == before
    # Inside the company they are taken; a project workspace must be of the issue's project,
    # and an issue is not its own parent.
    app.update_issue(board, mine, {"parent_id": None, "project_workspace_id": checkout})
    sibling = world.project(board, ISOLATED)
    with pytest.raises(NotFoundError, match="of the issue's project") as caught:
        world.issue(board, sibling, project_workspace_id=checkout)
    assert caught.value.details == {"field": "projectWorkspaceId", "projectWorkspaceId": checkout}
    with pytest.raises(NotFoundError, match=r"^parentId"):
        app.update_issue(board, mine, {"parent_id": mine})


def _agent_event(kind: type[Any], agent_id: str, company_id: str, version: int) -> Any:
    extra = ({"name": agent_id, "adapter_type": "process", "trust_level": "trusted",
              "max_concurrent_runs": 1} if kind is AgentCreated else {})  # fmt: skip
    return kind(event_id=str(uuid.uuid4()), aggregate="agent", aggregate_id=agent_id,
                aggregate_version=version, company_id=company_id, occurred_at=datetime.now(UTC),
                actor=Actor(type="board", id="board-key"), **extra)  # fmt: skip


class FakeAgents:
    """The controller by hand: ``companies[agent]`` (absent: no such agent); ``silent`` raises as
    an unanswered request does."""

    def __init__(self, companies: dict[str, str] | None = None, silent: bool = False) -> None:
        self.companies, self.silent = companies or {}, silent
        self.asked: list[str] = []

    async def company_of(self, agent_id: str) -> str | None:
        self.asked.append(agent_id)
        if self.silent:
            raise RequestUnansweredError("the controller did not answer; retry")
        return self.companies.get(agent_id)


async def test_the_assignee_is_a_live_agent_of_the_company_from_the_copy_else_the_controller(
    app: WorkspaceRealizerApplication, executor: Any
) -> None:
    events = [
        (AgentCreated, "a-acme", "c-acme", 1),
        (AgentCreated, "a-evil", "c-evil", 1),
        (AgentCreated, "a-gone", "c-acme", 1),
        (AgentDeleted, "a-gone", "c-acme", 2),
        # A deletion of an agent the copy never saw is kept (as deleted) ...
        (AgentDeleted, "a-old", "c-acme", 2),
        # ... and a redelivered creation changes nothing.
        (AgentCreated, "a-acme", "c-evil", 1),
    ]
    with acting(system_cause("workspace-realizer")):
        for position, (kind, agent, company, version) in enumerate(events, start=1):
            event = _agent_event(kind, agent, company, version)
            app.note_agent_event(event, Tracking("controller", position))
    controller = FakeAgents({"a-new": "c-acme", "a-evil-new": "c-evil"})

    async def check(agent_id: str, agents: Any = controller) -> None:
        await check_assignee(executor.run, app, agents, "c-acme", agent_id)

    await check("a-acme")
    for refused in ("a-evil", "a-gone", "a-old"):
        with pytest.raises(NotFoundError) as caught:
            await check(refused)
        assert caught.value.details == {"field": "assigneeAgentId", "assigneeAgentId": refused}
        assert str(caught.value).startswith("assigneeAgentId")
    assert controller.asked == []  # the copy knew all of them
    # Not in the copy yet (created a moment ago): the controller tells.
    await check("a-new")
    for refused in ("a-evil-new", "a-ghost"):
        with pytest.raises(NotFoundError):
            await check(refused)
    assert controller.asked == ["a-new", "a-evil-new", "a-ghost"]
    # No answer: 503, never a guessed 404.
    for silent in (FakeAgents(silent=True), NoAgentDirectory()):
        with pytest.raises(RequestUnansweredError) as unanswered:
            await check("a-new", silent)
        assert unanswered.value.code == "service_unavailable"
        assert "retry" in str(unanswered.value)
    # The copy is a read model like the others: a replay rebuilds it.
    assert app.agent_copy("a-acme").company_id == "c-acme"  # type: ignore[union-attr]
    report = verify_replay(WorkspaceRealizerApplication(service="realizer"), app)
    assert report.ok, report.differences
    assert len(app.read_models()["agents"]) == 4
