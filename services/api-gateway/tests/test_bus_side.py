"""The gateway's bus side as tables: the run-token endpoint's route and the controller inbox."""

from __future__ import annotations

from api_gateway.application import GatewayApplication
from api_gateway.endpoints import MINT_ENDPOINT, RunTokenEndpoints
from contracts.heartbeat_subjects import RUN_TOKEN_MINT
from contracts.run_tokens import MintRunToken
from eventstore import StoreExecutor


def test_the_mint_route_keeps_its_name_subject_and_request_type() -> None:
    executor = StoreExecutor(name="routes-test")
    try:
        endpoints = RunTokenEndpoints(GatewayApplication(service="gateway"), executor)
        [route] = endpoints.routes()
    finally:
        executor.close()
    assert (route.name, route.subject, route.request_type) == (
        MINT_ENDPOINT,
        RUN_TOKEN_MINT,
        MintRunToken,
    )
    assert MINT_ENDPOINT == "mint-run-token"
    assert route.handler == endpoints.mint
    assert route.concurrency is None
