"""Port allocation against real sockets and processes: cases 55 and 56, reservations, concurrency."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runtime_supervisor.adapters.process import (
    PortAllocator,
    PortConflict,
    PortsExhausted,
    parse_port_range,
)

pytestmark = pytest.mark.integration

_LISTENER = """
import socket, sys, time
family = socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET
s = socket.socket(family, socket.SOCK_STREAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen()
print("listening", flush=True)
time.sleep(120)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_parse_port_range() -> None:
    assert parse_port_range("41000-41999") == (41000, 41999)
    assert parse_port_range(" 5000 - 5000 ") == (5000, 5000)
    for bad in ("41000", "41999-41000", "0-10", "1-70000", "a-b", ""):
        with pytest.raises(ValueError, match=r"port range|low-high"):
            parse_port_range(bad)


def test_auto_gives_free_unreserved_ports(free_block) -> None:
    low, listeners = free_block(20)
    listeners[7].close()  # the only port both free and unreserved
    listeners[3].close()  # free, but reserved
    allocator = PortAllocator(low, low + 19, reserved=lambda: {low + 3: "workspace A / web"})
    assert allocator.auto() == low + 7
    with socket.socket() as proof:  # really free
        proof.bind(("127.0.0.1", low + 7))


def test_auto_is_exhausted_after_32_collisions(free_block) -> None:
    """Reference case 55: every port of the range is bound or reserved."""
    low, _listeners = free_block(40)
    reserved = {port: "another workspace" for port in range(low, low + 8)}
    allocator = PortAllocator(low, low + 39, reserved=lambda: reserved)
    with pytest.raises(PortsExhausted) as raised:
        allocator.auto()
    assert raised.value.attempts == 32
    assert f"no free port in {low}-{low + 39} after 32 attempts" in str(raised.value)
    assert "Retry the start or configure a different runtime service port." in str(raised.value)


def test_a_fully_reserved_range_is_exhausted_without_probing() -> None:
    allocator = PortAllocator(
        41000, 41003, reserved=lambda: dict.fromkeys(range(41000, 41004), "x")
    )
    with pytest.raises(PortsExhausted) as raised:
        allocator.auto()
    assert raised.value.attempts == 0


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0", "::"])
async def test_a_fixed_port_held_by_another_process_names_its_pid_and_cwd(
    tmp_path: Path, host: str
) -> None:
    """Reference case 56."""
    port = _free_port()
    elsewhere = tmp_path / "other-workspace"
    elsewhere.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", _LISTENER, host, str(port)], cwd=elsewhere, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert await asyncio.to_thread(holder.stdout.readline) == b"listening\n"
        allocator = PortAllocator(41000, 41999, reserved=dict)
        with pytest.raises(PortConflict) as raised:
            allocator.fixed(port, "workspace B / web")
        assert raised.value.message == (
            f"cross-workspace port conflict: port {port} is held by pid {holder.pid} "
            f"(cwd {elsewhere})"
        )
        assert raised.value.pid == holder.pid
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert allocator.fixed(port, "workspace B / web") == port  # free once its holder is gone


def test_a_fixed_port_reserved_by_another_owner_names_it() -> None:
    port = _free_port()
    allocator = PortAllocator(
        41000, 41999, reserved=lambda: {port: "execution workspace ws-a (service web)"}
    )
    with pytest.raises(PortConflict) as raised:
        allocator.fixed(port, "execution workspace ws-b (service web)")
    assert raised.value.message == (
        f"port {port} is already reserved by execution workspace ws-a (service web)"
    )
    assert raised.value.owner == "execution workspace ws-a (service web)"
    # Its own reservation (a restart) is no conflict.
    assert allocator.fixed(port, "execution workspace ws-a (service web)") == port


def test_a_fixed_port_claimed_by_a_start_in_flight_is_refused_until_released() -> None:
    port = _free_port()
    allocator = PortAllocator(41000, 41999, reserved=dict)
    assert allocator.fixed(port, "ws-a") == port
    with pytest.raises(PortConflict, match="already being claimed by another managed start"):
        allocator.fixed(port, "ws-b")
    allocator.release(port)
    assert allocator.fixed(port, "ws-b") == port


def _range_of_free(free_block, n: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    low, listeners = free_block(n)
    for listener in listeners:
        listener.close()
    return low, low + n - 1


def test_50_concurrent_auto_allocations_in_threads_never_collide(free_block) -> None:
    low, high = _range_of_free(free_block, 60)
    reserved: dict[int, str] = {}
    allocator = PortAllocator(low, high, reserved=lambda: dict(reserved))

    def start(i: int) -> int:
        port = allocator.auto(owner=f"service {i}")
        reserved[port] = f"service {i}"  # the state records it; the claim is then dropped
        allocator.release(port)
        return port

    with ThreadPoolExecutor(max_workers=50) as pool:
        ports = list(pool.map(start, range(50)))
    assert len(set(ports)) == 50
    assert all(low <= port <= high for port in ports)


async def test_50_concurrent_auto_starts_with_a_shared_reserved_set_never_collide(
    free_block,
) -> None:
    low, high = _range_of_free(free_block, 200)
    reserved: dict[int, str] = {}
    allocator = PortAllocator(low, high, reserved=lambda: reserved)
    listeners: list[socket.socket] = []

    async def start(i: int) -> int:
        port = allocator.auto(owner=f"service {i}")
        await asyncio.sleep(0.01)  # saving the Starting event: other starts run meanwhile
        reserved[port] = f"service {i}"
        listener = socket.socket()  # the service binds its port
        listener.bind(("127.0.0.1", port))
        listener.listen()
        listeners.append(listener)
        return port

    try:
        ports = await asyncio.gather(*(start(i) for i in range(50)))
    finally:
        for listener in listeners:
            listener.close()
    assert len(set(ports)) == 50
