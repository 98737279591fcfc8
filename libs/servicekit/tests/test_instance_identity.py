"""Each replica has its own identity: a second live instance with the same
CLIPYARD_INSTANCE_ID is refused at start, naming the fix; two replicas with their own ids run
side by side, one leading and one standing by (issue 17, bad input and failure)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from service_under_test import fresh_event_stream, start_test_service

from eventstore import ServiceApplication
from servicekit.instances import DuplicateInstanceError

pytestmark = pytest.mark.integration


class Quiet(ServiceApplication):
    """A store with nothing in it."""


async def test_a_second_instance_with_the_same_id_is_refused(
    tmp_path: Path, nats_server: Any
) -> None:
    await fresh_event_stream(nats_server.url)
    async with AsyncExitStack() as stack:
        first = await start_test_service(
            stack, tmp_path, nats_server.url, "quiet", Quiet, {"CLIPYARD_INSTANCE_ID": "quiet-1"}
        )
        assert first.leadership.held
        with pytest.raises(DuplicateInstanceError) as refused:
            async with AsyncExitStack() as second:
                await start_test_service(
                    second,
                    tmp_path,
                    nats_server.url,
                    "quiet",
                    Quiet,
                    {"CLIPYARD_INSTANCE_ID": "quiet-1"},
                )
        message = str(refused.value)
        assert "CLIPYARD_INSTANCE_ID='quiet-1' is already used by a running instance" in message
        assert "give each replica its own CLIPYARD_INSTANCE_ID" in message
        # With its own id it runs beside the first, standing by.
        other = await start_test_service(
            stack, tmp_path, nats_server.url, "quiet", Quiet, {"CLIPYARD_INSTANCE_ID": "quiet-2"}
        )
        assert (first.leadership.role, other.leadership.role) == ("leader", "standby")
        assert other.leadership.leader == "quiet-1"
        assert first.leadership.held
