"""Agents: create, read, update, delete; the adapter config checked with messages that say what
to send; who may do what (another company: 404; an agent key: itself only, never manage)."""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import msgspec
import pytest
from controller_world import (
    ADMIN,
    BOARD,
    OTHER,
    OTHER_BOARD,
    PROCESS,
    SYSTEM,
    World,
    acting_for,
    agent_principal,
    published_since,
    run_principal,
)

from contracts import run_events as re_
from contracts.agents import CreateAgent, RunFilters, UpdateAgent
from contracts.base import Actor, Principal
from eventstore import audit_trail
from heartbeat_controller.application import HeartbeatControllerApplication
from heartbeat_controller.domain import InvalidInputError, NotFoundError, ValidationError
from servicekit.access import AccessDeniedError


def _create(app: HeartbeatControllerApplication, adapter_type: str, config: Any) -> Any:
    command = CreateAgent(
        principal=BOARD,
        name="coder",
        adapter_type=adapter_type,  # type: ignore[arg-type]
        adapter_config=config,
    )
    return app.create_agent(BOARD, command)


def test_an_agent_is_created_with_its_config_completed_and_read_back(
    app: HeartbeatControllerApplication,
) -> None:
    created = _create(app, "process", {"command": ["python3", "agent.py"]})
    assert created.company_id == "c-acme"
    assert created.adapter_config["command"] == ["python3", "agent.py"]
    assert created.adapter_config["timeoutSec"] == 3600
    assert created.trust_level == "untrusted"
    assert app.get_agent(BOARD, created.id) == created
    assert app.list_agents(BOARD).items == [created]


@pytest.mark.parametrize(
    ("adapter_type", "config", "field", "words"),
    [
        ("process", {}, "adapterConfig.command", "missing required field command"),
        ("process", {"command": "ls"}, "adapterConfig.command", "expected array"),
        ("process", {"command": []}, "adapterConfig.command", "length >= 1"),
        ("process", {"command": ["ls"], "timeoutSec": 0}, "adapterConfig.timeoutSec", ">= 1"),
        ("process", {"command": ["ls"], "limits": {"cpuSeconds": 0}},
         "adapterConfig.limits.cpuSeconds", ">= 1"),
        ("process", {"command": ["ls"], "colour": "red"}, "adapterConfig.colour", "unknown field"),
        ("process", {"command": ["ls"], "env": {"CLIPYARD_API_KEY": "x"}},
         "adapterConfig.env.CLIPYARD_API_KEY", "set by Clipyard"),
        ("process", {"command": ["ls"], "env": {"LD_PRELOAD": "/tmp/x.so"}},
         "adapterConfig.env.LD_PRELOAD", "dynamic-loader"),
        ("process", {"command": ["ls"], "env": {"LD_LIBRARY_PATH": "/tmp"}},
         "adapterConfig.env.LD_LIBRARY_PATH", "dynamic-loader"),
        ("process", {"command": ["ls"], "env": {"GCONV_PATH": "/tmp"}},
         "adapterConfig.env.GCONV_PATH", "dynamic-loader"),
        ("process", {"command": ["ls"], "env": {"GLIBC_TUNABLES": "glibc.malloc.check=3"}},
         "adapterConfig.env.GLIBC_TUNABLES", "dynamic-loader"),
        ("process", {"command": ["ls"], "env": {"MALLOC_ARENA_MAX": "2"}},
         "adapterConfig.env.MALLOC_ARENA_MAX", "dynamic-loader"),
        ("process", {"command": [" "]}, "adapterConfig.command[0]", "non-empty"),
        ("http", {"url": "ftp://example.com/hook"}, "adapterConfig.url", "http(s) URL"),
        ("http", {"url": "https://"}, "adapterConfig.url", "http(s) URL"),
        ("http", {}, "adapterConfig.url", "missing required field url"),
    ],
)  # fmt: skip
def test_a_bad_adapter_config_names_the_field_and_says_what_to_send(
    app: HeartbeatControllerApplication, adapter_type: str, config: Any, field: str, words: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        _create(app, adapter_type, config)
    error = raised.value
    assert (error.code, error.status) == ("validation_failed", 400)
    assert error.details["field"] == field
    assert str(error).startswith(f"{field}: ")
    assert words in str(error)
    assert "Send adapterConfig as {" in str(error)
    assert app.list_agents(BOARD).total == 0


def test_an_http_agent_keeps_its_headers_out_of_the_public_event_and_the_audit(
    app: HeartbeatControllerApplication,
) -> None:
    config = {"url": "https://agents.example.com/run", "headers": {"Authorization": "Bearer s3"}}
    created = _create(app, "http", config)
    assert created.adapter_config["headers"] == {"Authorization": "Bearer s3"}
    trail = audit_trail(app, created.id)
    assert "s3" not in msgspec.json.encode(trail).decode()


def test_update_changes_only_what_is_sent_and_checks_a_new_type_against_the_config(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent(interval=60)
    updated = app.update_agent(
        BOARD,
        UpdateAgent(principal=BOARD, agent_id=agent_id, name="reviewer", max_concurrent_runs=3),
    )
    assert (updated.name, updated.max_concurrent_runs, updated.heartbeat_interval_sec) == (
        "reviewer", 3, 60,
    )  # fmt: skip
    stopped = app.update_agent(
        BOARD, UpdateAgent(principal=BOARD, agent_id=agent_id, heartbeat_interval_sec=None)
    )
    assert stopped.heartbeat_interval_sec is None
    with pytest.raises(ValidationError) as raised:
        app.update_agent(
            BOARD, UpdateAgent(principal=BOARD, agent_id=agent_id, adapter_type="http")
        )
    assert raised.value.details["field"] == "adapterConfig"
    assert '{"url": "https://host/path"' in str(raised.value)
    switched = app.update_agent(
        BOARD,
        UpdateAgent(principal=BOARD, agent_id=agent_id, adapter_type="http",
                    adapter_config={"url": "http://127.0.0.1:9000/"}),
    )  # fmt: skip
    assert switched.adapter_type == "http"
    assert switched.adapter_config["url"] == "http://127.0.0.1:9000/"


def test_another_company_sees_no_agent_and_clipyard_itself_sees_them_all(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    with pytest.raises(NotFoundError):
        app.get_agent(OTHER_BOARD, agent_id)
    with pytest.raises(NotFoundError):
        app.update_agent(
            OTHER_BOARD, UpdateAgent(principal=OTHER_BOARD, agent_id=agent_id, name="x")
        )
    with pytest.raises(NotFoundError):
        app.delete_agent(OTHER_BOARD, agent_id)
    assert app.list_agents(OTHER_BOARD).total == 0
    assert app.get_agent(SYSTEM, agent_id).id == agent_id
    assert app.list_agents(SYSTEM).total == 1


def test_the_admin_key_only_grants_or_takes_back_host_trust(
    app: HeartbeatControllerApplication, world: World
) -> None:
    # docs/design/isolation.md: a trusted agent runs unconfined on the host, so only the admin
    # key grants that; it manages nothing else of an agent.
    agent_id = world.agent()
    assert app.get_agent(ADMIN, agent_id).id == agent_id
    assert app.list_agents(ADMIN).total == 1
    before = app.last_notification_id()
    refusals = [
        lambda: app.create_agent(ADMIN, CreateAgent(principal=ADMIN, name="x",
                                                    adapter_type="process",
                                                    adapter_config=PROCESS)),
        lambda: app.update_agent(ADMIN, UpdateAgent(principal=ADMIN, agent_id=agent_id,
                                                    name="renamed")),
        lambda: app.delete_agent(ADMIN, agent_id),
        # A board key raises no agent's trust, at its creation or later.
        lambda: app.create_agent(BOARD, CreateAgent(principal=BOARD, name="x",
                                                    adapter_type="process",
                                                    adapter_config=PROCESS,
                                                    trust_level="trusted")),
        lambda: app.update_agent(BOARD, UpdateAgent(principal=BOARD, agent_id=agent_id,
                                                    trust_level="trusted")),
    ]  # fmt: skip
    for call in refusals:
        with pytest.raises(AccessDeniedError) as denied:
            call()
        assert (denied.value.code, denied.value.status) == ("forbidden", 403)
    assert app.last_notification_id() == before
    granted = app.update_agent(ADMIN, UpdateAgent(principal=ADMIN, agent_id=agent_id,
                                                  trust_level="trusted"))  # fmt: skip
    assert granted.trust_level == "trusted"
    assert app.agents[agent_id].trusted
    assert app.agents[agent_id].trust_granted_by == "admin"
    # What the admin trusted is what the agent ran: the board changing its command untrusts it.
    other = {**PROCESS, "command": ["/bin/sh", "-c", "something else"]}
    changed = app.update_agent(BOARD, UpdateAgent(principal=BOARD, agent_id=agent_id,
                                                  adapter_config=other))  # fmt: skip
    assert changed.trust_level == "untrusted"
    assert not app.agents[agent_id].trusted
    app.update_agent(ADMIN, UpdateAgent(principal=ADMIN, agent_id=agent_id,
                                        trust_level="trusted"))  # fmt: skip
    # The board key may lower it again.
    lowered = app.update_agent(BOARD, UpdateAgent(principal=BOARD, agent_id=agent_id,
                                                  trust_level="untrusted"))  # fmt: skip
    assert lowered.trust_level == "untrusted"
    assert not app.agents[agent_id].trusted


def test_an_agent_a_board_key_marked_trusted_before_becomes_untrusted_saying_why(
    app: HeartbeatControllerApplication, world: World
) -> None:
    agent_id = world.agent()
    agent = app._load(agent_id)
    agent.update({"trust_level": "trusted"}, app.now())
    app.save(agent)
    assert app.get_agent(BOARD, agent_id).trust_level == "trusted"
    assert not app.agents[agent_id].trusted  # counts for nothing
    before = app.last_notification_id()
    assert app.revoke_board_trust() == 1
    assert app.get_agent(BOARD, agent_id).trust_level == "untrusted"
    (event,) = published_since(app, before)
    assert event.changed_fields == ["trustLevel"]
    assert "only by the admin key" in (event.reason or "")
    assert event.actor.type == "system"
    assert app.revoke_board_trust() == 0


def test_an_agent_key_reads_only_itself_and_never_manages_agents(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me, other = world.agent(name="me"), world.agent(name="other")
    mine = agent_principal(me)
    assert app.get_agent(mine, me).id == me
    assert [a.id for a in app.list_agents(mine).items] == [me]
    with pytest.raises(AccessDeniedError):
        app.get_agent(mine, other)
    with pytest.raises(AccessDeniedError):
        app.create_agent(
            mine,
            CreateAgent(principal=mine, name="x", adapter_type="process", adapter_config=PROCESS),
        )
    with pytest.raises(AccessDeniedError):
        app.update_agent(mine, UpdateAgent(principal=mine, agent_id=me, trust_level="trusted"))
    with pytest.raises(AccessDeniedError):
        app.delete_agent(mine, me)
    assert app.get_agent(BOARD, me).trust_level == "untrusted"


def test_a_run_token_reads_and_lists_only_its_agent(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me, other = world.agent(name="me"), world.agent(name="other")
    token = run_principal(me, "r-1", None)
    assert app.get_agent(token, me).id == me
    assert [a.id for a in app.list_agents(token).items] == [me]
    with pytest.raises(AccessDeniedError) as raised:
        app.get_agent(token, other)
    assert raised.value.details["agentId"] == other
    with pytest.raises(AccessDeniedError):
        app.update_agent(token, UpdateAgent(principal=token, agent_id=me, name="renamed"))


def test_a_board_key_of_no_company_is_refused_its_lists(
    app: HeartbeatControllerApplication, world: World
) -> None:
    world.agent()
    nowhere = Principal(company_id=None, actor=Actor(type="board", id="key-0"))
    for lister in (lambda: app.list_agents(nowhere), lambda: app.list_runs(nowhere, RunFilters())):
        with pytest.raises(AccessDeniedError) as raised:
            lister()
        assert (raised.value.code, raised.value.status) == ("forbidden", 403)


def test_clipyard_itself_without_a_company_cannot_create_an_agent_nowhere(
    app: HeartbeatControllerApplication,
) -> None:
    with pytest.raises(InvalidInputError):
        app.create_agent(
            SYSTEM,
            CreateAgent(principal=SYSTEM, name="x", adapter_type="process",
                        adapter_config=PROCESS),
        )  # fmt: skip


def test_names_and_limits_are_checked_even_when_the_bus_did_not(
    app: HeartbeatControllerApplication,
) -> None:
    with pytest.raises(ValidationError) as raised:
        app.create_agent(
            BOARD,
            CreateAgent(principal=BOARD, name="  ", adapter_type="process", adapter_config=PROCESS),
        )
    assert raised.value.details["field"] == "name"
    with pytest.raises(ValidationError) as raised:
        app.create_agent(
            BOARD,
            CreateAgent(principal=BOARD, name="x", adapter_type="process", adapter_config=PROCESS,
                        heartbeat_interval_sec=5),
        )  # fmt: skip
    assert raised.value.details["field"] == "heartbeatIntervalSec"


def test_a_deleted_agent_is_gone(app: HeartbeatControllerApplication, world: World) -> None:
    agent_id = world.agent()
    assert app.delete_agent(BOARD, agent_id) == []
    with pytest.raises(NotFoundError):
        app.get_agent(BOARD, agent_id)
    with pytest.raises(NotFoundError):
        world.wake(agent_id)
    with pytest.raises(NotFoundError):
        app.delete_agent(BOARD, agent_id)
    assert app.list_agents(BOARD).total == 0


def test_managing_agents_names_only_a_run_of_the_company_as_x_run_id(
    app: HeartbeatControllerApplication, world: World
) -> None:
    acme_agent = world.agent(max_runs=3)
    acme_run = world.wake(acme_agent).run_id
    theirs = world.agent(principal=OTHER_BOARD, name="theirs")
    other_run = world.wake(theirs, principal=OTHER_BOARD).run_id

    def create(board: Principal) -> str:
        command = CreateAgent(
            principal=board, name="y", adapter_type="process", adapter_config=PROCESS
        )
        return str(app.create_agent(board, command).id)

    def update(board: Principal) -> None:
        app.update_agent(board, UpdateAgent(principal=board, agent_id=theirs, name="renamed"))

    before = app.last_notification_id()
    # Company B's board key naming a run of company A (or no run at all): 404, nothing saved.
    for run_id in (acme_run, str(uuid4())):
        board = acting_for(OTHER_BOARD, run_id)
        for command in (create, update, lambda b: app.delete_agent(b, theirs)):
            with pytest.raises(NotFoundError) as raised:
                command(board)
            assert (raised.value.code, raised.value.status) == ("not_found", 404)
            assert raised.value.details == {"runId": run_id, "field": "X-Run-Id"}
            assert "X-Run-Id" in str(raised.value)
    assert app.last_notification_id() == before
    assert app.get_agent(OTHER_BOARD, theirs).name == "theirs"
    # A run of its own company is recorded as the run of each change.
    board = acting_for(OTHER_BOARD, other_run)
    update(board)
    app.delete_agent(board, create(board))
    changes = [
        e
        for e in published_since(app, before)
        if isinstance(e, re_.AgentCreated | re_.AgentUpdated | re_.AgentDeleted)
    ]
    assert [(type(e).__name__, e.company_id, e.run_id) for e in changes] == [
        ("AgentUpdated", OTHER, other_run),
        ("AgentCreated", OTHER, other_run),
        ("AgentDeleted", OTHER, other_run),
    ]


def test_an_agent_key_naming_its_own_run_still_never_manages_agents(
    app: HeartbeatControllerApplication, world: World
) -> None:
    me = world.agent()
    key = acting_for(agent_principal(me), world.wake(me).run_id)
    with pytest.raises(AccessDeniedError):
        app.update_agent(key, UpdateAgent(principal=key, agent_id=me, name="renamed"))
    with pytest.raises(AccessDeniedError):
        app.delete_agent(key, me)
