"""Effective runtime config: inheritance, command ids, service indexes, defaults (reference §6.1)."""

from __future__ import annotations

from contracts.workspace_config import (
    HttpReadiness,
    JobSpec,
    PortSpec,
    RuntimeCommandSpec,
    RuntimeConfig,
    ServiceSpec,
    StopPolicy,
)
from runtime_supervisor.domain.config.effective import (
    command_by_id,
    command_slug,
    effective_commands,
    service_by_index,
)


def test_ids_service_indexes_and_duplicates() -> None:
    config = RuntimeConfig(
        services=[
            ServiceSpec(name="Web", command="npm run dev", port=PortSpec(type="auto")),
            ServiceSpec(name="web", command="npm run api", port=3000),
            ServiceSpec(name="db", command="postgres", id="Database"),
        ],
        jobs=[JobSpec(name="hello", command="echo hi", timeout_sec=5)],
    )
    effective = effective_commands(config, None)
    assert [c.id for c in effective.commands] == [
        "service:web",
        "service:web-services-2",
        "database",
        "job:hello",
    ]
    assert [c.service_index for c in effective.commands] == [0, 1, 2, None]
    assert [(c.source_key, c.source_index) for c in effective.commands] == [
        ("services", 0),
        ("services", 1),
        ("services", 2),
        ("jobs", 0),
    ]
    assert [c.kind for c in effective.services] == ["service"] * 3
    assert [c.name for c in effective.jobs] == ["hello"]
    assert effective.jobs[0].timeout_sec == 5
    assert effective.services[1].port == 3000


def test_a_duplicate_across_services_and_jobs_gets_its_source_key() -> None:
    config = RuntimeConfig(
        services=[ServiceSpec(name="a", command="x", id="Seed Data")],
        jobs=[JobSpec(name="b", command="y", id="seed-data")],
    )
    assert [c.id for c in effective_commands(config, None).commands] == [
        "seed-data",
        "seed-data-jobs-1",
    ]


def test_nameless_entries_fall_back_to_the_position() -> None:
    config = RuntimeConfig(
        services=[ServiceSpec(name="", command="a"), ServiceSpec(name="!!!", command="b")],
        jobs=[JobSpec(name="  ", command="c")],
    )
    commands = effective_commands(config, None).commands
    assert [c.id for c in commands] == ["service:1", "service:2", "job:1"]
    assert [c.name for c in commands] == ["Service 1", "!!!", "Job 1"]


def test_the_commands_form_wins_when_not_empty_and_indexes_count_services_only() -> None:
    config = RuntimeConfig(
        services=[ServiceSpec(name="ignored", command="x")],
        commands=[
            RuntimeCommandSpec(kind="job", name="seed", command="make seed", timeout_sec=9),
            RuntimeCommandSpec(kind="service", name="api", command="serve", lifecycle="ephemeral"),
            RuntimeCommandSpec(kind="service", name="web", command="web"),
        ],
    )
    commands = effective_commands(config, None).commands
    assert [c.id for c in commands] == ["job:seed", "service:api", "service:web"]
    assert [c.service_index for c in commands] == [None, 0, 1]
    assert {c.source_key for c in commands} == {"commands"}
    assert commands[0].timeout_sec == 9
    assert commands[1].lifecycle == "ephemeral"


def test_empty_commands_fall_back_to_services_and_jobs() -> None:
    config = RuntimeConfig(services=[ServiceSpec(name="web", command="w")], commands=[])
    assert [c.id for c in effective_commands(config, None).commands] == ["service:web"]


def test_lifecycle_defaults_scope_and_stop_policy() -> None:
    readiness = HttpReadiness(url_template="http://127.0.0.1:{{port}}/")
    config = RuntimeConfig(
        services=[
            ServiceSpec(name="shared", command="a", readiness=readiness, env={"A": "1"}),
            ServiceSpec(name="eph", command="b", lifecycle="ephemeral", cwd="apps/b"),
            ServiceSpec(
                name="custom",
                command="c",
                reuse_scope="agent",
                stop_policy=StopPolicy(type="idle_timeout", idle_seconds=60),
            ),
        ]
    )
    shared, eph, custom = effective_commands(config, None).services
    assert (shared.lifecycle, shared.reuse_scope, shared.stop_policy.type) == (
        "shared",
        "project_workspace",
        "manual",
    )
    assert (shared.cwd, shared.env, shared.readiness) == (".", {"A": "1"}, readiness)
    assert (eph.lifecycle, eph.reuse_scope, eph.stop_policy.type, eph.cwd) == (
        "ephemeral",
        "run",
        "on_run_finish",
        "apps/b",
    )
    assert (custom.reuse_scope, custom.stop_policy) == (
        "agent",
        StopPolicy(type="idle_timeout", idle_seconds=60),
    )
    assert shared.disabled_reason is None


def test_own_config_wins_even_when_empty() -> None:
    project = RuntimeConfig(services=[ServiceSpec(name="web", command="w")])
    own_empty = effective_commands(RuntimeConfig(), project)
    assert own_empty.commands == ()
    assert (own_empty.source, own_empty.inherited, own_empty.configured) == (
        "execution_workspace",
        False,
        True,
    )
    own = effective_commands(
        RuntimeConfig(services=[ServiceSpec(name="api", command="a")]), project
    )
    assert [c.id for c in own.commands] == ["service:api"]


def test_a_name_two_commands_share_selects_neither() -> None:
    config = RuntimeConfig(
        services=[ServiceSpec(name="web", command="w")], jobs=[JobSpec(name="web", command="j")]
    )
    effective = effective_commands(None, config)
    assert command_by_id(effective, "web") is None
    assert command_by_id(effective, "service:web") is effective.services[0]
    assert command_by_id(effective, "job:web") is effective.jobs[0]


def test_inherited_config_and_no_config() -> None:
    project = RuntimeConfig(services=[ServiceSpec(name="web", command="w")])
    inherited = effective_commands(None, project)
    assert [c.id for c in inherited.commands] == ["service:web"]
    assert (inherited.source, inherited.inherited) == ("project_workspace", True)
    nothing = effective_commands(None, None)
    assert (nothing.commands, nothing.source, nothing.configured) == ((), None, False)


def test_lookups() -> None:
    config = RuntimeConfig(
        services=[ServiceSpec(name="Web", command="w"), ServiceSpec(name="Api", command="a")],
        jobs=[JobSpec(name="Seed", command="s")],
    )
    effective = effective_commands(None, config)
    assert command_by_id(effective, "service:api") is effective.services[1]
    assert command_by_id(effective, "Service:Api") is effective.services[1]
    assert command_by_id(effective, "job:seed") is effective.jobs[0]
    assert command_by_id(effective, "service:nope") is None
    # A name, as the reference's clients send it, when exactly one command has it.
    assert command_by_id(effective, "Api") is effective.services[1]
    assert command_by_id(effective, "Seed") is effective.jobs[0]
    assert command_by_id(effective, "Nope") is None
    assert service_by_index(effective, 1) is effective.services[1]
    assert service_by_index(effective, 2) is None
    assert service_by_index(effective, -1) is None


def test_slug_rule() -> None:
    assert command_slug("  My Web  App!! ") == "my-web-app"
    assert command_slug("service:Web_1") == "service:web_1"
    assert command_slug("--__--") == ""


def test_a_services_configured_desired_state_is_kept_and_a_jobs_ignored() -> None:
    config = RuntimeConfig(
        commands=[
            RuntimeCommandSpec(kind="service", name="web", command="serve", desired_state="manual"),
            RuntimeCommandSpec(kind="job", name="seed", command="seed", desired_state="manual"),
            RuntimeCommandSpec(kind="service", name="db", command="postgres"),
        ]
    )

    effective = effective_commands(config, None)

    assert [(c.id, c.desired_state) for c in effective.commands] == [
        ("service:web", "manual"),
        ("job:seed", None),
        ("service:db", None),
    ]
    spec = ServiceSpec(name="api", command="serve", desired_state="stopped")
    (api,) = effective_commands(None, RuntimeConfig(services=[spec])).services
    assert api.desired_state == "stopped"
