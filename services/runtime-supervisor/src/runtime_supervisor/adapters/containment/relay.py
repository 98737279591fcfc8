"""A TCP relay between two network namespaces (docs/design/isolation.md): it listens on one
address in one namespace and carries each connection to an address in another. One relay runs
per carried port: a service's port from its workspace's namespace out to the host's loopback (its
preview URL), and the Clipyard API from the host into a namespace.

It runs as its own process (``python -m runtime_supervisor.adapters.containment.relay``), in a session of
its own, so it outlives a supervisor restart; :mod:`~runtime_supervisor.adapters.containment.relays` records
what it carries and its command line, starts it, then records its pid and start time, and ends it
with those. Sockets belong to the namespace of the thread that made them: the listener is made in a thread that entered the listening side, each outgoing socket
in a thread that entered the target side; the copying threads need no namespace. It never runs
anything of a company's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

from runtime_supervisor.adapters.containment.netns import enter

__all__ = ["announce", "detach", "entered", "main", "splice"]

_CHUNK: Final = 64 * 1024


def _side(spec: str) -> tuple[str | None, str, int]:
    """``[ns-path@]host:port`` -> (namespace path or None for the host, host, port)."""
    ns, _, address = spec.rpartition("@")
    host, _, port = address.rpartition(":")
    return (ns or None), host, int(port)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(_CHUNK):
            dst.sendall(chunk)
    except OSError:
        pass  # either side went away: the connection is over
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
    splice(conn, upstream)


def splice(conn: socket.socket, upstream: socket.socket) -> None:
    """Copy both ways between ``conn`` and ``upstream`` until both are done; close them."""
    back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
    back.start()
    _pump(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def detach() -> None:
    """Go on in a child of a session of its own (before any thread exists): the starter reaps
    the first process at once, and nothing ends with the supervisor."""
    if os.fork() != 0:
        os._exit(0)
    os.setsid()


def announce() -> None:
    """Tell the starter (waiting on stdout) that it listens, and with which pid. A starter gone
    meanwhile (the supervisor was killed) will never record this pid: it ends, quietly, and the
    record left without a pid lets the next supervisor start another when it needs it (a
    service's relay and a gate at adoption; the others at their next use)."""
    try:
        sys.stdout.write(f"listening {os.getpid()}\n")
        sys.stdout.flush()
        sys.stdout.close()
    except BrokenPipeError:
        os._exit(0)


def entered(ns: str | None) -> ThreadPoolExecutor:
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
    detach()
    listening = entered(listen_ns)

    def listener() -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((listen_host, listen_port))
        sock.listen(128)
        return sock

    server = listening.submit(listener).result()
    outgoing = entered(target_ns)
    announce()
    while True:
        try:
            conn, _addr = server.accept()
        except OSError:
            time.sleep(0.05)
            continue
        threading.Thread(
            target=_carry, args=(conn, outgoing, target_host, target_port), daemon=True
        ).start()


if __name__ == "__main__":
    raise SystemExit(main())
