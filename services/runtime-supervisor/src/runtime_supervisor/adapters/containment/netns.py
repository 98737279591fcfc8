"""Network namespaces of workspaces (docs/design/isolation.md).

Each workspace (and each run without one) gets a named namespace, ``/run/netns/cy<stack>-<id>``,
holding only a loopback interface: nothing outside it is reachable from inside unless a relay
(:mod:`~runtime_supervisor.adapters.containment.relay`) carries a port in or out, or its egress gate
(:mod:`~runtime_supervisor.adapters.containment.gate`) lets a connection out. Its packet rules
(:data:`RULES`) turn every TCP connection that leaves ``127.0.0.1`` and every DNS query to the
gate and drop everything else. The namespace outlives the supervisor (``ip netns`` keeps it
mounted), so a restarted supervisor finds it again by name.

Python 3.11 has no ``os.setns``: :func:`enter` calls ``setns(2)`` through ctypes, only ever in a
thread of its own (a network namespace is per thread), and :func:`probe_tcp` probes a port from
inside that way. Blocking: call from a thread.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Final

__all__ = [
    "NETNS_DIR",
    "RULES",
    "NetnsError",
    "delete",
    "ensure",
    "enter",
    "namespace_name",
    "probe_tcp",
]

NETNS_DIR: Final = Path("/run/netns")
CLONE_NEWNET: Final = 0x40000000
_IP_DIRS: Final = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


RULES: Final = """
table ip clipyard {
  chain turn {
    type nat hook output priority -100; policy accept;
    ip daddr 127.0.0.1 return
    meta l4proto tcp redirect to :1
    udp dport 53 redirect to :53
  }
  chain out {
    type filter hook output priority 0; policy drop;
    ip daddr 127.0.0.1 accept
  }
}
table ip6 clipyard {
  chain out {
    type filter hook output priority 0; policy drop;
    ip6 daddr ::1 accept
  }
}
"""
"""A namespace's packet rules: TCP and DNS to the gate (``127.0.0.1:1`` and ``:53``, see
:mod:`~runtime_supervisor.adapters.containment.gate`), loopback kept, the rest dropped."""


class NetnsError(Exception):
    """A namespace could not be made or entered (the message says what to do)."""


def _tool(name: str, package: str) -> str:
    for folder in _IP_DIRS:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    raise NetnsError(
        f"{name} ({package}) is not installed: install it (./dev does: apt-get install {package})."
    )


def _ip() -> str:
    return _tool("ip", "iproute2")


def namespace_name(stack: str, key: str) -> str:
    """The namespace of ``key`` (a workspace or run id) in the stack ``stack``."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"cy{stack}-{digest}"


def _run(*args: str) -> None:
    done = subprocess.run([_ip(), *args], capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


def ensure(name: str, reserved: tuple[int, int] | None = None) -> Path:
    """Create the namespace ``name`` with loopback up, every other address routed to it and
    :data:`RULES` in force (nothing when it exists); its path. ``reserved`` (the ports the
    supervisor hands services) is kept out of the namespace's ephemeral ports, so that no
    outgoing connection inside (a readiness probe, a relay) holds a port a service is about to
    bind."""
    path = NETNS_DIR / name
    if not path.exists():
        try:
            _run("netns", "add", name)
        except NetnsError:
            if not path.exists():  # another supervisor of the stack made it meanwhile
                raise
            return path
        try:
            _run("-n", name, "link", "set", "lo", "up")
            _run("-n", name, "route", "add", "default", "dev", "lo", "src", "127.0.0.1")
            _rules(path, reserved)
        except NetnsError:
            delete(name)  # never a namespace without its rules
            raise
    return path


def _rules(path: Path, reserved: tuple[int, int] | None) -> None:
    nft = _tool("nft", "nftables")
    keep = (
        f"echo {reserved[0]}-{reserved[1]} > /proc/sys/net/ipv4/ip_local_reserved_ports && "
        if reserved
        else ""
    )
    script = f'{keep}exec "$0" -f -'
    done = subprocess.run(
        [_tool("nsenter", "util-linux"), f"--net={path}", "--", "/bin/sh", "-c", script, nft],
        input=RULES,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode != 0:
        raise NetnsError(f"the packet rules of {path.name} could not be set: {done.stderr.strip()}")


def delete(name: str) -> None:
    """Remove the namespace ``name`` (gone already: nothing)."""
    if (NETNS_DIR / name).exists():
        _run("netns", "delete", name)


_libc = ctypes.CDLL(None, use_errno=True)


def enter(path: Path) -> None:
    """Move the calling thread into the network namespace at ``path``."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise NetnsError(f"setns({path}) failed: {os.strerror(errno)}")
    finally:
        os.close(fd)


def probe_tcp(path: Path, port: int, host: str = "127.0.0.1", timeout: float = 1.0) -> bool:
    """Whether something accepts on ``host:port`` inside the namespace at ``path``."""
    found: list[bool] = []

    def probe() -> None:
        try:
            enter(path)
            with socket.create_connection((host, port), timeout=timeout):
                found.append(True)
        except (OSError, NetnsError):
            found.append(False)

    thread = threading.Thread(target=probe, name="netns-probe", daemon=True)
    thread.start()
    thread.join(timeout + 1.0)
    return bool(found and found[0])
