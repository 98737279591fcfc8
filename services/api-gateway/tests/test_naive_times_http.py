"""Inbound times without a zone are refused at the gateway (400): a naive time cannot be compared
with the realizer's aware ones (the reaper would fail for every company)."""

from __future__ import annotations

from typing import Any

from litestar.testing import TestClient

Client = TestClient[Any]
WS_URL = "/api/execution-workspaces/0b9a2c1e-6f7d-4c55-9c1b-1d2e3f4a5b6c"


def test_a_naive_cleanup_time_is_refused_before_the_bus(
    client: Client, bus: Any, board: dict[str, str]
) -> None:
    sent = len(bus.sent)
    response = client.patch(
        WS_URL, json={"cleanupEligibleAt": "2020-01-01T00:00:00"}, headers=board
    )
    assert response.status_code == 400, response.text
    assert "timezone" in response.text
    assert len(bus.sent) == sent
