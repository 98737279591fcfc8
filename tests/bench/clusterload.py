"""Helpers of ``test_cluster_bench.py``: a raw HTTP/1.1 keep-alive client that times each request,
and percentiles.

Hand-written, like ``httpload.py``, so the client costs little next to the server: an httpx
request costs about as much as the gateway's answer from memory and would flatten every ratio.
One request at a time on one connection: the time of a request is its latency, not a share of a
throughput.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

__all__ = ["Answer", "RawClient", "percentile"]


@dataclass(frozen=True)
class Answer:
    """One answer: its status, its body and how long the request took (seconds)."""

    status: int
    body: bytes
    took: float


class RawClient:
    """One keep-alive connection to ``host:port``; requests go one after the other."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host = host
        self.port = port
        self.token = token
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> RawClient:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    async def get(self, path: str) -> Answer:
        """``GET path``."""
        return await self.request("GET", path)

    async def post(self, path: str, body: bytes) -> Answer:
        """``POST path`` with a JSON ``body``."""
        return await self.request("POST", path, body)

    async def request(self, method: str, path: str, body: bytes = b"") -> Answer:
        """Send one request and read its whole answer; ``took`` runs from just before the write
        to the answer's last byte."""
        assert self._reader is not None, "not connected"
        assert self._writer is not None, "not connected"
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {self.token}\r\n"
        )
        if body:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        data = (head + "\r\n").encode() + body
        began = time.perf_counter()
        self._writer.write(data)
        status, payload = await self._answer(self._reader)
        return Answer(status=status, body=payload, took=time.perf_counter() - began)

    @staticmethod
    async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length, chunked = 0, False
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if not chunked:
            return status, await reader.readexactly(length)
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # no trailers
                return status, b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)


def percentile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (1-99) of ``values``, interpolated between the nearest ranks."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]
