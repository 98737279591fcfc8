"""An in-memory span exporter attached to the global provider, recording only while a test uses it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

__all__ = ["SpanRecorder", "install_span_recorder"]

TESTS_SERVICE_NAME = "tests"


class SpanRecorder(InMemorySpanExporter):
    """``InMemorySpanExporter`` with helpers; spans are kept only while ``recording`` is True."""

    def __init__(self) -> None:
        super().__init__()
        self.recording = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Keep the spans when recording, else drop them.

        Args:
            spans: Finished spans.

        Returns:
            ``SUCCESS`` (or ``FAILURE`` after shutdown).
        """
        if not self.recording:
            return SpanExportResult.SUCCESS
        return super().export(spans)

    def finished(self) -> tuple[ReadableSpan, ...]:
        """Return the finished spans recorded so far, in end order.

        Returns:
            The spans.
        """
        return self.get_finished_spans()

    def by_name(self, part: str) -> list[ReadableSpan]:
        """Return the recorded spans whose name contains ``part``.

        Args:
            part: A substring of the span name (``"publish ws.evt."``).

        Returns:
            The matching spans, in end order.
        """
        return [span for span in self.get_finished_spans() if part in span.name]

    def wait_for_sync(
        self, part: str, *, count: int = 1, timeout: float = 5.0
    ) -> list[ReadableSpan]:
        """Block until ``count`` spans whose name contains ``part`` have ended.

        Args:
            part: A substring of the span name.
            count: How many spans.
            timeout: Seconds.

        Returns:
            The matching spans.

        Raises:
            AssertionError: They did not all end in time (the message lists what was recorded).
        """
        deadline = time.monotonic() + timeout
        while len(found := self.by_name(part)) < count:
            if time.monotonic() >= deadline:
                raise AssertionError(self._missing(part, count, found))
            time.sleep(0.01)
        return found

    async def wait_for(
        self, part: str, *, count: int = 1, timeout: float = 5.0
    ) -> list[ReadableSpan]:
        """Wait (without blocking the loop) until ``count`` spans named like ``part`` have ended.

        Args:
            part: A substring of the span name.
            count: How many spans.
            timeout: Seconds.

        Returns:
            The matching spans.

        Raises:
            AssertionError: They did not all end in time.
        """
        deadline = time.monotonic() + timeout
        while len(found := self.by_name(part)) < count:
            if time.monotonic() >= deadline:
                raise AssertionError(self._missing(part, count, found))
            await asyncio.sleep(0.01)
        return found

    def _missing(self, part: str, count: int, found: list[ReadableSpan]) -> str:
        names = [span.name for span in self.get_finished_spans()]
        return f"expected {count} span(s) named like {part!r}, got {len(found)}; recorded: {names}"


def install_span_recorder() -> SpanRecorder:
    """Configure telemetry for the test process and attach a new recorder to its provider.

    Returns:
        The recorder (not recording until told to).
    """
    from telemetry import add_span_processor, configure_telemetry

    configure_telemetry(TESTS_SERVICE_NAME)
    recorder = SpanRecorder()
    add_span_processor(SimpleSpanProcessor(recorder))
    return recorder
