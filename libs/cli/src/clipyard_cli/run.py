"""``clipyard run <service>``: one service in the foreground, with the local stack's settings.

For working on one service: it gets the same environment ``clipyard up`` would give it (its NATS
user and password from ``$CLIPYARD_HOME``, the admin key for the gateway), and replaces this
process, so Ctrl-C reaches it directly. NATS must be running: ``clipyard up --skip <service>`` in
another terminal. A service the running stack already runs is refused (two writers of one store).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from clipyard_cli.home import HomeError, ensure_admin_key, resolve_home
from clipyard_cli.natsmode import nats_password, nats_urls
from clipyard_cli.runstate import lock_holder, read_records
from clipyard_cli.stack import SERVICE_LAUNCHES, ServiceLaunch, resolve_service, service_env

__all__ = ["run_env", "run_service"]


def run_env(env: Mapping[str, str], launch: ServiceLaunch) -> dict[str, str]:
    """The environment of ``launch`` run alone: the stack's, unless the caller set NATS login
    (an external NATS: :mod:`clipyard_cli.natsmode`)."""
    home = resolve_home(env)
    servers = nats_urls(env)
    result = service_env(
        env,
        launch,
        home=home,
        nats_url=",".join(one.url for one in servers),
        password=nats_password(env, launch.token, servers),
        admin_key=ensure_admin_key(home, env),
    )
    if env.get("CLIPYARD_NATS_USER"):
        result["CLIPYARD_NATS_USER"] = env["CLIPYARD_NATS_USER"]
    return result


def run_service(env: Mapping[str, str], service: str) -> int:
    """Replace this process with ``python -m <service module>``; returns only on failure.

    Raises:
        HomeError: The stack of this home already runs the service.
    """
    token = resolve_service(service)
    launch = next(one for one in SERVICE_LAUNCHES if one.token == token)
    home = resolve_home(env)
    kept = read_records(home).get(launch.name) if lock_holder(home) is not None else None
    # A service waiting for its restart counts: the stack starts it again in a moment.
    if kept is not None and (kept.pid is None or _alive(kept.pid)):
        how = f"pid {kept.pid}" if kept.pid is not None else "restarting it"
        raise HomeError(
            f"the stack of {home} already runs {launch.name} ({how}); start it with "
            f"`clipyard up --skip {launch.name}` to run that service here"
        )
    argv = [sys.executable, "-m", launch.module]
    os.execve(sys.executable, argv, run_env(env, launch))
    return 1  # pragma: no cover - execve does not return


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
