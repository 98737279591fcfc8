"""The Clipyard pytest plugin (``-p testkit.plugin``, loaded by the root pytest configuration).

Fixtures:

* ``nats_server`` (session): a real nats-server with JetStream, no authentication: ``.url``,
  ``.port``, ``.monitor_port``, ``.store_dir``. A container when a Docker engine answers, else
  the venv's binary. For a server with users and permissions call
  :func:`testkit.nats_server.start_nats_server` with a config file.
* ``nats_cluster`` (module): a real three-node nats-server cluster with JetStream on loopback
  (the venv's binary, no authentication): ``.urls`` (every node), ``.url`` (comma-joined),
  ``.nodes``, ``stop_node(i)`` / ``start_node(i)``, ``meta_leader()``; ready for R3 streams. A test
  that stops a node starts it again (or the next tests of the module find it stopped). See
  :mod:`testkit.nats_cluster`.
* ``postgres`` (session): a real PostgreSQL 15: ``.dsn`` (``postgresql://`` for psycopg 3).
  ``pg_database``: a fresh database per test, yielding its DSN.
* ``span_recorder``: an in-memory exporter on the global tracer provider (configured through
  ``telemetry.configure_telemetry("tests")``), empty at the start of each test.
* ``clipyard_home``: an empty ``CLIPYARD_HOME`` folder for the test.
* ``service_process``: ``await service_process("workspace_realizer", env={...})`` starts
  ``python -m workspace_realizer`` with ``CLIPYARD_HOME`` and ``CLIPYARD_NATS_URL`` set and waits
  for its micro ping; at teardown each service must exit within 5 s of SIGTERM.
* ``github_api``: a local HTTP server answering like GitHub's REST API for pull requests
  (``.url`` for ``CLIPYARD_GITHUB_API_URL``, ``.token``, ``add_pull_request(...)``, failure
  injection, ``.requests``); see :mod:`testkit.github_api`.
* ``https_git_server``: ``git http-backend`` over TLS with Basic auth on 127.0.0.1 for this test
  (``create_repo(name, files, branches=...)`` → clone URL, ``.ca_path`` for ``GIT_SSL_CAINFO``,
  ``.token``, ``set_token()``, ``.request_log``, ``.host_port``); see :mod:`testkit.https_git`.

The session's Python (its venv and the interpreter's own prefix) is listed in
``CLIPYARD_SANDBOX_PATHS`` for every supervisor the tests start, so a contained test service can
run ``sys.executable``; ``CLIPYARD_ALLOWED_ROOTS`` is ``/tmp``, so a test's project workspace may
name its temporary folders; ``CLIPYARD_EGRESS_HOST_NETWORKS`` is ``127.0.8.0/24``, the addresses
of test servers standing for the internet that an egress allowlist may name.

A fixture that cannot get its real server fails the test; nothing is skipped.
Servers are started lazily: a session that uses none of them starts none.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

EGRESS_TEST_NETWORK = "127.0.8.0/24"
"""Where tests put servers standing for the internet (an allowlist may name them)."""

if TYPE_CHECKING:
    from testkit.github_api import FakeGitHubApi
    from testkit.https_git import HttpsGitServer
    from testkit.nats_cluster import NatsCluster
    from testkit.nats_server import NatsServer
    from testkit.postgres import PostgresServer
    from testkit.service_factory import ServiceProcessFactory
    from testkit.spans import SpanRecorder

__all__ = [
    "EGRESS_TEST_NETWORK",
    "clipyard_home",
    "github_api",
    "https_git_server",
    "nats_cluster",
    "nats_server",
    "pg_database",
    "postgres",
    "service_process",
    "span_recorder",
    "span_recorder_session",
]


def pytest_configure(config: pytest.Config) -> None:
    """Register the markers the testkit's users rely on (no-op if already declared), and show
    the session's Python in every sandbox."""
    os.environ.setdefault("CLIPYARD_SANDBOX_PATHS", sandbox_paths())
    # The operator's grant of the host's temporary folders to every company of a test stack
    # (tests of the refusal unset it).
    os.environ.setdefault("CLIPYARD_ALLOWED_ROOTS", "/tmp")
    # The test hosts standing for the internet that an egress allowlist may name (any other
    # address of this host stays out of reach, whatever a test's allowlist says).
    os.environ.setdefault("CLIPYARD_EGRESS_HOST_NETWORKS", EGRESS_TEST_NETWORK)
    config.addinivalue_line(
        "markers", "integration: crosses real processes (nats-server, PostgreSQL, git)"
    )
    config.addinivalue_line("markers", "e2e: the whole stack as real processes, through HTTP")


def sandbox_paths() -> str:
    """The folders a contained test command needs to run the session's Python."""
    folders = {
        str(Path(sys.prefix).resolve()),
        str(Path(sys.base_prefix).resolve()),
        str(Path(sys.executable).resolve().parent.parent),
    }
    return ":".join(sorted(folders))


@pytest.fixture(scope="session")
def nats_server() -> Iterator[NatsServer]:
    """A nats-server with JetStream for the whole session (container or venv binary)."""
    from testkit.docker import docker_available
    from testkit.nats_server import start_nats_container, start_nats_server

    try:
        server = start_nats_container() if docker_available() else start_nats_server()
    except Exception as error:
        pytest.fail(f"no nats-server for the tests: {error}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def nats_cluster() -> Iterator[NatsCluster]:
    """A three-node nats-server cluster with JetStream for the module (local binaries)."""
    from testkit.nats_cluster import start_nats_cluster

    try:
        cluster = start_nats_cluster()
    except Exception as error:
        pytest.fail(f"no NATS cluster for the tests: {error}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


def _postgres(*, durable: bool, what: str) -> Iterator[PostgresServer]:
    from testkit.docker import docker_available
    from testkit.postgres import start_local_postgres, start_postgres_container

    try:
        if docker_available():
            server = start_postgres_container()
        else:
            server = start_local_postgres(durable=durable)
    except Exception as error:
        pytest.fail(f"no PostgreSQL for the {what}: {error}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def _database(server: PostgresServer) -> Iterator[str]:
    from testkit.postgres import create_database, drop_database

    name = create_database(server.dsn)
    try:
        yield server.dsn_for(name)
    finally:
        drop_database(server.dsn, name)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL 15 server for the whole session (container or local binaries), without
    durability (no fsync: nothing must survive a test run)."""
    yield from _postgres(durable=False, what="tests")


@pytest.fixture
def pg_database(postgres: PostgresServer) -> Iterator[str]:
    """A fresh, empty database for one test; yields its DSN and drops it afterwards."""
    yield from _database(postgres)


@pytest.fixture(scope="session")
def durable_postgres() -> Iterator[PostgresServer]:
    """PostgreSQL as shipped (fsync, synchronous commit, full page writes on; the container's
    defaults, or local binaries with the cluster under ``/tmp``, the root disk on these machines:
    on a tmpfs ``/tmp`` fsync would cost nothing): what the benchmarks compare against."""
    yield from _postgres(durable=True, what="benchmarks")


@pytest.fixture
def durable_pg_database(durable_postgres: PostgresServer) -> Iterator[str]:
    """A fresh database on :func:`durable_postgres`, dropped afterwards."""
    yield from _database(durable_postgres)


@pytest.fixture(scope="session")
def span_recorder_session() -> SpanRecorder:
    """The session's recorder (records only while a test uses ``span_recorder``)."""
    from testkit.spans import install_span_recorder

    return install_span_recorder()


@pytest.fixture
def span_recorder(span_recorder_session: SpanRecorder) -> Iterator[SpanRecorder]:
    """The spans ended during this test (``finished()``, ``by_name(part)``, ``wait_for(part)``)."""
    recorder = span_recorder_session
    recorder.clear()
    recorder.recording = True
    try:
        yield recorder
    finally:
        recorder.recording = False
        recorder.clear()


@pytest.fixture
def clipyard_home(tmp_path: Path) -> Path:
    """An empty ``CLIPYARD_HOME`` for this test."""
    home = tmp_path / "clipyard-home"
    home.mkdir()
    return home


@pytest.fixture
def service_process(
    nats_server: NatsServer, clipyard_home: Path, tmp_path: Path
) -> Iterator[ServiceProcessFactory]:
    """Start service modules as subprocesses; each must stop within 5 s of SIGTERM at teardown."""
    from testkit.service_factory import ServiceProcessFactory

    log_dir = tmp_path / "service-logs"
    log_dir.mkdir()
    base_env = {
        **os.environ,
        "CLIPYARD_HOME": str(clipyard_home),
        "CLIPYARD_NATS_URL": nats_server.url,
        "PYTHONUNBUFFERED": "1",
    }
    factory = ServiceProcessFactory(base_env=base_env, log_dir=log_dir)
    yield factory
    problems = factory.stop_all()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def github_api() -> Iterator[FakeGitHubApi]:
    """A fake GitHub REST API on 127.0.0.1 for this test (stopped afterwards)."""
    from testkit.github_api import start_github_api

    try:
        api = start_github_api()
    except Exception as error:
        pytest.fail(f"no fake GitHub API for the tests: {error}", pytrace=False)
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture
def https_git_server(tmp_path: Path) -> Iterator[HttpsGitServer]:
    """Real git repositories over HTTPS with Basic auth for this test (stopped afterwards)."""
    from testkit.https_git import HttpsGitServer

    try:
        server = HttpsGitServer(tmp_path / "https-git").start()
    except Exception as error:
        pytest.fail(f"no HTTPS git server for the tests: {error}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()
    if server.errors:
        details = "\n".join([*server.errors, *server.backend_log])
        pytest.fail(f"HTTPS git server errors:\n{details}", pytrace=False)
