"""A throwaway PostgreSQL for tests: a container, or a local cluster run as the ``postgres`` user.

``initdb`` and ``postgres`` refuse to run as root, so under root both are started with
``Popen(user="postgres", group="postgres", extra_groups=[])`` in a folder under ``/tmp`` (its
parents must be traversable by that user). Durability is off (``--no-sync``, ``fsync=off``,
``synchronous_commit=off``, ``full_page_writes=off``): a cluster is ready in about half a second.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import urlsplit, urlunsplit

from testkit.procutil import free_port, parent_death_signal, stop_process, tail

__all__ = [
    "POSTGRES_IMAGE",
    "PostgresError",
    "PostgresServer",
    "create_database",
    "drop_database",
    "postgres_bin_dir",
    "start_local_postgres",
    "start_postgres_container",
    "with_database",
]

POSTGRES_IMAGE = "postgres:15"
PG_BIN_VAR = "CLIPYARD_PG_BIN"
_SERVER_USER = "postgres"


class PostgresError(RuntimeError):
    """PostgreSQL could not be started."""


def postgres_bin_dir() -> Path:
    """Find the PostgreSQL server binaries.

    ``CLIPYARD_PG_BIN`` wins; else ``/usr/lib/postgresql/15/bin``; else the newest
    ``/usr/lib/postgresql/*/bin``; else the folder of ``initdb`` on ``PATH``.

    Returns:
        The folder holding ``initdb`` and ``postgres``.

    Raises:
        PostgresError: No binaries were found.
    """
    candidates: list[Path] = []
    if os.environ.get(PG_BIN_VAR):
        candidates.append(Path(os.environ[PG_BIN_VAR]))
    candidates.append(Path("/usr/lib/postgresql/15/bin"))
    installed = Path("/usr/lib/postgresql").glob("*/bin")
    candidates.extend(
        sorted(
            installed,
            key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
            reverse=True,
        )
    )
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    msg = f"no PostgreSQL server binaries (initdb, postgres) found; set {PG_BIN_VAR}"
    raise PostgresError(msg)


def with_database(dsn: str, database: str) -> str:
    """Return the same ``postgresql://`` URL pointing at another database.

    Args:
        dsn: A URL DSN.
        database: The database name.

    Returns:
        The new URL.
    """
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


class PostgresServer:
    """A running PostgreSQL: ``dsn`` (a plain ``postgresql://`` URL for psycopg 3), ``port``."""

    def __init__(
        self, *, dsn: str, port: int, data_dir: Path | None = None, log_path: Path | None = None
    ) -> None:
        self.dsn = dsn
        self.port = port
        self.data_dir = data_dir
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._container: Any = None
        self._base_dir: Path | None = None

    def dsn_for(self, database: str) -> str:
        """Return the DSN of another database of this server.

        Args:
            database: The database name.

        Returns:
            The URL.
        """
        return with_database(self.dsn, database)

    def logs(self) -> str:
        """Return the server log so far.

        Returns:
            The log text.
        """
        if self._container is not None:
            out, err = self._container.get_logs()
            return bytes(out + err).decode(errors="replace")
        return "" if self.log_path is None else tail(self.log_path, limit=1_000_000)

    def stop(self) -> None:
        """Stop the server (SIGINT: fast shutdown) and remove its folder."""
        if self._container is not None:
            self._container.stop()
            self._container = None
        if self._process is not None:
            stop_process(self._process, signal.SIGINT, timeout=10.0)
            self._process = None
        if self._base_dir is not None:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None


class _RunAs(TypedDict, total=False):
    """The ``subprocess`` arguments that run a command as another user."""

    user: str
    group: str
    extra_groups: list[str]


def _as_server_user() -> _RunAs:
    """Popen arguments that drop root privileges to the ``postgres`` user (none when not root)."""
    if os.geteuid() != 0:
        return {}
    return {"user": _SERVER_USER, "group": _SERVER_USER, "extra_groups": []}


def _connects(dsn: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=2) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.OperationalError:
        return False


def start_local_postgres(timeout: float = 30.0, *, durable: bool = False) -> PostgresServer:
    """Create a cluster in a temporary folder under ``/tmp`` and start it on 127.0.0.1.

    Args:
        timeout: Seconds to wait for the first successful connection.
        durable: Keep PostgreSQL's shipped durability (``fsync``, ``synchronous_commit``, full
            page writes on), as the benchmarks measure it; tests run without.

    Returns:
        The running server (user ``postgres``, trust authentication, database ``postgres``).

    Raises:
        PostgresError: No binaries, ``initdb`` failed, or the server did not accept connections.
    """
    bindir = postgres_bin_dir()
    drop = _as_server_user()
    base = _create_cluster(bindir, drop)
    data, sockets, log_path = base / "data", base / "sockets", base / "postgres.log"
    last_log = ""
    for _ in range(3):  # a port taken between probing and binding: retry with another
        port = free_port()
        server = PostgresServer(
            dsn=f"postgresql://postgres:postgres@127.0.0.1:{port}/postgres",
            port=port,
            data_dir=data,
            log_path=log_path,
        )
        server._base_dir = base
        with log_path.open("ab") as log:
            server._process = subprocess.Popen(
                _server_command(bindir, data, sockets, port, durable=durable),
                cwd=base,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=parent_death_signal(signal.SIGINT),
                **drop,
            )
        process = server._process
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.poll() is None:
            if _connects(server.dsn):
                return server
            time.sleep(0.02)
        stop_process(process, signal.SIGINT, timeout=5.0)
        last_log = tail(log_path)
    shutil.rmtree(base, ignore_errors=True)
    msg = f"PostgreSQL did not accept connections:\n{last_log}"
    raise PostgresError(msg)


def _create_cluster(bindir: Path, drop: _RunAs) -> Path:
    """A fresh cluster (``data/``, ``sockets/``) in a temporary folder under ``/tmp``.

    Raises:
        PostgresError: ``initdb`` failed (the folder is removed).
    """
    base = Path(tempfile.mkdtemp(prefix="clipyard-pg-", dir="/tmp"))
    data, sockets = base / "data", base / "sockets"
    data.mkdir(mode=0o700)
    sockets.mkdir(mode=0o700)
    if drop:
        account = pwd.getpwnam(_SERVER_USER)
        for path in (base, data, sockets):
            os.chown(path, account.pw_uid, account.pw_gid)
    initdb = subprocess.run(
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
            "--no-instructions",
        ],
        cwd=base,
        capture_output=True,
        check=False,
        **drop,
    )
    if initdb.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        output = (initdb.stdout + initdb.stderr).decode(errors="replace")
        msg = f"initdb failed ({initdb.returncode}):\n{output}"
        raise PostgresError(msg)
    return base


def _server_command(
    bindir: Path, data: Path, sockets: Path, port: int, *, durable: bool = False
) -> list[str]:
    """``postgres`` on 127.0.0.1:``port``, tuned for tests (no fsync: nothing must survive)
    unless ``durable``."""
    command = [
        str(bindir / "postgres"),
        "-D",
        str(data),
        "-p",
        str(port),
        "-k",
        str(sockets),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "max_connections=300",
    ]
    if durable:
        return command
    return [
        *command,
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
    ]


def start_postgres_container(image: str = POSTGRES_IMAGE) -> PostgresServer:
    """Start PostgreSQL in a container (needs a Docker engine).

    Args:
        image: The image.

    Returns:
        The running server.
    """
    from testcontainers.community.postgres import PostgresContainer

    container = PostgresContainer(image, driver=None)
    container.start()
    dsn = container.get_connection_url()
    server = PostgresServer(dsn=dsn, port=int(container.get_exposed_port(5432)))
    server._container = container
    return server


def create_database(admin_dsn: str, prefix: str = "t_") -> str:
    """Create a fresh, uniquely named database.

    Args:
        admin_dsn: A DSN allowed to ``CREATE DATABASE``.
        prefix: The name's prefix.

    Returns:
        The new database's name.
    """
    import psycopg
    from psycopg import sql

    name = f"{prefix}{uuid.uuid4().hex}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def drop_database(admin_dsn: str, name: str) -> None:
    """Drop a database, disconnecting whoever still uses it.

    Args:
        admin_dsn: A DSN allowed to ``DROP DATABASE``.
        name: The database.
    """
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
