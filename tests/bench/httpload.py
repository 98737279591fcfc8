"""A small HTTP/1.1 keep-alive load generator: a few connections, sequential requests on each.

Hand-written so the client costs little next to the server (an httpx request costs more than a
trivial Litestar handler). Runs in its own process, so client and server do not share a loop.
"""

from __future__ import annotations

import asyncio
import sys
import time

__all__ = ["run_load"]


async def _connection(host: str, port: int, request: bytes, count: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for _ in range(count):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"unexpected answer: {head[:80]!r}")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            await reader.readexactly(length)
    finally:
        writer.close()


async def run_load(host: str, port: int, path: str, token: str, total: int, conns: int) -> float:
    """Send ``total`` GETs over ``conns`` connections; return µs per request."""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    await asyncio.gather(*(_connection(host, port, request, total // conns) for _ in range(conns)))
    return (time.perf_counter() - started) / (total // conns * conns) * 1e6


if __name__ == "__main__":
    host, port, path, token, total, conns = sys.argv[1:7]
    sys.stdout.write(
        f"{asyncio.run(run_load(host, int(port), path, token, int(total), int(conns))):.3f}\n"
    )
