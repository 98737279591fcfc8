"""service_process starts a service module, waits for its micro ping and stops it cleanly."""

from __future__ import annotations

import os
from pathlib import Path

import nats
import pytest

from testkit.nats_server import NatsServer, start_nats_server
from testkit.processes import ServiceStartError, ServiceStopError
from testkit.service_factory import ServiceProcessFactory

pytestmark = pytest.mark.integration

PROBE = "clipyard_probe_service"
PROBE_ENV = {"PYTHONPATH": str(Path(__file__).parent)}


async def _echo(url: str, payload: bytes) -> bytes:
    nc = await nats.connect(url)
    try:
        return (await nc.request("probe.echo", payload, timeout=2)).data
    finally:
        await nc.close()


async def test_a_started_service_answers_and_sees_the_fixture_settings(
    service_process: ServiceProcessFactory, nats_server: NatsServer, clipyard_home: Path
) -> None:
    probe = await service_process(PROBE, env=PROBE_ENV, name="clipyard-probe")
    assert probe.running
    assert (clipyard_home / "probe.pid").read_text() == str(probe.pid)
    assert await _echo(nats_server.url, b"hi") == b"hi"
    assert "probe: ready" in probe.logs()
    # left running on purpose: the fixture's teardown stops it and checks the exit


async def test_terminate_is_graceful(service_process: ServiceProcessFactory) -> None:
    probe = await service_process(PROBE, env=PROBE_ENV, name="clipyard-probe")
    assert await probe.terminate() == 0
    assert not probe.running
    assert "probe: stopped" in probe.logs()


async def test_kill_then_restart(
    service_process: ServiceProcessFactory, nats_server: NatsServer
) -> None:
    probe = await service_process(PROBE, env=PROBE_ENV, name="clipyard-probe")
    first = probe.pid
    assert probe.kill() == -9
    assert "probe: stopped" not in probe.logs()
    await probe.restart()
    assert probe.pid != first
    assert await _echo(nats_server.url, b"again") == b"again"


async def test_a_service_ignoring_sigterm_fails_the_stop(
    service_process: ServiceProcessFactory,
) -> None:
    probe = await service_process(
        PROBE, env={**PROBE_ENV, "PROBE_IGNORE_SIGTERM": "1"}, name="clipyard-probe"
    )
    with pytest.raises(ServiceStopError, match=r"did not exit within 0\.3 s"):
        await probe.terminate(timeout=0.3)
    assert not probe.running
    assert probe.returncode == -9


async def test_a_non_zero_exit_after_sigterm_fails_the_stop(
    service_process: ServiceProcessFactory,
) -> None:
    probe = await service_process(
        PROBE, env={**PROBE_ENV, "PROBE_EXIT_CODE": "4"}, name="clipyard-probe"
    )
    with pytest.raises(ServiceStopError, match="exited with code 4"):
        await probe.terminate()
    assert probe.returncode == 4


async def test_a_crash_at_start_is_reported_with_the_log(
    service_process: ServiceProcessFactory,
) -> None:
    with pytest.raises(ServiceStartError, match="exited with code 3") as raised:
        await service_process(
            PROBE, env={**PROBE_ENV, "PROBE_CRASH_AT_START": "1"}, name="clipyard-probe"
        )
    assert "crashing at start as asked" in str(raised.value)


async def test_a_service_that_never_answers_times_out(
    service_process: ServiceProcessFactory,
) -> None:
    with pytest.raises(ServiceStartError, match="not ready within"):
        await service_process(
            PROBE, env=PROBE_ENV, name="clipyard-probe", ready_subject="nobody.home", timeout=1.0
        )
    (probe,) = service_process.processes
    assert not probe.running


async def test_a_custom_readiness_check(
    service_process: ServiceProcessFactory, clipyard_home: Path
) -> None:
    marker = clipyard_home / "probe.pid"
    probe = await service_process(PROBE, env=PROBE_ENV, name="clipyard-probe", ready=marker.exists)
    assert marker.read_text() == str(probe.pid)


def test_the_sync_variant(service_process: ServiceProcessFactory, clipyard_home: Path) -> None:
    probe = service_process.sync(PROBE, env=PROBE_ENV, name="clipyard-probe")
    assert os.path.exists(f"/proc/{probe.pid}")
    probe.restart_sync()
    assert probe.terminate_sync() == 0


async def test_readiness_uses_the_service_credentials(
    service_process: ServiceProcessFactory, tmp_path: Path
) -> None:
    config = tmp_path / "users.conf"
    config.write_text('authorization { users = [ { user: "probe", password: "pw" } ] }\n')
    server = start_nats_server(config)
    try:
        probe = await service_process(
            PROBE,
            env={
                **PROBE_ENV,
                "CLIPYARD_NATS_URL": server.url,
                "CLIPYARD_NATS_USER": "probe",
                "CLIPYARD_NATS_PASSWORD": "pw",
            },
            name="clipyard-probe",
        )
        assert await probe.terminate() == 0
    finally:
        server.stop()
