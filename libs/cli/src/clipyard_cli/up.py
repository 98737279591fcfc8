"""``clipyard up``: the embedded stack of ARCHITECTURE §7, in the foreground until Ctrl-C.

Start: NATS passwords and the admin key under ``$CLIPYARD_HOME``; the venv's ``nats-server`` with
``deploy/nats/nats.conf``; the five services, each in its own session with its own NATS user;
wait until each answers ping and ``GET /api/health`` answers 200; print the API URL and the key.
With an external NATS (``CLIPYARD_NATS_EXTERNAL=1`` or several servers in ``CLIPYARD_NATS_URL``:
:mod:`clipyard_cli.natsmode`) no nats-server is started and no password generated: the users'
passwords come from ``CLIPYARD_NATS_PASSWORD_<USER>`` (none set: no authorization), a server of
the list must answer, and the services get the whole list; Ctrl-C leaves those servers running.
Run: whichever process exits (nats-server or a service, crash or kill) is said and started again
with backoff (0.5 s doubling to 10 s; a crash loop is said and retried every 10 s), never giving
up; nothing else is stopped, so runtime services keep running through it. ``run/stack.json``
records each process's pid and restarts for ``clipyard status``.
Stop (Ctrl-C or SIGTERM, and only then): ``ws.cmd.runtime_service.stop_all.<node>``, then SIGTERM
each service (5 s each, then SIGKILL), then NATS. Nothing is left running.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Any, TextIO

from clipyard_cli.foreground import until_stopped
from clipyard_cli.home import (
    CLI_USER,
    HomeError,
    ensure_admin_key,
    ensure_passwords,
    passwords_path,
)
from clipyard_cli.localstack import LocalStack
from clipyard_cli.natsmode import external_passwords
from clipyard_cli.probes import StackSettings
from clipyard_cli.runstate import RunLock
from clipyard_cli.stack import SERVICE_LAUNCHES, StackError
from natsbus.connection import redact_url
from servicekit.store_dsn import check_store_dsns

__all__ = ["banner", "run_up"]

_DEFAULT_HANDLERS: dict[signal.Signals, Callable[[int, FrameType | None], Any] | int] = {
    signal.SIGINT: signal.default_int_handler,
    signal.SIGTERM: signal.SIG_DFL,
    signal.SIGHUP: signal.SIG_DFL,
}


def banner(
    settings: StackSettings, admin_key: str, *, key_source: str, authorized: bool = True
) -> str:
    """What ``clipyard up`` prints once everything answers (``authorized``: whether an
    external NATS has users)."""
    api = settings.api_url
    nats = f"{settings.nats_url}   (CLI user `cli`, passwords in {passwords_path(settings.home)})"
    if settings.nats_external:
        how = "users of CLIPYARD_NATS_PASSWORD_<USER>" if authorized else "no authorization"
        nats = f"{redact_url(settings.nats_url)}   (external: {how})"
    return "\n".join(
        [
            "Clipyard is up.",
            f"  API:        {api}   (docs: {api}/docs)",
            f"  admin key:  {admin_key}   ({key_source})",
            f"  NATS:       {nats}",
            f"  home:       {settings.home}   (logs in {settings.home / 'logs'})",
            "Press Ctrl-C to stop.",
        ]
    )


async def run_up(
    env: Mapping[str, str], out: TextIO | None = None, *, skip: Sequence[str] = ()
) -> int:
    """Run the local stack until SIGINT or SIGTERM.

    Args:
        env: The process environment (``CLIPYARD_*`` settings).
        out: Where to print progress.
        skip: Services not to start (names or tokens), to run them with ``clipyard run``.

    Returns:
        The exit code: 0 after a requested stop, 1 when the stack could not start.
    """
    out = sys.stdout if out is None else out
    try:
        settings = StackSettings.from_env(env, skip=skip)
        check_store_dsns(env, (launch.name for launch in SERVICE_LAUNCHES))
        lock = RunLock.acquire(settings.home)
    except (StackError, HomeError, RuntimeError, ValueError) as exc:
        print(f"clipyard up: {exc}", file=sys.stderr)
        return 1
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stopping.set)
    stack: LocalStack | None = None
    code = 1
    try:
        passwords = _passwords(settings, env)
        admin_key = ensure_admin_key(settings.home, env)
        source = "CLIPYARD_ADMIN_KEY" if env.get("CLIPYARD_ADMIN_KEY") else "admin.key"
        stack = LocalStack(settings, env, passwords=passwords, admin_key=admin_key, out=out)
        if await until_stopped(stack.start(), stopping):
            shown = banner(settings, admin_key, key_source=source, authorized=bool(passwords))
            print(shown, file=out, flush=True)
            await stack.watch(stopping)
        code = 0
    except (StackError, HomeError, ValueError) as exc:
        print(f"clipyard up: {exc}", file=sys.stderr, flush=True)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(sig)
            # A second Ctrl-C must not interrupt the orderly stop below.
            signal.signal(sig, signal.SIG_IGN)
        try:
            if stack is not None:
                await stack.shutdown()
        finally:
            lock.release()
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, _DEFAULT_HANDLERS[sig])
    return code


def _passwords(settings: StackSettings, env: Mapping[str, str]) -> dict[str, str]:
    """The NATS users' passwords: generated under the home for the stack's own NATS; for an
    external one, those of the CLI and of each service started, from the environment (empty: no
    authorization).

    Raises:
        ValueError: Some of an external NATS's passwords are set, others not.
    """
    if not settings.nats_external:
        return ensure_passwords(settings.home)
    started = [launch.token for launch in SERVICE_LAUNCHES if launch.name not in settings.skip]
    return external_passwords(env, [CLI_USER, *started])
