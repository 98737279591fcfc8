"""The PostgreSQL of ``clipyard cluster up``: a throwaway server owned by the stack, with one role
and schema per service.

Started the way the test kit starts one (``testkit.postgres.start_local_postgres``): the host's
``initdb`` and ``postgres`` (``CLIPYARD_PG_BIN``, else ``/usr/lib/postgresql/<newest>/bin``), a
cluster in a fresh folder under ``/tmp`` (under root, owned by and run as the ``postgres``
user, which ``initdb`` and ``postgres`` insist on, and which could not reach a home under
``/root``), durability off (the data lives as long as the stack does; the folder is removed
at stop). Unlike the test kit's it checks passwords: TCP connections log in with SCRAM, and
only the server's own user (and root) can reach its Unix socket, where ``postgres`` logs in
without one.

Database ``clipyard`` gets the roles and schemas of docker compose, by running compose's own
``deploy/postgres/10-clipyard-schemas.sh`` with ``psql`` on the socket: role
``clipyard_<token>`` per service (password generated per start), owning schema
``clipyard_<token>`` and nothing else (git-credentials also ``git_credentials_vault``). Each
service connects with its role's DSN (:attr:`ClusterPostgres.service_dsns`).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from clipyard_cli.clusterprocs import RunAs, spawn_child, stop_child
from clipyard_cli.home import generate_secret
from clipyard_cli.runstate import run_dir
from clipyard_cli.stack import ManagedProcess, StackError
from contracts.subjects import SERVICES, ServiceToken

__all__ = ["DATABASE", "ClusterPostgres", "find_roles_script", "postgres_bin_dir"]

DATABASE: Final = "clipyard"
SUPERUSER: Final = "postgres"
_SERVER_USER: Final = "postgres"
_SCRIPT_PARTS: Final = ("deploy", "postgres", "10-clipyard-schemas.sh")
_SETTINGS: Final = (
    "listen_addresses=127.0.0.1",
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=300",
)


def postgres_bin_dir(env: Mapping[str, str]) -> Path:
    """The folder of ``initdb``, ``postgres`` and ``psql``: ``CLIPYARD_PG_BIN``, else the newest
    ``/usr/lib/postgresql/*/bin``, else where ``initdb`` is on ``PATH``.

    Raises:
        StackError: None found.
    """
    candidates = [Path(env["CLIPYARD_PG_BIN"])] if env.get("CLIPYARD_PG_BIN") else []
    installed = Path("/usr/lib/postgresql").glob("*/bin")
    candidates += sorted(installed, key=_major_version, reverse=True)
    on_path = shutil.which("initdb")
    candidates += [Path(on_path).parent] if on_path else []
    for folder in candidates:
        if all((folder / tool).is_file() for tool in ("initdb", "postgres", "psql")):
            return folder
    raise StackError(
        "no PostgreSQL server binaries (initdb, postgres, psql) found: install postgresql-15 "
        "(`./dev` does) or set CLIPYARD_PG_BIN to their folder"
    )


def _major_version(bindir: Path) -> int:
    """15 for ``/usr/lib/postgresql/15/bin`` (0 for a folder not named so)."""
    return int(bindir.parent.name) if bindir.parent.name.isdigit() else 0


def find_roles_script(start: Path | None = None) -> Path:
    """``deploy/postgres/10-clipyard-schemas.sh``, found upwards from ``start`` (default: the
    current folder), then from this package (an editable install lives in the repository).

    Raises:
        StackError: Not found.
    """
    for origin in (start or Path.cwd(), Path(__file__).resolve().parent):
        for folder in (origin, *origin.parents):
            candidate = folder.joinpath(*_SCRIPT_PARTS)
            if candidate.is_file():
                return candidate
    raise StackError("deploy/postgres/10-clipyard-schemas.sh not found: run from the repository")


class ClusterPostgres:
    """One PostgreSQL server for the whole local cluster."""

    def __init__(self, home: Path, env: Mapping[str, str]) -> None:
        """Prepare (nothing starts before :meth:`start`)."""
        self.home = home
        self._env = dict(env)
        self.port = 0
        self.base: Path | None = None
        self.process: ManagedProcess | None = None
        self.superuser_password = generate_secret("pg")
        self.role_passwords: dict[ServiceToken, str] = {t: generate_secret("pg") for t in SERVICES}

    @property
    def dsn(self) -> str:
        """The superuser's DSN (password included) of database ``clipyard``."""
        return self._dsn(SUPERUSER, self.superuser_password)

    @property
    def shown_dsn(self) -> str:
        """The superuser's DSN without its password."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def service_dsns(self) -> dict[ServiceToken, str]:
        """Each service's DSN: its own role ``clipyard_<token>``, password included."""
        return {t: self._dsn(f"clipyard_{t}", p) for t, p in self.role_passwords.items()}

    def _dsn(self, user: str, password: str) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{DATABASE}"

    async def start(self, timeout: float, port: int = 0) -> None:
        """Create the cluster, start the server on ``port`` (0: one free now), create the roles
        and schemas.

        Raises:
            StackError: Something failed (the server's log or the tool's output in the message).
        """
        bindir = postgres_bin_dir(self._env)
        script = find_roles_script()
        await asyncio.to_thread(self._sweep_stale)
        self.port = port or _free_port()
        self.base = await asyncio.to_thread(self._initdb, bindir)
        argv = [str(bindir / "postgres"), "-D", str(self.base / "data"), "-p", str(self.port)]
        argv += ["-k", str(self.base / "sockets")]
        for setting in _SETTINGS:
            argv += ["-c", setting]
        self.process = spawn_child(
            "postgres",
            argv,
            {"PATH": self._env.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
            self.home,
            death_signal=signal.SIGINT,
            run_as=_as_server_user(),
            cwd=self.base,
        )
        await self._wait_accepting(bindir, timeout)
        await asyncio.to_thread(self._run, bindir, ["psql", "-c", f"CREATE DATABASE {DATABASE}"])
        await asyncio.to_thread(self._run, bindir, ["sh", str(script)])

    async def stop(self) -> None:
        """Stop the server (SIGINT: fast shutdown; SIGKILL after 10 s) and remove its folder."""
        process, self.process = self.process, None
        if process is not None:
            await asyncio.to_thread(stop_child, process, signal.SIGINT, 10.0)
        if self.base is not None:
            await asyncio.to_thread(shutil.rmtree, self.base, True)
            self.base = None
            self._record.unlink(missing_ok=True)

    @property
    def _record(self) -> Path:
        """``run/cluster-postgres``: the server's folder, for the sweep after a killed owner."""
        return run_dir(self.home) / "cluster-postgres"

    def _sweep_stale(self) -> None:
        """Remove the folder a killed predecessor on this home left under ``/tmp`` (its server
        got SIGINT from Linux when that owner died), unless its server still runs."""
        try:
            stale = Path(self._record.read_text(encoding="utf-8").strip())
        except OSError:
            return
        if stale.name.startswith("clipyard-cluster-pg-") and not _server_alive(stale / "data"):
            shutil.rmtree(stale, ignore_errors=True)
        self._record.unlink(missing_ok=True)

    def _initdb(self, bindir: Path) -> Path:
        base = Path(tempfile.mkdtemp(prefix="clipyard-cluster-pg-", dir="/tmp"))
        self._record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._record.write_text(f"{base}\n", encoding="utf-8")
        data, sockets, pwfile = base / "data", base / "sockets", base / "superuser.pw"
        data.mkdir(mode=0o700)
        sockets.mkdir(mode=0o700)
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(self.superuser_password + "\n")
        run_as = _as_server_user()
        if run_as:
            account = pwd.getpwnam(_SERVER_USER)
            for path in (base, data, sockets, pwfile):
                os.chown(path, account.pw_uid, account.pw_gid)
        argv = [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "-E", "UTF8"]
        argv += ["--locale=C.UTF-8", "--no-sync", "--no-instructions", f"--pwfile={pwfile}"]
        argv += ["--auth-local=trust", "--auth-host=scram-sha-256"]
        done = subprocess.run(argv, cwd=base, capture_output=True, check=False, **run_as)
        pwfile.unlink()
        if done.returncode != 0:
            shutil.rmtree(base, ignore_errors=True)
            output = (done.stdout + done.stderr).decode(errors="replace")
            raise StackError(f"initdb failed ({done.returncode}):\n{output}")
        return base

    async def _wait_accepting(self, bindir: Path, timeout: float) -> None:
        assert self.process is not None
        assert self.base is not None
        deadline = time.monotonic() + timeout
        argv = [str(bindir / "pg_isready"), "-q", "-h", str(self.base / "sockets")]
        argv += ["-p", str(self.port)]
        while time.monotonic() < deadline:
            if not self.process.alive():
                break
            done = await asyncio.to_thread(subprocess.run, argv, check=False)
            if done.returncode == 0:
                return
            await asyncio.sleep(0.05)
        raise StackError(
            f"PostgreSQL did not accept connections on 127.0.0.1:{self.port}; its log "
            f"({self.process.log_path}) ends with:\n{self.process.log_tail()}"
        )

    def _run(self, bindir: Path, argv: list[str]) -> None:
        """Run a ``psql`` command or script as the superuser on the server's socket."""
        assert self.base is not None
        env = {
            "PATH": f"{bindir}:{self._env.get('PATH', '/usr/bin:/bin')}",
            "PGHOST": str(self.base / "sockets"),
            "PGPORT": str(self.port),
            "PGUSER": SUPERUSER,
            "PGDATABASE": DATABASE,
            "POSTGRES_USER": SUPERUSER,
            "POSTGRES_DB": DATABASE,
            **{f"CLIPYARD_PG_PASSWORD_{t.upper()}": p for t, p in self.role_passwords.items()},
        }
        if argv[0] == "psql":
            argv = [argv[0], "-v", "ON_ERROR_STOP=1", "--no-psqlrc", "-d", SUPERUSER, *argv[1:]]
        done = subprocess.run(argv, env=env, capture_output=True, check=False, timeout=60)
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace")
            raise StackError(f"{' '.join(argv[:2])} failed ({done.returncode}):\n{output}")


def _as_server_user() -> RunAs:
    """Popen arguments that drop root to the ``postgres`` user (none when not root)."""
    if os.geteuid() != 0:
        return {}
    return {"user": _SERVER_USER, "group": _SERVER_USER, "extra_groups": []}


def _server_alive(data: Path) -> bool:
    """Whether the postmaster of ``data`` (``postmaster.pid``'s first line) still runs."""
    try:
        pid = int((data / "postmaster.pid").read_text(encoding="ascii").split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return False
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
