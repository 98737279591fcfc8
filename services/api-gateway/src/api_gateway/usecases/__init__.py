"""The gateway's use cases, by aggregate; :class:`api_gateway.application.GatewayApplication`
composes them. Each runs on the store's thread: checks, one aggregate command, one save."""

from __future__ import annotations

from api_gateway.usecases.api_keys import ApiKeyUseCases
from api_gateway.usecases.companies import CompanyUseCases
from api_gateway.usecases.run_tokens import RunTokenUseCases
from api_gateway.usecases.sessions import SessionStarted, SessionUseCases

__all__ = [
    "ApiKeyUseCases",
    "CompanyUseCases",
    "RunTokenUseCases",
    "SessionStarted",
    "SessionUseCases",
]
