"""Which NATS the stack uses, its own or an external one, and how each process logs in to it.

Embedded (the default): ``CLIPYARD_NATS_URL`` names one server (``nats://127.0.0.1:4222``).
``clipyard up`` starts its own nats-server there with ``deploy/nats/nats.conf`` and the
passwords it generates into ``$CLIPYARD_HOME/nats/passwords.json``, which the CLI reads too.

External: ``CLIPYARD_NATS_EXTERNAL=1``, or ``CLIPYARD_NATS_URL`` naming more than one server (a
cluster; ``CLIPYARD_NATS_EXTERNAL=0`` with several is refused). ``clipyard up`` starts no
nats-server and generates no password: it checks that a server of the list answers and starts the
services against the whole list. The logins are the users of ``deploy/nats/nats.conf`` with the
passwords the servers were started with, read from ``CLIPYARD_NATS_PASSWORD_<USER>`` (the very
variables that file reads and docker compose's ``.env`` holds, written by ``clipyard
compose-env``): all the users a command needs, or none at all, which means servers without
authorization (everyone connects without a user).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from clipyard_cli.home import load_passwords, password_env_var, resolve_home
from natsbus.urls import DEFAULT_NATS_URL, NatsUrl, parse_nats_urls

__all__ = [
    "EXTERNAL_SETTING",
    "NO_ANSWER_FIX",
    "external_passwords",
    "nats_external",
    "nats_password",
    "nats_urls",
]

EXTERNAL_SETTING: Final = "CLIPYARD_NATS_EXTERNAL"
NO_ANSWER_FIX: Final = (
    "Start those servers or fix CLIPYARD_NATS_URL (unset it and CLIPYARD_NATS_EXTERNAL to let "
    "`clipyard up` start its own)"
)
"""What to do when no server of an external NATS answers."""
_YES: Final = frozenset({"1", "true", "yes", "on"})
_NO: Final = frozenset({"0", "false", "no", "off"})


def nats_urls(env: Mapping[str, str]) -> tuple[NatsUrl, ...]:
    """The servers of ``CLIPYARD_NATS_URL`` (default ``nats://127.0.0.1:4222``).

    Raises:
        NatsUrlError: The value is not a usable list; the message names the entry.
    """
    return parse_nats_urls(env.get("CLIPYARD_NATS_URL") or DEFAULT_NATS_URL)


def nats_external(env: Mapping[str, str], servers: Sequence[NatsUrl] | None = None) -> bool:
    """Whether the stack's NATS is external: ``CLIPYARD_NATS_EXTERNAL``, else whether
    ``CLIPYARD_NATS_URL`` names more than one server.

    Args:
        env: The environment.
        servers: :func:`nats_urls` ``(env)``, if already read.

    Raises:
        ValueError: ``CLIPYARD_NATS_EXTERNAL`` is not a yes or no, or says no to several servers.
    """
    servers = nats_urls(env) if servers is None else servers
    raw = (env.get(EXTERNAL_SETTING) or "").strip()
    if not raw:
        return len(servers) > 1
    if raw.lower() in _YES:
        return True
    if raw.lower() not in _NO:
        raise ValueError(
            f"{EXTERNAL_SETTING}={raw!r} is neither 1 nor 0: set 1 to use the NATS servers of "
            "CLIPYARD_NATS_URL as they are, 0 (or unset) to let `clipyard up` start its own"
        )
    if len(servers) > 1:
        raise ValueError(
            f"{EXTERNAL_SETTING}={raw!r} asks `clipyard up` to start its own nats-server, but "
            f"CLIPYARD_NATS_URL names {len(servers)} servers: unset {EXTERNAL_SETTING} to use "
            "them, or name one server"
        )
    return False


def external_passwords(env: Mapping[str, str], users: Iterable[str]) -> dict[str, str]:
    """The external servers' passwords of ``users``, from ``CLIPYARD_NATS_PASSWORD_<USER>``.

    Args:
        env: The environment.
        users: The NATS users the command connects as (``cli`` and the services it starts).

    Returns:
        User -> password for every one of ``users``, or empty when none is set (servers
        without authorization).

    Raises:
        ValueError: Some are set and some not; the message names the missing variables.
    """
    given = {user: env.get(password_env_var(user)) or "" for user in users}
    missing = [password_env_var(user) for user, password in given.items() if not password]
    if len(missing) == len(given):
        return {}
    if missing:
        raise ValueError(
            f"the external NATS needs a password for each user, but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set: set every "
            "CLIPYARD_NATS_PASSWORD_<USER> the servers were started with (docker compose's "
            "`.env`: `set -a; . ./.env; set +a`), or none for servers without authorization"
        )
    return given


def nats_password(
    env: Mapping[str, str], user: str, servers: Sequence[NatsUrl] | None = None
) -> str | None:
    """The password ``user`` connects with from this environment (the CLI, ``clipyard run``).

    ``CLIPYARD_NATS_PASSWORD`` when set; else, for an external NATS, ``CLIPYARD_NATS_PASSWORD_
    <USER>`` (None when unset: servers without authorization); else the one ``clipyard up``
    generated into ``$CLIPYARD_HOME/nats/passwords.json``.

    Raises:
        HomeError: The stack's own NATS, and no password file yet.
        ValueError: ``CLIPYARD_NATS_URL`` or ``CLIPYARD_NATS_EXTERNAL`` is unusable.
    """
    given = env.get("CLIPYARD_NATS_PASSWORD")
    if given:
        return given
    if nats_external(env, servers):
        return external_passwords(env, [user]).get(user)
    return load_passwords(resolve_home(env)).get(user)
