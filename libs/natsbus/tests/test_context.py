"""The request deadline: header format, parsing, remaining time."""

from __future__ import annotations

import time

import pytest

from natsbus.context import (
    DEADLINE_HEADER,
    DEFAULT_REQUEST_TIMEOUT,
    RequestContext,
    deadline_header,
    parse_deadline,
)


def test_the_header_is_whole_epoch_milliseconds() -> None:
    assert DEADLINE_HEADER == "Clipyard-Deadline"
    assert deadline_header(1_700_000_000.1239) == "1700000000123"


def test_a_deadline_survives_the_header() -> None:
    headers = {DEADLINE_HEADER: deadline_header(1_700_000_042.5)}
    assert parse_deadline(headers, received_at=0.0) == 1_700_000_042.5


@pytest.mark.parametrize("headers", [None, {}, {DEADLINE_HEADER: "soon"}, {DEADLINE_HEADER: "-5"}])
def test_no_usable_header_means_the_default_timeout(headers: dict[str, str] | None) -> None:
    assert parse_deadline(headers, received_at=1000.0) == 1000.0 + DEFAULT_REQUEST_TIMEOUT


def test_remaining_counts_down_and_stops_at_zero() -> None:
    now = time.time()
    ctx = RequestContext.from_message(
        "ws.qry.issue.get", {DEADLINE_HEADER: deadline_header(now + 30)}
    )
    assert ctx.subject == "ws.qry.issue.get"
    assert 29.0 < ctx.remaining() <= 30.0
    assert not ctx.expired()
    past = RequestContext.from_message("s", {DEADLINE_HEADER: deadline_header(now - 1)})
    assert past.remaining() == 0.0
    assert past.expired()


def test_the_default_is_110_seconds() -> None:
    assert DEFAULT_REQUEST_TIMEOUT == 110.0
    ctx = RequestContext.from_message("s", None)
    assert 109.0 < ctx.remaining() <= 110.0
