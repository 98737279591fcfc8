"""What an agent key or a run token reaches of the supervisor's workspaces and operations
(ARCHITECTURE §5.1): an agent key the workspaces of the issues assigned to its agent, a run token
those of its run's issue and the one its run holds; a project workspace only through a shared
workspace of its own on it (as runtime control); the board everything of its company."""

from __future__ import annotations

import pytest
from state_world import ACME, OTHER, World

from contracts.base import Actor, Principal
from contracts.workspace_events import IssueAssigned, IssueWorkspaceLinked
from eventstore import Cause, acting
from runtime_supervisor.application import RuntimeSupervisorApplication
from runtime_supervisor.domain import NotFoundError
from servicekit.access import Access, AccessDeniedError

BOARD = Access.of(Principal(company_id=ACME, actor=Actor(type="board", id="key-1")))
OTHER_BOARD = Access.of(Principal(company_id=OTHER, actor=Actor(type="board", id="key-2")))


def _key(agent: str) -> Access:
    return Access.of(Principal(company_id=ACME, actor=Actor(type="agent", id=agent)))


def _token(agent: str, run: str, issue: str | None) -> Access:
    return Access.of(Principal(company_id=ACME, actor=Actor(type="agent", id=agent), run_id=run,
                               issue_id=issue, run_bound=True))  # fmt: skip


def _assign(world: World, issue: str, agent: str | None) -> None:
    world.publish(IssueAssigned(**world.envelope("issue", issue), assignee_agent_id=agent))


def _link(world: World, issue: str, workspace: str) -> None:
    world.publish(
        IssueWorkspaceLinked(**world.envelope("issue", issue), execution_workspace_id=workspace)
    )


@pytest.fixture
def acme(world: World) -> dict[str, str]:
    """Issues A (assigned to agent-a) and B (agent-b), a workspace for each in one project
    workspace, and a run of each agent on its workspace."""
    pw = world.project_workspace()
    issue_a, issue_b = world.issue("ACME-1"), world.issue("ACME-2")
    _assign(world, issue_a, "agent-a")
    _assign(world, issue_b, "agent-b")
    ws_a, ws_b = world.workspace(pw, issue_a), world.workspace(pw, issue_b)
    run_a = world.run_started(ws_a, issue_a, agent="agent-a")
    run_b = world.run_started(ws_b, issue_b, agent="agent-b")
    return {"pw": pw, "issue_a": issue_a, "issue_b": issue_b, "ws_a": ws_a, "ws_b": ws_b,
            "run_a": run_a, "run_b": run_b}  # fmt: skip


def test_an_agent_key_owns_the_workspaces_of_the_issues_assigned_to_it(
    app: RuntimeSupervisorApplication, world: World, acme: dict[str, str]
) -> None:
    key_a, key_b = _key("agent-a"), _key("agent-b")
    assert app.owns_workspace(key_a, acme["ws_a"])
    assert not app.owns_workspace(key_a, acme["ws_b"])
    assert app.owns_workspace(key_b, acme["ws_b"])
    assert app.owns_workspace(BOARD, acme["ws_b"])
    # A workspace reused for another issue of the agent (linked to it) is the agent's too.
    issue_c = world.issue("ACME-3")
    _assign(world, issue_c, "agent-a")
    _link(world, issue_c, acme["ws_b"])
    assert app.owns_workspace(key_a, acme["ws_b"])
    # Unassigned: no longer.
    _assign(world, issue_c, None)
    assert not app.owns_workspace(key_a, acme["ws_b"])


class _NoScan(dict):  # type: ignore[type-arg]
    """Issue copies that refuse to be scanned: a lookup must go by key."""

    def _refuse(self, *args: object) -> None:
        raise AssertionError("the issue copies were scanned")

    __iter__ = items = values = keys = _refuse  # type: ignore[assignment]


def test_a_workspaces_issues_are_indexed_so_ownership_never_scans_every_issue(
    app: RuntimeSupervisorApplication, world: World, acme: dict[str, str]
) -> None:
    issue_c = world.issue("ACME-3")
    _assign(world, issue_c, "agent-a")
    _link(world, issue_c, acme["ws_b"])
    assert app.issues_by_workspace[acme["ws_b"]] == {issue_c}
    copies = app.copies["issue"]
    app.copies["issue"] = _NoScan(copies)  # type: ignore[assignment]
    try:
        assert app.owns_workspace(_key("agent-a"), acme["ws_b"])
        assert not app.owns_workspace(_key("agent-c"), acme["ws_b"])
    finally:
        app.copies["issue"] = copies
    # Moved on to another workspace: the index follows, and so does ownership.
    ws_c = world.workspace(acme["pw"], issue_c)
    _link(world, issue_c, ws_c)
    assert acme["ws_b"] not in app.issues_by_workspace
    assert app.issues_by_workspace[ws_c] == {issue_c}
    assert not app.owns_workspace(_key("agent-a"), acme["ws_b"])
    assert app.owns_workspace(_key("agent-a"), ws_c)


def test_a_run_token_owns_its_issues_workspaces_and_the_one_its_run_holds(
    app: RuntimeSupervisorApplication, world: World, acme: dict[str, str]
) -> None:
    token = _token("agent-a", acme["run_a"], acme["issue_a"])
    assert app.owns_workspace(token, acme["ws_a"])
    assert not app.owns_workspace(token, acme["ws_b"])
    # Another issue assigned to its agent is not the token's.
    issue_c = world.issue("ACME-3")
    _assign(world, issue_c, "agent-a")
    ws_c = world.workspace(acme["pw"], issue_c)
    assert app.owns_workspace(_key("agent-a"), ws_c)
    assert not app.owns_workspace(token, ws_c)
    # A run of no issue holding a workspace: its token reaches that workspace.
    held = world.workspace(acme["pw"])
    run = world.run_started(held, None, agent="agent-b")
    assert app.owns_workspace(_token("agent-b", run, None), held)
    assert not app.owns_workspace(_token("agent-b", acme["run_b"], acme["issue_b"]), held)


def test_a_workspace_not_its_own_is_refused_with_403(
    app: RuntimeSupervisorApplication, world: World, acme: dict[str, str]
) -> None:
    ws_a = world.target(ws=acme["ws_a"])
    app.check_target(_key("agent-a"), ws_a, "read the logs of")
    app.check_target(BOARD, ws_a, "read the logs of")
    for outsider in (_key("agent-b"), _token("agent-b", acme["run_b"], acme["issue_b"])):
        with pytest.raises(AccessDeniedError) as raised:
            app.check_target(outsider, ws_a, "read the logs of")
        assert (raised.value.code, raised.value.status) == ("forbidden", 403)
        assert raised.value.details["workspaceId"] == acme["ws_a"]
    # A project workspace: an isolated worktree of it (agent-a's) gives no reach to it.
    pw = world.target(pw=acme["pw"])
    app.check_target(BOARD, pw, "read the logs of")
    for outsider in (_key("agent-a"), _token("agent-a", acme["run_a"], acme["issue_a"]),
                     _key("agent-c")):  # fmt: skip
        with pytest.raises(AccessDeniedError) as raised:
            app.check_target(outsider, pw, "read the logs of")
        assert raised.value.details["projectWorkspaceId"] == acme["pw"]
        assert "shared checkout" in str(raised.value)


def test_a_workspace_operation_is_read_by_whom_it_concerns(
    app: RuntimeSupervisorApplication, world: World, acme: dict[str, str]
) -> None:
    target = world.target(ws=acme["ws_a"])
    with acting(Cause(actor=Actor(type="system", id="heartbeat-controller"),
                      run_id=acme["run_a"])):  # fmt: skip
        op = app.start_operation(target, phase="workspace_provision", command="serve web",
                                 cwd="/worktrees/ACME-1", run_id=acme["run_a"],
                                 issue_id=acme["issue_a"])  # fmt: skip
    for reader in (BOARD, _key("agent-a"), _token("agent-a", acme["run_a"], acme["issue_a"])):
        assert str(app.operation_of(reader, op).id) == op
    # Another agent's key, and a token of another run of the same agent: not theirs.
    for outsider in (_key("agent-b"), _token("agent-a", "run-sibling", None)):
        with pytest.raises(AccessDeniedError) as raised:
            app.operation_of(outsider, op)
        assert raised.value.details == {"operationId": op}
    with pytest.raises(NotFoundError):
        app.operation_of(OTHER_BOARD, op)
    # Lists leave out what is not the agent's.
    listed = app.list_operations(ACME, workspace_id=acme["ws_a"], access=_key("agent-b"))
    assert (listed.items, listed.total) == ([], 0)
    mine = app.list_operations(ACME, workspace_id=acme["ws_a"], access=_key("agent-a"))
    assert [row.id for row in mine.items] == [op]


@pytest.fixture
def shared(world: World, acme: dict[str, str]) -> dict[str, str]:
    """Issue C (agent-c) working in the project workspace's checkout itself (a shared
    workspace), with a run holding it."""
    issue_c = world.issue("ACME-3")
    _assign(world, issue_c, "agent-c")
    ws_c = world.workspace(acme["pw"], issue_c, mode="shared_workspace", cwd="/repos/acme")
    run_c = world.run_started(ws_c, issue_c, agent="agent-c")
    return {"issue_c": issue_c, "ws_c": ws_c, "run_c": run_c}


def test_a_project_workspace_is_an_agents_only_through_its_shared_checkout(
    app: RuntimeSupervisorApplication,
    world: World,
    acme: dict[str, str],
    shared: dict[str, str],
) -> None:
    pw = world.target(pw=acme["pw"])
    token_c = _token("agent-c", shared["run_c"], shared["issue_c"])
    for owner in (BOARD, _key("agent-c"), token_c):
        assert app.owns_target(owner, pw)
        app.check_target(owner, pw, "read the logs of")
    # Agents of isolated worktrees on the same project workspace: not theirs.
    assert not app.owns_target(_key("agent-a"), pw)
    assert not app.owns_target(_token("agent-b", acme["run_b"], acme["issue_b"]), pw)
    # A run token reaches it only while its run holds the shared workspace: a run of the same
    # agent and issue on an isolated worktree does not, nor a finished run.
    isolated = world.workspace(acme["pw"], shared["issue_c"])
    run_isolated = world.run_started(isolated, shared["issue_c"], agent="agent-c")
    assert not app.owns_target(_token("agent-c", run_isolated, shared["issue_c"]), pw)
    world.run_finished(shared["run_c"], ws=shared["ws_c"])
    assert not app.owns_target(token_c, pw)
    # The agent key still works in the checkout (its issue's shared workspace).
    assert app.owns_target(_key("agent-c"), pw)
    # A shared checkout of another project workspace gives no reach to this one.
    other_pw = world.project_workspace(cwd="/repos/other")
    world.workspace(other_pw, acme["issue_a"], mode="shared_workspace", cwd="/repos/other")
    assert app.owns_target(_key("agent-a"), world.target(pw=other_pw))
    assert not app.owns_target(_key("agent-a"), pw)


def test_a_project_workspace_operation_is_read_only_through_its_shared_checkout(
    app: RuntimeSupervisorApplication,
    world: World,
    acme: dict[str, str],
    shared: dict[str, str],
) -> None:
    # The board started the project workspace's services (no run, no issue).
    pw = world.target(pw=acme["pw"])
    with acting(Cause(actor=Actor(type="board", id="key-1"))):
        op = app.start_operation(pw, phase="workspace_provision", command="serve web",
                                 cwd="/repos/acme")  # fmt: skip
    token_c = _token("agent-c", shared["run_c"], shared["issue_c"])
    for reader in (BOARD, _key("agent-c"), token_c):
        assert str(app.operation_of(reader, op).id) == op
    # Isolated-worktree agents: 403, by key and by token.
    for outsider in (_key("agent-a"), _token("agent-a", acme["run_a"], acme["issue_a"]),
                     _key("agent-b"), _token("agent-b", acme["run_b"], acme["issue_b"])):  # fmt: skip
        with pytest.raises(AccessDeniedError) as raised:
            app.operation_of(outsider, op)
        assert (raised.value.status, raised.value.details) == (403, {"operationId": op})
    # Lists leave it out for them.
    listed = app.list_operations(ACME, project_workspace_id=acme["pw"], access=_key("agent-a"))
    assert (listed.items, listed.total) == ([], 0)
    mine = app.list_operations(ACME, project_workspace_id=acme["pw"], access=token_c)
    assert [row.id for row in mine.items] == [op]
