"""A TCP server that answers ``pong`` to anything, standing for a host of the internet in the
egress tests (put it on an address of :data:`testkit.plugin.EGRESS_TEST_NETWORK`)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

__all__ = ["pong_server"]


@contextlib.contextmanager
def pong_server(host: str) -> Iterator[int]:
    """Serve on ``host`` (any free port) until the block ends; yields the port."""
    server = socket.socket()
    server.bind((host, 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.recv(16)
                conn.sendall(b"pong")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()
