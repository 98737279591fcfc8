"""Which PostgreSQL DSN each service's store gets: its own ``CLIPYARD_POSTGRES_DSN_<TOKEN>``, else
``CLIPYARD_POSTGRES_DSN``; a variable naming no service, or a DSN the store cannot use, stops the
start naming the variable."""

from __future__ import annotations

import pytest

from contracts.subjects import SERVICE_NAMES
from servicekit import ServiceSettings, SettingsError
from servicekit.store_dsn import check_store_dsns, dsn_variable, service_dsn, store_dsn

COMMON = "postgresql://clipyard@db:5432/clipyard"
GATEWAY = "postgresql://clipyard_gateway:gw-secret@db:5432/clipyard"
REALIZER = "host=db1,db2 port=5432,5433 user=clipyard_realizer target_session_attrs=read-write"


def _postgres(**dsns: str) -> dict[str, str]:
    return {"CLIPYARD_STORE": "postgres", **dsns}


def test_a_services_own_dsn_wins_over_the_common_one() -> None:
    env = _postgres(
        CLIPYARD_POSTGRES_DSN=COMMON,
        CLIPYARD_POSTGRES_DSN_GATEWAY=GATEWAY,
        CLIPYARD_POSTGRES_DSN_REALIZER=REALIZER,
    )
    assert ServiceSettings.from_env("api-gateway", env).store.postgres_dsn == GATEWAY
    assert ServiceSettings.from_env("workspace-realizer", env).store.postgres_dsn == REALIZER
    # A service without its own gets the common one.
    assert ServiceSettings.from_env("heartbeat-controller", env).store.postgres_dsn == COMMON
    assert ServiceSettings.from_env("git-credentials", env).store.postgres_dsn == COMMON


def test_the_variable_is_the_service_token_upper_cased() -> None:
    assert dsn_variable("realizer") == "CLIPYARD_POSTGRES_DSN_REALIZER"
    env = {"CLIPYARD_POSTGRES_DSN_SUPERVISOR": GATEWAY}
    # Name or token of the service: the same variable.
    assert service_dsn(env, "runtime-supervisor") == ("CLIPYARD_POSTGRES_DSN_SUPERVISOR", GATEWAY)
    assert service_dsn(env, "supervisor") == ("CLIPYARD_POSTGRES_DSN_SUPERVISOR", GATEWAY)
    assert service_dsn(env, "api-gateway") is None
    # An empty value is unset, as for every setting.
    assert service_dsn(
        {"CLIPYARD_POSTGRES_DSN_GATEWAY": "", "CLIPYARD_POSTGRES_DSN": COMMON}, "api-gateway"
    ) == ("CLIPYARD_POSTGRES_DSN", COMMON)


def test_a_service_alone_needs_only_its_own_dsn() -> None:
    env = _postgres(CLIPYARD_POSTGRES_DSN_GATEWAY=GATEWAY)
    assert ServiceSettings.from_env("api-gateway", env).store.postgres_dsn == GATEWAY
    with pytest.raises(SettingsError) as caught:
        ServiceSettings.from_env("workspace-realizer", env)
    assert "CLIPYARD_POSTGRES_DSN_REALIZER or CLIPYARD_POSTGRES_DSN" in str(caught.value)


@pytest.mark.parametrize(
    ("variable", "hint"),
    [
        (
            "CLIPYARD_POSTGRES_DSN_WORKSPACE_REALIZER",
            "for workspace-realizer use CLIPYARD_POSTGRES_DSN_REALIZER",
        ),
        ("CLIPYARD_POSTGRES_DSN_API_GATEWAY", "for api-gateway use CLIPYARD_POSTGRES_DSN_GATEWAY"),
        ("CLIPYARD_POSTGRES_DSN_REALISER", None),
        ("CLIPYARD_POSTGRES_DSN_", None),
    ],
)
def test_a_variable_naming_no_service_is_refused_naming_the_valid_ones(
    variable: str, hint: str | None
) -> None:
    # Refused whatever the store: a DSN meant for one service must never be replaced silently
    # by the common one.
    for store in ("postgres", "sqlite"):
        env = {"CLIPYARD_STORE": store, "CLIPYARD_POSTGRES_DSN": COMMON, variable: GATEWAY}
        with pytest.raises(SettingsError) as caught:
            ServiceSettings.from_env("api-gateway", env)
        message = str(caught.value)
        assert message.startswith(f"{variable} names no service")
        for token in SERVICE_NAMES:
            assert dsn_variable(token) in message
        if hint:
            assert hint in message
        assert "gw-secret" not in message


def test_each_dsn_is_checked_under_the_name_it_came_from() -> None:
    standby = "postgresql://u:pw-secret@db1,db2/x?target_session_attrs=standby"
    env = _postgres(CLIPYARD_POSTGRES_DSN=COMMON, CLIPYARD_POSTGRES_DSN_CONTROLLER=standby)
    with pytest.raises(SettingsError) as caught:
        ServiceSettings.from_env("heartbeat-controller", env)
    message = str(caught.value)
    assert message.startswith("CLIPYARD_POSTGRES_DSN_CONTROLLER sets target_session_attrs")
    assert "pw-secret" not in message
    # The other services do not use it.
    assert ServiceSettings.from_env("api-gateway", env).store.postgres_dsn == COMMON
    unparsable = _postgres(CLIPYARD_POSTGRES_DSN="password=hunter2 nonsense")
    with pytest.raises(SettingsError, match=r"^CLIPYARD_POSTGRES_DSN is not a libpq") as caught:
        ServiceSettings.from_env("api-gateway", unparsable)
    assert "hunter2" not in str(caught.value)


def test_the_ha_parameters_are_accepted() -> None:
    env = _postgres(
        CLIPYARD_POSTGRES_DSN=(
            "postgresql://u@db1:5432,db2:5433/clipyard?target_session_attrs=read-write"
            "&sslmode=verify-full&sslrootcert=/etc/ssl/pg-ca.pem"
        )
    )
    store = ServiceSettings.from_env("api-gateway", env).store
    assert store.postgres_dsn == env["CLIPYARD_POSTGRES_DSN"]


def test_sqlite_ignores_the_dsns_and_the_stack_check_covers_every_service() -> None:
    env = {"CLIPYARD_POSTGRES_DSN_GATEWAY": "not a dsn at all"}
    assert store_dsn(env, "api-gateway", "sqlite") == "not a dsn at all"
    check_store_dsns(env, SERVICE_NAMES.values())  # sqlite: nothing to check
    env = _postgres(CLIPYARD_POSTGRES_DSN_GATEWAY=GATEWAY, CLIPYARD_POSTGRES_DSN_REALIZER=REALIZER)
    with pytest.raises(ValueError, match="CLIPYARD_POSTGRES_DSN_SUPERVISOR or"):
        check_store_dsns(env, SERVICE_NAMES.values())
