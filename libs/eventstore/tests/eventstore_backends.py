"""Backend mixins (a ``settings`` fixture each) and small helpers shared by the NATS tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from eventstore import StoreSettings


class MemoryBackend:
    kind = "memory"

    @pytest.fixture
    def settings(self, tmp_path: Path) -> StoreSettings:
        return StoreSettings(kind="memory", home=tmp_path / "home")


class SqliteBackend:
    kind = "sqlite"

    @pytest.fixture
    def settings(self, tmp_path: Path) -> StoreSettings:
        return StoreSettings(kind="sqlite", home=tmp_path / "home")


class PostgresBackend:
    kind = "postgres"

    @pytest.fixture
    def settings(self, tmp_path: Path, pg_database: str) -> StoreSettings:
        return StoreSettings(kind="postgres", home=tmp_path / "home", postgres_dsn=pg_database)


@dataclass(frozen=True)
class StreamMessage:
    seq: int
    subject: str
    headers: dict[str, str]
    data: bytes


async def stream_messages(js: JetStreamContext) -> list[StreamMessage]:
    """Every message in ``WS_EVENTS``, in stream order."""
    info = await js.stream_info(EVENT_STREAM)
    found = []
    if info.state.messages:
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            msg = await js.get_msg(EVENT_STREAM, seq)
            found.append(
                StreamMessage(
                    seq=msg.seq or seq,
                    subject=msg.subject or "",
                    headers=dict(msg.headers or {}),
                    data=msg.data or b"",
                )
            )
    return found


async def eventually(
    check: Callable[[], Awaitable[bool]], *, timeout: float = 10.0, what: str = "condition"
) -> None:
    """Wait until ``check()`` is true, failing the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)
