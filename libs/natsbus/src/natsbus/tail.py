"""Following ``WS_EVENTS`` in order, as a reader that acknowledges nothing: the gateway's event
stream (SSE) and ``clipyard events tail``.

The reader is a named ephemeral pull consumer (``<prefix><uuid>``), created through the named
consumer API (the only one nats.conf grants these users: the unnamed one carries the name in the
body, out of sight of permissions), kept in memory, deleted when the tail ends, and dropped by
the server after ``inactive_threshold`` seconds without pulls (a reader that was killed). Every
message's consumer sequence must follow the one before: a gap means events were lost on the way
(:class:`StreamGapError`), and the reader resumes from the last stream sequence it saw.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from contracts.subjects import EVENT_STREAM, EVENT_STREAM_SUBJECTS

if TYPE_CHECKING:
    from nats.js import JetStreamContext

__all__ = ["StreamGapError", "StreamTail", "Tailed"]

PULL_BATCH: Final = 256


class StreamGapError(RuntimeError):
    """A consumer sequence was skipped: events were lost between the server and this reader."""


@dataclass(frozen=True)
class Tailed:
    """One message of the stream."""

    sequence: int
    """Its stream sequence (``Last-Event-ID``)."""
    subject: str
    data: bytes
    pending: int
    """Messages of the filter still after it when it was delivered."""


class StreamTail:
    """``async with StreamTail(js, prefix=..., ...) as tail: async for m in tail: ...``.

    Starts after ``after_sequence`` when given, else at the first stored message with
    ``from_start``, else with the next new one.
    """

    def __init__(
        self,
        js: JetStreamContext,
        *,
        prefix: str,
        filter_subject: str = EVENT_STREAM_SUBJECTS,
        after_sequence: int | None = None,
        from_start: bool = False,
        inactive_threshold: float = 30.0,
        pull_wait: float = 0.5,
    ) -> None:
        """Describe the tail; ``async with`` creates its consumer.

        Args:
            js: The JetStream context.
            prefix: The consumer's name before its uuid (what the user may create).
            filter_subject: The subjects to follow (default: every event).
            after_sequence: Start after this stream sequence (a resumed reader).
            from_start: Without ``after_sequence``: start at the first stored message, not the
                next new one.
            inactive_threshold: Seconds without pulls after which the server drops the consumer.
            pull_wait: Seconds one pull waits for messages before the next one is sent.
        """
        self._js = js
        self.name = f"{prefix}{uuid.uuid4().hex}"
        self._filter = filter_subject
        self._after = after_sequence
        self._from_start = from_start
        self._inactive = inactive_threshold
        self._pull_wait = pull_wait
        self.pending = 0
        """Messages of the filter the stream held when the tail began (from its start point)."""

    def _config(self) -> ConsumerConfig:
        if self._after is not None:
            start = ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self._after + 1
            )
        else:
            policy = DeliverPolicy.ALL if self._from_start else DeliverPolicy.NEW
            start = ConsumerConfig(deliver_policy=policy)
        return start.evolve(
            name=self.name,
            ack_policy=AckPolicy.NONE,
            filter_subject=self._filter,
            inactive_threshold=self._inactive,
            mem_storage=True,
            num_replicas=1,
        )

    async def __aenter__(self) -> StreamTail:
        """Create the consumer.

        Raises:
            nats.js.errors.NotFoundError: There is no event stream yet.
        """
        info = await self._js.add_consumer(EVENT_STREAM, self._config())
        self.pending = info.num_pending or 0
        return self

    async def __aexit__(self, *_: object) -> None:
        with contextlib.suppress(Exception):  # gone already; inactivity removes it anyway
            await self._js.delete_consumer(EVENT_STREAM, self.name)

    async def __aiter__(self) -> AsyncIterator[Tailed]:
        """The messages, in order, for as long as the caller reads.

        Raises:
            StreamGapError: A consumer sequence was skipped.
        """
        sub = await self._js.pull_subscribe_bind(self.name, stream=EVENT_STREAM)
        try:
            delivered = 0
            while True:
                try:
                    msgs = await sub.fetch(PULL_BATCH, timeout=self._pull_wait)
                except TimeoutError:
                    continue
                for msg in msgs:
                    meta = msg.metadata
                    if meta.sequence.consumer != delivered + 1:
                        raise StreamGapError(
                            f"event stream gap: consumer sequence {meta.sequence.consumer} "
                            f"after {delivered}"
                        )
                    delivered = meta.sequence.consumer
                    yield Tailed(meta.sequence.stream, msg.subject, msg.data, meta.num_pending)
        finally:
            await sub.unsubscribe()
