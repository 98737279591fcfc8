"""``CLIPYARD_NATS_URL`` as a comma list of a cluster's servers: read and checked by the service
settings, and a service connects through the list when its first server is down."""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import nats
import nats.js.errors
import pytest

from contracts import subjects
from eventstore import ServiceApplication
from servicekit import ServiceSettings, ServiceSpec, SettingsError, start_service
from testkit.procutil import free_port


class Empty(ServiceApplication):
    """No aggregates: the test is about the connection."""


def test_a_comma_list_is_read_into_its_servers(tmp_path: Path) -> None:
    env = {
        "CLIPYARD_HOME": str(tmp_path),
        "CLIPYARD_NATS_URL": " nats://10.0.0.1:4222 , nats://10.0.0.2:4222,nats://10.0.0.3:4222",
    }
    settings = ServiceSettings.from_env("api-gateway", env)
    assert settings.nats.servers == (
        "nats://10.0.0.1:4222",
        "nats://10.0.0.2:4222",
        "nats://10.0.0.3:4222",
    )
    assert settings.nats.url == ",".join(settings.nats.servers)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("nats://10.0.0.1:4222,nats://10.0.0.2:42x2", "'nats://10.0.0.2:42x2'"),
        (
            "nats://10.0.0.1:4222 nats://10.0.0.2:4222",
            "'nats://10.0.0.1:4222 nats://10.0.0.2:4222'",
        ),
        ("nats://10.0.0.1:4222,,nats://10.0.0.2:4222", "an empty entry"),
        ("http://10.0.0.1:4222", "'http://10.0.0.1:4222'"),
    ],
)
def test_a_bad_entry_stops_the_start_naming_it_and_a_good_example(
    tmp_path: Path, value: str, named: str
) -> None:
    env = {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_NATS_URL": value}
    with pytest.raises(SettingsError) as caught:
        ServiceSettings.from_env("api-gateway", env)
    assert str(caught.value).startswith("CLIPYARD_NATS_URL ")
    assert named in str(caught.value)
    assert "nats://10.0.0.1:4222,nats://10.0.0.2:4222" in str(caught.value)


@pytest.mark.integration
async def test_a_service_whose_first_server_is_dead_connects_to_the_next_and_serves(
    tmp_path: Path, nats_server: Any
) -> None:
    nc = await nats.connect(nats_server.url)
    with contextlib.suppress(nats.js.errors.NotFoundError):
        await nc.jetstream().delete_stream(subjects.EVENT_STREAM)
    dead = f"nats://127.0.0.1:{free_port()}"
    spec = ServiceSpec(
        token="controller",
        name="listed",
        version="0.0.1",
        application_class=Empty,
        to_contract=lambda _event: None,
    )
    env = {"CLIPYARD_HOME": str(tmp_path), "CLIPYARD_NATS_URL": f"{dead} , {nats_server.url}"}
    settings = ServiceSettings.from_env("listed", env)
    assert settings.nats.servers == (dead, nats_server.url)
    try:
        async with AsyncExitStack() as stack:
            runtime = await asyncio.wait_for(
                start_service(spec, settings, stack, asyncio.Event()), 30
            )
            assert runtime.nc.connected_url.port == nats_server.port
            # It serves: its ping answers, and it made the event stream on the live server.
            assert await nc.request("$SRV.PING.listed", b"", timeout=5)
            await nc.jetstream().stream_info(subjects.EVENT_STREAM)
    finally:
        await nc.drain()
