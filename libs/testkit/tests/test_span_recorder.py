"""span_recorder records the spans of the current test on the global provider."""

from __future__ import annotations

import asyncio

from opentelemetry import trace

from telemetry import consumer_span, producer_span, tracer
from testkit.spans import SpanRecorder


def test_records_spans_of_this_test(span_recorder: SpanRecorder) -> None:
    assert span_recorder.finished() == ()
    with producer_span("ws.evt.probe.done") as headers, tracer().start_as_current_span("inner"):
        pass
    with consumer_span("ws.evt.probe.done", headers):
        pass
    names = [span.name for span in span_recorder.finished()]
    assert names == ["inner", "publish ws.evt.probe.done", "process ws.evt.probe.done"]
    assert [s.name for s in span_recorder.by_name("ws.evt.probe")] == names[1:]
    assert span_recorder.by_name("nothing like it") == []


def test_the_provider_is_the_telemetry_one(span_recorder: SpanRecorder) -> None:
    with tracer().start_as_current_span("probe"):
        pass
    (span,) = span_recorder.finished()
    assert span.resource.attributes["service.name"] in {"tests", "telemetry-tests"}
    assert trace.get_tracer_provider() is not None


def test_nothing_is_kept_while_no_test_records(span_recorder_session: SpanRecorder) -> None:
    assert not span_recorder_session.recording
    with tracer().start_as_current_span("unrecorded"):
        pass
    assert span_recorder_session.finished() == ()


async def test_wait_for_spans_ended_by_a_task(span_recorder: SpanRecorder) -> None:
    async def later() -> None:
        await asyncio.sleep(0.05)
        with tracer().start_as_current_span("late work"):
            pass

    task = asyncio.create_task(later())
    (span,) = await span_recorder.wait_for("late work", timeout=2.0)
    await task
    assert span.name == "late work"
