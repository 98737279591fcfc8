"""Which PostgreSQL DSN a service's event store connects with (ARCHITECTURE §8).

``CLIPYARD_POSTGRES_DSN_<TOKEN>`` (``_GATEWAY``, ``_REALIZER``, ``_SUPERVISOR``, ``_CONTROLLER``,
``_CREDENTIALS``: the service token upper-cased) is that service's own DSN and wins over
``CLIPYARD_POSTGRES_DSN``, the DSN of every service without one. The token is the word the
rest of a service's PostgreSQL identity already uses: its role and schema (``clipyard_<token>``,
``deploy/postgres``), compose's ``CLIPYARD_PG_PASSWORD_<TOKEN>`` and its NATS user; only that
spelling is accepted. A ``CLIPYARD_POSTGRES_DSN_*`` naming no service (``_WORKSPACE_REALIZER``,
a typo) is refused, naming the valid ones, so a DSN meant for one service is never silently
replaced by the common one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from contracts.subjects import SERVICE_NAMES, SERVICES, ServiceToken
from eventstore.settings import postgres_params

__all__ = [
    "COMMON_DSN_VARIABLE",
    "check_dsn_variables",
    "check_store_dsns",
    "dsn_variable",
    "service_dsn",
    "store_dsn",
]

COMMON_DSN_VARIABLE = "CLIPYARD_POSTGRES_DSN"
_PREFIX = COMMON_DSN_VARIABLE + "_"


def dsn_variable(token: ServiceToken) -> str:
    """``CLIPYARD_POSTGRES_DSN_<TOKEN>``: the setting of one service's own DSN."""
    return _PREFIX + token.upper()


def _token(service: str) -> ServiceToken | None:
    """The token of a service name (``workspace-realizer``) or token; None for another name."""
    for token in SERVICES:
        if service in (token, SERVICE_NAMES[token]):
            return token
    return None


def check_dsn_variables(env: Mapping[str, str]) -> None:
    """Refuse every ``CLIPYARD_POSTGRES_DSN_*`` that names no service.

    Raises:
        ValueError: The message names the variable and every valid one.
    """
    valid = {dsn_variable(token) for token in SERVICES}
    for name in sorted(env):
        if not name.startswith(_PREFIX) or name in valid:
            continue
        suffix = name.removeprefix(_PREFIX).lower().replace("_", "-")
        token = _token(suffix)
        hint = f"; for {suffix} use {dsn_variable(token)}" if token else ""
        choices = ", ".join(dsn_variable(token) for token in SERVICES)
        raise ValueError(
            f"{name} names no service{hint}. A service's own DSN is "
            f"CLIPYARD_POSTGRES_DSN_<service token>: one of {choices}"
        )


def service_dsn(env: Mapping[str, str], service: str) -> tuple[str, str] | None:
    """The DSN ``service`` connects with and the variable it came from (None: no DSN set).

    Args:
        env: The environment.
        service: The service's name (``workspace-realizer``) or token (``realizer``); another
            name has no variable of its own and gets ``CLIPYARD_POSTGRES_DSN``.

    Raises:
        ValueError: A ``CLIPYARD_POSTGRES_DSN_*`` names no service.
    """
    check_dsn_variables(env)
    token = _token(service)
    for variable in (dsn_variable(token) if token else None, COMMON_DSN_VARIABLE):
        if variable and env.get(variable):
            return variable, env[variable]
    return None


def store_dsn(env: Mapping[str, str], service: str, kind: str) -> str | None:
    """The DSN of ``service``'s store, checked when the store is PostgreSQL.

    Args:
        env: The environment.
        service: The service's name or token.
        kind: ``CLIPYARD_STORE``.

    Returns:
        The DSN (None when none is set and the store is not PostgreSQL).

    Raises:
        ValueError: A ``CLIPYARD_POSTGRES_DSN_*`` names no service; the store is PostgreSQL and
            no DSN is set, or the DSN does not parse or sets a parameter the store cannot work
            with (the message names the variable).
    """
    chosen = service_dsn(env, service)
    if kind != "postgres":
        return chosen[1] if chosen else None
    if chosen is None:
        token = _token(service)
        own = f"{dsn_variable(token)} or " if token else ""
        raise ValueError(
            f"CLIPYARD_STORE=postgres needs {own}{COMMON_DSN_VARIABLE} "
            "(for example postgresql://clipyard@127.0.0.1:5432/clipyard)"
        )
    variable, dsn = chosen
    postgres_params(dsn, variable=variable)
    return dsn


def check_store_dsns(env: Mapping[str, str], services: Iterable[str]) -> None:
    """Check the store DSN of each of ``services`` as each would at start (``clipyard up``).

    Raises:
        ValueError: See :func:`store_dsn`.
    """
    kind = env.get("CLIPYARD_STORE") or "sqlite"
    for service in services:
        store_dsn(env, service, kind)
