"""The gateway's eventsourcing application: companies, API keys, sessions and run tokens.

The read models (:mod:`api_gateway.readmodels`) are rebuilt from the notification log at start and
kept current on each save; they hold hashes only, never a clear key, session id or run token. The
use cases (:mod:`api_gateway.usecases`) are a few lines each: check, one aggregate command, save.
"""

from __future__ import annotations

from api_gateway.readmodels import CompanyRecord, KeyRecord, RunTokenRecord, SessionRecord
from api_gateway.usecases import RunTokenUseCases, SessionStarted, SessionUseCases

__all__ = [
    "CompanyRecord",
    "GatewayApplication",
    "KeyRecord",
    "RunTokenRecord",
    "SessionRecord",
    "SessionStarted",
]


class GatewayApplication(SessionUseCases, RunTokenUseCases):
    """Companies, API keys, sessions and run tokens; the only writer of the gateway's store."""
