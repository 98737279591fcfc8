"""Readiness of real services: http, tcp and log, a service that exits first (case 57), timeouts."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from functools import partial

import httpx
import pytest

from contracts.workspace_config import HttpReadiness, LogReadiness, TcpReadiness
from runtime_supervisor.adapters.process import (
    NotReady,
    Spawned,
    read_status,
    stop_group,
    wait_ready,
)

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _http_server(port: int, delay: float = 0.3) -> str:
    return f"sleep {delay}; exec {sys.executable} -m http.server {port} --bind 127.0.0.1"


@pytest.mark.parametrize("kind", ["http", "tcp"])
async def test_an_http_server_becomes_ready_and_stops_with_its_port_released(
    spawn, kind: str
) -> None:
    port = _free_port()
    service = await spawn(_http_server(port))
    url = f"http://127.0.0.1:{port}/"
    readiness = HttpReadiness(url_template=url) if kind == "http" else TcpReadiness()
    started = time.monotonic()
    await wait_ready(
        readiness, url=url, port=port, log_path=service.log_path, timeout=20,
        exited=partial(read_status, service.run_dir),
    )  # fmt: skip
    assert time.monotonic() - started >= 0.3  # not before the server listened
    async with httpx.AsyncClient(trust_env=False) as client:
        assert (await client.get(url)).status_code == 200
    outcome = await stop_group(service.pgid, grace=5)
    assert outcome.outcome == "terminated"
    status = read_status(service.run_dir)
    assert status is not None
    assert status.clean
    assert _bindable(port)


async def _until_answering(url: str, timeout: float = 20) -> None:
    """Wait until ``url`` answers 200 (the server has started: its start-up is not the test's)."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(trust_env=False) as client:
        while True:
            try:
                if (await client.get(url, timeout=5)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"{url} did not answer within {timeout}s"
            await asyncio.sleep(0.05)


async def _until_in_log(service: Spawned, text: str, timeout: float = 10) -> None:
    """Wait until ``text`` is in the service's log."""
    deadline = time.monotonic() + timeout
    while text not in service.log_path.read_text():
        assert time.monotonic() < deadline, f"{text!r} not in the log within {timeout}s"
        await asyncio.sleep(0.02)


async def test_http_readiness_wants_2xx_or_3xx(spawn) -> None:
    port = _free_port()
    service = await spawn(_http_server(port, delay=0))
    await _until_answering(f"http://127.0.0.1:{port}/")
    with pytest.raises(NotReady, match=r"^not ready after 1s$"):
        await wait_ready(
            HttpReadiness(url_template="x"), url=f"http://127.0.0.1:{port}/missing", port=port,
            log_path=service.log_path, timeout=1, exited=partial(read_status, service.run_dir),
        )  # fmt: skip
    # It was answering the probes, with 404 (http.server logs a request before it answers).
    assert '"GET /missing HTTP/1.1" 404' in service.log_path.read_text()


async def test_log_readiness_waits_for_the_pattern_in_new_output(spawn, tmp_path) -> None:
    # The line is written only once the test opens the gate.
    gate = tmp_path / "gate"
    service = await spawn(
        f"while [ ! -e {gate} ]; do sleep 0.01; done; echo 'server listening on 8080'; sleep 60",
        name="log",
    )
    waiting = asyncio.create_task(
        wait_ready(
            LogReadiness(pattern=r"listening on \d+"), url=None, port=None,
            log_path=service.log_path, timeout=20, exited=partial(read_status, service.run_dir),
        )
    )  # fmt: skip
    try:
        await asyncio.sleep(0.3)
        assert not waiting.done()  # not ready without the line
        gate.touch()
        await asyncio.wait_for(waiting, 10)
    finally:
        waiting.cancel()
        await asyncio.wait({waiting})
    await stop_group(service.pgid, grace=5)
    # The same log file, appended by a second start: the old line must not count.
    offset = service.log_path.stat().st_size
    again = await spawn("sleep 60", name="log")
    with pytest.raises(NotReady, match=r"^not ready after 0\.5s$"):
        await wait_ready(
            LogReadiness(pattern=r"listening on \d+"), url=None, port=None,
            log_path=again.log_path, timeout=0.5, exited=partial(read_status, again.run_dir),
            log_offset=offset,
        )  # fmt: skip


async def test_a_log_match_split_across_reads_is_found(spawn) -> None:
    service = await spawn("printf 'ready'; sleep 0.3; printf ' now\\n'; sleep 60")
    await wait_ready(
        LogReadiness(pattern="ready now"), url=None, port=None, log_path=service.log_path,
        timeout=5, interval=0.05, exited=partial(read_status, service.run_dir),
    )  # fmt: skip


async def test_a_service_that_exits_before_readiness_fails_with_its_last_output(spawn) -> None:
    """Reference case 57."""
    port = _free_port()
    service = await spawn("echo 'fatal: DATABASE missing'; exit 3")
    started = time.monotonic()
    with pytest.raises(NotReady) as raised:
        await wait_ready(
            HttpReadiness(url_template="x"), url=f"http://127.0.0.1:{port}/", port=port,
            log_path=service.log_path, timeout=30, exited=partial(read_status, service.run_dir),
        )  # fmt: skip
    assert raised.value.message == "service process exited before readiness (exit 3)"
    assert "fatal: DATABASE missing" in raised.value.last_output
    assert time.monotonic() - started < 5  # not the 30 s timeout


async def test_timeout_names_its_length_and_keeps_the_output(spawn) -> None:
    port = _free_port()
    service = await spawn("echo 'still booting'; sleep 60")
    await _until_in_log(service, "still booting\n")  # the shell's start-up is not the test's
    started = time.monotonic()
    with pytest.raises(NotReady) as raised:
        await wait_ready(
            TcpReadiness(), url=None, port=port, log_path=service.log_path, timeout=0.5,
            exited=partial(read_status, service.run_dir),
        )  # fmt: skip
    assert raised.value.message == "not ready after 0.5s"
    assert raised.value.last_output == "still booting\n"
    assert 0.5 <= time.monotonic() - started < 5  # the timeout, not far beyond it


class _Probes:
    """Counts the readiness loop's rounds: it asks whether the service ended before each probe."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self) -> None:
        self.times.append(time.monotonic())

    def gaps(self) -> list[float]:
        return [b - a for a, b in zip(self.times, self.times[1:], strict=False)]


async def test_no_readiness_is_ready_once_spawned(spawn) -> None:
    service = await spawn("sleep 60")
    probes = _Probes()
    started = time.monotonic()
    await wait_ready(
        None, url=None, port=None, log_path=service.log_path, timeout=10, exited=probes,
    )  # fmt: skip
    assert probes.times == []  # nothing probed, nothing waited for
    assert time.monotonic() - started < 2  # far from the 10 s timeout, even on a loaded machine


async def test_readiness_probes_soon_at_first_then_every_100_ms_by_default(tmp_path) -> None:
    port = _free_port()  # nothing listens: every probe fails until the timeout
    probes = _Probes()
    started = time.monotonic()
    with pytest.raises(NotReady):
        await wait_ready(
            TcpReadiness(), url=None, port=port, log_path=tmp_path / "output.log", timeout=1.5,
            exited=probes,
        )  # fmt: skip
    window = time.monotonic() - started
    # The last two gaps are the end: a sleep cut to what was left, then one more look at the
    # service before "not ready".
    gaps = probes.gaps()[:-2]
    # The second probe comes 5 ms after the first (a service ready within milliseconds is seen
    # within milliseconds), each wait 1.5 times the last, then one probe per 100 ms: never
    # faster, and the typical late gap is 100 ms, not seconds (a loaded machine makes a few
    # gaps longer, and so fewer probes fit the window).
    assert 0.004 <= gaps[0] < 0.05, gaps
    ramp = 8  # 5, 7.5, 11.3, 16.9, 25.3, 38, 57, 85 ms: about 0.25 s
    late = sorted(gaps[ramp:])
    assert late[0] >= 0.095, gaps
    assert 0.095 <= late[len(late) // 2] < 0.3, gaps
    assert len(probes.times) >= 6 + ramp, (len(probes.times), window)
    # the first probe, the ramp, one per 100 ms after it, and the end's two looks
    assert len(probes.times) <= 1 + ramp + (window - 0.25) / 0.1 + 2, (len(probes.times), window)


async def test_readiness_is_seen_within_a_poll_of_its_log_line(spawn, tmp_path) -> None:
    # The line is written once the test opens the gate, after several polls have found nothing
    # (so how late the shell or the first poll starts on a loaded machine does not matter).
    gate = tmp_path / "gate"
    service = await spawn(f"while [ ! -e {gate} ]; do sleep 0.01; done; echo up; sleep 60")
    probes = _Probes()
    waiting = asyncio.create_task(
        wait_ready(
            LogReadiness(pattern="up"), url=None, port=None, log_path=service.log_path,
            timeout=20, exited=probes,
        )
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while len(probes.times) < 4:
            assert time.monotonic() < deadline, probes.gaps()
            assert not waiting.done(), "ready before the line was written"
            await asyncio.sleep(0.01)
        gate.touch()
        while "up" not in service.log_path.read_text():  # when the line is there (or a bit later)
            assert time.monotonic() < deadline + 10, "the line was not written"
            await asyncio.sleep(0.005)
        seen = time.monotonic()
        await asyncio.wait_for(waiting, 10)
    finally:
        waiting.cancel()
        await asyncio.wait({waiting})
    # Seen by the first probe after the line came (none went on polling past it), after polls
    # typically 100 ms apart, none of them seconds apart (a loaded machine stretches a few).
    gaps = probes.gaps()
    assert len([t for t in probes.times if t >= seen]) <= 1, (seen, probes.times)
    assert len(probes.times) >= 5, gaps
    assert sorted(gaps)[len(gaps) // 2] < 0.3, gaps
    assert max(gaps) < 1.0, gaps


async def test_misconfigured_readiness_is_a_value_error(tmp_path) -> None:
    log = tmp_path / "output.log"
    for readiness, message in [
        (HttpReadiness(url_template="x"), "http readiness needs a URL"),
        (TcpReadiness(), "tcp readiness needs a port"),
        (LogReadiness(pattern="(unclosed"), "invalid log readiness pattern"),
    ]:
        with pytest.raises(ValueError, match=message):
            await wait_ready(
                readiness, url=None, port=None, log_path=log, timeout=1, exited=lambda: None
            )
