"""A TCP relay between two network namespaces (docs/design/isolation.md): it listens on one
address in one namespace and carries each connection to an address in another. One relay runs
per carried port: a service's port from its workspace's namespace out to the host's loopback (its
preview URL), and the Clipyard API from the host into a namespace.

It runs as its own process (``python -m runtime_supervisor.containment.relay``), in a session of
its own, so it outlives a supervisor restart; the supervisor records its pid and start time
beside what it carries and ends it with that. Sockets belong to the namespace of the thread that
made them: the listener is made in a thread that entered the listening side, each outgoing socket
in a thread that entered the target side; the copying threads need no namespace. It never runs
anything of a company's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from runtime_supervisor.containment.netns import enter

__all__ = ["Relay", "start_relay", "stop_relay"]

_CHUNK: Final = 64 * 1024


class Relay:
    """A started relay: its pid and start time (``/proc/<pid>/stat`` field 22)."""

    def __init__(self, pid: int, start_time: int | None) -> None:
        self.pid = pid
        self.start_time = start_time

    def alive(self) -> bool:
        """Whether the relay still runs (the same process, not a recycled pid)."""
        return _start_time(self.pid) == self.start_time and self.start_time is not None


def _start_time(pid: int) -> int | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    if fields and fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19]) if len(fields) > 19 else None


def _side(spec: str) -> tuple[str | None, str, int]:
    """``[ns-path@]host:port`` -> (namespace path or None for the host, host, port)."""
    ns, _, address = spec.rpartition("@")
    host, _, port = address.rpartition(":")
    return (ns or None), host, int(port)


def start_relay(listen: str, target: str, log: Path) -> Relay:
    """Start a relay from ``listen`` to ``target`` (each ``[ns-path@]host:port``) and wait
    until it listens. Blocking.

    Raises:
        OSError: It could not start or listen (its log says why).
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        # The relay detaches (forks, its first process exits at once): no supervisor has to
        # reap it, and it outlives the supervisor.
        proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "runtime_supervisor.containment.relay", listen, target],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=out,
            start_new_session=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": _pythonpath()},
        )  # fmt: skip
    assert proc.stdout is not None
    with proc.stdout:
        ready = proc.stdout.readline().split()
    proc.wait()
    if len(ready) != 2 or ready[0] != b"listening" or not ready[1].isdigit():
        raise OSError(f"the relay {listen} -> {target} did not start (see {log})")
    pid = int(ready[1])
    return Relay(pid, _start_time(pid))


def _pythonpath() -> str:
    import runtime_supervisor

    here = Path(runtime_supervisor.__file__).resolve().parent.parent
    return os.pathsep.join([str(here), *sys.path[1:]])


def stop_relay(pid: int, start_time: int | None) -> None:
    """End the relay ``pid`` if it is still the one started then."""
    if start_time is not None and _start_time(pid) == start_time:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(_CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _carry(conn: socket.socket, outgoing: ThreadPoolExecutor, host: str, port: int) -> None:
    try:
        upstream = outgoing.submit(socket.socket, socket.AF_INET, socket.SOCK_STREAM).result()
        upstream.settimeout(10.0)
        upstream.connect((host, port))
        upstream.settimeout(None)
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
    back.start()
    _pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def _entered(ns: str | None) -> ThreadPoolExecutor:
    """A one-thread executor whose thread lives in namespace ``ns`` (None: the host's)."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ns")
    if ns is not None:
        executor.submit(enter, Path(ns)).result()
    return executor


def main(argv: list[str] | None = None) -> int:
    """Relay until killed."""
    parser = argparse.ArgumentParser(prog="clipyard-relay")
    parser.add_argument("listen")
    parser.add_argument("target")
    args = parser.parse_args(argv)
    listen_ns, listen_host, listen_port = _side(args.listen)
    target_ns, target_host, target_port = _side(args.target)
    # Detach before any thread exists: the starter reaps this first process at once.
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    listening = _entered(listen_ns)

    def listener() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((listen_host, listen_port))
        sock.listen(128)
        return sock

    server = listening.submit(listener).result()
    outgoing = _entered(target_ns)
    sys.stdout.write(f"listening {os.getpid()}\n")
    sys.stdout.flush()
    sys.stdout.close()
    while True:
        try:
            conn, _addr = server.accept()
        except OSError:
            time.sleep(0.05)
            continue
        threading.Thread(target=_carry, args=(conn, outgoing, target_host, target_port),
                         daemon=True).start()  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
