"""The access model: actor kinds from principals, the policy's refusals, the company boundary and
the "own" rules of agent keys and run tokens."""

from __future__ import annotations

import pytest

from contracts.base import Actor, Principal
from servicekit.access import (
    Access,
    AccessDeniedError,
    Action,
    ActorKind,
    NotVisibleError,
    Reach,
    Resource,
)

ADMIN = Principal(company_id=None, actor=Actor(type="admin", id="admin"))
BOARD = Principal(company_id="A", actor=Actor(type="board", id="key-1"))
SESSION = Principal(company_id="A", actor=Actor(type="board", id="key-1"), via_session=True)
AGENT = Principal(company_id="A", actor=Actor(type="agent", id="x"))
TOKEN = Principal(
    company_id="A", actor=Actor(type="agent", id="x"), run_id="rx", issue_id="ix", run_bound=True
)
SYSTEM = Principal(company_id=None, actor=Actor(type="system", id="realizer"))


@pytest.mark.parametrize(
    ("principal", "kind"),
    [
        (ADMIN, ActorKind.ADMIN),
        (BOARD, ActorKind.BOARD_KEY),
        (SESSION, ActorKind.BOARD_SESSION),
        (AGENT, ActorKind.AGENT_KEY),
        (TOKEN, ActorKind.RUN_TOKEN),
        (SYSTEM, ActorKind.SYSTEM),
    ],
)
def test_the_kind_of_each_credential(principal: Principal, kind: ActorKind) -> None:
    assert Access.of(principal).kind is kind


def test_a_refusal_says_who_may_instead() -> None:
    with pytest.raises(AccessDeniedError) as refused:
        Access.of(TOKEN).reach(Resource.SECRET, Action.WRITE)
    assert str(refused.value) == (
        "A run token may not write secrets; the admin key, a board key or a board session may."
    )
    assert refused.value.status == 403
    assert refused.value.details == {
        "actorKind": "run_token", "resource": "secret", "action": "write"
    }  # fmt: skip


def test_the_admin_key_manages_companies_but_not_their_work() -> None:
    admin = Access.of(ADMIN)
    assert admin.reach(Resource.COMPANY, Action.WRITE) is Reach.ALL
    with pytest.raises(AccessDeniedError, match="board key"):
        admin.reach(Resource.ISSUE, Action.READ)


def test_agents_read_project_workspaces_redacted_and_never_the_event_stream() -> None:
    for principal in (AGENT, TOKEN):
        access = Access.of(principal)
        assert access.redacted(Resource.PROJECT_WORKSPACE)
        with pytest.raises(AccessDeniedError):
            access.reach(Resource.EVENT_STREAM, Action.READ)
    assert not Access.of(BOARD).redacted(Resource.PROJECT_WORKSPACE)


def test_another_company_is_not_found_and_the_admin_sees_every_company() -> None:
    with pytest.raises(NotVisibleError) as missing:
        Access.of(BOARD).check_company("B", "execution workspace", "w-1")
    assert missing.value.status == 404
    assert missing.value.details == {"executionWorkspaceId": "w-1"}
    assert Access.of(ADMIN).sees_company("B")
    assert not Access.of(
        Principal(company_id=None, actor=Actor(type="board", id="k"))
    ).sees_company(None)


def test_an_agent_key_owns_its_agent_its_assigned_issues_and_its_runs() -> None:
    access = Access.of(AGENT)
    assert access.owns_issue("i-1", "x")
    assert not access.owns_issue("i-2", "y")
    assert access.owns_run("r-9", "x")
    assert not access.owns_run("ry", "y")
    with pytest.raises(AccessDeniedError, match="assigned to it"):
        access.check_issue("i-2", "y")
    with pytest.raises(AccessDeniedError, match="itself"):
        access.check_agent("y", "wake")


def test_a_run_token_owns_its_run_and_its_issue_only() -> None:
    access = Access.of(TOKEN)
    assert access.owns_issue("ix", "y")  # its run's issue, even if reassigned since
    assert not access.owns_issue("i-1", "x")  # another issue of its own agent
    assert access.owns_run("rx", "x")
    assert not access.owns_run("r-other", "x")
    assert access.holds({"rx", "ry"})
    assert not Access.of(AGENT).holds({"rx"})
    with pytest.raises(AccessDeniedError, match="its own run"):
        access.check_run("r-other", "x", "cancel")


def test_operations_belong_to_the_actor_or_run_that_started_them() -> None:
    agent, token = Access.of(AGENT), Access.of(TOKEN)
    assert agent.started({"type": "agent", "id": "x"}, None)
    assert not agent.started({"type": "agent", "id": "y"}, "ry")
    assert not agent.started({"type": "board", "id": "x"}, None)
    assert token.started({"type": "agent", "id": "x"}, "rx")
    assert not token.started({"type": "agent", "id": "x"}, "r-other")
    assert Access.of(BOARD).started(None, None)


def test_board_only_and_operator_only_actions() -> None:
    with pytest.raises(AccessDeniedError, match="an agent key may not"):
        Access.of(AGENT).check_board("delete issues")
    Access.of(BOARD).check_board("delete issues")
    with pytest.raises(AccessDeniedError, match="a board key may not"):
        Access.of(BOARD).check_operator("the stored history")
    Access.of(SYSTEM).check_operator("the stored history")
