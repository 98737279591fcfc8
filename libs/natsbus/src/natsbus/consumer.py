"""In-order consumption of the event stream: one durable pull consumer, one message at a time.

The consumer allows a single unacknowledged message (``max_ack_pending=1``), so events are handled
in stream order (ARCHITECTURE §3, inbox). The handler's outcome decides the ack:

- it returns: ``ack``;
- it raises :class:`PoisonMessage`: ``await on_poison(msg, error)`` (the service records the
  rejection), then ``term`` (never redelivered); if ``on_poison`` fails the message is retried;
- anything else: ``nak`` with a growing delay, and it comes back (later messages wait).

A long handler keeps its message with ``in_progress`` so it is not redelivered under it. When the
durable consumer disappears (deleted, or lost with its stream), the next failed fetch creates it
again (deliver all: the handler skips what it has applied), once the stream is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Final

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, ConsumerInfo, DeliverPolicy
from nats.js.client import JetStreamContext

from contracts.subjects import EVENT_STREAM
from telemetry.spans import consumer_span

__all__ = [
    "DEFAULT_RETRY_DELAYS",
    "MessageHandler",
    "OrderedConsumer",
    "PoisonHandler",
    "PoisonMessage",
]

logger = logging.getLogger(__name__)

DEFAULT_RETRY_DELAYS: Final = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds before redelivery after the 1st, 2nd, ... failure (the last one repeats)."""


class PoisonMessage(Exception):
    """Raised by a handler for a message that can never be handled (it is terminated)."""


MessageHandler = Callable[[Msg], Awaitable[None]]
"""Handles one message; returning acks it."""

PoisonHandler = Callable[[Msg, PoisonMessage], Awaitable[None]]
"""Records a poison message before it is terminated."""


class OrderedConsumer:
    """A durable pull consumer on the event stream that handles messages in order."""

    def __init__(
        self,
        js: JetStreamContext,
        *,
        durable: str,
        filter_subjects: Sequence[str],
        handler: MessageHandler,
        on_poison: PoisonHandler,
        stream: str = EVENT_STREAM,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
        ack_wait: float = 30.0,
        fetch_timeout: float = 1.0,
        ack_timeout: float = 5.0,
    ) -> None:
        """Describe the consumer; :meth:`start` creates it and starts handling.

        Args:
            js: The JetStream context.
            durable: The durable consumer name (survives restarts; one per upstream service).
            filter_subjects: The subjects consumed (several filters need nats-server 2.10+).
            handler: Called with each message, in stream order.
            on_poison: Called with a message whose handler raised :class:`PoisonMessage`.
            stream: The stream consumed.
            retry_delays: Seconds before redelivery after each failure; the last repeats.
            ack_wait: Seconds the server waits for an ack before redelivering.
            fetch_timeout: Seconds each fetch waits for a message (bounds how long stop waits).
            ack_timeout: Seconds to wait for the server to confirm an ack.
        """
        if not filter_subjects:
            raise ValueError("an ordered consumer needs at least one filter subject")
        if not retry_delays:
            raise ValueError("retry_delays may not be empty")
        self._js = js
        self._durable = durable
        self._filter_subjects = list(filter_subjects)
        self._handler = handler
        self._on_poison = on_poison
        self._stream = stream
        self._retry_delays = tuple(retry_delays)
        self._ack_wait = ack_wait
        self._fetch_timeout = fetch_timeout
        self._ack_timeout = ack_timeout
        self._sub: JetStreamContext.PullSubscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.recreated = 0
        """How many times the durable consumer was found missing and created again."""

    def config(self) -> ConsumerConfig:
        """The consumer's configuration: durable, explicit ack, one pending, all messages."""
        return ConsumerConfig(
            name=self._durable,
            durable_name=self._durable,
            deliver_policy=DeliverPolicy.ALL,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self._ack_wait,
            max_ack_pending=1,
            max_deliver=-1,
            filter_subjects=self._filter_subjects,
        )

    async def start(self) -> ConsumerInfo:
        """Create (or update) the durable consumer and start handling messages.

        Returns:
            The consumer's info.
        """
        if self._task is not None:
            raise RuntimeError(f"consumer {self._durable} already started")
        self._stopping.clear()  # started again after a stop (a lease lost, then won again)
        info = await self._js.add_consumer(self._stream, self.config())
        self._sub = await self._js.pull_subscribe_bind(durable=self._durable, stream=self._stream)
        self._task = asyncio.create_task(self._run(self._sub), name=f"consumer:{self._durable}")
        logger.info("consumer %s on %s started", self._durable, self._filter_subjects)
        return info

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop fetching, let the message in hand finish (up to ``timeout``), unsubscribe.

        Args:
            timeout: Seconds to wait for the handler of the current message.
        """
        self._stopping.set()
        task, self._task = self._task, None
        if task is not None:
            _, pending = await asyncio.wait({task}, timeout=timeout)
            if pending:
                logger.warning(
                    "consumer %s: cancelling its handler after %g s", self._durable, timeout
                )
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        sub, self._sub = self._sub, None
        if sub is not None:
            # Closed or draining connections refuse; there is nothing left to undo then.
            with contextlib.suppress(nats.errors.Error):
                await sub.unsubscribe()

    async def __aenter__(self) -> OrderedConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _run(self, sub: JetStreamContext.PullSubscription) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                msgs = await sub.fetch(1, timeout=self._fetch_timeout)
            except TimeoutError:
                continue
            except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                logger.info("consumer %s: connection closing, stopped", self._durable)
                return
            except Exception as error:
                failures += 1
                if isinstance(error, nats.js.errors.APIError) and await self._recreate_if_gone():
                    continue  # the durable is back: fetch again at once
                logger.warning("consumer %s: fetch failed", self._durable, exc_info=True)
                await self._pause(self._delay(failures))
                continue
            failures = 0
            for msg in msgs:
                if self._stopping.is_set():
                    await _quietly(msg.nak())  # stopping: hand it straight back
                else:
                    await self._process(msg)

    async def _recreate_if_gone(self) -> bool:
        """After a failed fetch: create the durable again if the server no longer has it.

        A deleted consumer (by an operator, or with its stream) makes every fetch fail with
        "no responders" forever. The new one delivers the stream from the start (the handler's
        own tracking skips what it already applied).

        Returns:
            True when the consumer was missing and has been created again.
        """
        try:
            await self._js.consumer_info(self._stream, self._durable)
            return False  # it exists: a passing server hiccup
        except nats.js.errors.NotFoundError:
            pass  # the consumer, or its whole stream, is gone
        except Exception:
            return False  # cannot tell now; the caller pauses and fetches again
        try:
            await self._js.add_consumer(self._stream, self.config())
        except Exception as error:
            # Typically the stream is missing too: retried after the pause.
            logger.warning(
                "consumer %s: it is gone and cannot be created again yet: %s", self._durable, error
            )
            return False
        self.recreated += 1
        logger.warning(
            "consumer %s: it had disappeared from %s; created it again (delivering from the "
            "start, already handled messages are skipped by the handler)",
            self._durable,
            self._stream,
        )
        return True

    async def _process(self, msg: Msg) -> None:
        with consumer_span(msg.subject, msg.headers or {}, operation="process"):
            try:
                async with self._keeping(msg):
                    await self._handler(msg)
            except PoisonMessage as error:
                await self._reject(msg, error)
            except asyncio.CancelledError:
                await _quietly(msg.nak())
                raise
            except Exception:
                delay = self._delay(msg.metadata.num_delivered)
                logger.warning(
                    "consumer %s: %s (stream seq %s) failed, retry in %g s",
                    self._durable,
                    msg.subject,
                    msg.metadata.sequence.stream,
                    delay,
                    exc_info=True,
                )
                await _quietly(msg.nak(delay))
            else:
                # Confirmed, so a stop right after this leaves no ack in the air.
                await _quietly(msg.ack_sync(timeout=self._ack_timeout))

    async def _reject(self, msg: Msg, error: PoisonMessage) -> None:
        seq = msg.metadata.sequence.stream
        logger.error(
            "consumer %s: poison message %s (stream seq %s): %s",
            self._durable,
            msg.subject,
            seq,
            error,
        )
        try:
            await self._on_poison(msg, error)
        except Exception:
            delay = self._delay(msg.metadata.num_delivered)
            logger.exception("consumer %s: on_poison failed, retry in %g s", self._durable, delay)
            await _quietly(msg.nak(delay))
            return
        await _quietly(msg.term())

    @contextlib.asynccontextmanager
    async def _keeping(self, msg: Msg) -> AsyncIterator[None]:
        """Tell the server the message is still being worked on while the handler runs."""

        async def beat() -> None:
            while True:
                await asyncio.sleep(self._ack_wait / 3)
                await _quietly(msg.in_progress())

        beating = asyncio.create_task(beat())
        try:
            yield
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating

    def _delay(self, attempt: int) -> float:
        return self._retry_delays[min(max(attempt, 1), len(self._retry_delays)) - 1]

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)


async def _quietly(ack: Awaitable[object]) -> None:
    """Send an ack of some kind; a failure only means the server redelivers later."""
    try:
        await ack
    except Exception:
        logger.warning("could not acknowledge a message", exc_info=True)
