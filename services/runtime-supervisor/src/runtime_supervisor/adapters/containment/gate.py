"""The egress gate of one network namespace (docs/design/isolation.md).

The namespace's packet rules turn every TCP connection that leaves ``127.0.0.1`` to the gate's
``127.0.0.1:1`` and every DNS query to its ``127.0.0.1:53`` (ports below 1024: no company's
process can take them). For a connection, the gate reads where it was going
(``SO_ORIGINAL_DST``) and asks the namespace's :class:`~runtime_supervisor.adapters.containment.egress.Policy`;
allowed, it connects there from the host's network and copies both ways; denied, it resets the
connection. A DNS query for a name a rule names is answered with the host's resolution (IPv4
only); any other is refused. Each decision is counted per period in ``tally.json``.

It runs as its own process (``python -m runtime_supervisor.adapters.containment.gate``), detached like a
relay, and never runs anything of a company's.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import struct
import subprocess
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, cast

from runtime_supervisor.adapters.containment import dns
from runtime_supervisor.adapters.containment.egress import (
    ALWAYS_LOCAL,
    EgressFile,
    Network,
    Policy,
    PolicyFile,
    ProjectRulesFile,
    RunFile,
    TallyFile,
    TallyPeriod,
    TallySeen,
    network_list,
    policy_path,
    project_rules_path,
    read_json,
    rules_of,
    run_path,
    tally_path,
    write_json,
)
from runtime_supervisor.adapters.containment.relay import announce, detach, entered, splice

__all__ = ["DNS_PORT", "GATE_PORT", "Gate", "main"]

GATE_PORT: Final = 1
DNS_PORT: Final = 53
_SO_ORIGINAL_DST: Final = 80
_MAX_SEEN: Final = 200
"""Distinct (host, port, verdict) kept per period; more are counted as host ``*``."""
_PERIODS: Final = 16
_FLUSH: Final = 0.5
_NAMES: Final = 4096


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _host_addresses() -> list[str]:
    """The host's own IPv4 addresses (``ip -4 -o addr``)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["ip", "-4", "-o", "addr", "show"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
        return [part.split()[3] for part in out.splitlines() if len(part.split()) > 3]
    return []


class Gate:
    """The decisions and counts of one namespace's gate."""

    def __init__(self, folder: Path, home: Path, opened: tuple[Network, ...]) -> None:
        self.folder, self.home, self.opened = folder, home, opened
        self.local = network_list([*ALWAYS_LOCAL, *_host_addresses()])
        self.lock = threading.Lock()
        self.names: OrderedDict[str, list[str]] = OrderedDict()
        """Address -> the names the gate answered with it (newest first)."""
        self.periods: OrderedDict[str, dict[str, TallySeen]] = OrderedDict()
        self.current = ""
        """The key of the period counting now: the run's id, or ``idle:<when it began>``."""
        self.run: str | None = "-"
        """The run of the current period (``-``: none began yet)."""
        self.dirty = False
        self._files: dict[
            Path,
            tuple[tuple[int, int, int], PolicyFile | RunFile | ProjectRulesFile | TallyFile | None],
        ] = {}

    def _read(self, path: Path, shape: type[EgressFile]) -> EgressFile | None:
        """``path`` as last written (read again when it was replaced or changed)."""
        try:
            found = path.stat()
        except OSError:
            self._files.pop(path, None)
            return None
        mark = (found.st_ino, found.st_mtime_ns, found.st_size)  # each write is a new file
        cached = self._files.get(path)
        if cached is not None and cached[0] == mark:
            return cast("EgressFile | None", cached[1])
        found_file = read_json(path, shape)
        self._files[path] = (mark, found_file)
        return found_file

    def policy(self) -> Policy:
        """The namespace's policy now (its files as they are)."""
        own = self._read(policy_path(self.folder), PolicyFile) or {}
        run = self._read(run_path(self.folder), RunFile) or {}
        project = own.get("projectId")
        shared = (
            self._read(project_rules_path(self.home, project), ProjectRulesFile)
            if isinstance(project, str)
            else None
        )
        rules = (*rules_of((shared or {}).get("rules")), *rules_of(run.get("rules")))
        run_id = run.get("runId") if isinstance(run.get("runId"), str) else None
        return Policy(rules=rules, run_id=run_id, local=self.local, opened=self.opened)

    def remember(self, name: str, addresses: list[str]) -> None:
        """Note that ``name`` was answered with ``addresses``."""
        with self.lock:
            for address in addresses:
                names = [name, *(n for n in self.names.pop(address, []) if n != name)][:4]
                self.names[address] = names
            while len(self.names) > _NAMES:
                self.names.popitem(last=False)

    def names_of(self, address: str) -> list[str]:
        with self.lock:
            return list(self.names.get(address, []))

    def count(self, policy: Policy, host: str, port: int, verdict: str) -> None:
        """Count one decision in the period of ``policy``'s run."""
        now = _now()
        with self.lock:
            if policy.run_id != self.run or self.current not in self.periods:
                self.run = policy.run_id
                self.current = policy.run_id or f"idle:{now}"
                self.periods.setdefault(self.current, {})
                while len(self.periods) > _PERIODS:
                    self.periods.popitem(last=False)
            seen = self.periods[self.current]
            key = f"{host}|{port}|{verdict}"
            if key not in seen and len(seen) >= _MAX_SEEN:
                host, port, key = "*", 0, f"*|0|{verdict}"
            found = seen.get(key)
            if found is None:
                seen[key] = {
                    "host": host,
                    "port": port,
                    "verdict": verdict,
                    "count": 1,
                    "firstAt": now,
                    "lastAt": now,
                }
                self._flush_locked()
            else:
                found["count"] += 1
                found["lastAt"] = now
                self.dirty = True

    def _flush_locked(self) -> None:
        periods: list[TallyPeriod] = [
            {
                "period": key,
                "runId": None if key.startswith("idle:") else key,
                "seen": list(seen.values()),
            }
            for key, seen in self.periods.items()
        ]
        tally: TallyFile = {"current": self.current, "periods": periods}
        write_json(tally_path(self.folder), tally)
        self.dirty = False

    def flusher(self) -> None:
        while True:
            time.sleep(_FLUSH)
            with self.lock:
                if self.dirty:
                    with contextlib.suppress(OSError):
                        self._flush_locked()

    def connection(self, conn: socket.socket) -> None:
        """Decide one turned connection; carry it when allowed."""
        try:
            raw = conn.getsockopt(socket.SOL_IP, _SO_ORIGINAL_DST, 16)
            port = struct.unpack_from("!H", raw, 2)[0]
            address = socket.inet_ntoa(raw[4:8])
        except OSError:
            conn.close()
            return
        policy = self.policy()
        names = self.names_of(address)
        allowed = policy.allows(address, port, names)
        self.count(policy, names[0] if names else address, port, "allowed" if allowed else "denied")
        if not allowed:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return
        try:
            upstream = socket.create_connection((address, port), timeout=10.0)
            upstream.settimeout(None)
        except OSError:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()
            return
        splice(conn, upstream)

    def query(self, sock: socket.socket, data: bytes, peer: Any) -> None:
        """Answer one DNS query."""
        q = dns.question(data)
        if q is None:
            return
        policy = self.policy()
        if not policy.resolves(q.name):
            self.count(policy, q.name.lower(), DNS_PORT, "denied")
            reply = dns.answer(q, rcode=dns.REFUSED)
        else:
            self.count(policy, q.name.lower(), DNS_PORT, "allowed")
            try:
                found = socket.getaddrinfo(q.name, None, socket.AF_INET, socket.SOCK_STREAM)
                addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
                self.remember(q.name.lower().rstrip("."), addresses)
                reply = dns.answer(q, addresses)
            except socket.gaierror:
                reply = dns.answer(q, rcode=dns.NXDOMAIN)
            except OSError:
                reply = dns.answer(q, rcode=dns.SERVFAIL)
        with contextlib.suppress(OSError):
            sock.sendto(reply, peer)


def _serve_dns(gate: Gate, sock: socket.socket) -> None:
    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="dns")
    while True:
        try:
            data, peer = sock.recvfrom(4096)
        except OSError:
            time.sleep(0.05)
            continue
        pool.submit(gate.query, sock, data, peer)


def main(argv: list[str] | None = None) -> int:
    """Gate until killed."""
    parser = argparse.ArgumentParser(prog="clipyard-gate")
    parser.add_argument("netns")
    parser.add_argument("folder")
    parser.add_argument("home")
    parser.add_argument("--open", default="")
    args = parser.parse_args(argv)
    opened = network_list(n for n in args.open.split(",") if n.strip())
    detach()
    inside = entered(args.netns)

    def listeners() -> tuple[socket.socket, socket.socket]:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", GATE_PORT))
        tcp.listen(128)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", DNS_PORT))
        return tcp, udp

    tcp, udp = inside.submit(listeners).result()
    gate = Gate(Path(args.folder), Path(args.home), opened)
    # Threads started from here live in the host's network: the upstream connections and the
    # resolutions are the host's.
    threading.Thread(target=_serve_dns, args=(gate, udp), daemon=True).start()
    threading.Thread(target=gate.flusher, daemon=True).start()
    announce()
    while True:
        try:
            conn, _addr = tcp.accept()
        except OSError:
            time.sleep(0.05)
            continue
        threading.Thread(target=gate.connection, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    raise SystemExit(main())
