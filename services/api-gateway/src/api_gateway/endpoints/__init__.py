"""The gateway's bus endpoints (``servicekit.routes``): run tokens (:mod:`.run_tokens`)."""

from __future__ import annotations

from api_gateway.endpoints.run_tokens import MINT_ENDPOINT, RunTokenEndpoints

__all__ = ["MINT_ENDPOINT", "RunTokenEndpoints"]
